"""MemoryStore's own layout: rows by column, no object per stored message (issue #20, item 2).

The contract and property tests (run against both stores) hold its behaviour; these hold what
only the column layout could get wrong, and that it stays free of per-message objects.
"""

from __future__ import annotations

import gc

from rollsum.store import MemoryStore
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
