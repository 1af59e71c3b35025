"""The window guard's arithmetic on plain values (`rollsum.guard`, issue #20 item 4)."""

from __future__ import annotations

from rollsum import guard, policies
from rollsum.settings import EngineSettings
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message
from rollsum.window import Window


def test_the_guard_takes_the_oldest_first_and_a_preserved_head_last() -> None:
    assert guard.order(head=2, limit=6) == [2, 3, 4, 5, 0, 1]
    assert guard.order(head=9, limit=3) == [0, 1, 2]  # a head longer than what may go is all of it


def test_compaction_stops_at_the_aim_and_never_takes_the_newest_tail() -> None:
    tokens = [100, 100, 100, 100, 100]
    assert guard.compaction(tokens, 500, head=0, min_tail=2, aim=250) == [0, 1, 2]
    assert guard.compaction(tokens, 500, head=0, min_tail=2, aim=0) == [0, 1, 2]  # the tail stays
    assert guard.compaction(tokens, 500, head=1, min_tail=1, aim=150) == [1, 2, 3, 0]


def test_eviction_frees_what_is_over_and_never_the_newest() -> None:
    assert guard.eviction([50, 60, 70, 80], head=0, over=100) == [0, 1]
    assert guard.eviction([50, 60, 70, 80], head=0, over=10_000) == [0, 1, 2]
    assert guard.eviction([500], head=0, over=100) == []


def test_the_gap_between_guard_summaries_and_how_the_limit_is_named() -> None:
    assert guard.gap(0.6, 10_000) == 4_000 and guard.gap(0.999, 100) == 1
    assert guard.limit_name(8_000, 0) == "window 8000"
    assert guard.limit_name(8_000, 1_000) == "budget 7000 (window 8000 − 1000 reserved)"


def test_water_filling_cuts_the_largest_to_a_common_cap_and_leaves_small_items_whole() -> None:
    items = [(False, "a", 10), (False, "b", 500), (False, "c", 300)]
    plan = guard.clip_plan(items, {"a": 5, "b": 5, "c": 5}, window=210, summary_tokens=0)
    assert plan.cap == 100 and not plan.omitted and not plan.hide_summary  # 10 + 100 + 100 = 210


def test_when_markers_cannot_fit_the_summary_goes_then_the_oldest_pinned() -> None:
    items = [(True, "p0", 50), (True, "p1", 50), (False, "new", 400)]
    floors = {"p0": 40, "p1": 40, "new": 40}
    keep_summary = guard.clip_plan(items, floors, window=200, summary_tokens=50)
    assert not keep_summary.hide_summary and not keep_summary.omitted
    no_summary = guard.clip_plan(items, floors, window=140, summary_tokens=50)
    assert no_summary.hide_summary and not no_summary.omitted
    no_pinned = guard.clip_plan(items, floors, window=90, summary_tokens=50)
    assert no_pinned.hide_summary and no_pinned.omitted == ("p0",)


def test_a_clipped_message_fits_its_cap_and_says_what_was_cut() -> None:
    counter = HeuristicCounter()
    m = Message("user", "word " * 2_000, id="m1")
    shown = guard.clip_message(counter, m, 60)
    assert counter.count_message(shown) <= 60 and shown.meta["clipped_chars"] > 0 and shown.id == "m1"
    assert guard.clip_floor(counter, m) < 60


def test_guard_decisions_name_the_limit_and_keep_tool_groups_whole() -> None:
    w = Window()
    msgs = [Message("user", "u " * 40, id="u0"),
            Message("assistant", "calling", id="a1", meta={"tool_calls": [{"id": "t"}]}),
            Message("tool", "r " * 40, id="t2", name="grep"),
            Message("user", "u " * 40, id="u3"), Message("user", "u " * 40, id="u4")]
    for i, m in enumerate(msgs):
        w.push(i, m, 50)
    policy = policies.get("evict-window")()
    s = EngineSettings(context_window=300, guard_low_water=0.5, guard_min_tail=1)
    decision = guard.compaction_decision(w, s, head=0, summary_room=20, context_tokens=250, policy=policy,
                                         summary=None)
    assert decision is not None and decision.action == "summarize"
    assert decision.indices == (0, 1, 2) and "window 300" in decision.reason  # aim 130: down to 100 left
    s = EngineSettings(context_window=300, guard_low_water=0.67, guard_min_tail=1)  # aim 181: 0 and 1 would do
    decision = guard.compaction_decision(w, s, head=0, summary_room=20, context_tokens=250, policy=policy,
                                         summary=None)
    assert decision is not None and decision.indices == (0,)  # but 1 calls a tool whose result stays
    evict = guard.eviction_decision(w, s, head=0, context_tokens=400)
    assert evict is not None and evict.indices == (0, 1) and not evict.include_pending


def test_may_compact_waits_a_full_gap_and_needs_room_for_what_stays() -> None:
    """The token bound: a second compaction only after `gap` more tokens (not one token
    earlier), and never when the pinned messages plus the summary's room fill the window."""
    s = EngineSettings(context_window=1000, guard_low_water=0.6)
    need = guard.gap(0.6, 1000)
    assert guard.may_compact(None, 0, s, 1000, 999)
    assert not guard.may_compact(None, 0, s, 1000, 1000)
    assert not guard.may_compact(500, 500 + need - 1, s, 1000, 100)
    assert guard.may_compact(500, 500 + need, s, 1000, 100)
