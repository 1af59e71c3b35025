"""Are the summaries byte-identical to another version of the library's? (issue #20, item 1)

A speed change to the summarizer or the engine must not change what a replay produces. This
replays every preset over the harness's synthetic streams (chat, agent, mixed) and the LoCoMo
dev conversations, once with this checkout's `rollsum` and once with another copy of it (made
with ``git archive <commit> rollsum | tar -x -C /tmp/old``), and compares every summary text,
every event and the final context of each replay.

    python benchmarks/check_summaries.py --old /tmp/old [--messages 2000] [--seeds 2]
                                         [--windows 2000 8000] [--presets since-last ...]

Prints one row per (stream, preset, window): summaries, identical or the first difference.
Exits 1 on any difference. ``--emit`` is the worker mode (prints JSON digests of this process's
library); the parent runs it under each PYTHONPATH.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"


def _streams(args: argparse.Namespace) -> dict[str, list[Any]]:
    from rollsum_evals.data.synth import make_conversation  # the harness's generator: benchmark only

    out: dict[str, list[Any]] = {}
    for flavor in ("chat", "agent", "mixed"):
        for seed in range(args.seeds):
            out[f"synth:{flavor}#{seed}"] = list(
                make_conversation(flavor, n_messages=args.messages, seed=seed).messages)
    path = Path(args.locomo)
    if path.exists():
        from rollsum_evals.data.locomo import iter_locomo

        for c in iter_locomo(path):
            out[f"locomo:{c.id}"] = list(c.messages)
    return out


def emit(args: argparse.Namespace) -> None:
    """Worker: one JSON line per cell with the digest of every summary, event and the context."""
    from rollsum import RollingSummarizer

    for label, msgs in _streams(args).items():
        for preset in args.presets:
            for window in args.windows:
                rs = RollingSummarizer.from_preset(preset, context_window=window)
                texts: list[str] = []
                events: list[str] = []
                for m in msgs:
                    rs.add(m)
                    for ev in rs.last_events:
                        events.append(f"{ev.kind}|{ev.messages}|{ev.tokens_before}|{ev.tokens_after}")
                texts = [r.text for r in rs.history]
                context = "\n".join(f"{m.role}:{m.content}" for m in rs.context())
                h = hashlib.sha256()
                for t in texts:
                    h.update(t.encode() + b"\x00")
                print(json.dumps({"cell": f"{label}|{preset}|{window}", "summaries": len(texts),
                                  "texts": h.hexdigest(), "all_texts": texts,
                                  "events": hashlib.sha256("\n".join(events).encode()).hexdigest(),
                                  "context": hashlib.sha256(context.encode()).hexdigest()}), flush=True)


def _run(pythonpath: str | None, argv: list[str]) -> dict[str, dict[str, Any]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, __file__, "--emit", *argv], env=env, check=True,
                         capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["cell"]: r for r in rows}


def _first_difference(a: list[str], b: list[str]) -> str:
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"summary #{k}: {x[:80]!r} vs {y[:80]!r}"
    return f"{len(a)} vs {len(b)} summaries"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--old", help="directory holding the other copy of `rollsum` (its parent on PYTHONPATH)")
    ap.add_argument("--messages", type=int, default=2_000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--windows", type=int, nargs="+", default=[2_000, 8_000])
    ap.add_argument("--presets", nargs="+", default=["count-and-tokens", "since-last", "budget-rule-based",
                                                      "token-ratio", "evict-window"])
    ap.add_argument("--locomo", default=str(DEFAULT_LOCOMO))
    ap.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.emit:
        emit(args)
        return 0
    if not args.old:
        ap.error("--old DIR is required (a copy made with git archive <commit> rollsum | tar -x -C DIR)")
    argv = ["--messages", str(args.messages), "--seeds", str(args.seeds), "--locomo", args.locomo,
            "--windows", *map(str, args.windows), "--presets", *args.presets]
    old = _run(args.old, argv)
    new = _run(None, argv)
    same = 0
    print(f"{'cell':<52}{'summaries':>10}  result")
    for cell, a in old.items():
        b = new.get(cell)
        if b is None:
            print(f"{cell:<52}{a['summaries']:>10}  MISSING in new")
            continue
        diffs = [k for k in ("texts", "events", "context") if a[k] != b[k]]
        if diffs:
            detail = _first_difference(a["all_texts"], b["all_texts"]) if "texts" in diffs else ""
            print(f"{cell:<52}{a['summaries']:>10}  DIFFERENT ({', '.join(diffs)}) {detail}")
        else:
            same += 1
            print(f"{cell:<52}{a['summaries']:>10}  identical")
    print(f"{same} of {len(old)} cells identical")
    return 0 if same == len(old) == len(new) else 1


if __name__ == "__main__":
    sys.exit(main())
