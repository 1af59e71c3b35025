"""Opening engines on stored conversations: a spy store that counts what an open reads, a
stream and a clock that two replays share, and the state two opened engines must agree on
(tests/rollsum/test_open_window.py, tests/rollsum/store/test_store_totals.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rollsum import Message, RollingSummarizer
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.base import Store, StoredMessage
from rollsum.types import SummaryRecord

WINDOWED = frozenset({"add_counted", "totals", "window_rows", "set_token_total"})


class Spy:
    """A store seen through a counter of what is read; `plain` hides `WindowedStore`'s methods
    (a store written against `Store` alone)."""

    def __init__(self, store: Store, plain: bool = False) -> None:
        self.store, self.plain = store, plain
        self.rows = self.records = self.full_reads = self.covered_reads = 0

    def __getattr__(self, name: str) -> Any:
        if self.plain and name in WINDOWED:
            raise AttributeError(name)
        return getattr(self.store, name)

    def messages(self, conversation_id: str, state: Any = None) -> list[StoredMessage]:
        found = self.store.messages(conversation_id, state)
        self.rows += len(found)
        self.full_reads += state is None
        self.covered_reads += state == "covered"  # what a new summarizer's first summary counts again
        return found

    def window_rows(self, conversation_id: str) -> list[StoredMessage]:
        if self.plain:
            raise AttributeError("window_rows")
        found: list[StoredMessage] = self.store.window_rows(conversation_id)  # type: ignore[attr-defined]
        self.rows += len(found)
        return found

    def summaries(self, conversation_id: str) -> list[SummaryRecord]:
        found = self.store.summaries(conversation_id)
        self.records += len(found)
        return found

    def latest_summary(self, conversation_id: str) -> SummaryRecord | None:
        found = self.store.latest_summary(conversation_id)
        self.records += found is not None
        return found


def stream(n: int, start: int = 0) -> Iterator[Message]:
    """Chat with tool calls and results (cleared, paired) and a system message up front."""
    if start == 0:
        yield Message("system", "You are terse.")
    for i in range(start, start + n):
        if i % 7 == 3:
            yield Message("tool", f"result {i}: " + "line of output " * (5 + i % 11), name="grep",
                          meta={"tool_call_id": f"t{i}"})
        elif i % 7 == 2:
            yield Message("assistant", f"calling grep for item {i}", meta={"tool_calls": [f"t{i + 1}"]})
        else:
            yield Message("user" if i % 2 else "assistant",
                          f"Message {i} about the cabin budget and Omar's review number {i * 7}. " * (1 + i % 3))


def ticking() -> Callable[[], datetime]:
    """A clock that moves a second per call: two replays stamp their records alike."""
    now = [datetime(2026, 1, 1, tzinfo=UTC)]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]
    return clock


def make_store(kind: str, tmp_path: Path, name: str = "s") -> Store:
    return MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / f"{name}.db", synchronous="NORMAL")


def open_engine(preset: str, store: Any, clock: Callable[[], datetime] | None = None, conversation_id: str = "c",
                **kw: Any) -> RollingSummarizer:
    return RollingSummarizer.from_preset(preset, context_window=2000, store=store, conversation_id=conversation_id,
                                         clock=clock or ticking(), **kw)


def fill(preset: str, store: Store, n: int, clock: Callable[[], datetime], **kw: Any) -> None:
    with open_engine(preset, store, clock, **kw) as rs:
        for m in stream(n):
            rs.add(m)


def state(rs: RollingSummarizer) -> dict[str, Any]:
    """Everything an opened engine holds that decides what it does next."""
    w = rs._window
    window = {name: getattr(w, name) for name in ("pinned", "pinned_n", "pinned_tokens", "active", "active_seq",
                                                  "tokens", "active_tokens", "pending", "pending_seq", "clips",
                                                  "cleared", "omitted", "summary", "summary_tokens",
                                                  "summary_hidden")}
    policy = rs._state(0)
    return {"window": window, "turn": rs.turn, "added_tokens": rs._added_tokens, "dropped": rs._dropped,
            "cadence": dataclasses.asdict(rs._c), "saved": rs._saved_key, "summary": rs.summary,
            "chain_length": policy.chain_length, "policy": dataclasses.asdict(policy) | {"messages": None},
            "context": rs.context(), "history": rs.history}
