"""Issue #10's measurement, on the harness's own metric: the extractive summarizer against
truncation at matched main-model tokens, and against the summarizer it replaced.

Everything goes through the harness; this script only wires it together and prints one table:

1. The old summarizer (``rollsum/summarizers/extractive.py`` and ``tools.py`` as of
   ``--baseline-rev``, default b04e782) is written out of git into a temporary directory as the
   module ``legacy_extractive`` and put on ``PYTHONPATH``; ``benchmarks/summarizer.toml`` plugs it
   into the same presets by import path (docs/plugins.md).
2. ``rollsum run benchmarks/summarizer.toml --jobs N`` replays since-last, evict-window and
   token-ratio with the new and the old summarizer, and a truncate grid (keeps at most 10 %
   apart, capped at the 8,000-token window), on LoCoMo (with ``--locomo``) and the committed
   synthetic chat, agent and mixed sets.
3. For each probe timing (``end``: every probe asked once at the end of the conversation;
   ``sampled:1+end``, the default: also at one turn drawn over the fact's remaining life),
   ``rollsum score RUN --timing T`` re-scores the traces (answer_retention v3: answerable asks,
   support by one context unit), then per dataset and preset
   ``rollsum compare RUN --a new:P --b truncate --match-tokens --dataset D`` and
   ``rollsum compare RUN --a new:P --b old:P --dataset D`` (called through their functions).
   The verdicts and intervals are compare's own (cluster bootstrap over conversations, Holm
   over retention, tokens and cost; no verdict under 5 conversations).
4. Health from the same run (docs/scoring.md): each config's status, summary failures, clips
   and summarizer calls per message, so nothing wins by overflowing or failing.

    python benchmarks/bench_summarizer.py [--locomo ../shared/datasets/locomo/locomo-dev.json]
        [--out runs/bench-summarizer] [--reuse] [--jobs 1] [--markdown FILE]

``--reuse`` re-scores an existing ``--out`` run without replaying. The run directory is left
scored at the default timing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from rollsum_evals import analysis, compare
from rollsum_evals.formatting import md_table
from rollsum_evals.rundir.read import Run
from rollsum_evals.verdicts import Verdict

from rollsum.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "benchmarks" / "summarizer.toml"
BASELINE_REV = "b04e782"
PRESETS = ("since-last", "evict-window", "token-ratio")
DATASETS = ("locomo", "chat", "agent", "mixed")
TIMINGS = ("end", "sampled:1+end")
"""Scored in this order so that the run is left at the default timing."""


def write_legacy(rev: str, dest: Path) -> Path:
    """`legacy_extractive.py` + `legacy_tools.py` from `rev` in `dest` (returned, for PYTHONPATH).

    Only two edits: the import of its tools module, and its capability facts (offline,
    deterministic: what the old class was, declared so the harness treats it like the new one).
    """
    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout

    src = show("rollsum/summarizers/extractive.py")
    src = src.replace("from rollsum.summarizers.tools import", "from legacy_tools import", 1)
    src = src.replace("from rollsum.errors import", "from rollsum.capabilities import OFFLINE_SCRIPTED\n"
                                                    "from rollsum.errors import", 1)
    src = src.replace('    name = "extractive"\n', '    name = "extractive"\n    capabilities = OFFLINE_SCRIPTED\n', 1)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "legacy_extractive.py").write_text(src)
    (dest / "legacy_tools.py").write_text(show("rollsum/summarizers/tools.py"))
    return dest


def rollsum(*args: str, legacy: Path) -> None:
    """The `rollsum` CLI in a subprocess with the old summarizer importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(legacy), os.environ.get("PYTHONPATH"))
                                                        if p)}
    cmd = [sys.executable, "-c", "import sys; from rollsum_evals.cli import main; sys.exit(main(sys.argv[1:]))",
           *args]
    print("$ rollsum " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, env=env, check=False)
    if done.returncode:
        raise SystemExit(done.returncode)  # the CLI has printed its one-line reason


def _ret(result: compare.Comparison) -> compare.MetricResult:
    return next(r for r in result.results if r.metric == "retention")


