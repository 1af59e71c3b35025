"""Seed 004 (conversation summarization): head + summary + tail; summarize every >= 10 evictions.

Each behaviour is checked on plain chat and on agent traffic (issue #19: every test used to
have plain chat after the head, and the head was lost on agent traffic): there the task is
followed by an assistant message that calls a tool, and the head keeps that call's result.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.prompts import get as get_prompt
from tests.support.helpers import agent, chat, fake

FLAVORS = ("chat", "agent")
TASK = "Task: migrate the billing service to Postgres 16. Keep the API stable."


def head(flavor: str) -> list[Message]:
    if flavor == "chat":
        return [Message("user", TASK), Message("assistant", "Understood. I will start by reading the schema files.")]
    return [Message("user", TASK),
            Message("assistant", "Understood. I will start by reading the schema.", meta={"tool_calls": ["c0"]}),
            Message("tool", "CREATE TABLE invoices (id serial, total numeric);", name="read_file",
                    meta={"tool_call_id": "c0"})]


def stream(flavor: str, n: int, start: int = 0) -> Iterator[Message]:
    return chat(n, words=40, start=start) if flavor == "chat" else agent(n, words=40, start=start)


def run(model: object = None, n: int = 120, flavor: str = "chat", window: int = 2500,
        **kw: object) -> RollingSummarizer:
    rs = RollingSummarizer.from_preset("evict-window", model, context_window=window, **kw)
    for m in head(flavor):
        rs.add(m)
    for m in stream(flavor, n):
        rs.add(m)
    return rs


@pytest.mark.parametrize("flavor", FLAVORS)
def test_context_is_head_then_summary_then_tail(flavor: str) -> None:
    rs = run(flavor=flavor)
    ctx = rs.context()
    kept = head(flavor)
    assert [m.content for m in ctx[:len(kept)]] == [m.content for m in kept]
    summary = ctx[len(kept)]
    assert summary.role == "assistant" and summary.content.startswith("[Conversation Summary]")
    assert [m.content for m in ctx[len(kept) + 1:]] == [m.content for m in rs.messages[len(kept):]]
    assert rs.context_tokens() <= 2500


@pytest.mark.parametrize("window", [2000, 4000, 8000])
def test_a_head_ending_in_a_tool_call_keeps_the_call_and_its_result_on_every_turn(window: int) -> None:
    """Issue #19: tool-pair grouping evicted the head's assistant message with its result
    (at step 24/49/99 here for 2k/4k/8k windows). The head is the task and the call it ends
    with, with that call's results (docs/seeds.md)."""
    rs = RollingSummarizer.from_preset("evict-window", context_window=window)
    kept = head("agent")
    for m in kept:
        rs.add(m)
    for m in agent(300, words=40):
        rs.add(m)
        ctx = rs.context()
        assert [c.content for c in ctx[:3]] == [k.content for k in kept]
        assert ctx[3].content.startswith("[Conversation Summary]") or rs.summary is None
    assert len(rs.history) >= 3
    states = {s.message.id: s.state for s in rs.store.messages(rs.conversation_id)}
    assert [states[m.id] for m in rs.messages[:3]] == ["active"] * 3


def test_unlinked_tool_results_are_tool_output_for_the_skip_and_leave_the_head_alone() -> None:
    """Tool results after an assistant message without `tool_calls` metadata used to be
    grouped with it: the head's assistant message was evicted with them and the batch, now
    holding its words, was summarized instead of skipped."""
    model = fake()
    rs = RollingSummarizer.from_preset("evict-window", model, context_window=1500)
    rs.add(Message("user", "Run the whole test suite please."))
    rs.add(Message("assistant", "Running it now."))  # no tool_calls: the results below are unlinked
    for i in range(40):
        rs.add(Message("tool", f"PASS test_{i}\n" + "ok\n" * 120, name="execute_bash"))
    assert [m.content for m in rs.context()[:2]] == ["Run the whole test suite please.", "Running it now."]
    assert rs.summary is None and model.requests == []
    dropped = [s for s in rs.store.messages(rs.conversation_id) if s.state == "dropped"]
    assert len(dropped) >= 10 and all(s.message.role == "tool" for s in dropped)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_summaries_are_rate_limited_to_one_per_ten_evictions(flavor: str) -> None:
    rs = run(flavor=flavor)
    evicted = sum(1 for s in rs.store.messages(rs.conversation_id) if s.state in ("covered", "pending"))
    assert 1 <= len(rs.history) <= evicted // 10
    assert all(len(r.covered_ids) >= 10 for r in rs.history)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_failure_falls_back_to_plain_eviction_without_losing_messages(flavor: str) -> None:
    rs = run(fake(fail_rate=1.0), backoff_s=0.0, flavor=flavor)
    assert rs.summary is None
    ctx = rs.context()
    assert not any(m.content.startswith("[Conversation Summary]") for m in ctx)
    assert [m.content for m in ctx[:len(head(flavor))]] == [m.content for m in head(flavor)]
    states = [s.state for s in rs.store.messages(rs.conversation_id)]
    assert states.count("pending") > 10 and "dropped" not in states  # evicted, waiting, not lost


