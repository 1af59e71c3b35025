"""`units_holding` finds the same tool units as splitting the whole window (issue #20, item 2).

The engine asks for the units around an eviction's indices on every eviction; walking outward
from the indices must give exactly the units the whole-list split (`tool_units`) gives that
hold any of them, whatever the roles around them (a run of results after an assistant, after
a user, at the very start).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.policies._util import tool_units, units_holding
from rollsum.types import Message

_ROLES = st.lists(st.sampled_from(["user", "assistant", "caller", "tool", "tool"]), max_size=30)
"""``caller``: an assistant message that declares tool calls (only it owns the results after it)."""


def _msgs(roles: list[str]) -> list[Message]:
    return [Message("assistant" if r == "caller" else r, f"m{i}", id=f"m{i}",  # type: ignore[arg-type]
                    meta={"tool_calls": [f"c{i}"]} if r == "caller" else {}) for i, r in enumerate(roles)]


@settings(max_examples=500, deadline=None)
@given(_ROLES, st.data())
def test_units_holding_equals_the_units_of_the_whole_split_that_hold_an_index(roles: list[str],
                                                                              data: st.DataObject) -> None:
    msgs = _msgs(roles)
    indices = data.draw(st.lists(st.integers(-2, len(msgs) + 2), max_size=12))
    chosen = set(indices)
    expected = [u for u in tool_units(msgs, 0, len(msgs)) if any(k in chosen for k in range(*u))]
    assert units_holding(msgs, indices) == expected


def test_a_run_of_results_after_a_user_message_stands_alone_and_after_an_assistant_moves_with_it() -> None:
    msgs = _msgs(["user", "tool", "tool", "caller", "tool", "tool", "user", "assistant", "tool"])
    # after a calling assistant the run moves with it; after a user, or an assistant that declares
    # no calls ("unlinked" results, issue #19), each result stands alone
    assert units_holding(msgs, [2, 5, 8]) == [(2, 3), (3, 6), (8, 9)]
