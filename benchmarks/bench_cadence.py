"""Summarizer cadence per windowed preset (issue #19, items 5 and 6): summary attempts per 100
messages, in one process and with the engine rebuilt from SQLite for every message (the usual
web pattern), on plain synthetic chat and on a hostile stream, with a model that works, one
that always fails, and one that answers with text three times the window.

Attempts are counted from the engine's events (one ``summary`` or ``failure`` event per
attempt, a guard compaction included); model calls are the fake model's own count (a 5xx is
retried once, so a dead model costs two calls per attempt). Messages larger than the budget
are also counted (``oversized``: the ``oversized`` events, docs/seeds.md).

Target: every cell <= 10 attempts per 100 messages.

    .venv/bin/python benchmarks/bench_cadence.py [--messages 200] [--windows 2000 4000]
                                                [--modes inproc rebuilt] [--models ok dead verbose]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollsum import Message, RollingSummarizer
from rollsum.models.fake import FakeModel
from rollsum.store.sqlite import SQLiteStore
from rollsum.types import SummaryEvent

WINDOWED = ("count-and-tokens", "since-last", "budget-rule-based", "token-ratio", "evict-window")
MAX_PER_100 = 10.0


def plain(n: int, seed: int = 3) -> list[Message]:
    from rollsum_evals.data.synth import make_conversation  # the harness's generator: benchmark only

    return list(make_conversation("chat", n_messages=n, seed=seed).messages)


def hostile(n: int, seed: int = 11) -> list[Message]:
    """Synthetic chat where ~3 % of messages are very large (up to ~30k tokens) and ~5 % are
    an assistant tool call followed by a huge JSON tool result."""
    rng = random.Random(seed)
    base = plain(n, seed)
    out: list[Message] = []
    calls = 0
    for m in base:
        if len(out) >= n:
            break
        r = rng.random()
        if r < 0.03:
            words = rng.randint(2_000, 30_000)
            out.append(Message(m.role, " ".join(f"word{rng.randint(0, 999)}" for _ in range(words))))
        elif r < 0.08 and len(out) + 2 <= n:
            rows = [{"id": k, "name": f"item{k}", "value": rng.random(), "tags": ["a", "b", "c"]}
                    for k in range(rng.randint(200, 3_000))]
            call = f"call_{calls}"
            calls += 1
            out.append(Message("assistant", "Fetching the records.", meta={"tool_calls": [call]}))
            out.append(Message("tool", json.dumps(rows), name="fetch", meta={"tool_call_id": call}))
        else:
            out.append(m)
    return out[:n]


def model_for(kind: str, window: int) -> FakeModel | None:
    if kind == "ok":
        return None  # the preset's offline (extractive) summarizer
    if kind == "dead":
        return FakeModel("extractive", fail_rate=1.0, fail_kind="500", sleep=lambda s: None)
    # an answer three times the window, every time
    return FakeModel("scripted", script=[" ".join(["verbose"] * (3 * window))], sleep=lambda s: None)


def build(preset: str, model: FakeModel | None, window: int, **kw: Any) -> RollingSummarizer:
    return RollingSummarizer.from_preset(preset, model, context_window=window, sleep=lambda s: None, **kw)


def replay(preset: str, msgs: Sequence[Message], window: int, kind: str, mode: str,
           tmp: Path) -> tuple[Counter[str], int]:
    """Event kinds counted over the stream, and the model's calls."""
    model = model_for(kind, window)
    seen: Counter[str] = Counter()

    def count(ev: SummaryEvent) -> None:
        seen[ev.kind] += 1

    if mode == "inproc":
        rs = build(preset, model, window, on_event=count)
        for m in msgs:
            rs.add(m)
    else:
        path = tmp / f"{preset}-{window}-{kind}.db"
        path.unlink(missing_ok=True)
        with SQLiteStore(path, synchronous="NORMAL") as store:
            for m in msgs:
                with build(preset, model, window, on_event=count, store=store, conversation_id="c") as rs:
                    rs.add(m)
    return seen, model.calls if model is not None else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--windows", type=int, nargs="+", default=[2_000, 4_000])
    ap.add_argument("--modes", nargs="+", default=["inproc", "rebuilt"], choices=["inproc", "rebuilt"])
    ap.add_argument("--models", nargs="+", default=["ok", "dead", "verbose"], choices=["ok", "dead", "verbose"])
    ap.add_argument("--streams", nargs="+", default=["plain", "hostile"], choices=["plain", "hostile"])
    ap.add_argument("--presets", nargs="+", default=list(WINDOWED))
    args = ap.parse_args(argv)
    streams = {s: (plain if s == "plain" else hostile)(args.messages) for s in args.streams}
    print(f"{'stream':<9}{'mode':<9}{'model':<9}{'preset':<19}{'window':>7}{'attempts/100':>14}"
          f"{'model calls':>13}{'oversized':>11}  target")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for s, msgs in streams.items():
            for mode in args.modes:
                for kind in args.models:
                    for preset in args.presets:
                        for window in args.windows:
                            seen, calls = replay(preset, msgs, window, kind, mode, Path(tmp))
                            per100 = 100 * (seen["summary"] + seen["failure"]) / len(msgs)
                            good = per100 <= MAX_PER_100
                            ok = ok and good
                            print(f"{s:<9}{mode:<9}{kind:<9}{preset:<19}{window:>7}{per100:>14.1f}"
                                  f"{calls:>13}{seen['oversized']:>11}  {'ok' if good else 'MISSED'}",
                                  flush=True)
    print(f"\ntarget: <= {MAX_PER_100:g} summary attempts per 100 messages in every cell: "
          f"{'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
