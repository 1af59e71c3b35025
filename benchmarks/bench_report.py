"""`rollsum report` time (issue #20 item 3: ≤ 5 s on the bundled `thresholds` sweep), and
`rollsum --help` start-up, old code against new, interleaved.

Each timing is a fresh process (a report is a CLI run: imports count), measured as wall time and
as CPU time (user + system of the child, from `resource.getrusage`): on a machine shared with
other work the wall time mostly measures the neighbours, the CPU time the code. ``--old DIR``
is a copy of an older tree (``git archive REV rollsum evals | tar -x -C DIR``), run with
``PYTHONPATH=DIR:DIR/evals`` from a neutral directory; A and B alternate ``--rounds`` times and
the table shows medians. Each side runs its own default command (since session 39 the new tree
writes SVG figures). With ``--old`` the reports are also compared: report.md, report.html (its
figures are embedded) and configs.csv must be byte-identical, or the script says which differ.
When the new report's figures are SVG and the old one's PNG, one more (untimed) new report with
``--figures png`` is the one compared, and the SVG report.md must be that one with ``.svg``
figure links.

Usage:
    .venv/bin/rollsum run evals/rollsum_evals/sweeps/thresholds.toml --out /tmp/thr --no-unit-cache
    .venv/bin/python benchmarks/bench_report.py --run /tmp/thr [--old /tmp/old] [--rounds 3]
Exit code: 1 when the new report's median wall or CPU time is over the target or the reports
differ; else 0.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 5.0
COMPARED = ("report.md", "report.html", "configs.csv")
ROOT = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(tree: Path) -> dict[str, str]:
    """The environment that imports `tree`'s code. "new" is this script's own tree, named
    explicitly: without a PYTHONPATH the interpreter imports whatever tree the venv's editable
    install points at (on the shared machine: /work/main), so a worktree was compared with main."""
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'evals'}"
    return env


def _differ(run: Path, tmp: Path) -> list[str]:
    """Which of `COMPARED` differ between the new and the old report (`tmp`'s new-0, old-0). A
    new SVG report against an old PNG one: a new PNG report is made and compared instead, and
    the SVG report.md must be it with ``.svg`` figure links."""
    new, old = tmp / "new-0", tmp / "old-0"
    differ = []
    if list(new.glob("*.svg")) and not list(old.glob("*.svg")):
        png = tmp / "new-png"
        subprocess.run([sys.executable, "-m", "rollsum_evals", "report", str(run), "--out", str(png),
                        "--figures", "png"], env=_env(ROOT), cwd=tempfile.gettempdir(), check=True,
                       stdout=subprocess.DEVNULL)
        linked = re.sub(r"\]\(([\w.-]+)\.png\)", r"](\1.svg)", (png / "report.md").read_text())
        if (new / "report.md").read_text() != linked:
            differ.append("report.md (svg)")
        new = png
    return differ + [f for f in COMPARED if (new / f).read_bytes() != (old / f).read_bytes()]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a finished run directory (the thresholds sweep)")
    ap.add_argument("--old", type=Path, default=None, help="an older tree to compare with (see the docstring)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    sides = {"new": ROOT, **({"old": args.old.resolve()} if args.old else {})}
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp_s:
        tmp = Path(tmp_s)
        for i in range(args.rounds):
            for side, tree in (sides.items() if i % 2 == 0 else reversed(sides.items())):
                env = _env(tree)
                out = tmp / f"{side}-{i}"
                times.setdefault((side, "report"), []).append(_timed(
                    [sys.executable, "-m", "rollsum_evals", "report", str(args.run.resolve()), "--out", str(out)], env))
                times.setdefault((side, "--help"), []).append(_timed(
                    [sys.executable, "-m", "rollsum_evals", "--help"], env))
        differ = _differ(args.run.resolve(), tmp) if args.old else []

    print(f"`rollsum report {args.run.name}` and `rollsum --help`: medians of {args.rounds} fresh "
          "processes, "
          f"{'old and new interleaved, ' if args.old else ''}{os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print()
    print("| command | code | wall s (median) | CPU s (median) | CPU s (each) |")
    print("|---|---|---|---|---|")
    med: dict[tuple[str, str], tuple[float, float]] = {}
    for (side, cmd), vals in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0] != "old")):
        med[(side, cmd)] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
        print(f"| {cmd} | {side} | {med[(side, cmd)][0]:.2f} | {med[(side, cmd)][1]:.2f} | "
              f"{', '.join(f'{v[1]:.2f}' for v in vals)} |")
    if args.old:
        print()
        for cmd in ("report", "--help"):
            print(f"{cmd}: new / old CPU {med[('new', cmd)][1] / med[('old', cmd)][1]:.2f}×, "
                  f"wall {med[('new', cmd)][0] / med[('old', cmd)][0]:.2f}×")
        print(f"reports identical (report.md, report.html with its figures, configs.csv): "
              f"{'yes' if not differ else 'NO: ' + ', '.join(differ)}")
    wall, cpu = med[("new", "report")]
    failed = []
    if cpu > TARGET_S:
        failed.append(f"report CPU {cpu:.2f} s > {TARGET_S} s")
    if wall > TARGET_S:
        failed.append(f"report wall {wall:.2f} s > {TARGET_S} s (on a shared machine: see CPU)")
    if differ:
        failed.append("reports differ: " + ", ".join(differ))
    for f in failed:
        print(f"MISS: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
