"""The totals and window rows a store keeps so an engine opens in O(window) (`WindowedStore`):
exact after every kind of write, in both stores; kept atomically with the rows they count in
SQLite (a process killed between the writes leaves neither); and a version 3 database, written
by rollsum before they were kept, upgraded in place and resumed exactly."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rollsum.store import SQLiteStore, Store, StoreTotals, WindowedStore
from rollsum.store.sqlite import SCHEMA_VERSION
from rollsum.types import Message, SummaryRecord
from tests.support.opening import Spy, open_engine, state, stream, ticking

REPO = Path(__file__).resolve().parents[3]
V3 = Path(__file__).parent / "data" / "v3_store.db"
"""Written by rollsum at schema version 3 (commit cf16e52, by `data/make_v3_store.py`):
conversations "a" (since-last), "b" (evict-window: pending rows) and "c" (truncate: dropped
rows), 160 messages and a system message each, a context window of 2000."""


def msg(i: int, role: str = "user") -> Message:
    return Message(role, f"content {i}", id=f"m{i}")  # type: ignore[arg-type]


def rec(rid: str, covered: tuple[str, ...], seq: int = 0) -> SummaryRecord:
    return SummaryRecord(id=rid, conversation_id="c1", text=f"summary {rid}", covered_ids=covered,
                         messages_covered=len(covered), created_at=f"2024-01-01T00:00:0{seq}", seq=seq)


def counted(store: Store) -> StoreTotals:
    """The totals as every row says them (what the store must keep without reading them)."""
    rows = store.messages("c1")
    found = store.totals("c1")  # type: ignore[attr-defined]
    assert found is not None
    return StoreTotals(rows=len(rows), next_seq=max((r.seq + 1 for r in rows), default=0),
                       dropped=sum(r.state == "dropped" for r in rows), summaries=len(store.summaries("c1")),
                       tokens=found.tokens, counter=found.counter)


def test_both_stores_keep_the_windowed_methods(store: Store) -> None:
    assert isinstance(store, WindowedStore)


def test_totals_follow_every_write(store: Store) -> None:
    s: WindowedStore = store  # type: ignore[assignment]
    assert s.totals("c1") is None
    for i in range(6):
        s.add_counted("c1", i, msg(i), 10 + i, "k")
    assert s.totals("c1") == counted(store) == StoreTotals(6, 6, 0, 0, 75, "k")
    store.set_state("c1", ["m1", "m2"], "dropped", "policy")
    store.set_state("c1", ["m3"], "pending")
    assert s.totals("c1") == counted(store) and counted(store).dropped == 2
    store.set_state("c1", ["m2"], "active")  # a dropped message may come back
    store.commit_summary(rec("s1", ("m0", "m3")), ["m0", "m3"])
    assert s.totals("c1") == counted(store) == StoreTotals(6, 6, 1, 1, 75, "k")
    assert s.window_rows("c1") == [r for r in store.messages("c1") if r.state in ("active", "pending")]
    s.add_counted("c1", 40, msg(40), 1, "k")  # a sequence number past the next one
    assert s.totals("c1") == StoreTotals(7, 41, 1, 1, 76, "k")


def test_a_count_from_another_counter_or_none_makes_the_total_unknown(store: Store) -> None:
    s: WindowedStore = store  # type: ignore[assignment]
    s.add_counted("c1", 0, msg(0), 5, "k")
    s.add_counted("c1", 1, msg(1), 5, "other")
    found = s.totals("c1")
    assert found is not None and (found.tokens, found.counter) == (None, None)
    s.add_counted("c1", 2, msg(2), 5, "k")  # stays unknown: only a recount makes it known again
    assert s.totals("c1") == StoreTotals(3, 3, 0, 0, None, None)
    assert not s.set_token_total("c1", "k", 15, rows=2)  # counted before a row came: refused
    assert s.set_token_total("c1", "k", 15, rows=3)
    s.add_counted("c1", 3, msg(3), 5, "k")
    assert s.totals("c1") == StoreTotals(4, 4, 0, 0, 20, "k")
    store.add_message("c1", 4, msg(4))  # stored without a count
    assert s.totals("c1") == StoreTotals(5, 5, 0, 0, None, None)
    store.delete_conversation("c1")
    assert s.totals("c1") is None


def _crash(db: Path, trigger: str, action: str) -> None:
    """Run `action` on the store in a child process that dies (os._exit, no cleanup) when
    `trigger` fires inside its transaction."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from rollsum.store.sqlite import SQLiteStore
        from rollsum.types import Message
        s = SQLiteStore({str(db)!r})
        s._conn.create_function("crash", 0, lambda: os._exit(17))
        s._conn.execute({trigger!r})
        {action}
        sys.exit(0)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 17, proc.stderr


