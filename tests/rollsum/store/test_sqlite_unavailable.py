"""A SQLite file that cannot be written now: locked by another connection past the busy timeout,
full, damaged. What a chat server's request sees (session 40, lib40).

Before: a bare ``sqlite3.OperationalError: database is locked`` (or ``database or disk is full``,
``database disk image is malformed``) out of opening an engine, `add()` and `close()`, naming
neither the file nor what to do; a summary refused by a locked file was reported as "internal
error" (the cadence save after it raised in its place); and a `close()` that met the lock
forgot the claim it had not released, so every other engine was refused the conversation for as
long as the process ran.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.errors import StoreUnavailable
from rollsum.store import SQLiteStore
from rollsum.types import SummaryRecord
from tests.support.helpers import chat

TIMEOUT = 0.05  # the store's busy timeout here: a held lock is met at once


@contextmanager
def locked(db: Path) -> Iterator[None]:
    """Another connection (a backup, a sqlite3 shell) holds the file's write lock."""
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("COMMIT")
    finally:
        other.close()


def messages(n: int) -> list[Message]:
    return [m.with_id(f"m{i}") for i, m in enumerate(chat(n))]


def engine(store: SQLiteStore) -> RollingSummarizer:
    return RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")


def test_opening_and_adding_on_a_locked_file_name_the_file_and_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    store = SQLiteStore(db, busy_timeout_s=TIMEOUT)
    with locked(db), pytest.raises(StoreUnavailable) as opening:
        engine(store)
    msg = str(opening.value)
    assert msg.startswith(f"{db}: claiming conversation 'c' failed: database is locked") and "\n" not in msg
    assert "busy_timeout_s=0.05 s" in msg and "no engine was opened" in msg
    assert isinstance(opening.value, sqlite3.OperationalError)  # what callers caught before
    assert opening.value.sqlite_errorname == "SQLITE_BUSY"

    rs = engine(store)
    first = messages(3)
    rs.add(first[0])
    with locked(db), pytest.raises(StoreUnavailable, match=re.escape(
            f"{db}: storing message '{first[1].id}' of conversation 'c' failed: database is locked")) as adding:
        rs.add(first[1])
    assert "nothing was stored" in str(adding.value)
    assert rs.turn == 1 and len(store.messages("c")) == 1  # nothing changed: the caller may retry
    rs.add(first[1])
    rs.add(first[2])
    assert [m.id for m in rs.messages] == [m.id for m in first]


def test_a_summary_refused_by_a_locked_file_is_that_failure_and_keeps_every_message(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    store = SQLiteStore(db, busy_timeout_s=TIMEOUT)
    rs = engine(store)
    stream = messages(40)
    for m in stream[:19]:
        rs.add(m)
    original = store.commit_summary
    holding = ExitStack()

    def commit(record: SummaryRecord, ids: Sequence[str]) -> None:
        holding.enter_context(locked(db))  # taken between the stored message and its summary's commit,
        original(record, ids)  # and held while the engine saves its cadence after the failure

    store.commit_summary = commit  # type: ignore[method-assign,assignment]
    with holding:
        ev = rs.add(stream[19])  # the 20th: since-last summarizes
    assert ev is not None and ev.kind == "failure"
    assert ev.error_kind == "store" and "committing summary" in (ev.error or "")  # not "internal error"
    assert len(rs.messages) == 20 and rs.summary is None
    assert {r.state for r in store.messages("c")} == {"active"}
    store.commit_summary = original  # type: ignore[method-assign]
    for m in stream[20:]:
        rs.add(m)
    assert rs.summary is not None and len(store.messages("c")) == 40


def test_a_close_that_meets_the_lock_keeps_the_claim_and_can_be_retried(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    store = SQLiteStore(db, busy_timeout_s=TIMEOUT)
    rs = engine(store)
    rs.add(Message("user", "hello"))
    with locked(db), pytest.raises(StoreUnavailable, match="releasing conversation 'c' failed: database is locked"
                                   ) as closing:
        rs.close()
    assert "retry close(), or open the next engine with takeover=True" in str(closing.value)
    with pytest.raises(Exception, match="already open by another engine"):
        engine(SQLiteStore(db))  # still claimed, as the error said
    rs.close()  # retried: released (before, a no-op: the claim stayed while the process ran)
    nxt = engine(SQLiteStore(db))
    assert [m.content for m in nxt.messages] == ["hello"]


def test_a_full_disk_refuses_the_message_with_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    store = SQLiteStore(db)
    rs = engine(store)
    rs.add(Message("user", "fits"))
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[union-attr]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[union-attr]  # the disk is full now
    with pytest.raises(StoreUnavailable, match=re.escape(f"{db}: storing message") + ".*full.*free space and retry"):
        rs.add(Message("user", "x" * 20_000))
    assert rs.turn == 1 and len(store.messages("c")) == 1


def test_a_damaged_file_says_how_to_check_it(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    with SQLiteStore(db) as store, engine(store) as rs:
        for m in chat(30):
            rs.add(m)
    data = bytearray(db.read_bytes())
    page = 4096
    data[-page + 8:-page + 2008] = b"\xff" * 2000  # the last page (messages' rows): garbage
    db.write_bytes(bytes(data))
    with pytest.raises(StoreUnavailable) as damaged, SQLiteStore(db) as store:
        engine(store)
    assert str(damaged.value).startswith(f"{db}: ") and f"sqlite3 {db} 'PRAGMA integrity_check'" in str(damaged.value)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_file_deleted_or_replaced_under_a_live_store_refuses_writes_instead_of_losing_them(
        tmp_path: Path, how: str) -> None:
    """Before: `add()` went on returning, writing into the unlinked file (or the one moved away),
    and every message from then on was in no file a process could open again."""
    db = tmp_path / "chat.db"
    store = SQLiteStore(db)
    rs = engine(store)
    stream = messages(3)
    rs.add(stream[0])
    for f in (db, tmp_path / "chat.db-wal", tmp_path / "chat.db-shm"):
        f.unlink(missing_ok=True)
    if how == "replaced":  # a restore by mv: another store at the path
        with SQLiteStore(tmp_path / "backup.db"):
            pass
        (tmp_path / "backup.db").rename(db)
    with pytest.raises(StoreUnavailable, match=re.escape(f"{db}: storing message 'm1' of conversation 'c' failed: "
                                                         "the file was deleted or replaced")):
        rs.add(stream[1])
    assert rs.turn == 1
    rs.close()  # releasing a claim in a file no one can open again holds no one up: no error


def test_a_relative_path_still_names_its_file_after_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SQLiteStore("chat.db")
    rs = engine(store)
    rs.add(Message("user", "hello"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    rs.add(Message("user", "still the same file"))
    assert len(store.messages("c")) == 2
