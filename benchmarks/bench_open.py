"""What opening an engine on a stored conversation costs, by conversation length and store.

The docs endorse building a `RollingSummarizer` from its store for every request; this measures
that open. For each store and length, one conversation (the mixed stream: chat, tool calls and
results) is replayed through an engine, then the engine is opened on it again and again:

- ``full read``: through a store that shows only the `Store` protocol (what every open did
  before stores kept their totals, and what a third-party store still gets): every row read,
  its meta decoded, every token counted again, every summary record read;
- ``window``: the store as it is (`rollsum.store.WindowedStore`): the active and pending rows,
  the totals and the latest summary record.

Printed: rows and summary records read per open, and the median wall time of `--opens` opens
(each followed by `close`; the garbage collector off while timing, as `timeit` has it: else a
full collection of the replay's 100k messages, due at any allocation, lands in some opens),
with the ratio. The two opens must give the same engine (checked
here on the context, the chain and the turn; tests/rollsum/test_open_window.py checks more).

    .venv/bin/python benchmarks/bench_open.py [--sizes 1000 10000 100000] [--opens 7]
                                              [--stores memory sqlite] [--preset since-last]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollsum import Message, RollingSummarizer
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.base import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: its test helpers
from tests.support.opening import Spy  # what an open reads, counted: the tests' spy


def mixed(n: int, seed: int = 3) -> list[Message]:
    from rollsum_evals.data.synth import make_conversation  # the harness's generator: benchmark only

    return list(make_conversation("mixed", n_messages=n, seed=seed).messages)


def engine(preset: str, store: Any, window: int) -> RollingSummarizer:
    return RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c")


def fill(preset: str, store: Store, messages: Sequence[Message], window: int) -> None:
    with engine(preset, store, window) as rs:
        for m in messages:
            rs.add(m)


def measure(preset: str, store: Store, plain: bool, opens: int, window: int
            ) -> tuple[float, int, int, tuple[Any, ...]]:
    """(median seconds per open, rows read per open, records read per open, what it opened)."""
    times: list[float] = []
    seen: tuple[Any, ...] = ()
    rows = records = 0
    for _ in range(opens):
        spy = Spy(store, plain)
        gc.collect()  # as `timeit` does: a full collection of the replay's objects is not the open's cost
        gc.disable()
        try:
            t = time.perf_counter()
            rs = engine(preset, spy, window)
            times.append(time.perf_counter() - t)
        finally:
            gc.enable()
        rows, records = spy.rows, spy.records
        seen = (rs.turn, [f"{m.role}:{m.content}" for m in rs.context()], rs.summary, len(rs.history))
        rs.close()
        del rs  # freed here, not when the next open's result is assigned (inside its timing)
    return statistics.median(times), rows, records, seen


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--opens", type=int, default=7, help="opens per cell (the median is shown)")
    ap.add_argument("--stores", nargs="+", choices=("memory", "sqlite"), default=["memory", "sqlite"])
    ap.add_argument("--preset", default="since-last")
    ap.add_argument("--window", type=int, default=8000)
    args = ap.parse_args(argv)
    stream = mixed(max(args.sizes))
    print(f"open an engine ({args.preset}, window {args.window}) on a stored mixed conversation; "
          f"median of {args.opens} opens")
    print(f"{'store':<7} {'messages':>8} {'summaries':>9} | {'full read':>9} {'rows':>7} {'recs':>5} | "
          f"{'window':>8} {'rows':>5} {'recs':>4} | {'faster':>7}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores:
            for n in args.sizes:
                store: Store = MemoryStore() if kind == "memory" else \
                    SQLiteStore(Path(tmp) / f"open-{n}.db", synchronous="NORMAL")
                fill(args.preset, store, stream[:n], args.window)
                before, rows_b, recs_b, seen_b = measure(args.preset, store, True, args.opens, args.window)
                after, rows_a, recs_a, seen_a = measure(args.preset, store, False, args.opens, args.window)
                same = seen_a == seen_b
                ok &= same
                print(f"{kind:<7} {n:>8} {seen_a[3]:>9} | {before * 1e3:>7.1f}ms {rows_b:>7} {recs_b:>5} | "
                      f"{after * 1e3:>6.2f}ms {rows_a:>5} {recs_a:>4} | {before / after:>6.0f}x"
                      f"{'' if same else '  DIFFERENT'}", flush=True)
                store.close()
    print(f"same engine both ways: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
