"""Seed 000 (rolling summary generation): count AND tokens, strictly greater, keep 10."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer
from rollsum.policies import CountAndTokens, WindowState
from rollsum.prompts import get as get_prompt
from tests.support.helpers import chat, fake

SMALL = dict(message_count_threshold=10, messages_to_summarize=5, recent_messages_to_keep=3,
             token_threshold=100, max_summary_tokens=512)


def test_defaults_are_the_seed_thresholds() -> None:
    p = CountAndTokens()
    assert (p.message_count_threshold, p.messages_to_summarize, p.recent_messages_to_keep,
            p.token_threshold, p.max_summary_tokens) == (30, 20, 10, 15_000, 1024)


def test_every_threshold_is_configurable() -> None:
    p = CountAndTokens(message_count_threshold=50, messages_to_summarize=30, recent_messages_to_keep=15,
                       token_threshold=20_000, max_summary_tokens=2048)
    assert (p.message_count_threshold, p.messages_to_summarize, p.recent_messages_to_keep,
            p.token_threshold, p.max_summary_tokens) == (50, 30, 15, 20_000, 2048)


def test_both_conditions_must_hold_and_strictly_exceed() -> None:
    p = CountAndTokens(**SMALL)
    assert not p.should_summarize(5, 500)  # below the message threshold
    assert not p.should_summarize(15, 50)  # below the token threshold
    assert p.should_summarize(15, 500)
    assert not p.should_summarize(10, 100)  # exactly at both thresholds: must exceed
    assert not p.should_summarize(10, 101)
    assert not p.should_summarize(11, 100)
    assert p.should_summarize(11, 101)
    assert not p.should_summarize(0, 0)
    assert p.should_summarize(1000, 50_000)


def window(tokens: list[int]) -> WindowState:
    msgs = [Message("user", f"m{i}", id=str(i)) for i in range(len(tokens))]
    return WindowState(messages=msgs, tokens=tokens, active_tokens=sum(tokens), total_added=len(tokens))


def test_the_token_condition_weighs_the_oldest_batch_only() -> None:
    """The seed sums the tokens of the candidate batch (the oldest `messages_to_summarize`),
    not of the whole session: heavy *recent* messages must not trigger, heavy *old* ones must."""
    p = CountAndTokens()  # more than 30 messages, oldest 20 over 15,000 tokens, keep 10
    light_old = window([100] * 20 + [5_000] * 11)  # 31 messages; 57,000 tokens, oldest 20 = 2,000
    assert p.decide(light_old) is None
    heavy_old = window([800] * 20 + [10] * 11)  # oldest 20 = 16,000 > 15,000
    d = p.decide(heavy_old)
    assert d is not None and d.indices == tuple(range(20))
    edge = window([750] * 20 + [10_000] * 11)  # oldest 20 = exactly 15,000: must exceed
    assert p.decide(edge) is None


def test_a_batch_is_always_full_so_odd_thresholds_cannot_thrash() -> None:
    """keep + batch > threshold + 1 would summarize a few messages on every turn; the policy
    waits for a full batch instead (docs/seeds.md)."""
    rs = RollingSummarizer.from_preset("count-and-tokens", message_count_threshold=10, messages_to_summarize=8,
                                       recent_messages_to_keep=9, token_threshold=0)
    for m in chat(100):
        rs.add(m)
    assert rs.history and all(len(r.covered_ids) == 8 for r in rs.history)
    assert len(rs.history) <= 100 // 8


def test_given_a_window_it_stays_inside_it_though_its_token_threshold_never_fires() -> None:
    """Issue #14: on chat data the seed's 15,000-token condition never fires in an 8,000 window;
    given a `context_window`, the engine's window guard keeps the promise (5-11x over before)."""
    rs = RollingSummarizer.from_preset("count-and-tokens", context_window=4000)
    for m in chat(400, words=60):
        rs.add(m)
        assert rs.context_tokens() <= 4000
    assert rs.history and all(r.meta.get("guard") for r in rs.history)
    assert len(rs.history) <= 400 * 90 // (4000 * 0.4)  # one per (1 - low water) x window tokens


