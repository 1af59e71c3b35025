"""Tool-result clearing (issue #23): the rule (`rollsum.clearing.ClearQueue`) and the engine's use of
it (placeholders in the context only, clear first and summarize only if still over); (issue #20)
the incremental queue answers what the rule asked over the whole window on every message
(`reference_plan`), turn by turn, on long and random streams."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer
from rollsum.clearing import PLACEHOLDER, ClearQueue, ClearSettings, placeholder
from rollsum.errors import ConfigError
from rollsum.store.memory import MemoryStore
from rollsum.tokens import HeuristicCounter
from rollsum.window import Window

COUNT = HeuristicCounter().count_message
BIG = " ".join(f"line{i} of output" for i in range(60))


def _agent(n_calls: int, tool: str = "read_file") -> list[Message]:
    out: list[Message] = [Message("user", "Please fix the parser.", id="u0")]
    for k in range(n_calls):
        out.append(Message("assistant", f"Calling {tool}(path='src/f{k}.py').", id=f"a{k}",
                           meta={"tool_calls": [f"call_{k}"]}))
        out.append(Message("tool", f"result {k}: {BIG}", id=f"t{k}", name=tool, meta={"tool_call_id": f"call_{k}"}))
    return out


def reference_plan(messages: Sequence[Message], tokens: Sequence[int], cleared: Mapping[str, Message],
                   context_tokens: int, settings: ClearSettings,
                   count_message: Callable[[Message], int]) -> dict[int, Message]:
    """The clearing rule written plainly, over the whole window (what the engine asked on every
    message before issue #20): position in `messages` -> placeholder of each result to clear now."""
    if context_tokens <= settings.trigger:
        return {}
    results = [i for i, m in enumerate(messages) if m.role == "tool"]
    older = results[:max(0, len(results) - settings.keep)]
    out: dict[int, Message] = {}
    freed = 0
    for i in older:
        m = messages[i]
        if m.id is None or m.id in cleared or (m.name or "") in settings.exclude_tools:
            continue
        shown = placeholder(m)
        saved = tokens[i] - count_message(shown)
        if saved <= 0:  # a result already shorter than its placeholder stays as it is
            continue
        out[i] = shown
        freed += saved
    if not out or freed < settings.clear_at_least:
        return {}
    return out


class RuleWindow(Window):
    """The engine's window with clearing asked the plain way, the whole window every message."""

    def clear_tool_results(self, rule: ClearSettings, context_tokens: int, count: Callable[[Message], int]) -> None:
        self.show_cleared(reference_plan(self.active, self.tokens, self.cleared, context_tokens, rule, count), count)


def _plan(msgs: list[Message], settings: ClearSettings, cleared: dict[str, Message] | None = None) -> list[str]:
    """The queue's answer after `msgs` entered the window, at their total size."""
    queue = ClearQueue(settings, COUNT, cleared or {})
    for seq, m in enumerate(msgs):
        queue.push(seq, m, COUNT(m))
    want = reference_plan(msgs, [COUNT(m) for m in msgs], cleared or {}, sum(COUNT(m) for m in msgs), settings, COUNT)
    found = queue.take(sum(COUNT(m) for m in msgs))
    assert found == want, "the queue and the plain rule disagree"
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


def test_a_resumed_engine_shows_the_results_the_last_one_had_cleared() -> None:
    """Clearing is shown, not stored: an engine reopened on the store (a restart, the next
    request) showed every cleared result whole again, past the window, until its next `add()`."""
    store = MemoryStore()
    kw: dict[str, Any] = dict(store=store, conversation_id="c", context_window=1500, clear_trigger=600, clear_keep=2)
    rs = RollingSummarizer.from_preset("clear-tool-results", **kw)
    for m in _agent(12):
        rs.add(m)
    left = rs.context()
    assert sum(m.content.startswith("[tool result cleared") for m in left) >= 4
    rs.close()
    again = RollingSummarizer.from_preset("clear-tool-results", **kw)
    assert again.context() == left and again.context_tokens() == rs.context_tokens() <= 1500


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


# ---------------------------------------------------------------- the queue against the plain rule


def agent_stream(n: int, seed: int) -> list[Message]:
    """Chat and agent turns: calls and results of three tools, results from a few words (shorter
    than their placeholder) to a few hundred, long stretches of chat without tools (so the newest
    `keep` results are old and get dropped), now and then a system message."""
    rng = random.Random(seed)
    out: list[Message] = []
    k = 0
    while len(out) < n:
        r = rng.random()
        if r < 0.02:
            out.append(Message("system", f"note {k}: the user prefers tabs", id=f"s{k}"))
        elif r < 0.45:
            for _ in range(rng.choice((1, 1, 2, 12))):
                role = "user" if len(out) % 2 == 0 else "assistant"
                out.append(Message(role, " ".join(f"chat{k}w{j}" for j in range(rng.randint(3, 80))),  # type: ignore[arg-type]
                                   id=f"c{k}_{len(out)}"))
        else:
            calls = rng.choice((1, 1, 2))
            out.append(Message("assistant", f"calling {calls} tools", id=f"a{k}",
                               meta={"tool_calls": [f"call_{k}_{j}" for j in range(calls)]}))
            for j in range(calls):
                tool = rng.choice(("read_file", "grep", "execute_bash"))
                words = rng.choice((1, 4, 30, 120, 400))
                out.append(Message("tool", " ".join(f"out{k}w{w}" for w in range(words)), id=f"t{k}_{j}", name=tool,
                                   meta={"tool_call_id": f"call_{k}_{j}"}))
        k += 1
    return out[:n]


def replay_against_rule(preset: str, msgs: Sequence[Message], **params: Any) -> int:
    """Replay `msgs` through the engine and through the same engine asking the plain rule;
    the contexts must be identical after every message. How many results were ever cleared."""
    engine = RollingSummarizer.from_preset(preset, conversation_id="c", **params)
    rule = RollingSummarizer.from_preset(preset, conversation_id="c", **params)
    rule._window = RuleWindow()
    ever: set[str] = set()
    for i, m in enumerate(msgs):
        engine.add(m)
        rule.add(m)
        got, want = engine.context(), rule.context()
        assert got == want, f"turn {i}: the context differs from the plain rule's"
        assert engine.context_tokens() == rule.context_tokens(), f"turn {i}"
        ever.update(m.id or "" for m in got if m.meta.get("cleared_chars") is not None)
    return len(ever)


@pytest.mark.parametrize(("preset", "params"), [
    ("clear-tool-results", {"context_window": 6000, "clear_trigger": 2500, "clear_keep": 3}),
    ("clear-tool-results", {"context_window": 9000, "clear_trigger": 1500, "clear_keep": 5, "clear_at_least": 900,
                            "clear_exclude_tools": ["grep"]}),
    ("clear-tool-results", {"context_window": 5000, "clear_keep": 0, "clear_at_least": 200}),
    ("clear-tool-results", {"clear_trigger": 3000}),  # the default window: nothing dropped, the window only grows
    ("clear+since-last", {"context_window": 8000, "clear_trigger": 2000, "clear_keep": 2,
                          "clear_exclude_tools": ["read_file"]}),
])
def test_a_long_agent_stream_is_cleared_exactly_as_the_plain_rule_clears_it(preset: str, params: dict[str, Any]
                                                                           ) -> None:
    n = 2500 if "context_window" in params else 1500  # without drops the plain rule gets slow
    cleared = replay_against_rule(preset, agent_stream(n, seed=len(params)), **params)
    assert cleared > 100, "the stream hardly cleared anything: the comparison proved little"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(preset=st.sampled_from(["clear-tool-results", "clear+since-last", "evict-window"]),
       stream=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "tool", "system"]),
                                 st.sampled_from([1, 2, 5, 20, 60, 150]), st.sampled_from(["grep", "read_file"])),
                       min_size=1, max_size=150),
       window=st.integers(300, 3000), trigger=st.sampled_from([None, 0, 100, 600]), keep=st.integers(0, 4),
       at_least=st.sampled_from([0, 0, 30, 400]), exclude=st.sampled_from([(), ("read_file",)]),
       every=st.integers(1, 15), head=st.integers(0, 3))
