"""An in-process store: the default for replays, tests and benchmarks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

from rollsum.errors import ConfigError
from rollsum.store.base import StoredMessage
from rollsum.types import Message, MessageState, SummaryRecord


class MemoryStore:
    """Dict-backed `Store`. O(1) appends and state changes so replays stay linear."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: dict[str, list[StoredMessage]] = {}
        self._index: dict[str, dict[str, int]] = {}
        self._summaries: dict[str, list[SummaryRecord]] = {}

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
        cid = record.conversation_id
        with self._lock:
            rows = self._messages.get(cid, [])
            index = self._index.get(cid, {})
            missing = [i for i in covered_ids if i not in index]
            if missing:
                raise ConfigError(f"summary {record.id} covers unknown messages {missing[:3]}")
            for mid in covered_ids:
                pos = index[mid]
                rows[pos] = replace(rows[pos], state="covered", summary_id=record.id, reason=None)
            self._summaries.setdefault(cid, []).append(record)

    def set_state(self, conversation_id: str, ids: Sequence[str], state: MessageState,
                  reason: str | None = None) -> None:
        with self._lock:
            rows = self._messages.get(conversation_id, [])
            index = self._index.get(conversation_id, {})
            for mid in ids:
                pos = index[mid]
                rows[pos] = replace(rows[pos], state=state, reason=reason)

    def messages(self, conversation_id: str, state: MessageState | None = None
                 ) -> list[StoredMessage]:
        with self._lock:
            rows = list(self._messages.get(conversation_id, []))
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
            self._summaries.pop(conversation_id, None)

    def conversations(self) -> list[str]:
        with self._lock:
            return sorted(self._messages)

    def close(self) -> None:
        return None
