"""How `v3_store.db` was written: by rollsum at schema version 3 (commit cf16e52, before stores
kept their totals), for the upgrade test in `tests/rollsum/store/test_store_totals.py`.

    git archive cf16e52 rollsum | tar -x -C /tmp/rollsum-v3
    .venv/bin/python tests/rollsum/store/data/make_v3_store.py /tmp/rollsum-v3 tests/rollsum/store/data/v3_store.db

Three conversations of a system message and 160 messages (chat, tool calls and results) at a
context window of 2000: "a" since-last (summaries), "b" evict-window (pending rows), "c"
truncate (dropped rows).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any


def message(i: int) -> Any:
    from rollsum import Message

    if i % 7 == 3:
        return Message("tool", f"result {i}: " + "line of output " * (5 + i % 11), name="grep",
                       meta={"tool_call_id": f"t{i}"})
    if i % 7 == 2:
        return Message("assistant", f"calling grep for item {i}", meta={"tool_calls": [f"t{i + 1}"]})
    return Message("user" if i % 2 else "assistant",
                   f"Message {i} about the cabin budget and Omar's review number {i * 7}. " * (1 + i % 3))


def main(old_rollsum: str, path: str) -> None:
    sys.path.insert(0, old_rollsum)
    from rollsum import Message, RollingSummarizer
    from rollsum.store import SQLiteStore
    from rollsum.store.sqlite import SCHEMA_VERSION

    assert SCHEMA_VERSION == 3, f"expected rollsum at schema version 3, got {SCHEMA_VERSION}"
    store = SQLiteStore(path, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    now = [datetime(2026, 1, 1, tzinfo=UTC)]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    for cid, preset in (("a", "since-last"), ("b", "evict-window"), ("c", "truncate")):
        rs = RollingSummarizer.from_preset(preset, context_window=2000, store=store, conversation_id=cid,
                                           clock=clock)
        rs.add(Message("system", "You are terse."))
        for i in range(160):
            rs.add(message(i))
        rs.close()
    conn: Any = store._conn  # a one-off script: compact the file before it is committed
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
