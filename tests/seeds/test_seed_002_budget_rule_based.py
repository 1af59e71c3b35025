"""Seed 002 (automatic summarization): trim by priority, rule-based summary, 10 % budget."""

from __future__ import annotations

from rollsum import Message, RollingSummarizer
from rollsum.context import budget_summary
from rollsum.summarizers.tools import ToolSummary, format_tool_summary, summarize_dropped, summarize_tool_result
from tests.seeds.helpers import fake


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
    peak = 0
    for m in agent_turns(30):
        rs.add(m)
        peak = max(peak, rs.context_tokens())
    assert rs.summary is not None
    assert peak <= 2500 + 400  # never more than one message over the budget between turns
    assert rs.context_tokens() <= 2500
    ctx = rs.context()
    assert ctx[0].role == "system" and ctx[0].content.startswith("[Previous Conversation Summary]")
    assert "read_file" in ctx[0].content


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
