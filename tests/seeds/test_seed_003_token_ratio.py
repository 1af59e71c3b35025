"""Seed 003 (summarization plan): token ratio, hysteresis, cooldown, depth guard, emergency."""

from __future__ import annotations

import json

from rollsum import Message, RollingSummarizer
from rollsum.engine import SELECTED_AT_CAP
from rollsum.policies import TokenRatio, WindowState
from rollsum.types import SummaryRecord
from tests.support.helpers import chat, fake


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


def guarded_stream() -> list[Message]:
    """Drives token-ratio (4,000 window) through both guards. 14 short messages, then 7 long
    ones: the first summary (message 20) keeps the 6 long ones, usage stays at 0.74 -- above
    the reset ratio -- and short messages take it over 0.8 from message 28 on. After the second
    summary (usage 0.15: re-armed) one huge message (33) takes it to 0.81 at once."""
    return [*chat(14, words=15), *chat(7, words=280, start=14), *chat(12, words=15, start=21),
            *chat(1, words=1750, start=33), *chat(8, words=15, start=34)]


def replay_guards() -> tuple[list[int], list[int]]:
    """(messages at which a summary landed, messages after which usage was >= 0.8 with none)."""
    # the policy's own guards alone: no engine cap, and `min_messages` out of the cooldown's way
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=4000, ledger="off",
                                       min_messages_per_attempt=0, min_messages=4)
    summaries, over = [], []
    for i, m in enumerate(guarded_stream()):
        rs.add(m)
        if any(e.kind == "summary" for e in rs.last_events):
            summaries.append(i)
        elif rs.context_tokens() >= 0.8 * 4000:
            over.append(i)
    return summaries, over


def test_hysteresis_in_the_engine_holds_a_retrigger_until_rearm_messages() -> None:
    """After a summary that left usage above `reset_ratio`, crossing the trigger again does not
    summarize until `rearm_messages` (12) new messages arrived -- driven through the engine,
    which computes the lowest usage since the summary (a hand-built state could not catch an
    engine that reports it wrongly)."""
    summaries, over = replay_guards()
    first, second = summaries[0], summaries[1]
    assert [i for i in over if first < i < second] == list(range(28, 32))  # over 0.8, held off
    assert second - first == 12


def test_cooldown_in_the_engine_holds_a_burst_to_one_summary_four_messages_on() -> None:
    """Re-armed (usage fell to 0.15), one huge message takes usage over 0.8 the very next turn:
    the cooldown (4 messages since the last summary) holds the summary until the 4th."""
    summaries, over = replay_guards()
    second, third = summaries[1], summaries[2]
    assert [i for i in over if second < i < third] == [33, 34, 35]
    assert third - second == 4


def test_emergency_ignores_cooldown_and_hysteresis() -> None:
    p = TokenRatio()
    d = p.decide(st(1000, summary_depth=0, since=1, low=990))
    assert d is not None and "emergency" in d.reason


def test_depth_guard_folds_up_to_the_cap_then_appends_instead_of_stopping() -> None:
    """The cap stops re-summarizing summaries, not summarizing: seed 003's first goal is to
    avoid hard stops, so past the cap a decision asks for an appended summary (fold=False)."""
    p = TokenRatio()
    below = p.decide(st(2000, summary_depth=1))  # next would be depth 2 < 3
    assert below is not None and below.fold
    at_cap = p.decide(st(2000, summary_depth=2))  # next would be depth 3: capped
    assert at_cap is not None and not at_cap.fold and "depth cap" in at_cap.reason
    uncapped = TokenRatio(max_depth=None).decide(st(2000, summary_depth=9))
    assert uncapped is not None and uncapped.fold


def test_small_context_compresses_repeatedly_and_stays_inside_the_window_past_the_cap() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=2000)
    for m in chat(200, words=40):
        rs.add(m)
        assert rs.context_tokens() <= 2000  # issue #14: 41,211 tokens in 8,000 before
    depths = [r.depth for r in rs.history]
    assert depths[:3] == [0, 1, 2] and len(depths) > 6
    assert set(depths[3:]) == {2}  # appended: nothing re-summarized past the cap
    assert all(r.meta.get("appended") and "appended at the depth cap" in r.notes for r in rs.history[3:])
    assert [r.parent_id for r in rs.history[1:]] == [r.id for r in rs.history[:-1]]


