"""Shared stores (issue #14): one engine per conversation; a second one is refused at open with
one line, never a wedge; a dead owner's claim is taken over safely.

Before: two engines on one conversation in one SQLite file wedged with "duplicate message id",
or "summary id ... already exists" on every later attempt while the context grew to 144k tokens.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.errors import ConfigError
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.sqlite import process_alive, process_start
from tests.support.helpers import chat

ROOT = Path(__file__).resolve().parents[3]
CHILD = """
import sys, time
from rollsum import Message, RollingSummarizer
from rollsum.store import SQLiteStore
rs = RollingSummarizer.from_preset("since-last", store=SQLiteStore(sys.argv[1]), conversation_id="c1")
for i in range(25):
    rs.add(Message("user" if i % 2 == 0 else "assistant", f"child message {i} about the Lisbon trip"))
print("ready", flush=True)
time.sleep(120)
"""


def engine(db: Path, **kw: object) -> RollingSummarizer:
    return RollingSummarizer.from_preset("since-last", store=SQLiteStore(db), conversation_id="c1", **kw)


def test_a_second_engine_on_the_same_conversation_is_refused_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    first = engine(db)
    for m in chat(5):
        first.add(m)
    with pytest.raises(ConfigError) as info:
        engine(db)
    msg = str(info.value)
    assert "\n" not in msg and "'c1'" in msg and "already open by another engine" in msg
    assert f"pid {os.getpid()}" in msg and str(db) in msg
    # the first engine was not disturbed, and nothing was written by the refused one
    for m in chat(20, start=5):
        first.add(m)
    assert first.summary is not None and len(SQLiteStore(db).messages("c1")) == 25


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_busy_conversation_is_an_error_a_server_can_catch_to_retry(tmp_path: Path, kind: str) -> None:
    """A second request on a conversation while the first is served: a `ConversationBusy` (still
    a ConfigError) saying to retry, which a server tells from a configuration mistake; retried
    once the first request closed its engine, it goes through."""
    from rollsum.errors import ConversationBusy

    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "chat.db")

    def request(text: str) -> RollingSummarizer:
        rs = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c1")
        rs.add(Message("user", text))
        return rs

    first = request("first")
    with pytest.raises(ConversationBusy, match="still being served: retry when it is done") as busy:
        request("second")
    assert isinstance(busy.value, ConfigError) and "takeover=True" in str(busy.value)
    first.close()
    request("second").close()  # the retry
    assert [r.message.content for r in store.messages("c1")] == ["first", "second"]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_conversation_is_not_deleted_under_a_live_engine(tmp_path: Path, kind: str) -> None:
    """Deleted under a live engine (an admin tool, a privacy request), the engine went on: its
    window still sent the deleted messages to the model, every summary was refused, and its
    next messages were stored under the deleted ones (a conversation of 30 rows, 'turn 60').
    The delete is now refused while the engine holds the conversation, and goes through once
    it is closed."""
    from rollsum.errors import ConversationBusy

    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "chat.db")
    admin = store if kind == "memory" else SQLiteStore(tmp_path / "chat.db")  # another connection, as a tool's
    rs = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c1")
    for m in chat(5):
        rs.add(m)
    with pytest.raises(ConversationBusy, match="cannot delete conversation 'c1': an engine has it open"):
        admin.delete_conversation("c1")
    assert len(admin.messages("c1")) == 5  # nothing was deleted
    rs.close()
    admin.delete_conversation("c1")
    assert admin.messages("c1") == [] and "c1" not in admin.conversations()
    fresh = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c1")
    assert fresh.turn == 0 and fresh.messages == []


def test_other_conversations_in_the_same_file_are_independent(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    a = engine(db)
    b = RollingSummarizer.from_preset("since-last", store=SQLiteStore(db), conversation_id="c2")
    for m in chat(25):
        a.add(m)
        b.add(m)
    assert a.summary is not None and b.summary is not None


def test_closing_hands_the_conversation_over_and_the_next_engine_sees_everything(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    with engine(db) as first:
        for m in chat(25):
            first.add(m)
    second = engine(db)
    assert second.summary == first.summary and [m.id for m in second.messages] == [m.id for m in first.messages]
    for m in chat(15, start=25):
        second.add(m)  # no duplicate ids, no colliding summary ids
    assert len(second.history) == 2


def test_a_closed_engine_refuses_to_add_so_the_next_owner_is_not_wedged(tmp_path: Path) -> None:
    """A handle kept past its ``with`` block used to go on writing without a claim: its message
    took the id the new owner's next message takes, which then failed ("duplicate message id")."""
    db = tmp_path / "chat.db"
    with engine(db) as first:
        first.add(Message("user", "hi"))
    second = engine(db)
    with pytest.raises(ConfigError, match="this engine was closed"):
        first.add(Message("user", "late, from the closed engine"))
    second.add(Message("user", "hello again"))
    assert [r.message.content for r in second.store.messages("c1")] == ["hi", "hello again"]
    assert first.flush() is None


