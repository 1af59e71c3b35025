"""Handing an engine's events to its caller (`emit`), and the engine's failures as logged events.

Why apart from the engine: once a message is stored, `add()` must not raise, so the caller's
callback, a failed summary, a refusing store and the engine's own bugs all end as logged,
redacted events; the rules for that are the same for the synchronous engine and `rollsum.aio`
and touch no engine state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rollsum import jobs
from rollsum.errors import StoreUnavailable
from rollsum.jobs import Job, Outcome
from rollsum.redact import redact, redacting_logger
from rollsum.types import SummaryEvent, SummaryRecord

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


def summary_failed(job: Job, outcome: Outcome, *, lag: int, tokens_after: int) -> SummaryEvent:
    """A job every attempt of which failed: logged, and its failure event (all messages kept)."""
    err = outcome.error
    reason = redact(str(err)) if err else "unknown"
    log.warning("summary failed at turn %d after %d attempt(s): %s; all %d messages kept",
                job.turn, outcome.attempts, reason, len(job.messages))
    return jobs.failure_event(job, outcome, reason, err.kind.value if err else None, lag=lag,
                              tokens_after=tokens_after)


def store_refused(job: Job, outcome: Outcome, record: SummaryRecord, err: Exception, *, lag: int,
                  tokens_after: int) -> SummaryEvent:
    """A summary the store would not commit (nothing committed, nothing moves): logged, and its
    failure event."""
    log.error("store refused summary %s: %s; all messages kept", record.id, redact(str(err)))
    return jobs.failure_event(job, outcome, redact(f"store: {err}"), "store", lag=lag, tokens_after=tokens_after)


def lag_dropped(conversation_id: str, job: Job, seq: int, lag_turns: int) -> None:
    """An engine closed with a lagged summary in flight drops it (a closed engine commits
    nothing): say so, since an engine rebuilt per request with `lag_turns` never lands one."""
    log.warning("conversation %r: closed with a lagged summary %d turn(s) from landing: dropped (lag_turns=%d "
                "simulates a slow summarizer in one long-lived engine; an engine rebuilt per request with it "
                "never lands a summary)", conversation_id, job.due_turn + 1 - seq, lag_turns)


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


__all__ = ["emit", "internal_failure", "lag_dropped", "store_refused", "summary_failed"]
