"""MemoryStore's own layout: rows by column, no object per stored message (issue #20, item 2).

The contract and property tests (run against both stores) hold its behaviour; these hold what
only the column layout could get wrong, and that it stays free of per-message objects.
"""

from __future__ import annotations

import gc
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.store import MemoryStore, memory
from rollsum.types import Message, SummaryRecord


def _fill(store: MemoryStore, n: int, cid: str = "c1") -> list[Message]:
    msgs = [Message("user", f"content {i}", id=f"m{i}") for i in range(n)]
    for i, m in enumerate(msgs):
        store.add_message(cid, i, m)
    return msgs


def test_each_covered_row_names_its_own_summary_among_many() -> None:
    store = MemoryStore()
    _fill(store, 6)
    store.set_state("c1", ["m3"], "pending", reason="evicted")
    for k, covered in enumerate((["m0", "m1"], ["m3"], ["m2", "m4"])):
        store.commit_summary(SummaryRecord(id=f"s{k}", conversation_id="c1", text="t", seq=k,
                                           covered_ids=tuple(covered)), covered)
    assert [(r.message.id, r.state, r.summary_id, r.reason) for r in store.messages("c1")] == [
        ("m0", "covered", "s0", None), ("m1", "covered", "s0", None), ("m2", "covered", "s2", None),
        ("m3", "covered", "s1", None), ("m4", "covered", "s2", None), ("m5", "active", None, None)]


def test_sequence_numbers_outside_64_bits_keep_their_value_and_order() -> None:
    store = MemoryStore()
    big = 2**70
    store.add_message("c1", 5, Message("user", "a", id="a"))
    store.add_message("c1", big, Message("user", "b", id="b"))
    store.add_message("c1", -big, Message("user", "c", id="c"))
    assert [(r.seq, r.message.id) for r in store.messages("c1")] == [(-big, "c"), (5, "a"), (big, "b")]


def test_storing_messages_makes_no_object_per_message() -> None:
    """A replay keeps every message in the store: an object per row is a million more objects
    for every full collection to walk at 1M messages (the 1M/10k per-message ratio)."""
    store = MemoryStore()
    msgs = [Message("user", f"content {i}", id=f"m{i}") for i in range(5_000)]
    gc.collect()
    before = len(gc.get_objects())
    for i, m in enumerate(msgs):
        store.add_message("c1", 10_000 + i, m)
    store.set_state("c1", [m.id for m in msgs[:2_000] if m.id], "pending", reason="evicted")
    store.commit_summary(SummaryRecord(id="s0", conversation_id="c1", text="t",
                                       covered_ids=tuple(f"m{i}" for i in range(1_000))),
                         [f"m{i}" for i in range(1_000)])
    gc.collect()
    assert len(gc.get_objects()) - before < 50


def test_a_summary_clears_the_reasons_it_covers_without_growing_the_reason_column() -> None:
    """Covered rows read reason None. Rows the reason column holds must be cleared (a row set
    pending with a reason, then covered, in a run and out of one); rows past its end already
    read None, so a summary must not fill the column: budget-rule-based never sets a reason, and
    a filled column was a million Nones for every full collection to walk at 1M messages."""
    store = MemoryStore()
    _fill(store, 12)
    store.set_state("c1", ["m1", "m3"], "pending", reason="evicted")
    store.commit_summary(SummaryRecord(id="s0", conversation_id="c1", text="t",
                                       covered_ids=("m2", "m3", "m4", "m5")), ["m2", "m3", "m4", "m5"])
    store.commit_summary(SummaryRecord(id="s1", conversation_id="c1", text="t", seq=1,
                                       covered_ids=("m1", "m8")), ["m1", "m8"])
    rows = {r.message.id: (r.state, r.reason) for r in store.messages("c1")}
    assert rows["m1"] == rows["m3"] == rows["m8"] == ("covered", None)
    other = MemoryStore()
    _fill(other, 5_000)
    ids = [f"m{i}" for i in range(4_000)]
    other.commit_summary(SummaryRecord(id="s0", conversation_id="c1", text="t", covered_ids=tuple(ids)), ids)
    assert other._rows["c1"].reasons == []


