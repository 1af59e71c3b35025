"""Handing events to the caller (`rollsum.events`)."""

from __future__ import annotations

import logging

import pytest

from rollsum import events
from rollsum.errors import StoreUnavailable
from rollsum.types import SummaryEvent


def test_a_raising_callback_loses_no_later_event() -> None:
    """The callback raising on one event is logged, not propagated, and the next event still
    reaches it."""
    seen: list[str] = []

    def callback(ev: SummaryEvent) -> None:
        seen.append(ev.kind)
        if ev.kind == "evict":
            raise RuntimeError("caller bug")

    events.emit(callback, [SummaryEvent("evict", 1, "r"), SummaryEvent("summary", 1, "r")])
    assert seen == ["evict", "summary"]


def test_internal_failure_redacts_the_error() -> None:
    ev = events.internal_failure(4, ValueError("key sk-ant-api03-" + "x" * 40))
    assert (ev.kind, ev.turn, ev.error_kind) == ("failure", 4, "internal")
    assert ev.error is not None and "x" * 40 not in ev.error


def test_a_store_that_cannot_be_written_is_a_store_failure_not_an_internal_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """A file locked past its busy timeout while the guard evicts: its message says what to do,
    so the event is a ``store`` failure and the log has no traceback (it was "internal error"
    with one, which sent people looking for a bug)."""
    err = StoreUnavailable("chat.db: moving 3 message(s) of conversation 'c' to 'pending' failed: database is "
                           "locked: ...; nothing was changed")
    with caplog.at_level(logging.ERROR, logger="rollsum.engine"):
        ev = events.internal_failure(7, err)
    assert (ev.kind, ev.turn, ev.error_kind, ev.reason) == ("failure", 7, "store", "store unavailable")
    assert ev.error is not None and "database is locked" in ev.error
    assert [r.exc_info for r in caplog.records] == [None] and "chat.db: moving 3" in caplog.records[0].getMessage()
