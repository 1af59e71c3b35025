"""A resumed engine against an uninterrupted one: the same summaries and context, at what cost.

For each preset, one mixed stream (chat, tool calls and results, planted facts) is replayed
four ways over one store each: one long-lived engine; an engine rebuilt from the store after
every `--every` messages (a restarting worker); one rebuilt after every message (a web server
that builds the engine per request); and one rebuilt after every message around one summarizer
the process keeps (``summarizer=rollsum.presets.summarizer_for(...)``: the extractive
summarizer's statistics stay in memory, nothing is counted again). Printed per preset and mode: whether every summary
text and the final context equal the long-lived engine's (the invariant: a restart changes
nothing), CPU µs per message, and the first summary after the last restart (the extractive
summarizer counts the covered messages again then, docs/summarizers.md, "State and determinism").

Target: "same" in every row.

`--late N` times a long conversation instead: its messages replayed by one engine, then each of
the last N by an engine built for it, with a new summarizer each time and with one kept
summarizer (µs per message over those N, the median summary), on `--store`.

    .venv/bin/python benchmarks/bench_restart.py [--messages 2000] [--every 97] [--window 8000]
                                                 [--presets since-last clear+since-last ...] [--store memory|sqlite]
                                                 [--late 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rollsum import Message, RollingSummarizer, presets
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.base import Store

PRESETS = ("since-last", "count-and-tokens", "evict-window", "budget-rule-based", "token-ratio",
           "clear+since-last", "clear-tool-results")


def mixed(n: int, seed: int = 3) -> list[Message]:
    from rollsum_evals.data.synth import make_conversation  # the harness's generator: benchmark only

    return list(make_conversation("mixed", n_messages=n, seed=seed).messages)


def replay(preset: str, messages: Sequence[Message], store: Store, every: int | None,
           window: int, shared: bool = False) -> tuple[list[str], list[str], float, float | None]:
    """(summary texts, final context, CPU seconds, CPU seconds of the last restart's first summary).
    `shared`: every engine gets the one summarizer made here."""
    kept = {"summarizer": presets.summarizer_for(preset, context_window=window)} if shared else {}

    def engine() -> RollingSummarizer:
        return RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c",
                                             **kept)

    rs = engine()
    first: float | None = None
    fresh = False
    t0 = time.process_time()
    for i, m in enumerate(messages, 1):
        t = time.process_time()
        ev = rs.add(m)
        if fresh and ev is not None and ev.kind == "summary":
            first, fresh = time.process_time() - t, False
        if every and i % every == 0 and i < len(messages):
            rs.close()
            rs = engine()
            fresh = True
    secs = time.process_time() - t0
    texts = [r.text for r in rs.history]
    context = [f"{m.role}:{m.content}" for m in rs.context()]
    rs.close()
    return texts, context, secs, first


def late(preset: str, messages: Sequence[Message], store: Store, n: int, window: int,
         kept: bool) -> tuple[list[str], float, float]:
    """(summary texts, CPU µs per message over the last `n`, median ms of their summaries): every
    message before them added by one engine, each of the last `n` by an engine built for it."""
    summarizer = presets.summarizer_for(preset, context_window=window)
    rs = RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c",
                                       summarizer=summarizer)
    for m in messages[:-n]:
        rs.add(m)
    rs.close()
    made: list[float] = []
    t0 = time.process_time()
    for m in messages[-n:]:
        rs = RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c",
                                           **({"summarizer": summarizer} if kept else {}))
        t = time.process_time()
        ev = rs.add(m)
        if ev is not None and ev.kind == "summary":
            made.append((time.process_time() - t) * 1000)
        rs.close()
    per = (time.process_time() - t0) / n * 1e6
    rs = RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c")
    texts = [r.text for r in rs.history]
    rs.close()
    made.sort()
    return texts, per, made[len(made) // 2] if made else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--every", type=int, default=97, help="messages between restarts of the restarting worker")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    ap.add_argument("--late", type=int, default=0, metavar="N",
                    help="time only the last N messages, each with an engine built for it (new vs kept summarizer)")
    args = ap.parse_args(argv)
    messages = mixed(args.messages)
    if args.late:
        return _late_table(args, messages)
    print(f"mixed stream, {len(messages)} messages, window {args.window}, {args.store} store")
    print(f"{'preset':<20} {'mode':<16} {'summaries':>9} {'same':>5} {'µs/msg':>8} {'1st after restart ms':>21}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        def store(name: str) -> Store:
            return MemoryStore() if args.store == "memory" else SQLiteStore(Path(tmp) / f"{name}.db")

        for preset in args.presets:
            modes: list[tuple[str, int | None, bool]] = [
                ("long-lived", None, False), (f"every {args.every}", args.every, False),
                ("every message", 1, False), ("every msg, shared", 1, True)]
            base: tuple[list[str], list[str]] | None = None
            for mode, every, shared in modes:
                s = store(f"{preset}-{every}-{shared}")
                texts, context, secs, first = replay(preset, messages, s, every, args.window, shared)
                getattr(s, "close", lambda: None)()
                same = base is None or (texts, context) == base
                ok &= same
                if base is None:
                    base = (texts, context)
                shown = "-" if first is None else f"{first * 1000:.1f}"
                print(f"{preset:<20} {mode:<16} {len(texts):>9} {'yes' if same else 'NO':>5} "
                      f"{secs / len(messages) * 1e6:>8.1f} {shown:>21}", flush=True)
    print(f"target: {'met' if ok else 'MISSED'} (every restart mode gives the long-lived engine's "
          "summaries and context)")
    return 0 if ok else 1


def _late_table(args: argparse.Namespace, messages: Sequence[Message]) -> int:
    n = min(args.late, len(messages))
    print(f"mixed stream, {len(messages)} messages, the last {n} each by an engine built for it, "
          f"window {args.window}, {args.store} store")
    print(f"{'preset':<20} {'summarizer':<12} {'µs/msg':>8} {'summary ms':>11} {'same':>5}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for preset in args.presets:
            base: list[str] | None = None
            for kept in (False, True):
                path = Path(tmp) / f"{preset}-{kept}.db"
                store: Store = MemoryStore() if args.store == "memory" else SQLiteStore(path)
                texts, per, made = late(preset, messages, store, n, args.window, kept)
                getattr(store, "close", lambda: None)()
                same = base is None or texts == base
                ok &= same
                base = texts if base is None else base
                print(f"{preset:<20} {'kept' if kept else 'new':<12} {per:>8.0f} {made:>11.1f} "
                      f"{'yes' if same else 'NO':>5}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

