"""Seed 002 (automatic summarization): trim by priority, rule-based summary, 10 % budget."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer
from rollsum.context import budget_summary
from rollsum.summarizers.tools import ToolSummary, format_tool_summary, summarize_dropped, summarize_tool_result
from tests.support.helpers import fake


def tool(name: str, content: str, **meta: object) -> Message:
    return Message("tool", content, name=name, meta=dict(meta))


def agent_turns(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(Message("user", f"Step {i}: please check module_{i}.ts and run the tests."))
        out.append(Message("assistant", f"Reading module_{i}.ts.", meta={"tool_calls": [f"c{i}"]}))
        body = "\n".join(f"export const v{j} = {j};" for j in range(40))
        out.append(tool("read_file", body, path=f"src/module_{i}.ts", tool_call_id=f"c{i}"))
        out.append(Message("assistant", f"module_{i}.ts exports 40 constants; tests pass."))
    return out


def test_read_file_extractor_keeps_path_lines_and_exports() -> None:
    m = tool("read_file", "export function hello() {}\nexport const world = 42;\nimport { foo } from 'bar';",
             path="src/app.ts")
    s = summarize_tool_result(m)
    assert s.tool_name == "read_file" and s.status == "success"
    assert any(f.startswith("Lines:") for f in s.key_facts)
    assert s.metadata["hasExports"] is True
    assert "File: src/app.ts" in format_tool_summary(s) and "hello" in format_tool_summary(s)


def test_bash_extractor_flags_errors() -> None:
    s = summarize_tool_result(tool("execute_bash", "npm test\nError: Module not found\nexit code: 1",
                                   command="npm test"))
    assert s.status == "error"
    assert any(f.startswith("Error:") for f in s.key_facts)
    assert format_tool_summary(s).startswith("[❌ execute_bash: Command: npm test | Exit: 1")


def test_search_and_write_extractors() -> None:
    s = summarize_tool_result(tool("grep", "src/a.ts:3: foo()\nsrc/b.ts:9: foo()\nsrc/a.ts:12: foo", pattern="foo"))
    line = format_tool_summary(s)
    assert 'Pattern: "foo"' in line and "Matches: 3" in line and "Files: 2" in line
    for name in ("create_file", "edit_file", "search_files"):
        assert format_tool_summary(summarize_tool_result(tool(name, "ok", path="x.py", pattern="p"))).startswith("[")


def test_format_is_the_compact_one_liner() -> None:
    s = ToolSummary("read_file", "success", ("File: /app.ts", "Lines: 100"))
    assert format_tool_summary(s) == "[✓ read_file: File: /app.ts | Lines: 100]"


def test_dropped_messages_get_a_counted_header() -> None:
    text = summarize_dropped([tool("read_file", "a\nb", path="a.py"), tool("execute_bash", "ok", command="ls")])
    assert text.startswith("--- Summarized Context (2 items) ---")
    assert text.count("\n[") == 2


def test_trimming_keeps_the_context_within_budget_and_summarizes_what_was_dropped() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=3000, reserved_output_tokens=500)
    for m in agent_turns(30):
        rs.add(m)
        assert rs.context_tokens() <= 2500  # the budget (window - reserved) on every turn, not budget + slack
    assert rs.summary is not None
    ctx = rs.context()
    assert ctx[0].role == "system" and ctx[0].content.startswith("[Previous Conversation Summary]")
    assert "read_file" in ctx[0].content


def test_one_huge_tool_output_never_takes_the_reserved_answer_room() -> None:
    """Issue #19: one 25,000-token tool output gave a 3,628-token context against a 3,000-token
    budget (4,000 window): the guard clipped to the window, leaving the main model 372 tokens
    to answer in. It clips to the budget now, in the context only (the store keeps it whole)."""
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=4000, reserved_output_tokens=1000)
    big = tool("execute_bash", "\n".join(f"line {i}: value={i * 7} status=ok" for i in range(8000)),
               command="cat huge.log", tool_call_id="big")
    assert rs.counter.count_message(big) > 25_000
    turns = agent_turns(6)
    for m in [*turns[:10], Message("assistant", "Reading the log.", meta={"tool_calls": ["big"]}), big,
              *turns[10:]]:
        rs.add(m)
        assert rs.context_tokens() <= 3000
    stored = [s.message.content for s in rs.store.messages(rs.conversation_id) if s.message.role == "tool"]
    assert big.content in stored


def test_tool_output_is_dropped_before_what_the_user_said() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=3000, reserved_output_tokens=500)
    for m in agent_turns(12):
        rs.add(m)
    covered = {mid for r in rs.history for mid in r.covered_ids}
    by_id = {s.message.id: s.message for s in rs.store.messages(rs.conversation_id)}
    dropped_roles = [by_id[i].role for i in covered]
    kept_user = [m for m in rs.messages if m.role == "user"]
    assert dropped_roles.count("tool") >= dropped_roles.count("user")
    assert len(kept_user) >= 2


def test_summary_never_exceeds_ten_percent_of_the_budget() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=4000, reserved_output_tokens=0)
    for m in agent_turns(40):
        rs.add(m)
        assert rs.counter.count(rs.summary_text()) <= 400 + 10  # 10 % of 4,000 (+ its header)


def test_too_little_budget_omits_the_summary_with_a_marker() -> None:
    text, note = budget_summary("x" * 4000, 40, min_tokens=50, count=lambda s: len(s) // 4)
    assert text == "[Summary omitted - insufficient budget]" and note
    text, note = budget_summary("y" * 4000, 100, min_tokens=50, count=lambda s: len(s) // 4)
    assert text.endswith("[Summary truncated]") and len(text) // 4 <= 100 and note


def test_updates_accumulate_with_version_markers() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=3000, reserved_output_tokens=500,
                                       ledger="off")
    for m in agent_turns(20):
        rs.add(m)
    assert len(rs.history) >= 2
    assert "[Update 2]" in rs.history[1].text or "[Condensed history]" in rs.history[1].text


def test_llm_mode_falls_back_to_rule_based_when_the_model_fails() -> None:
    model = fake(fail_rate=1.0, fail_kind="500")
    rs = RollingSummarizer.from_preset("budget-rule-based", model, context_window=3000,
                                       reserved_output_tokens=500, backoff_s=0.0)
    for m in agent_turns(20):
        rs.add(m)
    assert model.requests  # the model was asked first
    assert rs.summary is not None and rs.summary.fallback == "extractive"
    assert rs.summary.usage.input_tokens == 0


def test_llm_mode_uses_the_model_when_it_works() -> None:
    model = fake("extractive")
    rs = RollingSummarizer.from_preset("budget-rule-based", model, context_window=3000, reserved_output_tokens=500)
    for m in agent_turns(20):
        rs.add(m)
    assert rs.summary is not None and rs.summary.fallback is None
    assert rs.summary.prompt_id == "budget-rule-based/v1"


def test_summary_cap_is_ten_percent_of_the_available_budget_not_the_window() -> None:
    """Seed 002's safeSummarize: availableBudget × 0.1, where the available budget is the window
    minus the reserved output tokens (4,000 − 1,000 → 300 tokens, not 400)."""
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=4000, reserved_output_tokens=1000)
    header = rs.counter.count("[Previous Conversation Summary]\n")
    peak = 0
    for m in agent_turns(40):
        rs.add(m)
        peak = max(peak, rs.counter.count(rs.summary_text()))
    assert peak <= 300 + header
    assert peak > 250  # the cap binds here: a 400-token cap would have let it grow past 300


def test_llm_mode_sends_at_most_1000_characters_of_each_message() -> None:
    model = fake()
    rs = RollingSummarizer.from_preset("budget-rule-based", model, context_window=6000, reserved_output_tokens=500)
    rs.add(Message("user", "Please run the full build."))
    rs.add(Message("assistant", "Running it.", meta={"tool_calls": ["b1"]}))
    rs.add(tool("execute_bash", "BUILD-LOG-START " + "x" * 15_000 + " BUILD-LOG-END", tool_call_id="b1",
                command="make"))
    for m in agent_turns(30):
        rs.add(m)
    prompts = [model.prompt_text(i) for i in range(len(model.requests))]
    with_log = [p for p in prompts if "BUILD-LOG-START" in p]
    assert with_log, "the build log was summarized"
    assert all("BUILD-LOG-END" not in p and "x" * 1001 not in p for p in with_log)
    assert all("more characters cut]" in p for p in with_log)
    assert any("capped 1 message(s) at 1000 characters" in n for r in rs.history for n in r.notes)


def test_trimming_goes_down_to_a_low_water_mark_so_summaries_are_few() -> None:
    """Hysteresis (issue #14): 56-66 summaries per 100 messages at a 4,000-8,000 window before;
    now a handful, also while the model fails a third of its calls."""
    for window in (4000, 8000):
        for fail_rate in (0.0, 0.3):
            model = fake(fail_rate=fail_rate, fail_kind="500", seed=3)
            rs = RollingSummarizer.from_preset("budget-rule-based", model, context_window=window, backoff_s=0.0)
            msgs = agent_turns(100)
            for m in msgs:
                rs.add(m)
                assert rs.context_tokens() <= window
            per100 = 100 * len(model.requests) / len(msgs)
            assert per100 <= 10, (window, fail_rate, per100)
            assert rs.history  # it still summarizes
