"""A policy's ``quiet_for`` hook: the engine skips asking it, and nothing else changes.

since-last answers None for 19 of every 20 messages; the engine used to build a 22-field
snapshot and call the policy for each of them (issue #20, item 1: ~14 % of since-last's engine
instructions). With the hook the policy says how long it will keep answering None, and the
engine asks again only then, or at once after a summary lands or when the policy is swapped.

What must hold: (1) the hook's promise itself, for every state it could be asked on and every
state the engine can reach from it; (2) an engine that uses it is, turn by turn, the engine that
asks on every message (events, context, store), whatever the stream, parameters, failures, lag
and window guard; (3) a summary the policy did not ask for (the window guard's) ends the quiet
at once, and so does a new policy.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer
from rollsum.errors import ErrorKind, SummarizeError
from rollsum.policies.base import Decision, WindowState, quiet_hook
from rollsum.policies.baselines import FullContext
from rollsum.policies.since_last import SinceLast
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.summarizers.extractive import ExtractiveSummarizer


def quiet_for(policy: object, state: WindowState) -> int:
    hook = quiet_hook(policy)
    assert hook is not None
    return hook(state)

counts = st.integers(0, 60)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 25), st.integers(0, 12), st.sampled_from(["covered", "event"]), counts, counts, counts,
       st.integers(0, 5), st.data())
def test_since_last_keeps_its_quiet_promise(every: int, keep: int, since: str, added: int, covered: int,
                                            since_summary: int, attempts: int, data: st.DataObject) -> None:
    """For a state it answered None on, every state reached by 1 <= k <= quiet_for more messages
    (total_added and since_summary k more, attempts not fewer, everything else anything) is
    answered None too. Catches a count one too long in either clause, a clause that ignores
    `count_since`, and a rate clause that assumed attempts cannot grow."""
    policy = SinceLast(messages_per_summary=every, keep_last=keep, count_since=since)  # type: ignore[arg-type]
    msgs = [Message("user", "x", id=str(i)) for i in range(12)]
    state = WindowState(msgs, [1] * 12, 12, total_added=added + covered, messages_covered=covered,
                        since_summary=since_summary, attempts=attempts, since_attempt=data.draw(st.none() | counts))
    if policy.decide(state) is not None:
        return
    quiet = quiet_for(policy, state)
    assert quiet >= 0
    if not quiet:
        return  # asked again on the next message
    k = data.draw(st.integers(1, quiet), label="k")
    n = data.draw(st.integers(0, 12), label="active")
    later = replace(state, messages=msgs[:n], tokens=[1] * n, active_tokens=n, total_added=state.total_added + k,
                    since_summary=since_summary + k, attempts=attempts + data.draw(st.integers(0, 3), label="more"),
                    pending=data.draw(st.integers(0, 5), label="pending"),
                    since_attempt=data.draw(st.none() | counts, label="since_attempt"))
    assert policy.decide(later) is None, (quiet, k)


def test_since_last_says_how_long_it_waits() -> None:
    """The hook is not a constant 0 (which would keep the promise and save nothing): after a
    summary covering 10 of 20 messages, the count needs 10 more and the rate limit 20 more."""
    policy = SinceLast()
    state = WindowState([], [], 0, total_added=20, messages_covered=10, since_summary=0, attempts=1)
    assert quiet_for(policy, state) == 19  # the 40th message may be the second attempt
    # counting summary events: 4 of 5 since the last one, whatever the covered count says
    event = SinceLast(messages_per_summary=5, count_since="event")
    state = WindowState([], [], 0, total_added=10, messages_covered=8, since_summary=4)
    assert event.decide(state) is None and quiet_for(event, state) == 0
    assert quiet_for(FullContext(), state) > 10**9
    assert quiet_hook(object()) is None  # a policy without the hook is asked every message


class Asked:
    """A policy as the engine sees one without the hook: asked on every message."""

    name = "since-last"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def decide(self, state: WindowState) -> Decision | None:
        self.calls += 1
        result: Decision | None = self.inner.decide(state)
        return result

    def may_summarize(self, state: WindowState) -> bool:
        return bool(self.inner.may_summarize(state))


class Counted(Asked):
    """The same policy with its hook: what the engine uses now."""

    def quiet_for(self, state: WindowState) -> int:
        return int(self.inner.quiet_for(state))


class Flaky:
    """The extractive summarizer, failing on the calls a test chose."""

    name = "flaky"
    rewrites_previous = False

    def __init__(self, failures: list[bool]) -> None:
        self.inner, self.failures, self.calls = ExtractiveSummarizer(), failures, 0

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        fail = self.failures[self.calls % len(self.failures)] if self.failures else False
        self.calls += 1
        if fail:
            raise SummarizeError("injected 500", transport=True, kind=ErrorKind.SERVER)
        return self.inner.summarize(request)


def _engine(policy: Any, failures: list[bool], **params: Any) -> RollingSummarizer:
    rs = RollingSummarizer.from_preset("since-last", conversation_id="c", clock=lambda: datetime(2026, 1, 1),
                                       sleep=lambda s: None, **params)
    rs.policy = policy
    rs.summarizer = Flaky(failures)
    return rs


def _turn(rs: RollingSummarizer) -> tuple[Any, ...]:
    return ([e.to_dict() for e in rs.last_events], [(m.role, m.content, m.id) for m in rs.context()],
            [m.id for m in rs.pending], rs.context_tokens())


stream = st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "system"]), st.integers(1, 400)),
                  min_size=1, max_size=150)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream, st.integers(1, 12), st.integers(0, 8), st.sampled_from(["covered", "event"]),
       st.sampled_from([500, 1500, 200_000]), st.sampled_from([0, 0, 2]), st.lists(st.booleans(), max_size=5))
def test_an_engine_that_skips_asking_is_the_engine_that_asks_every_message(
        msgs: list[tuple[str, int]], every: int, keep: int, since: str, window: int, lag: int,
        failures: list[bool]) -> None:
    """Turn by turn the same events, context and pending messages, and the same store at the
    end, with failures (backoff), lag and the window guard (its own summaries and evictions) in
    play. Catches a quiet that outlives a summary, one that ignores a failed attempt, and any
    count the promise gets wrong."""
    params = {"messages_per_summary": every, "keep_last": keep, "count_since": since, "context_window": window,
              "lag_turns": lag}
    asked, counted = Asked(SinceLast(every, keep, since)), Counted(SinceLast(every, keep, since))  # type: ignore[arg-type]
    a, b = _engine(asked, failures, **params), _engine(counted, failures, **params)
    for i, (role, size) in enumerate(msgs):
        m = Message(role, f"message {i} " + "word " * size)  # type: ignore[arg-type]
        a.add(m)
        b.add(m)
        assert _turn(b) == _turn(a), i
    a.flush()
    b.flush()
    assert b.store.messages("c") == a.store.messages("c") and b.history == a.history
    assert counted.calls <= asked.calls


def test_the_hook_saves_the_asking() -> None:
    """On 400 messages since-last is asked about once per ten messages, not on each."""
    counted = Counted(SinceLast())
    rs = _engine(counted, [])
    for i in range(400):
        rs.add(Message("user" if i % 2 else "assistant", f"message {i} about the plan"))
    assert len(rs.history) >= 15 and counted.calls <= 400 // 8


class AfterTheFirstSummary:
    """Quiet for ever while there is no summary; then asks to summarize everything but the newest."""

    name = "after-the-first"
    windowed = True

    def __init__(self) -> None:
        self.calls = 0

    def quiet_for(self, state: WindowState) -> int:
        return 10**9 if state.chain_length == 0 else 0

    def decide(self, state: WindowState) -> Decision | None:
        self.calls += 1
        if state.chain_length == 0 or state.count < 2:
            return None
        return Decision.span("summarize", 0, state.count - 1, "after the first summary")


def test_a_summary_the_policy_did_not_ask_for_ends_its_quiet() -> None:
    """The window guard summarizes while the policy is quiet; on the next message the policy is
    asked (its promise was for the chain it saw) and summarizes. Catches a quiet kept across a
    summary that landed."""
    policy = AfterTheFirstSummary()
    rs = _engine(policy, [], context_window=1200)
    reasons: list[str] = []
    for i in range(80):
        rs.add(Message("user", f"message {i} " + "word " * 60))
        reasons += [e.reason for e in rs.last_events if e.kind == "summary"]
    assert reasons and "after the first summary" in reasons, reasons


def test_a_new_policy_is_asked_on_the_next_message() -> None:
    """A caller may swap the policy between messages: the old one's quiet is not the new one's."""
    rs = _engine(Counted(SinceLast(messages_per_summary=50)), [])
    for i in range(12):
        rs.add(Message("user", f"message {i} about the plan"))
    assert not rs.history
    rs.policy = Counted(SinceLast(messages_per_summary=5, keep_last=2))
    rs.add(Message("user", "one more"))
    assert len(rs.history) == 1
