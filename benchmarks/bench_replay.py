"""Throughput of `RollingSummarizer.add()` per preset, offline (extractive summarizer).

Targets (issue #2): >= 20,000 messages/s for since-last, and per-message time at 100k within
1.3x of 10k (replay is linear). Prints one table; exits 1 when a target is missed so the
benchmark can gate a change.

    python benchmarks/bench_replay.py [--sizes 10000 100000] [--presets since-last ...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from rollsum import Message, RollingSummarizer, presets

WORDS = tuple(
    "alpha beta gamma delta the a to of and we will meet Priya in Lisbon on March 14 ticket INC-2093 "
    "deploy failed build passed Tuesday 42 users reported latency budget 1,200 ms decided".split()
)


def stream(n: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        words = rng.randint(8, 60)
        text = " ".join(rng.choice(WORDS) for _ in range(words)) + "."
        out.append(Message(role, text, id=f"m{i}"))  # type: ignore[arg-type]
    return out


def run(preset: str, msgs: list[Message], window: int, ledger: str = "auto") -> tuple[float, int]:
    rs = RollingSummarizer.from_preset(preset, context_window=window, ledger=ledger)
    add = rs.add
    t0 = time.perf_counter()
    for m in msgs:
        add(m)
    return time.perf_counter() - t0, len(rs.history)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--presets", nargs="+", default=presets.names())
    ap.add_argument("--window", type=int, default=8_000, help="main-model context window (tokens)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per cell")
    ap.add_argument("--ledger", nargs="+", default=["auto", "pin"], choices=["auto", "pin", "retry", "off"],
                    help="ledger modes to measure for since-last (other presets use auto)")
    args = ap.parse_args()
    data = {n: stream(n) for n in args.sizes}
    print(f"{'preset':<20}{'ledger':>7}{'messages':>10}{'msg/s':>12}{'us/msg':>9}{'summaries':>11}{'vs smallest':>13}")
    ok = True
    for preset in args.presets:
        for ledger in (args.ledger if preset == "since-last" else ["auto"]):
            base = None
            for n in args.sizes:
                secs, summaries = min(run(preset, data[n], args.window, ledger) for _ in range(args.repeat))
                per = secs / n * 1e6
                base = base or per
                ratio = per / base
                print(f"{preset:<20}{ledger:>7}{n:>10}{n / secs:>12,.0f}{per:>9.1f}{summaries:>11}{ratio:>12.2f}x")
                if preset == "since-last" and ledger == "auto" and n / secs < 20_000:
                    ok = False
                if ratio > 1.3:
                    ok = False
    print("targets:", "met" if ok else "MISSED",
          "(since-last with its default ledger >= 20,000 msg/s; 100k within 1.3x of 10k for every row)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
