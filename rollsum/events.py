"""Handing an engine's events to its caller (`emit`) and the event for an unexpected error.

Why apart from the engine: once a message is stored, `add()` must not raise, so both the
caller's callback and the engine's own bugs end as logged, redacted events; the rules for that
are the same for the synchronous engine and `rollsum.aio` and touch no engine state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rollsum.errors import StoreUnavailable
from rollsum.redact import redact, redacting_logger
from rollsum.types import SummaryEvent

log = redacting_logger("rollsum.engine")  # the engine's logger: what these say is about the engine


def internal_failure(turn: int, err: Exception) -> SummaryEvent:
    """The failure event for an unexpected error after a message was stored (logged with its
    traceback; the event carries the error's redacted text).

    A store that cannot be written now (`StoreUnavailable`: a file locked past its busy timeout,
    a full disk) is not an unexpected error: its message names the file and what to do, so it is
    logged as such, without a traceback, and the event says ``store`` as a refused summary's
    does. It was "internal error" with a traceback, which sent people looking for a bug."""
    if isinstance(err, StoreUnavailable):
        log.error("rollsum: %s; the message is kept", err)
        return SummaryEvent("failure", turn, "store unavailable", error=redact(str(err)), error_kind="store")
    log.exception("rollsum: unexpected error after storing a message; the message is kept")
    return SummaryEvent("failure", turn, "internal error", error=redact(f"{type(err).__name__}: {err}"),
                        error_kind="internal")


def emit(on_event: Callable[[SummaryEvent], None] | None, events: Sequence[SummaryEvent]) -> None:
    """Give each event to the caller's callback; one that raises is logged, never propagated
    (the caller's callback must not turn a stored message into an error)."""
    if on_event is None:
        return
    for ev in events:
        try:
            on_event(ev)
        except Exception:
            log.exception("rollsum: on_event callback raised; event %s dropped from it", ev.kind)


__all__ = ["emit", "internal_failure"]
