"""A policy's ``settles`` promise: after its drop is applied as decided, the engine does not ask
again in the same turn, and nothing else changes.

truncate and fit-window drop on almost every message once their window is full; the engine
used to ask them a second time after each drop, and the answer was always None (issue #20,
item 2: clear-tool-results' steady state). What must hold: (1) the promise itself, for every
state a drop can be decided on; (2) an engine that uses it is, turn by turn, the engine that
asks again (events, context, store), including when a tool group cut a decision down (then it
must ask again); (3) the promise is used (the policy is asked once per steady message).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer
from rollsum.policies.base import Decision, WindowState, settles
from rollsum.policies.baselines import FitWindow, Truncate

sizes = st.lists(st.integers(0, 300), min_size=0, max_size=30)


def _after(state: WindowState, decision: Decision) -> WindowState:
    """The state the engine reaches by applying `decision` (a drop of the oldest messages)."""
    n = len(decision.indices)
    assert decision.indices == tuple(range(n))  # both policies drop a run from the oldest
    freed = sum(state.tokens[:n])
    return replace(state, messages=state.messages[n:], tokens=state.tokens[n:],
                   active_tokens=state.active_tokens - freed, pending=0, pending_messages=[])


def _state(tokens: list[int], window: int, extra: int) -> WindowState:
    msgs = [Message("user", "x", id=str(i)) for i in range(len(tokens))]
    return WindowState(msgs, tokens, sum(tokens), pinned_tokens=extra, context_window=window)


@settings(max_examples=400, deadline=None)
@given(sizes, st.integers(1, 3000), st.integers(0, 400), st.integers(1, 25), st.none() | st.integers(1, 3000))
def test_truncate_and_fit_window_keep_the_promise(tokens: list[int], window: int, extra: int, keep: int,
                                                  max_tokens: int | None) -> None:
    """Whatever they drop, asked again on the state after the drop they answer None. Catches a
    policy marked as settling whose drop can leave more to do (e.g. fit-window freeing less than
    the excess, or truncate ignoring `max_tokens` in its first answer)."""
    state = _state(tokens, window, extra)
    for policy in (FitWindow(), Truncate(keep=keep, max_tokens=max_tokens)):
        assert settles(policy)
        decision = policy.decide(state)
        if decision is not None:
            assert policy.decide(_after(state, decision)) is None, (policy, decision)


class Asking:
    """A dropping policy as the engine sees one without the promise: asked again after each drop."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls, self.name = inner, 0, inner.name
        self.windowed = getattr(inner, "windowed", False)

    def decide(self, state: WindowState) -> Decision | None:
        self.calls += 1
        result: Decision | None = self.inner.decide(state)
        return result

    def may_summarize(self, state: WindowState) -> bool:
        return False


class Settling(Asking):
    """The same policy with its promise: what the engine uses now."""

    settles = True


def _engine(preset: str, policy: Any, **params: Any) -> RollingSummarizer:
    rs = RollingSummarizer.from_preset(preset, conversation_id="c", clock=lambda: datetime(2026, 1, 1),
                                       sleep=lambda s: None, **params)
    rs.policy = policy
    return rs


def _turn(rs: RollingSummarizer) -> tuple[Any, ...]:
    return ([e.to_dict() for e in rs.last_events], [(m.role, m.content, m.id) for m in rs.context()],
            [m.id for m in rs.pending], rs.context_tokens())


def _messages(plan: list[tuple[str, int]]) -> list[Message]:
    """Chat and tool groups: an assistant message declaring k calls, then up to k results (a
    group can be cut by the window's edge, so a policy's run of drops gets cut down)."""
    out: list[Message] = []
    for i, (kind, size) in enumerate(plan):
        text = f"message {i} " + "word " * size
        if kind == "call":
            calls = [{"id": f"t{i}-{j}", "name": "read_file", "input": {}} for j in range(1 + size % 3)]
            out.append(Message("assistant", text, meta={"tool_calls": calls}))
            out.extend(Message("tool", f"result {i}.{j} " + "line " * (size // 2 + 1), name="read_file",
                               meta={"tool_call_id": c["id"]}) for j, c in enumerate(calls))
        else:
            out.append(Message(kind, text))  # type: ignore[arg-type]
    return out


plans = st.lists(st.tuples(st.sampled_from(["user", "assistant", "call", "system"]), st.integers(1, 300)),
                 min_size=1, max_size=80)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans, st.sampled_from(["clear-tool-results", "truncate"]), st.sampled_from([800, 1500, 4000]),
       st.integers(1, 8), st.none() | st.integers(200, 3000))
def test_an_engine_that_trusts_the_promise_is_the_engine_that_asks_again(
        plan: list[tuple[str, int]], preset: str, window: int, keep: int, max_tokens: int | None) -> None:
    """Turn by turn the same events, context and pending messages, and the same store at the
    end, with tool groups that cut a drop down (keep_tool_pairs) and the window guard on.
    Catches an engine that stops after a drop the tool-group rule changed (the policy then has
    more to drop), and a policy marked as settling whose drop can leave more to do."""
    inner = FitWindow() if preset == "clear-tool-results" else Truncate(keep=keep, max_tokens=max_tokens)
    asking, settling = Asking(inner), Settling(inner)
    a = _engine(preset, asking, context_window=window)
    b = _engine(preset, settling, context_window=window)
    for i, m in enumerate(_messages(plan)):
        a.add(m)
        b.add(m)
        assert _turn(b) == _turn(a), i
    assert b.store.messages("c") == a.store.messages("c")
    assert settling.calls <= asking.calls


def test_the_promise_saves_the_second_ask() -> None:
    """truncate keeping 5 drops one message on each of 200 chat messages: asked once per
    message with the promise, twice without it."""
    asking, settling = Asking(Truncate(keep=5)), Settling(Truncate(keep=5))
    a, b = _engine("truncate", asking), _engine("truncate", settling)
    for i in range(200):
        m = Message("user" if i % 2 else "assistant", f"message {i} about the plan")
        a.add(m)
        b.add(m)
    assert settling.calls == 200 and asking.calls == 200 + 195
    assert not settles(Asking(Truncate())) and not settles(object())
