"""Seed 001 (conversation summaries): >= 20 since the last summary, outside the verbatim window."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.aio import AsyncRollingSummarizer
from rollsum.errors import ConfigError
from rollsum.models.base import Completion, CompletionRequest
from rollsum.models.fake import FakeModel
from rollsum.policies import SinceLast, WindowState
from rollsum.prompts import get as get_prompt
from rollsum.store.sqlite import SQLiteStore
from tests.support.helpers import Recording, chat, fake


def state(total: int, covered: int, active: int | None = None, since: int | None = None) -> WindowState:
    n = total - covered if active is None else active
    msgs = [Message("user", f"m{i}", id=str(i)) for i in range(n)]
    return WindowState(messages=msgs, tokens=[10] * n, active_tokens=10 * n, total_added=total,
                       messages_covered=covered, since_summary=total - covered if since is None else since)


# US-301 --------------------------------------------------------------------------------------

def test_us301_twentieth_message_triggers_the_first_summary() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    msgs = list(chat(20))
    for m in msgs[:19]:
        assert rs.add(m) is None
    ev = rs.add(msgs[19])
    assert ev is not None and ev.kind == "summary"
    assert rs.summary is not None and rs.summary.messages_covered == 10
    assert len(rs.messages) == 10  # the verbatim window


def test_us301_five_since_a_summary_covering_twenty_does_not_trigger() -> None:
    # 25 messages with a summary covering 20 (US-301), plus one: the active window holds enough
    # messages that only the "since the last summary" count can hold the trigger back
    quiet = state(total=26, covered=20, active=26)
    assert quiet.count - SinceLast().keep_last > 0
    assert SinceLast().decide(quiet) is None
    # ...and it is the count: the same window with 25 since the last summary fires
    assert SinceLast().decide(state(total=45, covered=20, active=26)) is not None


def test_us301_twentyfive_since_a_summary_covering_twenty_triggers() -> None:
    d = SinceLast().decide(state(total=46, covered=20))
    assert d is not None and d.action == "summarize"
    assert d.size == 26 - 10  # everything outside the verbatim window of 10


def test_us301_engine_follows_the_stories_arithmetic_at_one_call_per_twenty_messages() -> None:
    """The stories' count (total - covered) includes the verbatim window, so after the first
    summary it reaches 20 again after only 10 new messages; the cadence rule (at most one call
    per `messages_per_summary` new messages) keeps it to one summary per 20 messages."""
    rs = RollingSummarizer.from_preset("since-last")
    kinds = {}
    for i, m in enumerate(chat(65), start=1):
        ev = rs.add(m)
        kinds[i] = ev.kind if ev else None
    assert [i for i, k in kinds.items() if k == "summary"] == [20, 40, 60]
    # messages_covered reflects the total summarized so far: everything outside the window
    assert [r.messages_covered for r in rs.history] == [10, 30, 50]


def test_us301_short_conversations_use_recent_history_alone() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    msgs = list(chat(15))
    for m in msgs:
        rs.add(m)
    assert rs.summary is None
    assert [m.content for m in rs.context()] == [m.content for m in msgs]


def test_verification_checklist_reading_is_a_parameter() -> None:
    """15 -> none; 25 -> a summary; 35 -> no new one (10 since); 50 -> a new one."""
    rs = RollingSummarizer.from_preset("since-last", keep_last=20, count_since="event")
    counts = {}
    for i, m in enumerate(chat(50), start=1):
        rs.add(m)
        counts[i] = len(rs.history)
    assert counts[15] == 0
    assert counts[25] >= 1
    assert counts[35] == counts[25]
    assert counts[50] > counts[35]
    assert len(rs.messages) >= 20


@pytest.mark.parametrize(("keep_last", "count_since"),
                         [(10, "covered"), (19, "covered"), (20, "covered"), (20, "event"), (40, "covered")])
def test_no_reading_of_the_verbatim_window_thrashes(keep_last: int, count_since: str) -> None:
    """Issue #14: keep_last >= messages_per_summary - 1 used to summarize on every new message,
    one message per call (keep_last=40: 615 summaries for 670 messages). Now at most one call
    per 20 messages added, every reading, and each call after the first covers a full span."""
    model = fake()
    rs = RollingSummarizer.from_preset("since-last", model, keep_last=keep_last, count_since=count_since)
    for m in chat(670):
        rs.add(m)
    assert len(model.requests) <= 670 // 20
    assert len(rs.history) >= 670 // 20 - 3  # still summarizing, at the seed's pace
    assert all(len(r.covered_ids) >= 19 for r in rs.history[2:])
    assert len(rs.messages) >= keep_last  # the verbatim window is kept


def test_a_failing_model_is_asked_no_more_often_than_a_working_one() -> None:
    model = fake(fail_rate=1.0, fail_kind="500")
    rs = RollingSummarizer.from_preset("since-last", model, retries=0, keep_last=20)
    for m in chat(400):
        rs.add(m)
    assert 1 <= len(model.requests) <= 400 // 20


# US-302 --------------------------------------------------------------------------------------

def test_us302_prompt_holds_all_messages_beyond_the_window_and_the_previous_summary() -> None:
    first_text = "FIRST-SUMMARY: Dana moved to Porto and adopted a cat called Miso."
    model = fake("scripted", script=[first_text, "SECOND-SUMMARY: Dana started a new job."])
    rs = RollingSummarizer.from_preset("since-last", model)
    msgs = list(chat(40))
    for m in msgs:
        rs.add(m)
    assert len(model.requests) == 2
    first = model.prompt_text(0)
    assert all(f"message {i}:" in first for i in range(10))
    assert "message 10:" not in first and "FIRST-SUMMARY" not in first
    second = model.prompt_text(1)
    assert rs.history[0].text == first_text and first_text in second  # its words, not template text
    assert all(f"message {i}:" in second for i in range(10, 30))
    assert "message 30:" not in second


def test_us302_prompt_asks_for_short_plain_text_with_names_dates_places() -> None:
    p = get_prompt("since-last/v1")
    text = (p.system + "\n" + p.render(transcript="T", previous_summary="P")).lower()
    assert p.max_words == 300
    assert "300 words" in text and "plain text" in text and "json" in text
    for needle in ("names", "dates", "places", "third person"):
        assert needle in text, needle
    assert "{previous_summary}" in p.user_template


def test_us302_seed_model_name_is_mapped_or_rejected_clearly() -> None:
    from rollsum.models import from_spec

    try:
        model = from_spec("anthropic:claude-haiku-4-5-latest", api_key="sk-ant-test")
    except ConfigError as err:
        assert "claude-haiku-4-5" in str(err)
    else:
        assert model.name == "anthropic:claude-haiku-4-5"


def test_us302_api_failure_degrades_gracefully() -> None:
    rs = RollingSummarizer.from_preset("since-last", fake(fail_rate=1.0, fail_kind="429"), backoff_s=0.0)
    msgs = list(chat(25))
    for m in msgs:
        rs.add(m)
    assert rs.summary is None
    assert len(rs.messages) == 25


# US-303 --------------------------------------------------------------------------------------

def test_us303_summary_row_in_conversation_summaries(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    store = SQLiteStore(db)
    rs = RollingSummarizer.from_preset("since-last", store=store, conversation_id="c1")
    for m in chat(40):
        rs.add(m)
    store.close()
    con = sqlite3.connect(db)
    rows = con.execute("SELECT conversation_id, summary_text, messages_covered, start_message_id, "
                       "end_message_id, created_at FROM conversation_summaries ORDER BY seq").fetchall()
    assert len(rows) == 2 and all(all(v not in (None, "") for v in r) for r in rows)
    assert [r[2] for r in rows] == [10, 30]
    latest = SQLiteStore(db).latest_summary("c1")
    assert latest is not None and latest.messages_covered == 30


def test_us303_restart_resumes_the_window_from_the_store(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    rs = RollingSummarizer.from_preset("since-last", store=SQLiteStore(db), conversation_id="c1")
    for m in chat(35):
        rs.add(m)
    rs.close()  # the app stops (a killed process is covered in tests/rollsum/store)
    again = RollingSummarizer.from_preset("since-last", store=SQLiteStore(db), conversation_id="c1")
    assert [m.id for m in again.messages] == [m.id for m in rs.messages]
    assert again.summary == rs.summary
    for m in chat(5, start=35):
        again.add(m)
    assert len(again.history) == 2  # 40 messages: the second summary fires as if never restarted


def test_us303_restart_keeps_the_cadence_of_a_failing_model(tmp_path: Path) -> None:
    """The attempt at message 20 failed; a restarted engine must not try again at once (it did:
    the store kept no failed attempts) but at message 40, as one that never stopped."""
    db = tmp_path / "chat.db"
    model = fake(fail_rate=1.0, fail_kind="500")
    rs = RollingSummarizer.from_preset("since-last", model, store=SQLiteStore(db), conversation_id="c1", retries=0)
    for m in chat(35):
        rs.add(m)
    assert len(model.requests) == 1 and rs.summary is None
    rs.close()
    again = RollingSummarizer.from_preset("since-last", model, store=SQLiteStore(db), conversation_id="c1",
                                          retries=0)
    calls = []
    for m in chat(10, start=35):
        again.add(m)
        calls.append(len(model.requests))
    assert calls == [1, 1, 1, 1, 2, 2, 2, 2, 2, 2]  # the second attempt at message 40


# US-304 --------------------------------------------------------------------------------------

def test_us304_summary_comes_first_under_its_heading_and_counts_in_tokens() -> None:
    rs = RollingSummarizer.from_preset("since-last")
    for m in chat(20):
        rs.add(Message(m.role, m.content + " We agreed to meet Priya in Lisbon on March 14."))
    ctx = rs.context(system="sys")
    assert ctx[1].content.startswith("## Earlier in this conversation\n")
    assert all(m.role != "system" for m in ctx[2:])
    no_summary = sum(rs.counter.count_message(m) for m in rs.messages)
    assert rs.context_tokens() == no_summary + rs.counter.count_message(ctx[1])


# US-305 --------------------------------------------------------------------------------------

class Concurrency(Recording):
    """Counts how many summary calls run at the same time."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.running = 0
        self.peak = 0
        self.lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> Completion:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            return super().complete(request)
        finally:
            with self.lock:
                self.running -= 1