def test_past_the_cap_the_oldest_summary_content_is_cut_with_a_marker() -> None:
    script = [json.dumps({"summary": f"Span {k} summary: " + f"detail{k} " * 60, "key_points": []})
              for k in range(40)]
    model = fake("scripted", script=script)
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=2000, ledger="off")
    for m in chat(300, words=40):
        rs.add(m)
    assert len(rs.history) > 8
    last = rs.history[-1]
    assert last.meta.get("appended")
    # the newest span is whole, the oldest spans were cut, and the cut is marked and noted
    newest = model.inner.calls - 1  # type: ignore[attr-defined]
    assert f"Span {newest} summary" in last.text
    assert "Span 0 summary" not in last.text
    assert last.text.startswith("[… earlier summary content truncated …]")
    assert any("cut the oldest" in n for n in last.notes)
    assert rs.counter.count(last.text) <= rs.config()["summary_budget"]


def test_past_the_cap_extractive_lines_still_compete_instead_of_the_oldest_being_cut() -> None:
    """The cap stops a summary of a summary from drifting; the extractive summarizer never
    rewrites a line, so past the cap its old lines keep competing with the span's
    (`depth_cap_merge="select"`, the default): an early specific fact outlives many passes.
    Cutting the oldest text instead ("cut", the other reading, what a model gets) halves the old
    content on every pass and loses it (issue #10: 21 of 179 synthetic chat facts at the end)."""
    fact = "My passport number is PX-58213 and it expires in March 2031."

    def run(mode: str) -> RollingSummarizer:
        rs = RollingSummarizer.from_preset("token-ratio", context_window=2000, depth_cap_merge=mode)
        rs.add(Message("user", fact))
        for m in chat(300, words=40):
            rs.add(m)
        return rs

    selected, cut = run("select"), run("cut")
    for rs in (selected, cut):
        assert len(rs.history) > 8 and {r.depth for r in rs.history[3:]} == {2}  # capped either way
    assert "PX-58213" in selected.summary_text()
    assert all(r.meta.get("selected_at_cap") and not r.meta.get("appended") and SELECTED_AT_CAP in r.notes
               for r in selected.history[3:])
    assert not any(r.meta.get("selected_at_cap") for r in selected.history[:3])
    assert "PX-58213" not in cut.summary_text()
    assert all(r.meta.get("appended") for r in cut.history[3:])


def test_rebuilding_from_raw_past_the_cap_is_not_labelled_as_merged() -> None:
    """`rebuild_from_raw` summarizes the raw messages again: nothing is appended or selected
    from a previous summary, so a record past the cap must not say it was."""
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=2000, max_depth=1,
                                       rebuild_from_raw=True)
    for m in chat(200, words=40):
        rs.add(m)
    assert len(rs.history) > 3 and {r.depth for r in rs.history} == {0}
    assert any("depth cap" in r.meta["reason"] for r in rs.history)  # the cap did apply
    for r in rs.history:
        assert not (r.meta.get("appended") or r.meta.get("selected_at_cap")), r.meta
        assert "appended at the depth cap" not in r.notes and SELECTED_AT_CAP not in r.notes


def test_second_pass_halves_the_preserved_tail_but_not_below_two() -> None:
    p = TokenRatio()
    assert st(900).count - p.decide(st(900)).size == 6  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=1)).size == 3  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=2)).size == 2  # type: ignore[union-attr]
    assert st(900).count - p.decide(st(900, passes=5)).size == 2  # type: ignore[union-attr]


def test_huge_tail_gets_a_second_pass_in_the_same_turn() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=3000, ledger="off")
    for m in chat(16, words=15):  # 20 messages when it fires: the engine cap (1 attempt / 10 messages) allows 2
        rs.add(m)
    for m in chat(6, words=300, start=16):  # six big messages: the preserved tail alone is over 0.8
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
        assert rs.context_tokens() <= 2000  # the window guard moves the oldest out meanwhile
    assert rs.summary is None
    assert sleeps[:1] == [0.25]  # transport errors: one retry after 250 ms
    states = [s.state for s in rs.store.messages(rs.conversation_id)]
    assert set(states) == {"active", "pending"}  # nothing covered, nothing dropped: all kept
    assert [m.id for m in rs.pending] == [s.message.id for s in rs.store.messages(rs.conversation_id)
                                          if s.state == "pending"]


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