def test_only_tool_results_evicted_skips_summarization() -> None:
    model = fake()
    rs = RollingSummarizer.from_preset("evict-window", model, context_window=1500, head=1)
    rs.add(Message("user", "Run the whole test suite please."))
    for i in range(40):
        rs.add(Message("tool", f"PASS test_{i}\n" + "ok\n" * 120, name="execute_bash",
                       meta={"command": f"pytest -k t{i}", "exit_code": 0}))
    assert rs.summary is None and model.requests == []
    dropped = [s for s in rs.store.messages(rs.conversation_id) if s.state == "dropped"]
    assert len(dropped) >= 10 and all(s.message.role == "tool" for s in dropped)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_without_summarize_on_trim_it_is_a_plain_window(flavor: str) -> None:
    model = fake()
    rs = run(model, summarize_on_trim=False, flavor=flavor)
    assert model.requests == [] and rs.summary is None
    assert rs.context_tokens() <= 2500
    assert [m.content for m in rs.context()[:len(head(flavor))]] == [m.content for m in head(flavor)]


def test_prompt_and_output_cap() -> None:
    p = get_prompt("evict-window/v1")
    text = (p.system + p.user_template).lower()
    for needle in ("files", "read", "written", "decisions", "problems", "current task state"):
        assert needle in text, needle
    model = fake()
    run(model)
    assert model.requests and all(r.max_tokens == 1024 for r in model.requests)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_while_the_model_fails_the_rate_limit_still_counts_attempts(flavor: str) -> None:
    """Issue #14: 256 calls for 264 evictions while failing, each carrying the whole backlog.
    Now at most one attempt per 10 evictions, each request bounded, the backlog kept pending."""
    model = fake(fail_rate=1.0, fail_kind="500")
    # failure_cooldown=0: no engine backoff, so the policy's own rate limit is what is tested
    rs = run(model, n=300, backoff_s=0.0, retries=0, failure_cooldown=0, flavor=flavor)
    evicted = sum(1 for s in rs.store.messages(rs.conversation_id) if s.state == "pending")
    assert evicted > 200 and rs.summary is None
    assert evicted // 10 - 2 <= len(model.requests) <= evicted // 10
    for req in model.requests:  # one window (2,500) of conversation per request at most
        assert rs.counter.count("\n".join(m.content for m in req.messages)) <= 2500 + 600


@pytest.mark.parametrize("flavor", FLAVORS)
def test_after_an_outage_the_backlog_is_summarized_oldest_first_in_bounded_chunks(flavor: str) -> None:
    script: list[str | BaseException] = [*[RuntimeError("down")] * 12, "summary"]
    model = fake("scripted", script=script)
    rs = run(model, n=200, backoff_s=0.0, retries=0, flavor=flavor)
    pending_before = [s.message.id for s in rs.store.messages(rs.conversation_id) if s.state == "pending"]
    assert len(pending_before) > 40 and rs.summary is None
    model.inner.script = ["summary"]  # type: ignore[attr-defined]
    for m in stream(flavor, 120, start=500):
        rs.add(m)
        assert rs.context_tokens() <= 2500
    covered = [rid for r in rs.history for rid in r.covered_ids]
    assert covered[: len(pending_before)] == pending_before  # oldest first, nothing skipped
    assert len(rs.history) >= 2  # in several bounded requests, not one ever-growing one


@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_summary_landing_never_pushes_the_window_over(flavor: str) -> None:
    """The window is head + summary + tail: the summary's room is kept free from the first
    eviction (it used to end up to 5 % over when the summary landed)."""
    rs = RollingSummarizer.from_preset("evict-window", context_window=2500)
    for m in stream(flavor, 400):
        rs.add(m)
        assert rs.context_tokens() <= 2500
        assert all(e.tokens_after <= 2500 for e in rs.last_events)  # not even between two steps
        assert not any(e.guard for e in rs.last_events)  # the policy keeps it, not the guard
    assert len(rs.history) >= 30
