"""`rollsum.opening`: what an engine does when it opens a stored conversation.

An open that fails after the engine claimed its conversation (a read error, a damaged row) kept
the claim while the half-built engine lived, that is while the exception's traceback did: a
retry in the handler, or every request while a logger kept the exception, was refused with
"already open by another engine" instead of opening (session 40, lib40).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.store import MemoryStore, SQLiteStore


def fail_once(method: Callable[..., Any]) -> Callable[..., Any]:
    failed: list[bool] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            failed.append(True)
            raise OSError("a read failed")
        return method(*args, **kwargs)

    return flaky


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_an_open_that_fails_after_its_claim_gives_the_claim_back(tmp_path: Path, kind: str) -> None:
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "chat.db")
    with RollingSummarizer.from_preset("since-last", store=store, conversation_id="c") as rs:
        rs.add(Message("user", "hello"))
    store.window_rows = fail_once(store.window_rows)  # type: ignore[method-assign]
    try:
        RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")
    except OSError as failed:  # the exception, and the half-built engine in its traceback, still alive
        retried = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c")
        assert failed.__traceback__ is not None
    else:
        pytest.fail("the open did not fail")
    assert [m.content for m in retried.messages] == ["hello"]
