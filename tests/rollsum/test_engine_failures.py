"""Failures are contained: whatever a model, summarizer, store or callback raises inside `add()`
after the message was stored is a classified failure event, never an exception (issue #14).

An app that retries `add()` on an exception would store the message twice; so after the store
accepted it, `add()` must return normally with every message still in place.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.errors import ErrorKind, ModelError, StoreUnavailable
from rollsum.models import CachedModel, FakeModel
from rollsum.policies.base import Decision
from rollsum.store import MemoryStore
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.tokens import HeuristicCounter
from tests.support.helpers import Recording, chat

TRANSIENT = [TimeoutError("read timed out"), ConnectionResetError(104, "Connection reset by peer"),
             sqlite3.OperationalError("database is locked"), OSError(101, "Network is unreachable")]
PERMANENT = [ValueError("could not parse the answer"), KeyError("content"), RuntimeError("bug"),
             sqlite3.DatabaseError("file is not a database")]


def run_until_trigger(rs: RollingSummarizer, n: int = 20) -> list[Any]:
    events: list[Any] = []
    for m in chat(n):
        rs.add(m)  # must not raise
        events.extend(rs.last_events)
    return events


@pytest.mark.parametrize("exc", TRANSIENT, ids=lambda e: type(e).__name__)
def test_transient_exceptions_are_retried_then_a_failure_event(exc: BaseException) -> None:
    model = Recording(FakeModel("scripted", script=[exc]))
    sleeps: list[float] = []
    rs = RollingSummarizer.from_preset("since-last", model, retries=2, sleep=sleeps.append)
    events = run_until_trigger(rs)
    assert len(model.requests) == 3 and sleeps == [0.25, 0.5]  # retried: it can pass
    fail = events[-1]
    assert fail.kind == "failure" and fail.attempts == 3 and type(exc).__name__ in (fail.error or "")
    assert len(rs.messages) == 20 and rs.summary is None
    assert [r.state for r in rs.store.messages(rs.conversation_id)] == ["active"] * 20


@pytest.mark.parametrize(("retry_after", "cap", "waits"), [
    (7.0, 60.0, [7.0, 7.0]),  # the server asked for longer than the backoff: wait that long
    (7.0, 5.0, [5.0, 5.0]),  # ... but never longer than max_retry_after_s
    (0.1, 60.0, [0.25, 0.5]),  # a shorter retry-after does not cut the backoff
])
def test_a_servers_retry_after_sets_the_wait_up_to_its_cap(retry_after: float, cap: float,
                                                           waits: list[float]) -> None:
    limited = ModelError("rate limited", ErrorKind.RATE_LIMIT, retry_after=retry_after, status=429)
    model = Recording(FakeModel("scripted", script=[limited]))
    sleeps: list[float] = []
    rs = RollingSummarizer.from_preset("since-last", model, retries=2, backoff_s=0.25, max_retry_after_s=cap,
                                       sleep=sleeps.append)
    events = run_until_trigger(rs)
    assert len(model.requests) == 3 and sleeps == waits
    assert events[-1].kind == "failure" and events[-1].error_kind == "rate_limit"


def test_many_retries_never_wait_longer_than_max_retry_after_s() -> None:
    """retries=40 is in range: the doubling backoff alone would have slept 0.25 × 2**39 s
    before the last try (OverflowError in time.sleep from about 2**40)."""
    model = Recording(FakeModel("scripted", script=[TimeoutError("read timed out")]))
    sleeps: list[float] = []
    rs = RollingSummarizer.from_preset("since-last", model, retries=40, backoff_s=0.25, max_retry_after_s=30,
                                       sleep=sleeps.append)
    events = run_until_trigger(rs)
    assert len(model.requests) == 41 and events[-1].kind == "failure"
    assert sleeps[:8] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0] and max(sleeps) == 30


class PickyCounter(HeuristicCounter):
    """A custom counter that cannot count one text (a tokenizer refusing an input)."""

    def count(self, text: str) -> int:
        if "\x00" in text:
            raise ValueError("tokenizer refused the text")
        return super().count(text)


def test_a_counter_that_raises_leaves_nothing_stored() -> None:
    """`add()` raises only when nothing changed: the message used to be stored first, then left
    out of the window (the context lost it until a restart showed it again)."""
    rs = RollingSummarizer.from_preset("since-last", counter=PickyCounter())
    rs.add(Message("user", "first"))
    with pytest.raises(ValueError, match="tokenizer refused"):
        rs.add(Message("user", "bad\x00text"))
    rs.add(Message("user", "third"))
    stored = [r.message for r in rs.store.messages(rs.conversation_id)]
    assert [m.content for m in stored] == ["first", "third"] == [m.content for m in rs.messages]
    assert [m.id for m in stored] == [m.id for m in rs.messages]


@pytest.mark.parametrize("exc", PERMANENT, ids=lambda e: type(e).__name__)
def test_other_exceptions_are_failures_without_a_retry(exc: BaseException) -> None:
    model = Recording(FakeModel("scripted", script=[exc]))
    rs = RollingSummarizer.from_preset("since-last", model, retries=2, sleep=lambda s: None)
    events = run_until_trigger(rs)
    assert len(model.requests) == 1
    assert events[-1].kind == "failure" and events[-1].error_kind == "other"
    assert len(rs.messages) == 20


def test_a_failing_model_falls_back_when_the_preset_has_a_fallback() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", FakeModel("scripted", script=[ValueError("x")]),
                                       context_window=1200, reserved_output_tokens=200)
    for m in chat(40, words=40):
        rs.add(m)
    assert rs.summary is not None and rs.summary.fallback == "extractive"


def test_a_broken_response_cache_is_a_warning_and_a_miss(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The cache file is overwritten under a running engine: reads and writes fail with a real
    sqlite error. The cache is only a speed-up (docs/models.md): the model answers, one
    warning says the cache is not working, no summary fails."""
    inner = FakeModel("extractive")
    model = CachedModel(inner, tmp_path / "cache.sqlite")
    rs = RollingSummarizer.from_preset("since-last", model, sleep=lambda s: None)
    for f in tmp_path.iterdir():
        f.write_bytes(b"not a database " * 400)
    with caplog.at_level(logging.WARNING):
        events = run_until_trigger(rs)
    assert events[-1].kind == "summary" and inner.calls >= 1
    assert len([r for r in caplog.records if "cache.sqlite" in r.getMessage()]) == 1
    assert len(rs.store.messages(rs.conversation_id)) == 20