def test_random_streams_are_cleared_exactly_as_the_plain_rule_clears_them(
        preset: str, stream: list[tuple[str, int, str]], window: int, trigger: int | None, keep: int, at_least: int,
        exclude: tuple[str, ...], every: int, head: int) -> None:
    """Including evict-window with clearing on: its head stays while the middle leaves, so the
    newest results can leave before older ones (the queue then protects an older one again)."""
    msgs = [Message(role, f"m{i} " + " ".join(f"w{j}" for j in range(words)), id=f"m{i}",  # type: ignore[arg-type]
                    name=tool if role == "tool" else None) for i, (role, words, tool) in enumerate(stream)]
    extra: dict[str, Any] = {"messages_per_summary": every} if preset == "clear+since-last" else {}
    if preset == "evict-window":
        extra = {"clear_tool_results": True, "head": head, "tail": 1 + every % 4, "min_evicted": every}
    replay_against_rule(preset, msgs, context_window=window, clear_trigger=trigger, clear_keep=keep,
                        clear_at_least=at_least, clear_exclude_tools=exclude, **extra)


def test_a_result_leaving_the_newest_keep_brings_the_next_older_one_back_among_them() -> None:
    """`keep` counts what is in the window now: when one of the newest results leaves, the
    newest older one is protected again (and due again once a newer result arrives)."""
    rule = ClearSettings(trigger=0, keep=2)
    msgs = _agent(4)
    tools = [(seq, m) for seq, m in enumerate(msgs) if m.role == "tool"]
    queue = ClearQueue(rule, COUNT, {})
    for seq, m in enumerate(msgs):
        queue.push(seq, m, COUNT(m))
    assert set(queue.due) == {tools[0][0], tools[1][0]}
    queue.remove(*tools[3])  # the newest leaves: t1 is among the newest 2 again
    assert set(queue.due) == {tools[0][0]}
    assert queue.freed == COUNT(msgs[2]) - COUNT(placeholder(msgs[2]))
    queue.remove(*tools[0])
    assert not queue.due and queue.freed == 0
    queue.push(99, Message("tool", BIG, id="t9", name="read_file"), 500)
    assert set(queue.due) == {tools[1][0]}, "t1 is older again"


