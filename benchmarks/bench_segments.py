"""Cost per message of one segment of a long replay: the steady state against a run's start.

Why: `bench_replay.py` compares the average per message of a 10k run with that of a 1M run
(issue #20, item 2: within 1.3x). A 10k run at the default window starts with messages that
only append (budget-rule-based trims first at ~2,200 messages), so a 1M run can cost more per
message with nothing growing. This replays the synthetic mixed stream of `--start` + `--count`
messages, the first `--start` untimed, and reports the next `--count`: CPU microseconds per
message and summaries made, or, with `--instructions`, instructions per message counted by
valgrind (load-independent: the segment's run minus a run that stops before it).

    python benchmarks/bench_segments.py budget-rule-based --start 0 --count 10000
    python benchmarks/bench_segments.py budget-rule-based --start 100000 --count 10000 --instructions

With `--instructions` each of the two runs is a valgrind run (~50x slower than Python alone);
`--stop` is what they use: replay `--start` messages and exit.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import time

from bench_replay import mixed_stream  # the benchmark's own stream (a script: its directory is on the path)

from rollsum import RollingSummarizer


def replay(preset: str, start: int, count: int, stop: bool) -> tuple[float, int]:
    """(CPU seconds of the segment, summaries made in it); (0, 0) with `stop`."""
    msgs = mixed_stream(start + count)
    gc.freeze()  # as bench_replay: the input is not the engine's heap
    gc.collect()
    rs = RollingSummarizer.from_preset(preset)
    add = rs.add
    for m in msgs[:start]:
        add(m)
    if stop:
        return 0.0, 0
    before = len(rs.history)
    t0 = time.process_time()
    for m in msgs[start:start + count]:
        add(m)
    return time.process_time() - t0, len(rs.history) - before


def instructions(preset: str, start: int, count: int) -> int:
    """Instructions of the whole run with the segment minus the run without it (valgrind)."""
    def run(stop: bool) -> int:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, __file__, preset, "--start", str(start), "--count", str(count)]
        out = subprocess.run(cmd + (["--stop"] if stop else []), capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": "0"})
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if found is None:
            raise SystemExit(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
        return int(found.group(1).replace(",", ""))

    return run(False) - run(True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset")
    ap.add_argument("--start", type=int, default=0, help="messages replayed before the segment (untimed)")
    ap.add_argument("--count", type=int, default=10_000, help="messages in the segment")
    ap.add_argument("--instructions", action="store_true", help="count instructions with valgrind")
    ap.add_argument("--stop", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    segment = f"[{args.start:,}, {args.start + args.count:,})"
    if args.instructions:
        per = instructions(args.preset, args.start, args.count) / args.count
        print(f"{args.preset} {segment}: {per:,.0f} instructions/msg")
        return 0
    secs, summaries = replay(args.preset, args.start, args.count, args.stop)
    if not args.stop:
        print(f"{args.preset} {segment}: {secs / args.count * 1e6:.1f} us/msg, {summaries} summaries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
