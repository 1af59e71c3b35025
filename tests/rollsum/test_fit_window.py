"""fit-window's shortcut (`FitWindow.idle_within_window`): the engine does not build a snapshot
and ask the policy while the context is within the window. Both tests compare with asking."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer
from rollsum.policies.baselines import FitWindow, Truncate


class _AlwaysAsked(FitWindow):
    """The plain rule: the engine asks `decide` on every message."""

    idle_within_window: ClassVar[bool] = False


_MESSAGES = st.lists(st.tuples(st.sampled_from(["user", "assistant", "call", "tool", "system"]),
                               st.sampled_from([1, 2, 5, 20, 60, 150])), min_size=1, max_size=120)


def _stream(spec: list[tuple[str, int]]) -> list[Message]:
    """Chat, tool calls with their results (so drops are widened/narrowed to whole groups) and
    system messages (pinned: their tokens count toward the context but are never dropped)."""
    out: list[Message] = []
    for i, (kind, words) in enumerate(spec):
        text = f"m{i} " + " ".join(f"w{j}" for j in range(words))
        if kind == "call":
            out.append(Message("assistant", text, id=f"m{i}", meta={"tool_calls": [f"c{i}"]}))
        elif kind == "tool":
            call = next((m.meta["tool_calls"][0] for m in reversed(out) if m.meta.get("tool_calls")), None)
            out.append(Message("tool", text, id=f"m{i}", name="grep",
                               meta={} if call is None else {"tool_call_id": call}))
        else:
            out.append(Message(kind, text, id=f"m{i}"))  # type: ignore[arg-type]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_MESSAGES, window=st.integers(150, 2500), trigger=st.sampled_from([None, 0, 300]))
def test_the_engine_skipping_fit_window_within_the_window_is_the_engine_asking_it(
        spec: list[tuple[str, int]], window: int, trigger: int | None) -> None:
    """Every turn's context, count, events and stored states equal those of an engine that asks."""
    params: dict[str, Any] = {"context_window": window, "clear_trigger": trigger}
    fast = RollingSummarizer.from_preset("clear-tool-results", conversation_id="c", **params)
    plain = RollingSummarizer.from_preset("clear-tool-results", conversation_id="c", **params)
    assert type(fast.policy) is FitWindow and fast.policy.idle_within_window
    plain.policy = _AlwaysAsked()
    for i, m in enumerate(_stream(spec)):
        fast.add(m)
        plain.add(m)
        assert fast.context() == plain.context(), f"turn {i}"
        assert fast.context_tokens() == plain.context_tokens(), f"turn {i}"
        assert [e.to_dict() for e in fast.last_events] == [e.to_dict() for e in plain.last_events], f"turn {i}"
    assert fast.store.messages("c") == plain.store.messages("c")


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.integers(0, 500), min_size=0, max_size=30), pinned=st.integers(0, 400),
       summary=st.integers(0, 400), slack=st.integers(0, 300))
def test_fit_window_answers_none_whenever_the_context_is_within_the_window(
        tokens: list[int], pinned: int, summary: int, slack: int) -> None:
    """The promise the flag makes, checked on `decide` itself (a policy changed to drop ahead
    of the window would have to drop the flag)."""
    fast = RollingSummarizer.from_preset("clear-tool-results", conversation_id="c")
    state = replace(fast._state(0), tokens=tokens,  # a real snapshot, with the counts under test
                    messages=[Message("user", "x", id=f"m{i}") for i in range(len(tokens))],
                    active_tokens=sum(tokens), pinned_tokens=pinned, summary_tokens=summary)
    state = replace(state, context_window=state.context_tokens + slack)
    assert FitWindow().decide(state) is None


def test_a_policy_swapped_in_without_the_flag_is_asked_within_the_window() -> None:
    """The flag is read once per policy (`RollingSummarizer._hooks`): after a caller swaps
    fit-window for truncate, truncate is asked although the context fits (a flag kept from
    the old policy would leave the window unbounded)."""
    rs = RollingSummarizer.from_preset("clear-tool-results", conversation_id="c", clear_trigger=0)
    for i in range(3):
        rs.add(Message("user", f"m{i} hello", id=f"m{i}"))
    assert rs.context_tokens() <= rs.settings.context_window
    rs.policy = Truncate(keep=2)  # type: ignore[assignment]  # (its ClassVar name: as the presets)
    rs.add(Message("user", "m3 hello", id="m3"))
    assert [e.kind for e in rs.last_events] == ["drop"]
    assert [m.id for m in rs.context()] == ["m2", "m3"]
