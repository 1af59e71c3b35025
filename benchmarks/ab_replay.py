"""Before/after replay speed in one run: this checkout against another copy of `rollsum`.

Each cell (stream, preset, messages, window) is replayed in a fresh process under each copy,
alternating old/new `--rounds` times, and the medians of the CPU time per message and their
ratio are printed. The old copy is made with

    git archive <commit> rollsum | tar -x -C /tmp/old

    python benchmarks/ab_replay.py --old /tmp/old [--streams mixed words] [--presets since-last ...]
                                   [--sizes 10000] [--window 8000|default] [--rounds 3]
                                   [--after-first-eviction]

``--after-first-eviction`` times only the messages after the first eviction (issue #20's
"once evicting"). The worker mode (``--worker``) is what each process runs.

``--reference MSG_S`` reads the new copy at another machine's scale: the old copy's throughput
there (measured there), times the speedup measured here in one run. A ratio of two trees on
one machine carries over to another machine where a wall-clock figure does not; issue #20's
20,000 msg/s target was set where the summarizer before 3e655dd ran 9,712 msg/s (since-last,
mixed stream), so ``--old <git archive 3e655dd^> --reference 9712`` reads main at that scale.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys


def worker(stream: str, preset: str, n: int, window: str, after_eviction: bool) -> float:
    import gc

    from bench_replay import STREAMS, per_message_cpu

    from rollsum import RollingSummarizer

    msgs = STREAMS[stream](n)
    gc.freeze()
    kw = {} if window == "default" else {"context_window": int(window)}
    rs = RollingSummarizer.from_preset(preset, **kw)
    per_message, timed = per_message_cpu(rs, msgs, after_eviction=after_eviction)
    return per_message if timed else 0.0


def at_scale(reference: float, old: float, new: float) -> float:
    """The new copy's msg/s where the old one ran `reference` msg/s, from the CPU seconds per
    message `old` and `new` measured here: the reference times the speedup (``old / new``)."""
    return reference * old / new


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--old", help="directory holding the other copy of `rollsum`")
    ap.add_argument("--streams", nargs="+", default=["mixed", "words"])
    ap.add_argument("--presets", nargs="+", default=["since-last"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--window", default="8000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--after-first-eviction", action="store_true")
    ap.add_argument("--reference", type=float, metavar="MSG_S",
                    help="the old copy's msg/s on another machine: also print the new copy at that scale")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        stream, preset, n, window, after = args.worker
        print(worker(stream, preset, int(n), window, after == "1"))
        return 0
    if not args.old:
        ap.error("--old DIR is required")
    here = os.path.dirname(os.path.abspath(__file__))
    print(f"{'stream':<8}{'preset':<20}{'messages':>10}{'window':>9}{'old us/msg':>12}{'new us/msg':>12}"
          f"{'old msg/s':>11}{'new msg/s':>11}{'speedup':>9}")
    for stream in args.streams:
        for preset in args.presets:
            for n in args.sizes:
                times: dict[str, list[float]] = {"old": [], "new": []}
                for _ in range(args.rounds):
                    for tag in ("old", "new"):
                        env = dict(os.environ)
                        # "new" is this script's own tree, named: without it the venv's editable
                        # install decides which rollsum runs (a worktree was measured as main)
                        env["PYTHONPATH"] = os.pathsep.join((args.old if tag == "old" else os.path.dirname(here), here))
                        out = subprocess.run(
                            [sys.executable, __file__, "--worker", stream, preset, str(n), args.window,
                             "1" if args.after_first_eviction else "0"],
                            env=env, capture_output=True, text=True, check=True, cwd=here).stdout
                        times[tag].append(float(out.strip().splitlines()[-1]))
                old, new = statistics.median(times["old"]), statistics.median(times["new"])
                print(f"{stream:<8}{preset:<20}{n:>10}{args.window:>9}{old * 1e6:>12.1f}{new * 1e6:>12.1f}"
                      f"{1 / old:>11,.0f}{1 / new:>11,.0f}{old / new:>8.2f}x", flush=True)
                if args.reference:
                    print(f"  at the reference's scale (old {args.reference:,.0f} msg/s there): "
                          f"new {at_scale(args.reference, old, new):,.0f} msg/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
