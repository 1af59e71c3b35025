"""budget-rule-based's pick (`BudgetTrim.decide`) against the rule written plainly.

Why: the trim runs over the whole window (~2,000 tool units at the default 200k window) on
every summary, and it used to sort every unit by a (priority, start) key built per unit; it now
fills one list per priority in window order (issue #20, item 2). The decision must be the same
one: the same positions, the same tokens freed, the same reason, for any window.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import Message
from rollsum.policies._util import tool_units
from rollsum.policies.base import Action, Decision, WindowState
from rollsum.policies.budget_trim import BudgetTrim, message_priority


def plain_decide(policy: BudgetTrim, state: WindowState) -> Decision | None:
    """The rule as it was written before: sort every unit by (priority, start), take a prefix."""
    budget = policy.budget(state)
    if state.context_tokens - budget <= 0:
        return None
    summary_after = max(state.summary_tokens, state.summary_budget) if policy.summarize_on_trim else 0
    need = state.pinned_tokens + summary_after + state.active_tokens - int(policy.low_water * budget)
    units = tool_units(state.messages, 0, max(0, state.count - policy.min_keep))
    if not units:
        return None

    def unit_key(u: tuple[int, int]) -> tuple[int, int]:
        return (max(message_priority(state.messages[i], policy.preserve_error_details) for i in range(*u)), u[0])

    picked: list[int] = []
    freed = 0
    for u in sorted(units, key=unit_key):
        picked.extend(range(*u))
        freed += sum(state.tokens[u[0]:u[1]])
        if freed >= need:
            break
    action: Action = "summarize" if policy.summarize_on_trim else "drop"
    return Decision(action, tuple(sorted(picked)),
                    f"context {state.context_tokens} > budget {budget}: trimmed {len(picked)} "
                    f"messages ({freed} tokens) by priority to {policy.low_water:g} of the budget")


KINDS = ["user", "chat", "call", "ok", "error-word", "exit-1", "exit-0-error", "system"]


def message(kind: str, k: int) -> Message:
    if kind == "user":
        return Message("user", f"please look at item {k}")
    if kind == "chat":
        return Message("assistant", f"done with item {k}")
    if kind == "call":
        return Message("assistant", f"reading {k}", meta={"tool_calls": [f"c{k}"]})
    if kind == "ok":
        return Message("tool", f"file {k}: 40 lines", name="read_file")
    if kind == "error-word":
        return Message("tool", f"line {k}\nTraceback (most recent call last)", name="bash")
    if kind == "exit-1":
        return Message("tool", f"ran {k}", name="bash", meta={"exit_code": 1})
    if kind == "exit-0-error":  # exit code 0, but the words say it failed
        return Message("tool", f"ran {k}: 2 tests FAILED", name="bash", meta={"exit_code": 0})
    return Message("system", f"note {k}")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 400)), max_size=40),
       st.integers(0, 6), st.booleans(), st.booleans(), st.sampled_from([0.1, 0.5, 1.0]),
       st.integers(1, 3000), st.integers(0, 300), st.integers(0, 300))
def test_the_pick_is_the_sorted_rule(rows: list[tuple[str, int]], min_keep: int, errors: bool, summarize: bool,
                                     low_water: float, window: int, pinned: int, summary: int) -> None:
    """Catches: units taken in window order instead of cheapest first, a priority list read in
    insertion order instead of lowest priority first, a call's unit priced by its first message
    only (its error result then goes as cheap output), the stop tested before the unit is added."""
    msgs = [message(kind, k) for k, (kind, _) in enumerate(rows)]
    tokens = [n for _, n in rows]
    policy = BudgetTrim(max_context_tokens=window, reserved_output_tokens=0, min_keep=min_keep,
                        preserve_error_details=errors, summarize_on_trim=summarize, low_water=low_water)
    state = WindowState(msgs, tokens, sum(tokens), pinned_tokens=pinned, summary_tokens=summary,
                        summary_budget=summary // 2, context_window=window)
    assert policy.decide(state) == plain_decide(policy, state)