def test_a_process_killed_while_storing_leaves_neither_the_rows_nor_their_counts(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with SQLiteStore(db) as s:
        for i in range(4):
            s.add_counted("c1", i, msg(i), 10, "k")
    # dies after the message was counted and written, before the commit
    _crash(db, "CREATE TEMP TRIGGER die AFTER INSERT ON main.messages BEGIN SELECT crash(); END",
           "s.add_counted('c1', 4, Message('user', 'x', id='m4'), 10, 'k')")
    with SQLiteStore(db) as s:
        assert len(s.messages("c1")) == 4
        assert s.totals("c1") == counted(s) == StoreTotals(4, 4, 0, 0, 40, "k")
    # dies after the first of two messages was dropped and counted
    _crash(db, "CREATE TEMP TRIGGER die AFTER UPDATE OF dropped ON main.conversation_totals "
               "BEGIN SELECT crash(); END",
           "s.set_state('c1', ['m0', 'm1'], 'dropped')")
    with SQLiteStore(db) as s:
        assert [r.state for r in s.messages("c1")] == ["active"] * 4
        assert s.totals("c1") == counted(s) == StoreTotals(4, 4, 0, 0, 40, "k")
        s.add_counted("c1", 4, msg(4), 10, "k")
        assert s.totals("c1") == StoreTotals(5, 5, 0, 0, 50, "k")


def _schema(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


@pytest.mark.parametrize("cid, preset", [("a", "since-last"), ("b", "evict-window"), ("c", "truncate")])
def test_a_version_3_store_is_upgraded_and_resumes_exactly(cid: str, preset: str, tmp_path: Path) -> None:
    """Two copies of a file written at version 3: one upgraded and opened from its window
    (after the first open counted its tokens), one through a `Store`-only view from every
    row; the same engine, and the same summaries and context after 60 more messages."""
    assert SCHEMA_VERSION == 4 and _schema(V3) == 3
    fast_db, full_db = tmp_path / "fast.db", tmp_path / "full.db"
    shutil.copy(V3, fast_db)
    shutil.copy(V3, full_db)
    fast_store, full_store = SQLiteStore(fast_db), SQLiteStore(full_db)
    assert _schema(fast_db) == 4
    rows = fast_store.messages(cid)
    assert fast_store.totals(cid) == StoreTotals(
        rows=len(rows), next_seq=len(rows), dropped=sum(r.state == "dropped" for r in rows),
        summaries=len(fast_store.summaries(cid)), tokens=None, counter=None)
    assert 0 < len(fast_store.window_rows(cid)) < len(rows)

    first = Spy(fast_store)
    open_engine(preset, first, ticking(), conversation_id=cid).close()  # counts the tokens, once
    assert first.full_reads == 1
    fast_spy, full_spy = Spy(fast_store), Spy(full_store, plain=True)
    fast_clock, full_clock = ticking(), ticking()
    fast = open_engine(preset, fast_spy, fast_clock, conversation_id=cid)
    full = open_engine(preset, full_spy, full_clock, conversation_id=cid)
    assert fast_spy.full_reads == 0 and full_spy.full_reads == 1
    assert state(fast) == state(full)
    for m in stream(60, start=200):
        fast.add(m)
        full.add(m)
    assert state(fast) == state(full)
    fast.close()
    full.close()
    fast_store.close()
    full_store.close()


def _old_writer(db: Path, cid: str, messages: list[tuple[int, Message]]) -> None:
    """What rollsum before version 4 writes (`add_message`'s two statements), through its own
    connection: a process opened before the file was upgraded keeps writing this way."""
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        for seq, m in messages:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR IGNORE INTO conversations (id, created_at) VALUES (?, '2026-01-01')", (cid,))
            conn.execute("INSERT INTO messages (conversation_id, seq, id, role, content, name, created_at, meta) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, '{}')", (cid, seq, m.id, m.role, m.content, m.name,
                                                                  m.created_at))
            conn.execute("COMMIT")


def test_rows_an_older_rollsum_writes_after_the_upgrade_are_counted(tmp_path: Path) -> None:
    """A rollsum that predates the totals, still writing the file through a connection it
    opened before the upgrade: its rows are counted (triggers), its uncounted tokens make the
    total unknown (the next open counts again), and a conversation it started has no totals
    (the next open reads every row): never an engine that misses a row."""
    db = tmp_path / "store.db"
    store = SQLiteStore(db, synchronous="NORMAL")
    with open_engine("since-last", store, ticking()) as rs:
        for m in stream(80):
            rs.add(m)
        turn = rs.turn
    _old_writer(db, "c", [(turn + k, m.with_id(f"c/{turn + k}")) for k, m in enumerate(stream(3, start=80))])
    _old_writer(db, "d", [(k, m.with_id(f"d/{k}")) for k, m in enumerate(stream(5))])
    for cid, rows in (("c", turn + 3), ("d", 6)):
        totals = store.totals(cid)
        assert totals is None if cid == "d" else (totals is not None and totals.rows == rows and totals.tokens is None)
        fast, full = Spy(store), Spy(store, plain=True)
        a = open_engine("since-last", fast, conversation_id=cid)
        a.close()
        b = open_engine("since-last", full, conversation_id=cid)
        b.close()
        assert fast.full_reads == 1 and state(a) == state(b) and a.turn == rows
        with open_engine("since-last", store, conversation_id=cid) as rs:
            assert rs.turn == rows
            rs.add(Message("user", "one more"))  # "d" gets its totals (tokens unknown: counted at the next open)
        open_engine("since-last", store, conversation_id=cid).close()
        spy = Spy(store)
        with open_engine("since-last", spy, conversation_id=cid) as rs:  # the total was kept: a window open
            assert spy.full_reads == 0 and rs.turn == rows + 1
    store.close()