def test_retrying_add_after_a_failure_is_never_needed_and_would_be_refused() -> None:
    rs = RollingSummarizer.from_preset("since-last", FakeModel("scripted", script=[TimeoutError()]),
                                       sleep=lambda s: None)
    msgs = [m.with_id(f"m{i}") for i, m in enumerate(chat(20))]
    for m in msgs:
        rs.add(m)  # the 20th triggers a failing summary: add() still returns
    assert [r.message.id for r in rs.store.messages(rs.conversation_id)] == [m.id for m in msgs]


class Exploding:
    name = "exploding"

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        raise ZeroDivisionError("division by zero")


def test_a_summarizer_bug_is_a_failure_event() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    rs.summarizer = Exploding()
    events = run_until_trigger(rs)
    assert events[-1].kind == "failure" and "ZeroDivisionError" in (events[-1].error or "")


class Returns:
    name = "plugin"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def summarize(self, request: SummaryRequest) -> Any:
        return self.answer


@pytest.mark.parametrize(("answer", "words"), [
    ("a summary as a plain string", "returned str, expected a SummaryDraft with str text"),
    (None, "returned NoneType, expected a SummaryDraft"),
    (SummaryDraft(text=None), "returned a SummaryDraft whose text is NoneType"),  # type: ignore[arg-type]
])
def test_a_summarizer_returning_the_wrong_type_is_told_so(answer: Any, words: str) -> None:
    """A plug-in returning a str (or None) was told "summarizer returned an empty summary"; a
    draft whose text is not a str was an internal error from inside the engine."""
    rs = RollingSummarizer.from_preset("since-last")
    rs.summarizer = Returns(answer)
    event = run_until_trigger(rs)[-1]
    assert event.kind == "failure" and event.error_kind == "malformed"
    assert f"summarizer 'plugin' {words}" in (event.error or "")
    assert len(rs.messages) == 20 and rs.summary is None


class BrokenPolicy:
    name = "broken"

    def decide(self, state: Any) -> Any:
        raise RuntimeError("policy bug")


def test_even_an_internal_error_after_storing_is_an_event_not_an_exception() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    rs.policy = BrokenPolicy()
    ev = rs.add(Message("user", "hello"))
    assert ev is not None and ev.kind == "failure" and ev.error_kind == "internal"
    assert len(rs.store.messages(rs.conversation_id)) == 1


class EvictsThenBreaks:
    """Evicts the oldest message on a turn's first pass, raises on the second."""

    name = "evicts-then-breaks"

    def __init__(self) -> None:
        self.asked = 0

    def decide(self, state: Any) -> Decision | None:
        self.asked += 1
        if self.asked % 2:
            return Decision("evict", (0,), "room", include_pending=False)
        raise RuntimeError("policy bug on the second pass")


def test_a_round_that_breaks_reports_its_failure_alone() -> None:
    """A round whose second pass raises after its first evicted: `add` returns the failure,
    and this turn's events are the failure alone, as before `_process` wrote into `add`'s list
    (what the round did is in the store and the window, never lost)."""
    rs = RollingSummarizer.from_preset("since-last")
    rs.policy = EvictsThenBreaks()
    rs.add(Message("user", "hello"))
    ev = rs.add(Message("user", "again"))
    assert ev is not None and ev.kind == "failure" and ev.error_kind == "internal"
    assert [e.kind for e in rs.last_events] == ["failure"]
    assert len(rs.store.messages(rs.conversation_id)) == 2


