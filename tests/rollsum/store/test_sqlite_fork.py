"""A SQLite store opened before fork() (a server that loads the app, then forks its workers:
gunicorn ``--preload``) is each child's own after the fork: its own connection, and never its
parent's claims."""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.errors import ConversationBusy
from rollsum.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")


def _in_child(work: object) -> str:
    """Run `work()` in a forked child; what it reports ("ok" or the error), synchronised on a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without the parent's test machinery
        try:
            said = work()  # type: ignore[operator]
        except BaseException as err:  # reported to the parent, which fails the test
            said = f"{type(err).__name__}: {err}"
        os.write(w, str(said).encode())
        os._exit(0)
    os.close(w)
    # a bound on a hang only (a child stuck on its parent's lock): the child answers in milliseconds
    ready, _, _ = select.select([r], [], [], 60)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return "the child hung"
    with os.fdopen(r, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


def test_a_forked_child_uses_its_own_connection_and_never_releases_its_parents_claims(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "chat.db")
    parent = RollingSummarizer.from_preset("since-last", store=store, conversation_id="parent")
    parent.add(Message("user", "said in the parent before the fork"))
    inherited = store._conn

    def child() -> str:
        engine = RollingSummarizer.from_preset("since-last", store=store, conversation_id="child")
        engine.add(Message("user", "said in the child"))
        engine.close()
        if store._conn is inherited:
            return "the child wrote through its parent's connection"
        store.close()  # a worker's shutdown: it closed the parent's claims with it
        return "ok"

    assert _in_child(child) == "ok"
    # the parent's engine still holds its conversation: a second engine is refused it
    with pytest.raises(ConversationBusy):
        RollingSummarizer.from_preset("since-last", store=SQLiteStore(tmp_path / "chat.db"), conversation_id="parent")
    parent.add(Message("user", "the parent goes on"))
    assert [m.message.content for m in store.messages("child")] == ["said in the child"]
    assert [m.message.content for m in store.messages("parent")] == [
        "said in the parent before the fork", "the parent goes on"]
    parent.close()
    store.close()


def test_a_lock_held_by_another_thread_at_the_fork_does_not_hang_the_child(tmp_path: Path) -> None:
    import threading

    store = SQLiteStore(tmp_path / "chat.db")
    held, done = threading.Event(), threading.Event()

    def holder() -> None:  # another thread of the parent is inside the store at the fork
        with store._lock:
            held.set()
            done.wait()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    try:
        said = _in_child(lambda: len(store.messages("c")) == 0 and "ok")  # without a lock of its own: hangs
    finally:
        done.set()
        t.join()
    assert said == "ok"
    store.close()


def test_an_in_memory_store_is_the_childs_copy_after_a_fork() -> None:
    # no file is shared, so nothing is reopened: the child reads (and writes) its copy of the
    # parent's memory, as before; a new connection there would be an empty database
    store = SQLiteStore(":memory:")
    store.add_message("c", 0, Message("user", "before the fork", id="m0"))

    def child() -> str:
        store.add_message("c", 1, Message("user", "in the child", id="m1"))
        seen = [m.message.content for m in store.messages("c")]
        return "ok" if seen == ["before the fork", "in the child"] else f"the child saw {seen}"

    assert _in_child(child) == "ok"
    assert [m.message.content for m in store.messages("c")] == ["before the fork"]
    store.close()
