"""Cutting messages out of the window by position equals removing them by id (issue #20, item 2).

Evictions pass the positions they decided on, and the engine deletes those runs in place so an
eviction's cost does not grow with the window. Whatever positions are taken (runs, gaps, the
first or last message), the window that remains (messages, their sequence numbers, token counts
and the running total) and the removed list must be exactly what the id-based rebuild gives.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer


def _engine(n: int) -> RollingSummarizer:
    # a policy that never acts, so the window is exactly the messages added
    rs = RollingSummarizer.from_preset("full-context", context_window=10**9)
    for i in range(n):
        rs.add(Message("user" if i % 3 else "assistant", "word " * (1 + i % 7), id=f"m{i}"))
    return rs


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 25), st.data())
def test_removing_by_position_leaves_the_window_the_id_rebuild_leaves(n: int, data: st.DataObject) -> None:
    positions = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    by_id, by_pos = _engine(n), _engine(n)
    ids = {by_id._active[i].id for i in positions}
    removed_id = by_id._remove(ids)  # type: ignore[arg-type]
    removed_pos = by_pos._remove(ids, at=positions)  # type: ignore[arg-type]
    assert removed_pos == removed_id
    assert by_pos._active == by_id._active
    assert by_pos._active_seq == by_id._active_seq
    assert by_pos._tokens == by_id._tokens
    assert by_pos._active_tokens == by_id._active_tokens == sum(by_id._tokens)