def _diff(r: compare.MetricResult) -> str:
    d = r.diff
    if not d.enough:
        return f"{d.estimate:+.3f}"
    return f"{d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"


def _health(run: Run, config: str, verdicts: Mapping[str, Verdict]) -> str:
    """status · summary failures · clips · turns over the window · summarizer calls per message,
    over the config's units (docs/scoring.md: a config that overflows or fails is not `ok`).
    `verdicts`: `analysis.config_verdicts(run)`, computed once per dataset by the caller."""
    u = run.units[run.units["config"].astype(str) == config]
    status = verdicts[config].status
    fails = int(pd.to_numeric(u["summary_failures"], errors="coerce").fillna(0).sum())
    clips = int(pd.to_numeric(u["clips"], errors="coerce").fillna(0).sum())
    over = int(pd.to_numeric(u["overflow_turns"], errors="coerce").fillna(0).sum())
    cpm = float(pd.to_numeric(u["calls_per_message"], errors="coerce").mean())
    return f"{status} · {fails} · {clips} · {over} · {cpm:.3f}"


def rows(run: Run, timing: str) -> list[list[str]]:
    out = []
    datasets = [d for d in DATASETS if d in set(run.units["dataset"].astype(str))]
    for ds in datasets:
        sub = analysis.only_datasets(run, [ds])
        verdicts = analysis.config_verdicts(sub)
        for preset in PRESETS:
            new, old = f"new:{preset}", f"old:{preset}"
            vo = compare.compare_configs(sub, new, old)
            ro = _ret(vo)
            row = [timing, ds, preset, f"{ro.mean_a:.3f}", f"{ro.mean_b:.3f}", f"{_diff(ro)} {ro.verdict}"]
            try:
                vt = compare.compare_matched(sub, new, "truncate")
            except ConfigError as e:  # e.g. no truncate unit within 5 % on any conversation
                row += ["0", "–", f"no comparison: {e}"]
            else:
                rt = _ret(vt)
                used = [m for m in vt.matches if m.matched]
                keeps = sorted({int(m.b_config.split("keep=")[1].rstrip("]")) for m in used})
                keep = f"{keeps[0]}–{keeps[-1]}" if len(keeps) > 1 else str(keeps[0])
                row += [f"{len(used)}/{len(vt.matches)} (keep {keep})", f"{rt.mean_a:.3f} / {rt.mean_b:.3f}",
                        f"{_diff(rt)} {rt.verdict}"]
            out.append([*row, _health(sub, new, verdicts), _health(sub, old, verdicts)])
    return out


HEADERS = ["timing", "dataset", "preset", "new", "old", "new − old [95 % CI] verdict",
           "matched ≤ 5 % (truncate keep)", "new / truncate on matched", "new − truncate [95 % CI] verdict",
           "health new: status · failures · clips · overflow turns · calls/msg", "health old"]
"""new and old: retention over every conversation's answerable asks (paired per ask); the truncate
columns over the conversations with a truncate unit within 5 % of new's main-model tokens."""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--locomo", type=Path, default=None, help="LoCoMo JSON (../shared/datasets/locomo/locomo-dev.json)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-summarizer")
    ap.add_argument("--baseline-rev", default=BASELINE_REV)
    ap.add_argument("--jobs", default="1")
    ap.add_argument("--reuse", action="store_true", help="re-score an existing --out run instead of replaying")
    ap.add_argument("--markdown", type=Path, default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    table: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="legacy-") as tmp:
        legacy = write_legacy(args.baseline_rev, Path(tmp))
        if not (args.reuse and (args.out / "units.parquet").exists()):
            run_args = ["run", str(SPEC), "--out", str(args.out), "--jobs", args.jobs]
            if args.locomo is not None:
                run_args += ["--locomo", str(args.locomo)]
            if args.out.exists():
                run_args.append("--resume")
            rollsum(*run_args, legacy=legacy)
        for timing in TIMINGS:
            rollsum("score", str(args.out), "--timing", timing, legacy=legacy)
            table += rows(analysis.load(args.out), timing)
    text = md_table(HEADERS, table)
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
