"""A resumed engine against an uninterrupted one: the same summaries and context, at what cost.

For each preset, one mixed stream (chat, tool calls and results, planted facts) is replayed
three ways over one store each: one long-lived engine; an engine rebuilt from the store after
every `--every` messages (a restarting worker); and one rebuilt after every message (a web
server that builds the engine per request). Printed per preset and mode: whether every summary
text and the final context equal the long-lived engine's (the invariant: a restart changes
nothing), CPU µs per message, and the first summary after the last restart (the extractive
summarizer counts the covered messages again then, docs/summarizers.md, "State and determinism").

Target: "same" in every row.

    .venv/bin/python benchmarks/bench_restart.py [--messages 2000] [--every 97] [--window 8000]
                                                 [--presets since-last clear+since-last ...] [--store memory|sqlite]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rollsum import Message, RollingSummarizer
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.base import Store

PRESETS = ("since-last", "count-and-tokens", "evict-window", "budget-rule-based", "token-ratio",
           "clear+since-last", "clear-tool-results")


def mixed(n: int, seed: int = 3) -> list[Message]:
    from rollsum_evals.data.synth import make_conversation  # the harness's generator: benchmark only

    return list(make_conversation("mixed", n_messages=n, seed=seed).messages)


def replay(preset: str, messages: Sequence[Message], store: Store, every: int | None,
           window: int) -> tuple[list[str], list[str], float, float | None]:
    """(summary texts, final context, CPU seconds, CPU seconds of the last restart's first summary)."""
    def engine() -> RollingSummarizer:
        return RollingSummarizer.from_preset(preset, context_window=window, store=store, conversation_id="c")

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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--every", type=int, default=97, help="messages between restarts of the restarting worker")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    args = ap.parse_args(argv)
    messages = mixed(args.messages)
    print(f"mixed stream, {len(messages)} messages, window {args.window}, {args.store} store")
    print(f"{'preset':<20} {'mode':<16} {'summaries':>9} {'same':>5} {'µs/msg':>8} {'1st after restart ms':>21}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        def store(name: str) -> Store:
            return MemoryStore() if args.store == "memory" else SQLiteStore(Path(tmp) / f"{name}.db")

        for preset in args.presets:
            modes: list[tuple[str, int | None]] = [("long-lived", None), (f"every {args.every}", args.every),
                                                   ("every message", 1)]
            base: tuple[list[str], list[str]] | None = None
            for mode, every in modes:
                s = store(f"{preset}-{every}")
                texts, context, secs, first = replay(preset, messages, s, every, args.window)
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


if __name__ == "__main__":
    sys.exit(main())