def test_us305_adding_returns_before_the_summary_and_one_runs_at_a_time() -> None:
    async def scenario() -> None:
        model = Concurrency(FakeModel("extractive", latency_ms=150))
        ars = AsyncRollingSummarizer.from_preset("since-last", model)
        for m in chat(20):
            await ars.add(m)
        assert ars.busy and ars.summary is None  # the 20th message returned first
        await asyncio.sleep(0.01)  # let the worker thread start
        for m in chat(25, start=20):  # a burst while the summary runs
            await ars.add(m)
            await asyncio.sleep(0)
        assert ars.busy and ars.summary is None and len(model.requests) == 1  # no second one started
        await ars.wait_idle()
        assert model.peak == 1  # never two at once for one conversation
        assert ars.events[0].kind == "summary" and ars.events[0].lag_turns == 25
        # caught up: the burst was summarized as soon as the first summary landed
        assert len(model.requests) == 2 and [e.kind for e in ars.events] == ["summary", "summary"]
        assert len(ars.messages) == 10 and ars.summary is not None and ars.summary.messages_covered == 35

    asyncio.run(scenario())


def test_us305_wait_idle_returns_once_caught_up_and_inside_the_window() -> None:
    """1,000 messages added without awaiting a summary: when wait_idle returns, no policy would
    trigger and the context is inside the window (issue #14: it used to stop after one)."""
    async def scenario() -> None:
        ars = AsyncRollingSummarizer.from_preset("since-last", FakeModel("extractive", latency_ms=5),
                                                 context_window=4000)
        for m in chat(1000, words=40):
            await ars.add(m)
            assert ars.context_tokens() <= 4000
        await ars.wait_idle()
        assert not ars.busy and ars.context_tokens() <= 4000
        core = ars.core
        assert core.policy.decide(core._state(0)) is None  # nothing left to trigger
        assert len(ars.history) >= 2  # more than the one summary started by the burst's start
        states = [s.state for s in core.store.messages(core.conversation_id)]
        assert states.count("covered") + states.count("pending") + states.count("active") == 1000

    asyncio.run(scenario())


def test_us305_background_failure_does_not_disturb_messages() -> None:
    async def scenario() -> None:
        ars = AsyncRollingSummarizer.from_preset("since-last", fake(fail_rate=1.0), backoff_s=0.0)
        for m in chat(21):
            await ars.add(m)
        await ars.wait_idle()
        assert ars.summary is None and len(ars.messages) == 21
        assert ars.events[-1].kind == "failure"

    asyncio.run(scenario())


@pytest.mark.parametrize("bad", [dict(count_since="sometimes"), dict(messages_per_summary=0)])
def test_bad_parameters_are_config_errors(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RollingSummarizer.from_preset("since-last", **bad)
