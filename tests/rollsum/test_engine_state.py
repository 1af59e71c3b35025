"""The policy's `WindowState`, built positionally on every message (issue #20, item 4)."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer
from rollsum.policies.base import Decision, WindowState
from rollsum.summarizers.extractive import ExtractiveSummarizer


def test_each_value_lands_in_its_field() -> None:
    """Late in a conversation, so counts that start equal (added vs since the summary, evicted
    in all vs since the summary) differ and a swapped pair would show."""
    rs = RollingSummarizer.from_preset("evict-window", context_window=600, head=1, tail=3, min_evicted=4,
                                       min_messages_per_attempt=0)
    rs.add(Message("system", "be brief"))
    c, w = rs._c, rs._window
    for i in range(200):
        rs.add(Message("user", f"message {i} " * 40))
        if i > 30 and c.since_summary and c.evicted_since:
            break
    state = rs._state(2)
    assert rs.history and 0 < c.since_summary < c.total_added and 0 < c.evicted_since < c.total_evicted
    assert (state.passes, state.context_window, state.total_added, state.since_summary) == \
        (2, 600, c.total_added, c.since_summary)
    assert (state.evicted_since_summary, state.total_evicted, state.pending) == \
        (c.evicted_since, c.total_evicted, len(rs.pending))
    assert (state.attempts, state.since_attempt, state.min_tokens_since_summary) == \
        (c.attempts, c.since_attempt, c.min_tokens_since)
    assert state.messages == rs.messages and state.tokens == w.tokens and state.pending_messages == rs.pending
    assert state.active_tokens == sum(state.tokens) and state.pinned_tokens == w.pinned_tokens > 0
    assert state.summary == rs.summary and state.chain_length == len(rs.history)
    assert state.messages_covered == rs.history[-1].messages_covered and state.summary_tokens == w.summary_tokens
    assert state.summary_budget == rs._summary_room and state.last_failed is False and state.dropped == 0
    assert state.context_tokens == rs.context_tokens()


class _Asking:
    """Summarizes everything but the newest message, and records each time it is asked."""

    name = "asking"

    def __init__(self) -> None:
        self.asked: list[int] = []

    def decide(self, state: WindowState) -> Decision | None:
        self.asked.append(state.total_added)
        return Decision.span("summarize", 0, state.count - 1, "all but the newest") if state.count > 1 else None


def test_the_policy_is_asked_once_per_message_and_never_for_a_system_message() -> None:
    """The first pass's decision is asked before the pass loop (no generator for a message that
    needs nothing): it must still be asked exactly once a turn -- again after a summary only
    for the second pass -- and not at all when the message is a pinned system message."""
    policy = _Asking()
    rs = RollingSummarizer(policy, ExtractiveSummarizer(), min_messages_per_attempt=0, max_passes=2)
    rs.add(Message("user", "the deploy is on Friday"))
    assert policy.asked == [1] and rs.summary is None
    rs.add(Message("system", "answer briefly"))
    assert policy.asked == [1] and not rs.last_events
    rs.add(Message("user", "and the rollback plan is ready"))
    assert policy.asked == [1, 2, 2] and len(rs.history) == 1  # a summary, then the second pass's question
    assert [e.kind for e in rs.last_events] == ["summary"]