def test_a_resumed_engine_shows_what_the_one_before_had_cleared_and_nothing_more() -> None:
    """Clearing is sticky, and a cleared result is a display version the store does not keep:
    the newest cleared one is saved with the cadence (`Cadence.cleared_through`). Without it a
    resumed engine showed the first log in full again, found its context over the trigger and
    cleared the second file too, which the uninterrupted engine still shows."""
    def replay(restart: bool) -> list[str]:
        store = MemoryStore()

        def engine() -> RollingSummarizer:
            return RollingSummarizer.from_preset("clear-tool-results", context_window=4000, clear_trigger=400,
                                                 clear_keep=1, store=store, conversation_id="c")

        rs = engine()
        for m in (Message("user", "please look at the logs"), Message("tool", "log line one\n" * 100, name="read_file"),
                  Message("user", "and the other file"), Message("tool", "x = 1\n" * 60, name="read_file"),
                  Message("user", "thanks"), Message("tool", "ok", name="execute_bash")):
            rs.add(m)
        if restart:
            rs.close()
            rs = engine()
        return [m.content for m in rs.context() if m.role == "tool"]

    shown = replay(restart=False)
    assert shown[0].startswith("[tool result cleared") and shown[1].startswith("x = 1")  # the case it is about
    assert replay(restart=True) == shown