def test_tool_noise_is_filtered_from_the_transcript_by_default() -> None:
    """Seed 003: "filter out purely mechanical/tool/system noise unless essential"."""
    model = fake("json")
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=6000)
    rs.add(Message("user", "Run the test suite and tell me what broke."))
    rs.add(Message("assistant", "Running pytest.", meta={"tool_calls": ["t1"]}))
    noise = "collected 412 items\n" + "\n".join(f"tests/test_{i}.py ........ PASSED" for i in range(300))
    rs.add(Message("tool", noise + "\nFAILED tests/test_parser.py::test_offsets - AssertionError: 3 != 4",
                   name="execute_bash", meta={"tool_call_id": "t1"}))
    for m in chat(40, words=40):
        rs.add(m)
    prompt = model.prompt_text(0)
    assert "tests/test_17.py ........ PASSED" not in prompt  # the bulk is gone...
    assert "tool output filtered" in prompt and "test_parser.py::test_offsets" in prompt  # ...the essential stays
    assert "Running pytest." in prompt and "what broke" in prompt
    assert any("filtered" in n for n in rs.history[0].notes)


def test_the_transcript_is_capped_at_8k_tokens_oldest_trimmed_first_by_default() -> None:
    model = fake("json")
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=40_000, ledger="off")
    for m in chat(400, words=60):  # ~100 tokens each: the first span is ~32,000 tokens
        rs.add(m)
        if model.requests:
            break
    assert len(model.requests) == 1 and len(rs.history) == 1  # one call, not a chunked series
    prompt = model.prompt_text(0)
    assert rs.counter.count(prompt) <= 8000 + 1200  # the cap, plus the prompt's own text
    assert "earlier messages trimmed from this transcript" in prompt
    assert "message 0:" not in prompt  # the oldest went first...
    newest_in_span = rs.history[0].meta["turn"] - 6  # token-ratio keeps the last 6 verbatim
    assert f"message {newest_in_span}:" in prompt and f"message {newest_in_span + 1}:" not in prompt
    assert any("transcript trimmed" in n for n in rs.history[0].notes)


def test_a_single_message_longer_than_the_window_is_clipped_in_the_context_only() -> None:
    """Seed 003's named edge case, issue #14: one 15k-token message used to burn three emergency
    passes in one turn and overflow for good. Now: a `clip` event, a marked clip in the context,
    the stored message intact, and the next turn moves it out."""
    model = fake("json")
    rs = RollingSummarizer.from_preset("token-ratio", model, context_window=4000)
    for m in chat(20, words=30):
        rs.add(m)
    huge = "The full incident log follows. " + "line of the log " * 15_000 + " END-OF-LOG"
    calls_before = len(model.requests)
    rs.add(Message("user", huge, id="huge"))
    kinds = [e.kind for e in rs.last_events]
    assert "clip" in kinds and rs.context_tokens() <= 4000
    assert len(model.requests) - calls_before <= 2  # no burning of passes on a message no pass can move
    shown = next(m for m in rs.context() if m.id == "huge")
    assert shown.content.startswith("The full incident log") and shown.content.endswith("END-OF-LOG")
    assert "chars clipped to fit the context window" in shown.content
    stored = next(s for s in rs.store.messages(rs.conversation_id) if s.message.id == "huge")
    assert stored.message.content == huge
    rs.add(Message("assistant", "I read the log; the failure starts at 02:14."))
    assert rs.context_tokens() <= 4000 and "clip" not in [e.kind for e in rs.last_events]
    assert all(m.id != "huge" for m in rs.context())  # summarized or moved out, never lost
    state = next(s for s in rs.store.messages(rs.conversation_id) if s.message.id == "huge").state
    assert state in ("covered", "pending")


def test_pinned_system_messages_larger_than_the_window_are_clipped_and_said_so() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", context_window=1000)
    rs.add(Message("system", "You are a careful assistant. " + "rule " * 2000))
    ev = rs.add(Message("user", "hello"))
    assert ev is not None and ev.kind == "clip" and rs.context_tokens() <= 1000
    assert rs.context()[-1].content == "hello"
