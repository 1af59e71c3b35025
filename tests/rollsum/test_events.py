"""Handing events to the caller (`rollsum.events`)."""

from __future__ import annotations

from rollsum import events
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