def test_few_or_no_messages_never_summarize() -> None:
    model = fake()
    rs = RollingSummarizer.from_preset("count-and-tokens", model, **SMALL)
    for m in chat(5, words=200):
        assert rs.add(m) is None
    assert rs.summary is None and model.requests == []
    empty = RollingSummarizer.from_preset("count-and-tokens", fake(), **SMALL)
    assert empty.context() == [] and empty.summary is None


def test_summarizes_the_oldest_batch_and_keeps_recent_messages() -> None:
    model = fake()
    rs = RollingSummarizer.from_preset("count-and-tokens", model, **SMALL)
    msgs = list(chat(11, words=60))
    events = [rs.add(m) for m in msgs]
    assert [e.kind for e in events if e] == ["summary"]
    rec = rs.summary
    assert rec is not None
    assert list(rec.covered_ids) == [s.message.id for s in rs.store.messages(rs.conversation_id)][:5]
    assert rec.messages_covered == 5
    assert len(rs.messages) == 6
    assert [m.content for m in rs.messages[-3:]] == [m.content for m in msgs[-3:]]
    # non-streaming request with the seed's output cap (the policy's max_summary_tokens)
    assert model.requests[0].max_tokens <= 512


def test_previous_summary_goes_into_the_next_prompt() -> None:
    """The summary's own words, not the template (the extractive fake echoed the prompt, so a
    check on its text found template lines that are there with no previous summary at all)."""
    first_text = "FIRST-SUMMARY: the user is planning a trip to Lisbon in May with her sister."
    model = fake("scripted", script=[first_text, "SECOND-SUMMARY: they also booked the hotel."])
    rs = RollingSummarizer.from_preset("count-and-tokens", model, **SMALL)
    for m in chat(40, words=60):
        rs.add(m)
    assert len(rs.history) >= 2
    first = rs.history[0]
    assert first.text == first_text
    assert "FIRST-SUMMARY" not in model.prompt_text(0)
    assert first_text in model.prompt_text(1)
    assert rs.history[1].parent_id == first.id and rs.history[1].depth == first.depth + 1


def test_llm_failure_keeps_every_message() -> None:
    model = fake(fail_rate=1.0, fail_kind="500")
    rs = RollingSummarizer.from_preset("count-and-tokens", model, **SMALL)
    msgs = list(chat(11, words=60))
    events = [rs.add(m) for m in msgs]
    assert any(e and e.kind == "failure" for e in events)
    assert rs.summary is None
    assert [m.content for m in rs.messages] == [m.content for m in msgs]
    assert all(s.state == "active" for s in rs.store.messages(rs.conversation_id))


def test_empty_summary_is_a_failure_not_a_blank_summary() -> None:
    model = fake("scripted", script=["   "])
    rs = RollingSummarizer.from_preset("count-and-tokens", model, **SMALL)
    for m in chat(11, words=60):
        rs.add(m)
    assert rs.summary is None and len(rs.messages) == 11


def test_prompt_meets_the_seed_requirements() -> None:
    p = get_prompt("count-and-tokens/v1")
    text = (p.system + "\n" + p.render(transcript="T", previous_summary="P")).lower()
    assert p.max_words == 500
    for needle in ("key topics", "decisions", "action items", "emotional tone", "third person",
                   "500 words", "previous summary"):
        assert needle in text, needle


def test_summary_rides_as_a_bracketed_assistant_message() -> None:
    rs = RollingSummarizer.from_preset("count-and-tokens", fake(), **SMALL)
    for m in chat(11, words=60):
        rs.add(m)
    ctx = rs.context(system="You are Ember.")
    assert ctx[0].role == "system"
    assert ctx[1].role == "assistant" and ctx[1].content.startswith("[") and ctx[1].content.endswith("]")
    assert rs.summary is not None and rs.summary.text[:30] in ctx[1].content


def test_offline_preset_needs_no_model() -> None:
    rs = RollingSummarizer.from_preset("count-and-tokens", None, **SMALL)
    for m in chat(11, words=60):
        rs.add(Message(m.role, m.content + " Priya booked flight BA-2490 for March 14."))
    assert rs.summary is not None and rs.summary.model in ("", "extractive")
