"""Tool-result clearing (issue #23): the rule (`rollsum.clearing.plan`) and the engine's use of it
(placeholders in the context only, clear first and summarize only if still over)."""

from __future__ import annotations

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.clearing import PLACEHOLDER, ClearSettings, placeholder, plan
from rollsum.errors import ConfigError
from rollsum.tokens import HeuristicCounter

COUNT = HeuristicCounter().count_message
BIG = " ".join(f"line{i} of output" for i in range(60))


def _agent(n_calls: int, tool: str = "read_file") -> list[Message]:
    out: list[Message] = [Message("user", "Please fix the parser.", id="u0")]
    for k in range(n_calls):
        out.append(Message("assistant", f"Calling {tool}(path='src/f{k}.py').", id=f"a{k}",
                           meta={"tool_calls": [f"call_{k}"]}))
        out.append(Message("tool", f"result {k}: {BIG}", id=f"t{k}", name=tool, meta={"tool_call_id": f"call_{k}"}))
    return out


def _plan(msgs: list[Message], settings: ClearSettings, cleared: dict[str, Message] | None = None) -> list[str]:
    tokens = [COUNT(m) for m in msgs]
    found = plan(msgs, tokens, cleared or {}, sum(tokens), settings, COUNT)
    return [msgs[i].id or "" for i in sorted(found)]


def test_everything_but_the_newest_keep_results_is_cleared_once_over_the_trigger() -> None:
    msgs = _agent(5)
    assert _plan(msgs, ClearSettings(trigger=10**6)) == [], "under the trigger nothing is cleared"
    assert _plan(msgs, ClearSettings(trigger=0, keep=2)) == ["t0", "t1", "t2"]
    assert _plan(msgs, ClearSettings(trigger=0, keep=0)) == ["t0", "t1", "t2", "t3", "t4"]
    assert _plan(msgs, ClearSettings(trigger=0, keep=2), {"t0": placeholder(msgs[2])}) == ["t1", "t2"]


def test_excluded_tools_are_kept_but_still_count_toward_keep() -> None:
    msgs = _agent(2, "grep") + _agent(2)[1:]  # two grep results, then two read_file results
    msgs = [m if m.role != "tool" else Message(m.role, m.content, id=f"{m.id}{m.name}", name=m.name) for m in msgs]
    got = _plan(msgs, ClearSettings(trigger=0, keep=1, exclude_tools=frozenset({"grep"})))
    assert got == ["t0read_file"], "grep results kept; the newest result (read_file t1) kept by keep=1"


def test_clear_at_least_is_all_or_nothing() -> None:
    msgs = _agent(3)
    freed = sum(COUNT(m) - COUNT(placeholder(m)) for m in msgs if m.id in ("t0", "t1"))
    assert _plan(msgs, ClearSettings(trigger=0, keep=1, clear_at_least=freed)) == ["t0", "t1"]
    assert _plan(msgs, ClearSettings(trigger=0, keep=1, clear_at_least=freed + 1)) == []


def test_a_placeholder_keeps_the_result_in_place_and_says_what_was_there() -> None:
    m = _agent(1)[2]
    shown = placeholder(m)
    assert (shown.id, shown.role, shown.name, shown.meta["tool_call_id"]) == (m.id, "tool", "read_file", "call_0")
    assert shown.content == PLACEHOLDER.format(name="read_file", chars=len(m.content))
    assert shown.meta["cleared_chars"] == len(m.content)


def test_settings_refuse_a_string_for_the_excluded_tools() -> None:
    with pytest.raises(ConfigError, match="clear_exclude_tools"):
        ClearSettings.make(1000, None, 3, 0, "grep")
    assert ClearSettings.make(1000, None, 3, 0, ["grep"]).trigger == 500


def test_the_engine_shows_placeholders_and_stores_the_originals() -> None:
    rs = RollingSummarizer.from_preset("clear-tool-results", context_window=4000, clear_trigger=1000, clear_keep=2)
    msgs = _agent(8)
    for m in msgs:
        rs.add(m)
    ctx = rs.context()
    results = [m for m in ctx if m.role == "tool"]
    assert [m.id for m in results] == [f"t{k}" for k in range(8)], "no result left the context"
    assert all(m.content.startswith("[tool result cleared") for m in results[:6])
    assert [m.content for m in results[6:]] == [msgs[-3].content, msgs[-1].content]
    assert [m.content for m in ctx if m.role != "tool"] == [m.content for m in msgs if m.role != "tool"]
    assert [r.message.content for r in rs.store.messages(rs.conversation_id)] == [m.content for m in msgs]
    assert rs.context_tokens() == sum(COUNT(m) for m in ctx) < sum(COUNT(m) for m in msgs)
    assert rs.config()["clear_keep"] == 2


def test_clear_first_then_summarize_only_if_still_over() -> None:
    msgs = _agent(12)
    plain = RollingSummarizer.from_preset("since-last", context_window=8000, messages_per_summary=10)
    cleared = RollingSummarizer.from_preset("clear+since-last", context_window=8000, messages_per_summary=10,
                                            clear_trigger=1500, clear_keep=2)
    for m in msgs:
        plain.add(m)
        cleared.add(m)
    assert plain.history, "since-last alone summarizes every 10 messages"
    assert not cleared.history, "clearing brought the context under its trigger: no summary needed"
    assert cleared.context_tokens() <= 1500
    # results that no clearing can shrink (a tool that is excluded) leave it over: then it summarizes
    kept = RollingSummarizer.from_preset("clear+since-last", context_window=8000, messages_per_summary=10,
                                         clear_trigger=1500, clear_keep=2, clear_exclude_tools=["read_file"])
    for m in msgs:
        kept.add(m)
    assert kept.history and not any(m.content.startswith("[tool result cleared") for m in kept.context())
