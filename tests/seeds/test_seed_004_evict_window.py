"""Seed 004 (conversation summarization): head + summary + tail; summarize every >= 10 evictions."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer
from rollsum.prompts import get as get_prompt
from tests.seeds.helpers import chat, fake


def run(model: object = None, n: int = 120, **kw: object) -> RollingSummarizer:
    rs = RollingSummarizer.from_preset("evict-window", model, context_window=2500, **kw)
    rs.add(Message("user", "Task: migrate the billing service to Postgres 16. Keep the API stable."))
    rs.add(Message("assistant", "Understood. I will start by reading the schema files."))
    for m in chat(n, words=40):
        rs.add(m)
    return rs


def test_context_is_head_then_summary_then_tail() -> None:
    rs = run()
    ctx = rs.context()
    assert ctx[0].content.startswith("Task: migrate") and ctx[1].content.startswith("Understood.")
    assert ctx[2].role == "assistant" and ctx[2].content.startswith("[Conversation Summary]")
    assert [m.content for m in ctx[3:]] == [m.content for m in rs.messages[2:]]
    assert rs.context_tokens() <= 2500


def test_summaries_are_rate_limited_to_one_per_ten_evictions() -> None:
    rs = run()
    evicted = sum(1 for s in rs.store.messages(rs.conversation_id) if s.state in ("covered", "pending"))
    assert 1 <= len(rs.history) <= evicted // 10
    assert all(len(r.covered_ids) >= 10 for r in rs.history)


def test_failure_falls_back_to_plain_eviction_without_losing_messages() -> None:
    rs = run(fake(fail_rate=1.0), backoff_s=0.0)
    assert rs.summary is None
    ctx = rs.context()
    assert not any(m.content.startswith("[Conversation Summary]") for m in ctx)
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


def test_without_summarize_on_trim_it_is_a_plain_window() -> None:
    model = fake()
    rs = run(model, summarize_on_trim=False)
    assert model.requests == [] and rs.summary is None
    assert rs.context_tokens() <= 2500


def test_prompt_and_output_cap() -> None:
    p = get_prompt("evict-window/v1")
    text = (p.system + p.user_template).lower()
    for needle in ("files", "read", "written", "decisions", "problems", "current task state"):
        assert needle in text, needle
    model = fake()
    run(model)
    assert model.requests and all(r.max_tokens == 1024 for r in model.requests)


def test_while_the_model_fails_the_rate_limit_still_counts_attempts() -> None:
    """Issue #14: 256 calls for 264 evictions while failing, each carrying the whole backlog.
    Now at most one attempt per 10 evictions, each request bounded, the backlog kept pending."""
    model = fake(fail_rate=1.0, fail_kind="500")
    # failure_cooldown=0: no engine backoff, so the policy's own rate limit is what is tested
    rs = run(model, n=300, backoff_s=0.0, retries=0, failure_cooldown=0)
    evicted = sum(1 for s in rs.store.messages(rs.conversation_id) if s.state == "pending")
    assert evicted > 200 and rs.summary is None
    assert evicted // 10 - 2 <= len(model.requests) <= evicted // 10
    for req in model.requests:  # one window (2,500) of conversation per request at most
        assert rs.counter.count("\n".join(m.content for m in req.messages)) <= 2500 + 600


def test_after_an_outage_the_backlog_is_summarized_oldest_first_in_bounded_chunks() -> None:
    script: list[str | BaseException] = [*[RuntimeError("down")] * 12, "summary"]
    model = fake("scripted", script=script)
    rs = run(model, n=200, backoff_s=0.0, retries=0)
    pending_before = [s.message.id for s in rs.store.messages(rs.conversation_id) if s.state == "pending"]
    assert len(pending_before) > 40 and rs.summary is None
    model.inner.script = ["summary"]  # type: ignore[attr-defined]
    for m in chat(120, start=500, words=40):
        rs.add(m)
        assert rs.context_tokens() <= 2500
    covered = [rid for r in rs.history for rid in r.covered_ids]
    assert covered[: len(pending_before)] == pending_before  # oldest first, nothing skipped
    assert len(rs.history) >= 2  # in several bounded requests, not one ever-growing one


def test_a_summary_landing_never_pushes_the_window_over() -> None:
    """The window is head + summary + tail: the summary's room is kept free from the first
    eviction (it used to end up to 5 % over when the summary landed)."""
    rs = RollingSummarizer.from_preset("evict-window", context_window=2500)
    for m in chat(400, words=40):
        rs.add(m)
        assert rs.context_tokens() <= 2500
        assert all(e.tokens_after <= 2500 for e in rs.last_events)  # not even between two steps
        assert not any(e.guard for e in rs.last_events)  # the policy keeps it, not the guard
    assert len(rs.history) >= 30