def test_a_dropped_engine_releases_its_claim(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    first = engine(db)
    first.add(Message("user", "hi"))
    del first  # garbage: its claim goes with it
    engine(db).add(Message("user", "hello again"))


def test_takeover_forces_a_live_claim(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    holder = engine(db)  # kept referenced: its claim stays live (a dropped engine releases it)
    holder.add(Message("user", "hi"))
    with pytest.raises(ConfigError, match="already open"):
        engine(db)
    keep = engine(db, takeover=True)
    keep.add(Message("user", "second engine"))
    assert len(keep.store.messages("c1")) == 2


def test_memory_store_refuses_a_second_engine_too() -> None:
    store = MemoryStore()
    first = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")
    with pytest.raises(ConfigError, match="already open"):
        RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")
    first.close()
    RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")


def test_a_killed_owner_is_taken_over_and_its_messages_resumed(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        with pytest.raises(ConfigError, match=f"pid {child.pid}"):
            engine(db)  # alive: refused
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    rs = engine(db)  # dead: taken over, the window resumed from the store
    assert len(rs.messages) + (rs.summary.messages_covered if rs.summary else 0) == 25
    for m in chat(20, start=25):
        rs.add(m)
    assert rs.summary is not None and len(rs.store.messages("c1")) == 45


@pytest.mark.skipif(not (hasattr(os, "waitid") and Path("/proc/self/stat").exists()),
                    reason="needs os.waitid(WNOWAIT) to hold a killed child unreaped, and /proc to see it")
def test_a_killed_owner_not_yet_reaped_is_taken_over(tmp_path: Path) -> None:
    """A SIGKILLed worker is a zombie until its parent reaps it (a supervisor that waits late, a
    container whose PID 1 never reaps); ``kill(pid, 0)`` still succeeds on a zombie, and its claim
    refused every other engine ("already open ... pid N") as if it were running."""
    db = tmp_path / "chat.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # it has exited; left unreaped (a zombie)
        rs = engine(db)  # gone: taken over
        assert len(rs.messages) + (rs.summary.messages_covered if rs.summary else 0) == 25
        rs.add(Message("user", "the next request"))
        assert len(rs.store.messages("c1")) == 26
    finally:
        child.kill()
        child.wait(timeout=30)


def test_liveness_tells_a_reused_pid_from_its_owner() -> None:
    import socket

    me = os.getpid()
    start = process_start(me)
    host = socket.gethostname()
    assert process_alive(me, start, host) is True
    if start:  # Linux: a different start time on the same pid is another process
        assert process_alive(me, start + "0", host) is False
    assert process_alive(me, start, "some-other-host") is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    time.sleep(0.05)
    assert process_alive(dead.pid, "", host) is False


def test_claim_releases_when_its_holder_goes() -> None:
    """`rollsum.store.claim`: the release runs when the holder is collected, so another owner
    can then claim the conversation; a store without claims gets no release at all."""
    import gc

    from rollsum.store import claim, resolve

    store = resolve("memory")
    holder = type("Holder", (), {})()
    assert claim(store, "c", "owner-1", takeover=False, holder=holder) is not None
    del holder
    gc.collect()
    assert claim(store, "c", "owner-2", takeover=False, holder=store) is not None
    assert claim(object(), "c", "o", takeover=False, holder=store) is None  # type: ignore[arg-type]
