"""Cutting messages out of the window by position equals removing them by id (issue #20, item 2).

Evictions pass the positions they decided on, and `Window.remove` deletes those runs in place so
an eviction's cost does not grow with the window. Whatever positions are taken (runs, gaps, the
first or last message), the window that remains (messages, their sequence numbers, token counts
and the running total) and the removed list must be exactly what the id-based rebuild gives.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import Message, SummaryRecord
from rollsum.cadence import Cadence
from rollsum.policies._util import tool_units
from rollsum.policies.base import WindowState
from rollsum.window import STATE_FIELDS, Window, policy_state


def _window(n: int) -> Window:
    w = Window()
    for i in range(n):
        m = Message("user" if i % 3 else "assistant", "word " * (1 + i % 7), id=f"m{i}")
        w.push(10 + 2 * i, m, 1 + i % 7)  # sequence numbers with gaps, as after pinned messages
        if i % 4 == 0:
            w.clips[f"m{i}"] = m  # a display version must leave with its message
    return w


def _rebuilt(w: Window, ids: set[str]) -> list[tuple[int, Message]]:
    """The id-based rebuild `Window.remove` once was, kept here as the reference: every list
    rebuilt from the kept messages, the total summed again, display versions forgotten."""
    kept: list[tuple[Message, int, int]] = []
    removed: list[tuple[int, Message]] = []
    for m, s, n in zip(w.active, w.active_seq, w.tokens):
        if m.id in ids:
            removed.append((s, m))
            w.clips.pop(str(m.id), None)
            w.cleared.pop(str(m.id), None)
        else:
            kept.append((m, s, n))
    w.active, w.active_seq, w.tokens = [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]
    w.active_tokens = sum(w.tokens)
    return removed


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 25), st.sampled_from(["clips", "cleared", "none"]), st.data())
def test_removing_by_id_or_position_is_the_rebuild(n: int, shown: str, data: st.DataObject) -> None:
    """Whatever is removed (one run, as a summary or a policy's span removes, or runs with gaps)
    and whichever display versions the window holds (clipped only, cleared only, none), both
    ways of removing leave exactly what the rebuild leaves. Catches: the one-run shortcut
    cutting a run one short or long, and skipping the display versions when only one of the two
    maps holds some."""
    if data.draw(st.booleans(), label="one run"):
        a = data.draw(st.integers(0, n - 1))
        positions = list(range(a, data.draw(st.integers(a + 1, n))))
    else:
        positions = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    windows = [_window(n) for _ in range(3)]
    for w in windows:
        if shown != "clips":
            w.cleared, w.clips = (dict(w.clips) if shown == "cleared" else {}), {}
    reference, by_id, by_pos = windows
    ids = {str(reference.active[i].id) for i in positions}
    expected = _rebuilt(reference, ids)
    assert by_id.remove(ids) == expected == by_pos.remove(ids, at=positions)
    for w in (by_id, by_pos):
        assert (w.active, w.active_seq, w.tokens) == (reference.active, reference.active_seq, reference.tokens)
        assert w.active_tokens == reference.active_tokens
        assert (w.clips, w.cleared) == (reference.clips, reference.cleared)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 25), st.data())
def test_removing_by_position_leaves_the_window_the_id_rebuild_leaves(n: int, data: st.DataObject) -> None:
    positions = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    by_id, by_pos = _window(n), _window(n)
    ids = {str(by_id.active[i].id) for i in positions}
    removed_id = by_id.remove(ids)
    removed_pos = by_pos.remove(ids, at=positions)
    assert removed_pos == removed_id
    assert by_pos.active == by_id.active
    assert by_pos.active_seq == by_id.active_seq
    assert by_pos.tokens == by_id.tokens
    assert by_pos.active_tokens == by_id.active_tokens == sum(by_id.tokens)
    assert by_pos.clips == by_id.clips and not ids & set(by_pos.clips)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 25), st.sampled_from(["clips", "none"]), st.data())
def test_discarding_a_landed_span_is_the_rebuild_whatever_the_planned_positions(n: int, shown: str,
                                                                                 data: st.DataObject) -> None:
    """`Window.discard` (a landing summary's removal, with the positions its job was planned
    on) leaves what the rebuild leaves: when the ids are the run at the planned start (its
    shortcut), one shifted from it (messages left before it landed), a run plus ids no longer
    in the window, or scattered. Catches: a shortcut that trusts the planned start without
    checking the ids there, or cuts one too few or too many."""
    a = data.draw(st.integers(0, n - 1), label="start")
    run = list(range(a, data.draw(st.integers(a + 1, n), label="stop")))
    positions = run if data.draw(st.booleans(), label="one run") else \
        sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n), label="scattered"))
    planned = tuple(p + data.draw(st.integers(-2, 2), label="shift") for p in positions)
    reference, w = _window(n), _window(n)
    if shown == "none":
        reference.clips, w.clips = {}, {}
    ids = {str(reference.active[i].id) for i in positions}
    if data.draw(st.booleans(), label="gone"):
        ids.add("gone")  # covered, but no longer active (a message evicted to pending meanwhile)
    _rebuilt(reference, ids)
    w.discard(frozenset(ids), planned)
    assert (w.active, w.active_seq, w.tokens) == (reference.active, reference.active_seq, reference.tokens)
    assert w.active_tokens == reference.active_tokens
    assert w.clips == reference.clips


def test_pending_stays_in_conversation_order_whatever_order_evictions_come_in() -> None:
    w = _window(6)
    late = w.remove({"m4", "m5"}, at=[4, 5])
    early = w.remove({"m0"}, at=[0])
    w.add_pending(late)
    w.add_pending(early)
    assert [m.id for m in w.pending] == ["m0", "m4", "m5"] and w.pending_seq == sorted(w.pending_seq)
    w.unpend({"m4"})
    assert [m.id for m in w.pending] == ["m0", "m5"] and w.pending_seq == [10, 20]
    assert w.clear_pending() == 2 and w.pending == [] and w.pending_seq == []


def test_a_span_is_in_conversation_order_and_capped_at_the_request_budget() -> None:
    """Pending messages are older than the active ones they are summarized with: the request
    takes them first, and a backlog over `max_tokens` waits for the next request (at least
    one message always goes)."""
    w = _window(6)
    w.add_pending(w.remove({"m0", "m1"}, at=[0, 1]))
    taken, active_ids = w.span([1, 0], include_pending=True, count=lambda m: 3, max_tokens=9)
    assert [m.id for m in taken] == ["m0", "m1", "m2"] and active_ids == {"m2"}  # 3 + 3 + 3; m3 (4) waits
    taken, active_ids = w.span([3], include_pending=False, count=lambda m: 3, max_tokens=1)
    assert [m.id for m in taken] == ["m5"] and active_ids == {"m5"}
    # all of it fits (`span`'s shortcut): every message, oldest first, and only the active ids
    taken, active_ids = w.span([3, 1, 2], include_pending=True, count=lambda m: 3, max_tokens=100)
    assert [m.id for m in taken] == ["m0", "m1", "m3", "m4", "m5"] and active_ids == {"m3", "m4", "m5"}
    # a negative count (a custom counter's) makes the total fit though the running total went
    # over on the way: no shortcut, the request stops where it went over
    w.tokens[:2] = [10, -20]
    taken, active_ids = w.span([0, 1], include_pending=True, count=lambda m: 1, max_tokens=5)
    assert [m.id for m in taken] == ["m0", "m1"] and active_ids == set()


def _span_reference(w: Window, indices: list[int], include_pending: bool, max_tokens: int
                    ) -> tuple[tuple[Message, ...], frozenset[str | None]]:
    """`Window.span` without its shortcuts: every message with its sequence number, sorted,
    taken oldest first until the next would go over `max_tokens` (at least one)."""
    chosen = [(w.active_seq[i], w.active[i], w.tokens[i]) for i in indices]
    if include_pending:
        chosen += [(s, m, len(m.content)) for s, m in zip(w.pending_seq, w.pending)]
    chosen.sort(key=lambda c: c[0])
    taken: list[Message] = []
    used = 0
    for _, m, n in chosen:
        if taken and used + n > max_tokens:
            break
        taken.append(m)
        used += n
    return tuple(taken), frozenset(w.active[i].id for i in indices) & {m.id for m in taken}


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 12), lo=st.integers(0, 11), size=st.integers(0, 12), scattered=st.booleans(),
       pending=st.sets(st.integers(0, 11), max_size=4), include_pending=st.booleans(),
       negative=st.booleans(), max_tokens=st.integers(0, 60))
def test_a_span_is_the_plain_walk_over_its_messages(n: int, lo: int, size: int, scattered: bool, pending: set[int],
                                                   include_pending: bool, negative: bool, max_tokens: int) -> None:
    """The shortcuts (one run of positions without pending: slices; everything fits: no walk)
    give what the plain walk gives: the same messages in the same order, the same active ids,
    whether the run fits, does not, holds a negative count, or is no run at all."""
    w = _window(n)
    w.add_pending(w.remove({f"m{i}" for i in pending if i < n}))
    if negative and w.tokens:
        w.tokens[len(w.tokens) // 2] = -30
    k = len(w.active)
    indices = list(range(min(lo, k), min(lo + size, k)))
    if scattered:
        indices = indices[::2] + indices[1::2]  # the same positions, not in order
    got = w.span(indices, include_pending, lambda m: len(m.content), max_tokens)
    assert got == _span_reference(w, indices, include_pending, max_tokens)


def test_policy_state_passes_values_in_the_field_order_of_window_state() -> None:
    """`policy_state` passes values by position (cheaper per message): a field added or moved in
    `WindowState` without it following would hand a policy the wrong numbers."""
    assert tuple(f.name for f in dataclasses.fields(WindowState)) == STATE_FIELDS


def test_policy_state_is_the_state_its_keyword_constructor_builds() -> None:
    """`policy_state` fills a `WindowState` through its slots, not its ``__init__``: with every
    source value different, each field must hold the value the keyword call puts there, and the
    result must be as frozen as one built the usual way."""
    w = _window(5)
    w.pin(Message("system", "be brief", id="s0"), 4)
    w.add_pending(w.remove({"m0"}, at=[0]))
    w.summary_tokens = 17
    record = SummaryRecord("sum-1", "conv", "earlier", messages_covered=23)
    c = Cadence(total_added=101, since_summary=7, since_attempt=5, attempts=9, failures=1, retry_at=200,
                total_evicted=13, evicted_since=3, min_tokens_since=55)
    state = policy_state(w, c, [record, record], 2, 8000, 1, 321)
    expected = WindowState(
        messages=w.active, tokens=w.tokens, active_tokens=w.active_tokens, pinned_tokens=4, summary_tokens=17,
        summary=record, chain_length=2, messages_covered=23, total_added=101, since_summary=7, pending=1,
        pending_messages=w.pending, evicted_since_summary=3, dropped=2, min_tokens_since_summary=55,
        context_window=8000, passes=1, last_failed=True, since_attempt=5, attempts=9, total_evicted=13,
        summary_budget=321)
    assert type(state) is WindowState
    assert {f: getattr(state, f) for f in STATE_FIELDS} == {f: getattr(expected, f) for f in STATE_FIELDS}
    assert state == expected
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.passes = 2  # type: ignore[misc]
    w.summary_hidden = True  # the guard left the summary out: the policy sees no summary tokens
    c.retry_at = 101  # the backoff is over at this count
    assert policy_state(w, c, [], 0, 8000, 0, 321).summary_tokens == 0
    assert policy_state(w, c, [], 0, 8000, 0, 321).last_failed is False
    assert policy_state(w, c, [], 0, 8000, 0, 321).messages_covered == 0


_KINDS = {
    "user": Message("user", "hi"),
    "assistant": Message("assistant", "ok"),
    "call": Message("assistant", "running it", meta={"tool_calls": ["c1"]}),
    "tool": Message("tool", "output", name="bash"),
}


def _pairs_by_definition(active: list[Message], indices: list[int]) -> tuple[int, ...]:
    """`keep_tool_pairs` as documented, over the whole window's tool groups (`tool_units`)."""
    chosen = set(indices)
    holding = [range(a, b) for a, b in tool_units(active, 0, len(active)) if chosen.intersection(range(a, b))]
    shrunk = [k for g in holding if chosen.issuperset(g) for k in g]
    return tuple(shrunk) if shrunk else tuple(k for g in holding for k in g)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(sorted(_KINDS)), min_size=1, max_size=30), st.data())
def test_keep_tool_pairs_keeps_whole_groups_for_a_run_and_for_any_set(kinds: list[str], data: st.DataObject) -> None:
    """Runs of positions (what `Decision.span` gives) take a shortcut that looks only at the
    groups at the run's two ends; it and the general path must both give the definition's
    answer, with every start, end and group layout (a call at either end, results spilling
    out of the run, one group wider than the run, results without a call)."""
    w = Window()
    for i, kind in enumerate(kinds):
        w.push(i, _KINDS[kind], 1)
    n = len(kinds)
    lo = data.draw(st.integers(0, n - 1))
    run = list(range(lo, data.draw(st.integers(lo + 1, n))))
    anyset = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n))
    for indices in (run, anyset):
        assert w.keep_tool_pairs(tuple(indices)) == _pairs_by_definition(w.active, indices), indices
