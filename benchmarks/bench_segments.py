"""Cost per message of one segment of a long replay: the steady state against a run's start.

Why: `bench_replay.py` compares the average per message of a 10k run with that of a 1M run
(issue #20, item 2: within 1.3x). A 10k run at the default window starts with messages that
only append (budget-rule-based trims first at ~2,200 messages), so a 1M run can cost more per
message with nothing growing. This replays the synthetic mixed stream of `--start` + `--count`
messages, the first `--start` untimed, and reports the next `--count`: CPU microseconds per
message and summaries made, or, with `--instructions`, instructions per message counted by
valgrind (load-independent: the segment's run minus a run that stops before it).

Without `--instructions` it also reports wall time per message and the part of it the garbage
collector took (`gc.callbacks`), by generation, for the untimed part and for the segment: at 1M
messages full collections walk what the process keeps per message, which instruction counts
of the library's own code do not see (issue #20, item 2).

    python benchmarks/bench_segments.py budget-rule-based --start 0 --count 10000
    python benchmarks/bench_segments.py budget-rule-based --start 100000 --count 10000 --instructions
    python benchmarks/bench_segments.py budget-rule-based --start 950000 --count 50000 --no-collector

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


class GcClock:
    """Wall seconds and runs of the collector by generation, summed through `gc.callbacks`."""

    def __init__(self) -> None:
        self.secs = [0.0, 0.0, 0.0]
        self.runs = [0, 0, 0]
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.secs[info["generation"]] += time.perf_counter() - self._t0
            self.runs[info["generation"]] += 1

    def reset(self) -> None:
        self.secs, self.runs = [0.0, 0.0, 0.0], [0, 0, 0]

    def line(self, n: int) -> str:
        """The collector's share of `n` messages: us/msg per generation and runs."""
        return ", ".join(f"gen{g} {self.secs[g] / n * 1e6:.2f} us/msg ({self.runs[g]})" for g in range(3))


def replay(preset: str, start: int, count: int, stop: bool, clock: GcClock | None = None,
           collector: bool = True) -> tuple[float, float, int]:
    """(CPU seconds of the segment, its wall seconds, summaries made in it); zeros with `stop`.
    With `clock`, prints the collector's time over the untimed part and leaves it counting
    the segment only. `collector` False: the whole replay runs with the cyclic collector off
    (`gc.disable()`; the engine makes no cycles, so nothing piles up), which separates what the
    collector's walks cost at a size from what the library's own work does."""
    msgs = mixed_stream(start + count)
    gc.freeze()  # as bench_replay: the input is not the engine's heap
    gc.collect()
    if not collector:
        gc.disable()
    rs = RollingSummarizer.from_preset(preset)
    add = rs.add
    if clock is not None:
        gc.callbacks.append(clock)
    w0 = time.perf_counter()
    for m in msgs[:start]:
        add(m)
    if stop:
        return 0.0, 0.0, 0
    if clock is not None and start:
        print(f"{preset} [0, {start:,}) untimed: wall {(time.perf_counter() - w0) / start * 1e6:.1f} us/msg; "
              f"gc {clock.line(start)}")
        clock.reset()
    before = len(rs.history)
    segment = msgs[start:start + count]
    t0, w0 = time.process_time(), time.perf_counter()
    for m in segment:
        add(m)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    if clock is not None:
        gc.callbacks.remove(clock)
    return cpu, wall, len(rs.history) - before


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
    ap.add_argument("--no-collector", action="store_true",
                    help="run the replay with the cyclic garbage collector off (gc.disable())")
    ap.add_argument("--stop", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    segment = f"[{args.start:,}, {args.start + args.count:,})"
    if args.instructions:
        per = instructions(args.preset, args.start, args.count) / args.count
        print(f"{args.preset} {segment}: {per:,.0f} instructions/msg")
        return 0
    clock = None if args.stop else GcClock()
    secs, wall, summaries = replay(args.preset, args.start, args.count, args.stop, clock, not args.no_collector)
    if clock is not None:
        n = args.count
        print(f"{args.preset} {segment}: {secs / n * 1e6:.1f} us/msg CPU, wall {wall / n * 1e6:.1f} us/msg "
              f"(gc {sum(clock.secs) / n * 1e6:.2f}: {clock.line(n)}), {summaries} summaries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