def test_a_store_that_fails_the_commit_keeps_every_message() -> None:
    rs = RollingSummarizer.from_preset("since-last")

    def refuse(record: Any, ids: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    rs.store.commit_summary = refuse  # type: ignore[method-assign,assignment]
    events = run_until_trigger(rs)
    assert events[-1].kind == "failure" and events[-1].error_kind == "store"
    assert len(rs.messages) == 20


def test_a_raising_event_callback_does_not_escape_add() -> None:
    def callback(ev: Any) -> None:
        raise RuntimeError("app bug")

    rs = RollingSummarizer.from_preset("since-last", on_event=callback)
    events = run_until_trigger(rs)
    assert events[-1].kind == "summary"


def test_failures_back_off_exponentially() -> None:
    """A permanently failing model: attempts get rarer (2, 4, 8, ... messages apart, capped)."""
    model = Recording(FakeModel("scripted", script=[ValueError("bad")]))
    rs = RollingSummarizer.from_preset("count-and-tokens", model, message_count_threshold=4,
                                       messages_to_summarize=2, recent_messages_to_keep=1, token_threshold=0,
                                       failure_cooldown=2, max_failure_backoff=16,
                                       min_messages_per_attempt=0)  # the backoff alone is tested
    turns = []
    for i, m in enumerate(chat(120)):
        rs.add(m)
        if rs.last_events and rs.last_events[-1].kind == "failure":
            turns.append(i)
    gaps = [b - a for a, b in itertools.pairwise(turns)]
    assert gaps[:4] == [2, 4, 8, 16] and set(gaps[4:]) == {16}


def test_a_storage_failure_before_storing_raises_and_changes_nothing() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    rs.add(Message("user", "one", id="a"))
    with pytest.raises(Exception, match="duplicate message id"):
        rs.add(Message("user", "again", id="a"))
    assert len(rs.messages) == 1


def _sdk_error(status: int) -> Exception:
    """What the anthropic SDK raises for `status`, built the way the SDK builds it."""
    import anthropic
    import httpx2

    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    response = httpx2.Response(status, request=request, json={"type": "error", "error": {"message": "no"}})
    cls = {401: anthropic.AuthenticationError, 403: anthropic.PermissionDeniedError,
           429: anthropic.RateLimitError}[status]
    return cls("no", response=response, body=None)


@pytest.mark.parametrize(("status", "kind", "tries"), [(401, "auth", 1), (403, "auth", 1), (429, "rate_limit", 3)])
def test_sdk_errors_raised_raw_by_a_custom_model_are_classified(status: int, kind: str, tries: int) -> None:
    """A model that calls the SDK itself and lets its exceptions out: a refused key is not
    retried (no retry can fix it), a 429 is."""
    model = Recording(FakeModel("scripted", script=[_sdk_error(status)]))
    rs = RollingSummarizer.from_preset("since-last", model, retries=2, sleep=lambda s: None)
    events = run_until_trigger(rs)
    assert len(model.requests) == tries
    assert events[-1].kind == "failure" and events[-1].error_kind == kind
    assert len(rs.messages) == 20


class RefusingChanges(MemoryStore):
    """Stores every message but refuses every state change while `refusing` (a file locked right
    after the message's write, past its busy timeout): no summary, no eviction lands."""

    refusing = False

    def commit_summary(self, record: Any, covered_ids: Any) -> None:
        if self.refusing:
            raise StoreUnavailable("chat.db: committing a summary failed: database is locked")
        super().commit_summary(record, covered_ids)

    def set_state(self, conversation_id: str, ids: Any, state: Any, reason: str | None = None) -> None:
        if self.refusing:
            raise StoreUnavailable("chat.db: moving messages failed: database is locked")
        super().set_state(conversation_id, ids, state, reason)


@pytest.mark.parametrize("preset", ["since-last", "evict-window", "token-ratio", "budget-rule-based"])
def test_a_store_refusing_the_guards_eviction_still_leaves_the_context_inside_the_window(preset: str) -> None:
    """The message is stored, then the window guard's eviction is refused: the round broke
    before the guard was done and its context grew past the window on every message (5,500
    tokens over a 2,000 window after 60 such messages). Now the guard's last resort, clipping in
    the context (no store write), runs after a broken round too, and leaves the oldest active
    messages out of the context when even their clip markers would not fit; nothing is lost."""
    store = RefusingChanges()
    rs = RollingSummarizer.from_preset(preset, store=store, conversation_id="c", context_window=2000)
    messages = list(chat(160, words=60))
    for i, m in enumerate(messages):
        store.refusing = 40 <= i < 120  # 80 messages: more than a budget of 976 holds even as clip markers
        rs.add(m)
        assert rs.context_tokens() <= rs.context_window - rs.reserved_output_tokens, f"message {i}"
        if store.refusing and i > 50:
            assert rs.last_events[-1].kind == "failure"  # what add() returned: the failure, not the clip
    assert [r.message.content for r in store.messages("c")] == [m.content for m in messages]
    assert rs.summary is not None