def test_ids_that_number_their_rows_are_not_indexed_until_one_does_not() -> None:
    """The engine's `conversation/seq` ids are read off, not kept in an id -> row dict (a
    million-entry dict made each add ~0.4 us dearer at 1M: issue #20, item 2); the first id that
    breaks the numbering indexes every row, and every id is still found."""
    store = MemoryStore()
    for i in range(3, 1003):
        store.add_message("c1", i, Message("user", "x", id=f"c1/{i}"))
    assert store._rows["c1"].index == {}
    store.add_message("c1", 1003, Message("user", "x", id="c1/1004"))
    assert len(store._rows["c1"].index) == 1001
    store.set_state("c1", ["c1/3", "c1/1002", "c1/1004"], "dropped", reason="r")
    assert [r.message.id for r in store.messages("c1", "dropped")] == ["c1/3", "c1/1002", "c1/1004"]


def test_stored_messages_are_not_walked_by_the_collector_once_the_caller_drops_them() -> None:
    """An application makes each message when it arrives and hands it to the engine: kept as
    its `Message` objects, a 1M-message store is a million tracked objects every full
    collection visits (0.45 s a collection at 1M). Rows without metadata are kept untracked."""
    store = MemoryStore()
    gc.collect()
    before = len(gc.get_objects())
    for i in range(12_000):
        meta: dict[str, Any] = ({} if i % 3 == 0 else {"tool_calls": [f"t{i}"]} if i % 3 == 1
                                else {"tool_call_id": f"t{i - 1}", "path": "a.py", "exit_code": 0})
        store.add_message("c1", i, Message("user" if i % 2 else "assistant", f"content {i}", id=f"c1/{i}",
                                           created_at="2023-05-08T13:56:00", meta=meta))
    store.set_state("c1", ["c1/5", "c1/9000"], "pending", reason="evicted")
    for _ in range(4):  # a tuple is untracked once what it holds is: one level a collection at worst
        gc.collect()
    assert len(gc.get_objects()) - before < 50
    rows = store.messages("c1")
    assert [r.message for r in rows[4_095:4_098]] == [
        Message("user", "content 4095", id="c1/4095", created_at="2023-05-08T13:56:00"),
        Message("assistant", "content 4096", id="c1/4096", created_at="2023-05-08T13:56:00",
                meta={"tool_calls": ["t4096"]}),
        Message("user", "content 4097", id="c1/4097", created_at="2023-05-08T13:56:00",
                meta={"tool_call_id": "t4096", "path": "a.py", "exit_code": 0})]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rows_read_back_whole_across_chunks(data: st.DataObject) -> None:
    # chunks of 4 rows (the store's are 4,096): every read path crosses chunk boundaries
    metas: st.SearchStrategy[dict[str, Any]] = st.sampled_from([
        {}, {}, {"k": "v"}, {"tool_calls": ["t1", "t2"]}, {"n": 3, "ok": True, "x": None, "f": 0.5},
        {"t": ("a",)}, {"nested": {"a": 1}}, {"calls": [1, 2]}, {"tool_call_id": "t1", "exit_code": 0},
        {"l": [{"a": [1]}]}])  # (a key that is not a string is refused, as SQLite must: test_store_contract)
    n = data.draw(st.integers(0, 30))
    numbered = data.draw(st.integers(0, n))  # ids number the rows up to here (then an index)
    with mock.patch.multiple(memory, _CHUNK_BITS=2, _CHUNK=4, _IN_CHUNK=3):
        store = MemoryStore()
        msgs = [Message(data.draw(st.sampled_from(["user", "assistant", "tool"])), f"text {i}",
                        id=f"c/{i}" if i < numbered else f"id{(i * 7) % 31}-{i}",
                        name=data.draw(st.sampled_from([None, "bash"])), meta=data.draw(metas))
                for i in range(n)]
        for i, m in enumerate(msgs):
            store.add_message("c", i, m)
        state = ["active"] * n
        if n:
            lo = data.draw(st.integers(0, n - 1))
            hi = data.draw(st.integers(lo + 1, n))
            run = [m.id for m in msgs[lo:hi] if m.id]
            store.commit_summary(SummaryRecord(id="s0", conversation_id="c", text="t", covered_ids=tuple(run)), run)
            state[lo:hi] = ["covered"] * (hi - lo)
            rest = [k for k in range(n) if state[k] == "active"]
            if rest:
                k = data.draw(st.sampled_from(rest))
                store.set_state("c", [msgs[k].id or ""], "pending")
                state[k] = "pending"
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n + 5))
        if n:  # (a store that was given no message has no rows for it)
            assert store._rows["c"].messages.ids(a, b) == [m.id for m in msgs[a:b]]
        rows = store.messages("c")
        assert [r.message for r in rows] == msgs
        assert [r.state for r in rows] == state
        assert all(type(r.message.meta) is dict for r in rows)
        assert [repr(r.message) for r in rows] == [repr(m) for m in msgs]  # True stays True, a tuple a tuple
