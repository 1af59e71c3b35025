"""An in-process store: the default for replays, tests and benchmarks.

It enforces exactly the rules `SQLiteStore` enforces (the contract tests run against both), so
a replay that passes on memory cannot fail on disk for a reason other than I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rollsum.errors import ConfigError
from rollsum.store.base import (
    COVERABLE_STATES,
    StoredMessage,
    check_covered_ids,
    check_settable,
    owner_error,
    uncoverable_error,
)
from rollsum.types import Message, MessageState, SummaryRecord


class MemoryStore:
    """Dict-backed `Store`. O(1) appends and state changes so replays stay linear."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: dict[str, list[StoredMessage]] = {}
        self._index: dict[str, dict[str, int]] = {}
        self._summaries: dict[str, list[SummaryRecord]] = {}
        self._summary_ids: dict[str, str] = {}  # summary id -> conversation id (ids are global)
        self._owners: dict[str, str] = {}  # conversation id -> the engine that writes it
        self._cadence: dict[str, dict[str, Any]] = {}

    def add_message(self, conversation_id: str, seq: int, message: Message) -> None:
        if message.id is None:
            raise ConfigError("a stored message needs an id")
        with self._lock:
            rows = self._messages.setdefault(conversation_id, [])
            index = self._index.setdefault(conversation_id, {})
            if message.id in index:
                raise ConfigError(f"duplicate message id {message.id!r} in {conversation_id!r}")
            index[message.id] = len(rows)
            rows.append(StoredMessage(conversation_id, seq, message))

    def commit_summary(self, record: SummaryRecord, covered_ids: Sequence[str]) -> None:
        check_covered_ids(record, covered_ids)
        cid = record.conversation_id
        with self._lock:
            if record.id in self._summary_ids:
                raise ConfigError(f"summary id {record.id!r} already exists; nothing was committed")
            rows = self._messages.get(cid, [])
            index = self._index.get(cid, {})
            problems: list[tuple[str, str | None]] = []
            for mid in covered_ids:
                pos = index.get(mid)
                if pos is None:
                    problems.append((mid, None))
                elif rows[pos].state not in COVERABLE_STATES:
                    problems.append((mid, rows[pos].state))
            if problems:
                raise uncoverable_error(record, problems)
            sid = record.id
            for mid in covered_ids:
                pos = index[mid]
                row = rows[pos]
                # the constructor, not `dataclasses.replace`: this runs once per covered message
                # and `replace` (field introspection per call) was ~10 % of a replay's time
                rows[pos] = StoredMessage(row.conversation_id, row.seq, row.message, "covered", sid, None)
            self._summaries.setdefault(cid, []).append(record)
            self._summary_ids[record.id] = cid

    def set_state(self, conversation_id: str, ids: Sequence[str], state: MessageState,
                  reason: str | None = None) -> None:
        check_settable(state)
        with self._lock:
            rows = self._messages.get(conversation_id, [])
            index = self._index.get(conversation_id, {})
            unknown = [mid for mid in ids if mid not in index]
            if unknown:
                raise ConfigError(f"set_state: unknown message ids in {conversation_id!r}: "
                                  f"{unknown[:5]}; nothing was changed")
            covered = [mid for mid in ids if rows[index[mid]].state == "covered"]
            if covered:
                raise ConfigError(f"set_state: messages {covered[:5]} are covered by a summary "
                                  "and cannot change state; nothing was changed")
            for mid in ids:
                pos = index[mid]
                rows[pos] = replace(rows[pos], state=state, reason=reason)

    def messages(self, conversation_id: str, state: MessageState | None = None
                 ) -> list[StoredMessage]:
        with self._lock:
            rows = list(self._messages.get(conversation_id, []))
        rows.sort(key=lambda r: r.seq)  # stable: ties keep insertion order, as in SQLite
        return rows if state is None else [r for r in rows if r.state == state]

    def summaries(self, conversation_id: str) -> list[SummaryRecord]:
        with self._lock:
            recs = list(self._summaries.get(conversation_id, []))
        return sorted(recs, key=lambda r: (r.created_at, r.seq))

    def latest_summary(self, conversation_id: str) -> SummaryRecord | None:
        recs = self.summaries(conversation_id)
        return recs[-1] if recs else None

    def delete_conversation(self, conversation_id: str) -> None:
        with self._lock:
            self._messages.pop(conversation_id, None)
            self._index.pop(conversation_id, None)
            for rec in self._summaries.pop(conversation_id, []):
                self._summary_ids.pop(rec.id, None)
            self._cadence.pop(conversation_id, None)

    def save_cadence(self, conversation_id: str, cadence: Mapping[str, Any]) -> None:
        with self._lock:
            self._cadence[conversation_id] = dict(cadence)

    def cadence(self, conversation_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._cadence.get(conversation_id)
            return dict(found) if found is not None else None

    def conversations(self) -> list[str]:
        with self._lock:
            return sorted(set(self._messages) | set(self._summaries))

    def claim(self, conversation_id: str, owner: str, *, takeover: bool = False) -> None:
        with self._lock:
            holder = self._owners.get(conversation_id)
            if holder is not None and holder != owner and not takeover:
                raise owner_error("memory store", conversation_id, f"engine {holder} in this process")
            self._owners[conversation_id] = owner

    def release(self, conversation_id: str, owner: str) -> None:
        with self._lock:
            if self._owners.get(conversation_id) == owner:
                del self._owners[conversation_id]

    def close(self) -> None:
        with self._lock:
            self._owners.clear()
