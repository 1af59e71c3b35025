"""The policy's `WindowState`, built positionally on every message (issue #20, item 4)."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer


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
