"""Seed 003 (summarization plan): token ratio, hysteresis, cooldown, depth guard, emergency."""

from __future__ import annotations

import json

from rollsum import Message, RollingSummarizer
from rollsum.policies import TokenRatio, WindowState
from rollsum.types import SummaryRecord
from tests.seeds.helpers import chat, fake


def st(tokens: int, count: int = 20, *, window: int = 1000, summary_depth: int | None = None,
       since: int = 100, low: int | None = None, passes: int = 0) -> WindowState:
    msgs = [Message("user", f"m{i}", id=str(i)) for i in range(count)]
    per = tokens // count
    rec = None if summary_depth is None else SummaryRecord(id="s", conversation_id="c", text="t",
                                                            depth=summary_depth)
    return WindowState(messages=msgs, tokens=[per] * count, active_tokens=per * count, summary=rec,
                       since_summary=since, min_tokens_since_summary=low, context_window=window, passes=passes)


def test_defaults() -> None:
    p = TokenRatio()
    assert (p.trigger_ratio, p.reset_ratio, p.min_messages, p.preserve_recent, p.max_depth,
            p.cooldown_messages) == (0.8, 0.7, 12, 6, 3, 4)


def test_single_long_thread_triggers_once_near_the_ratio() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=4000)
    ratios = []
    for m in chat(60, words=40):
        before = rs.context_tokens() + rs.counter.count_message(m)
        ev = rs.add(m)
        if ev and ev.kind == "summary":
            ratios.append(before / 4000)
        if len(rs.history) == 1 and rs.context_tokens() < 0.5 * 4000:
            break
    assert len(ratios) == 1
    assert 0.8 <= ratios[0] < 0.8 + 0.05


def test_hysteresis_blocks_a_retrigger_until_usage_drops_or_messages_accumulate() -> None:
    p = TokenRatio()
    # after a summary that left usage at >= 0.7, a 5-message burst crosses 0.8 again
    assert p.decide(st(850, summary_depth=0, since=5, low=720)) is None
    # usage had dropped below the reset ratio since the last summary: re-armed
    assert p.decide(st(850, summary_depth=0, since=5, low=600)) is not None
    # or enough new messages arrived
    assert p.decide(st(850, summary_depth=0, since=12, low=720)) is not None


def test_cooldown_and_a_burst_give_one_summary() -> None:
    p = TokenRatio()
    assert p.decide(st(850, summary_depth=0, since=3, low=100)) is None
    assert p.decide(st(850, summary_depth=0, since=4, low=100)) is not None


def test_emergency_ignores_cooldown_and_hysteresis() -> None:
    p = TokenRatio()
    d = p.decide(st(1000, summary_depth=0, since=1, low=990))
    assert d is not None and "emergency" in d.reason


def test_depth_guard_stops_at_the_cap() -> None:
    p = TokenRatio()
    assert p.decide(st(2000, summary_depth=1)) is not None  # next would be depth 2 < 3
    assert p.decide(st(2000, summary_depth=2)) is None  # next would be depth 3: capped
    assert TokenRatio(max_depth=None).decide(st(2000, summary_depth=9)) is not None


def test_small_context_compresses_repeatedly_up_to_the_cap() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=2000)
    for m in chat(200, words=40):
        rs.add(m)
    assert [r.depth for r in rs.history] == [0, 1, 2]
    assert [r.parent_id for r in rs.history] == [None, rs.history[0].id, rs.history[1].id]


def test_second_pass_halves_the_preserved_tail_but_not_below_two() -> None:
    p = TokenRatio()
    assert st(900).count - p.decide(st(900)).size == 6  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=1)).size == 3  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=2)).size == 2  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=5)).size == 2  # type: ignore[union-attr]


def test_huge_tail_gets_a_second_pass_in_the_same_turn() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=3000, ledger="off")
    for m in chat(14, words=15):
        rs.add(m)
    for m in chat(6, words=300, start=14):  # six big messages: the preserved tail alone is over 0.8
        rs.add(m)
    assert len(rs.history) >= 2
    first, second = rs.history[0], rs.history[1]
    assert second.meta["turn"] == first.meta["turn"]  # same message, two passes
    assert str(second.meta["reason"]).startswith("second pass")
    assert second.depth == first.depth + 1


def test_failure_falls_back_without_losing_messages() -> None:
    model = fake("json", fail_rate=1.0, fail_kind="timeout")
    sleeps: list[float] = []
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=2000, sleep=sleeps.append)
    msgs = list(chat(40, words=40))
    for m in msgs:
        rs.add(m)
    assert rs.summary is None and len(rs.messages) == 40
    assert sleeps[:1] == [0.25]  # transport errors: one retry after 250 ms
    assert all(s.state == "active" for s in rs.store.messages(rs.conversation_id))


def test_validation_failure_is_not_retried() -> None:
    model = fake("scripted", script=["this is not json at all"])
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=2000, failure_cooldown=1000)
    for m in chat(40, words=40):
        rs.add(m)
    assert len(model.requests) == 1 and rs.summary is None


def test_summary_is_a_tagged_system_message_with_structured_fields() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=2000)
    for m in chat(40, words=40):
        rs.add(m)
    ctx = rs.context()
    tagged = [m for m in ctx if m.meta.get("tag", "").startswith("summary-depth:")]
    assert len(tagged) == 1 and tagged[0].role == "system"
    assert rs.summary is not None and rs.summary.key_points is not None


def _structured(summary: str, entities: list[str]) -> str:
    return json.dumps({"summary": summary, "key_points": [], "participants": ["user"], "decisions": [],
                       "action_items": [], "unresolved": [], "entities": entities})


def drift_run(ledger: str) -> RollingSummarizer:
    script = [_structured("User debugged the parser in src/ParserCore.swift; fixed token offsets.",
                          ["src/ParserCore.swift"]),
              _structured("User moved on to the UI layout work and discussed colours.", [])]
    rs = RollingSummarizer.from_preset("token-ratio", fake("scripted", script=script), context_window=2000,
                                       ledger=ledger)
    rs.add(Message("user", "The crash is in src/ParserCore.swift, function tokenOffsets(). " + "detail " * 60))
    for m in chat(200, words=40):
        rs.add(m)
        if len(rs.history) == 2:
            break
    return rs


def test_drift_an_identifier_from_the_first_span_survives_the_second_summary() -> None:
    rs = drift_run("pin")
    assert len(rs.history) == 2
    assert "src/ParserCore.swift" in rs.history[0].render()
    assert "src/ParserCore.swift" not in rs.history[1].text  # the model dropped it...
    assert "src/ParserCore.swift" in rs.summary_text()  # ...the ledger kept it in context


def test_drift_without_the_ledger_loses_it() -> None:
    rs = drift_run("off")
    assert len(rs.history) == 2 and "src/ParserCore.swift" not in rs.summary_text()
