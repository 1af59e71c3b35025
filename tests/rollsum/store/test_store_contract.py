"""The Store contract, run against MemoryStore and SQLiteStore alike.

The engine may be configured with either store; anything it relies on is asserted here once,
so the two cannot drift apart.
"""

from __future__ import annotations

import re
import threading

import pytest

from rollsum.errors import ConfigError
from rollsum.store import Store, StoredMessage
from rollsum.types import Message, SummaryRecord, Usage


def msg(i: int, role: str = "user", **kw: object) -> Message:
    return Message(role, f"content {i}", id=f"m{i}", **kw)  # type: ignore[arg-type]


def fill(store: Store, n: int, cid: str = "c1") -> list[str]:
    for i in range(n):
        store.add_message(cid, i, msg(i))
    return [f"m{i}" for i in range(n)]


def rec(rid: str, covered: tuple[str, ...] = (), cid: str = "c1", created_at: str = "2024-01-01T00:00:00",
        seq: int = 0, **kw: object) -> SummaryRecord:
    return SummaryRecord(id=rid, conversation_id=cid, text=f"summary {rid}", covered_ids=covered,
                         created_at=created_at, seq=seq, **kw)  # type: ignore[arg-type]


def full_record() -> SummaryRecord:
    """Every field set to a non-default value, so a lossy column would show."""
    return SummaryRecord(
        id="s-full", conversation_id="c1", text="Alice chose Postgres 16.", depth=2, parent_id="s-prev",
        key_points=("db: Postgres", "deadline: 2024-05-01"),
        facets={"decisions": ("use Postgres",), "entities": ("Alice", "Bob")},
        pinned_facts=("port 5432",), covered_ids=("m0", "m1"), start_id="m0", end_id="m1",
        messages_covered=12, tokens=321, model="claude-haiku", prompt_id="narrative@2",
        prompt_hash="abc123", usage=Usage(10, 20, 3, 4, 1), created_at="2024-01-02T03:04:05+00:00",
        seq=7, fallback="extractive", notes=("transcript truncated",), facts=("fact ✓ ünicode",),
        ledger={"port 5432": 3}, meta={"nested": {"a": [1, 2, None]}, "flag": True},
    )


def test_implements_the_store_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_messages_round_trip_in_seq_order_as_active(store: Store) -> None:
    tool = Message("tool", "exit 0\n\x00binary-ish", id="t1", name="bash", created_at="2024-01-01T00:00:00Z",
                   meta={"command": "ls -la", "exit_code": 0, "paths": ["a", "b"], "nested": {"x": 1.5}})
    store.add_message("c1", 0, msg(0, "system"))
    store.add_message("c1", 1, tool)
    store.add_message("c1", 2, msg(2, "assistant", meta={"tool_calls": ["t1"]}))
    rows = store.messages("c1")
    assert [r.seq for r in rows] == [0, 1, 2]
    assert rows[1] == StoredMessage("c1", 1, tool, "active", None, None)
    assert rows[2].message.meta == {"tool_calls": ["t1"]}
    assert all(r.state == "active" for r in rows)


def test_messages_are_ordered_by_seq_not_insertion(store: Store) -> None:
    store.add_message("c1", 5, msg(5))
    store.add_message("c1", 1, msg(1))
    assert [r.message.id for r in store.messages("c1")] == ["m1", "m5"]


def test_unknown_conversation_is_empty(store: Store) -> None:
    assert store.messages("nope") == []
    assert store.summaries("nope") == []
    assert store.latest_summary("nope") is None


def test_message_without_id_or_with_duplicate_id_is_rejected(store: Store) -> None:
    with pytest.raises(ConfigError, match="needs an id"):
        store.add_message("c1", 0, Message("user", "x"))
    store.add_message("c1", 0, msg(0))
    with pytest.raises(ConfigError, match="duplicate message id 'm0'"):
        store.add_message("c1", 1, msg(0))
    assert len(store.messages("c1")) == 1


def test_same_message_id_in_two_conversations_is_fine(store: Store) -> None:
    store.add_message("c1", 0, msg(0))
    store.add_message("c2", 0, msg(0))
    assert store.conversations() == ["c1", "c2"]


def test_commit_summary_marks_covered_and_round_trips_every_field(store: Store) -> None:
    fill(store, 3)
    store.set_state("c1", ["m1"], "pending", reason="evicted")
    record = full_record()
    store.commit_summary(record, ["m0", "m1"])
    rows = store.messages("c1")
    assert [(r.state, r.summary_id, r.reason) for r in rows] == [
        ("covered", "s-full", None), ("covered", "s-full", None), ("active", None, None)]
    assert store.summaries("c1") == [record]
    assert store.latest_summary("c1") == record
    assert [r.message.id for r in store.messages("c1", "covered")] == ["m0", "m1"]
    assert [r.message.id for r in store.messages("c1", "active")] == ["m2"]


def test_summary_with_no_covered_messages_creates_the_conversation(store: Store) -> None:
    store.commit_summary(rec("s0", cid="fresh"), [])
    assert store.conversations() == ["fresh"]
    assert [r.id for r in store.summaries("fresh")] == ["s0"]


def _snapshot(store: Store, cid: str = "c1") -> tuple[list[StoredMessage], list[SummaryRecord]]:
    return store.messages(cid), store.summaries(cid)


@pytest.mark.parametrize("case", ["unknown", "covered", "dropped", "duplicate-in-list", "other-conversation"])
def test_failed_commit_changes_nothing(store: Store, case: str) -> None:
    fill(store, 4)
    store.add_message("c2", 0, msg(9))
    store.commit_summary(rec("s0", ("m0",)), ["m0"])
    store.set_state("c1", ["m3"], "dropped", reason="truncate")
    before = _snapshot(store)
    covered = {
        "unknown": ["m1", "m2", "ghost"],
        "covered": ["m1", "m0"],
        "dropped": ["m1", "m3"],
        "duplicate-in-list": ["m1", "m2", "m1"],
        "other-conversation": ["m1", "m9"],
    }[case]
    with pytest.raises(ConfigError) as err:
        store.commit_summary(rec("s1", tuple(covered), seq=1), covered)
    if case != "duplicate-in-list":
        assert "nothing was committed" in str(err.value)
    assert _snapshot(store) == before
    assert store.latest_summary("c1") == rec("s0", ("m0",))


def test_error_names_the_offending_ids_and_their_state(store: Store) -> None:
    fill(store, 2)
    store.commit_summary(rec("s0", ("m0",)), ["m0"])
    with pytest.raises(ConfigError, match=r"'m0' \(covered\).*'zz' \(unknown\)"):
        store.commit_summary(rec("s1", seq=1), ["m1", "m0", "zz"])


def test_duplicate_summary_id_is_rejected_without_side_effects(store: Store) -> None:
    fill(store, 2)
    store.commit_summary(rec("s0", ("m0",)), ["m0"])
    with pytest.raises(ConfigError, match="already exists"):
        store.commit_summary(rec("s0", ("m1",), seq=1), ["m1"])
    assert store.messages("c1", "active")[0].message.id == "m1"
    assert len(store.summaries("c1")) == 1


def test_latest_summary_is_newest_created_at_then_highest_seq(store: Store) -> None:
    t0, t1 = "2024-01-01T00:00:00", "2024-01-01T00:00:01"
    # Inserted out of order on purpose: neither insertion order nor id decides.
    store.commit_summary(rec("b", seq=2, created_at=t0), [])
    store.commit_summary(rec("c", seq=1, created_at=t0), [])
    store.commit_summary(rec("a", seq=0, created_at=t0), [])
    latest = store.latest_summary("c1")
    assert latest is not None and latest.id == "b"
    assert [r.id for r in store.summaries("c1")] == ["a", "c", "b"]
    store.commit_summary(rec("z", seq=0, created_at=t1), [])
    latest = store.latest_summary("c1")
    assert latest is not None and latest.id == "z"


def test_set_state_moves_messages_with_reason(store: Store) -> None:
    fill(store, 3)
    store.set_state("c1", ["m0", "m1"], "pending", reason="evicted")
    store.set_state("c1", ["m2"], "dropped", reason="truncate")
    assert [(r.state, r.reason) for r in store.messages("c1")] == [
        ("pending", "evicted"), ("pending", "evicted"), ("dropped", "truncate")]
    store.set_state("c1", ["m1"], "active")  # e.g. an eviction undone
    assert store.messages("c1")[1].state == "active"
    assert [r.message.id for r in store.messages("c1", "pending")] == ["m0"]


def test_set_state_refuses_unknown_covered_or_covered_target(store: Store) -> None:
    fill(store, 3)
    store.commit_summary(rec("s0", ("m0",)), ["m0"])
    before = _snapshot(store)
    with pytest.raises(ConfigError, match="unknown message ids"):
        store.set_state("c1", ["m1", "ghost"], "dropped")
    with pytest.raises(ConfigError, match="covered by a summary"):
        store.set_state("c1", ["m1", "m0"], "pending")
    with pytest.raises(ConfigError, match="commit_summary"):
        store.set_state("c1", ["m1"], "covered")
    assert _snapshot(store) == before


def test_delete_conversation_removes_only_that_conversation(store: Store) -> None:
    fill(store, 3, "c1")
    fill(store, 2, "c2")
    store.commit_summary(rec("s1", ("m0",), cid="c1"), ["m0"])
    store.commit_summary(rec("s2", ("m0",), cid="c2"), ["m0"])
    store.delete_conversation("c1")
    store.delete_conversation("never-existed")
    assert store.conversations() == ["c2"]
    assert store.messages("c1") == [] and store.summaries("c1") == []
    assert len(store.messages("c2")) == 2 and len(store.summaries("c2")) == 1
    # Ids are free again after a delete.
    fill(store, 1, "c1")
    store.commit_summary(rec("s1", ("m0",), cid="c1"), ["m0"])
    assert store.messages("c1")[0].summary_id == "s1"


def test_concurrent_writers_lose_nothing(store: Store) -> None:
    def writer(t: int) -> None:
        for i in range(50):
            store.add_message(f"c{t}", i, Message("user", f"{t}-{i}", id=f"m{i}"))
        store.commit_summary(rec(f"s{t}", cid=f"c{t}"), [f"m{i}" for i in range(0, 50, 2)])

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in range(4):
        rows = store.messages(f"c{t}")
        assert [r.message.content for r in rows] == [f"{t}-{i}" for i in range(50)]
        assert sum(r.state == "covered" for r in rows) == 25


@pytest.mark.parametrize("spelling", ["m01", "m+1", "m 1", "m1 ", "m0_1", "M1", "n1", "m", "m-1", "m3", "1"])
def test_an_id_is_found_only_by_its_exact_spelling(store: Store, spelling: str) -> None:
    """Ids that number their rows (`m0, m1, ...`, the engine's `conversation/seq`) are one
    MemoryStore reads the row position off: a near spelling must not find the row it names."""
    fill(store, 3)
    before = _snapshot(store)
    with pytest.raises(ConfigError, match="unknown message ids"):
        store.set_state("c1", [spelling], "dropped")
    with pytest.raises(ConfigError, match=re.escape(f"{spelling!r} (unknown); nothing was committed")):
        store.commit_summary(rec("s0", ("m0", "m1", spelling)), ["m0", "m1", spelling])
    assert _snapshot(store) == before


def test_ids_that_stop_numbering_their_rows_keep_every_rule(store: Store) -> None:
    """Rows numbered from 7 (`m7, m8`), then ids that break the numbering: every earlier id is
    still a duplicate, still found, and a summary over rows out of order covers each of them."""
    for i in (7, 8):
        store.add_message("c1", i - 7, msg(i))
    store.add_message("c1", 2, Message("user", "x", id="x"))
    for dup in ("m7", "m8", "x"):
        with pytest.raises(ConfigError, match=f"duplicate message id '{dup}'"):
            store.add_message("c1", 3, Message("user", "y", id=dup))
    store.add_message("c1", 3, msg(9))
    store.add_message("c1", 4, msg(6))
    store.set_state("c1", ["m8", "m6"], "dropped", reason="r")
    store.commit_summary(rec("s0", ("m9", "x", "m7")), ["m9", "x", "m7"])
    assert [(r.message.id, r.state, r.summary_id) for r in store.messages("c1")] == [
        ("m7", "covered", "s0"), ("m8", "dropped", None), ("x", "covered", "s0"),
        ("m9", "covered", "s0"), ("m6", "dropped", None)]


_NOT_JSON = [
    pytest.param({"k": object()}, "meta.k is an object", id="object"),
    pytest.param({"k": {1, 2}}, "meta.k is a set", id="set"),
    pytest.param({"k": float("nan")}, "meta.k is nan", id="nan"),
    pytest.param({"k": [1, float("inf")]}, r"meta.k\[1\] is inf", id="inf-in-list"),
    pytest.param({1: "a"}, "key 1 of meta is an int", id="int-key"),  # SQLite once stored it as "1"
    pytest.param({"k": {2: "b"}}, "key 2 of meta.k is an int", id="nested-int-key"),
    pytest.param({"k": "bad \ud800"}, "meta.k holds a lone surrogate", id="surrogate"),
]


@pytest.mark.parametrize(("meta", "needle"), _NOT_JSON)
def test_a_message_meta_json_cannot_hold_is_refused_by_both_stores(store: Store, meta: dict[object, object],
                                                                  needle: str) -> None:
    """Both stores refuse, with one message (`rollsum.store.base.check_meta`), what the SQLite
    JSON column cannot hold as given: a replay that passes on memory cannot fail on disk."""
    with pytest.raises(ConfigError, match=f"message 'm0': meta is not JSON-serialisable: {needle}"):
        store.add_message("c1", 0, msg(0, meta=meta))
    assert store.messages("c1") == []
    store.add_message("c1", 0, msg(0, meta={"k": (1, 2), "ok": [None, True, 1.5, {"x": "ü"}]}))  # JSON: kept
    assert store.messages("c1")[0].message.meta["ok"] == [None, True, 1.5, {"x": "ü"}]


@pytest.mark.parametrize(("meta", "needle"), _NOT_JSON)
def test_a_summary_meta_json_cannot_hold_is_refused_by_both_stores(store: Store, meta: dict[object, object],
                                                                  needle: str) -> None:
    ids = fill(store, 2)
    with pytest.raises(ConfigError, match=f"summary 's1': meta is not JSON-serialisable: {needle}"):
        store.commit_summary(rec("s1", tuple(ids), meta=meta), ids)
    assert store.summaries("c1") == [] and {r.state for r in store.messages("c1")} == {"active"}


def test_a_cadence_json_cannot_hold_is_refused_by_both_stores(store: Store) -> None:
    with pytest.raises(ConfigError, match=re.escape("conversation 'c1': cadence is not JSON-serialisable: "
                                                    "cadence.backoff is nan")):
        store.save_cadence("c1", {"backoff": float("nan")})
    assert store.cadence("c1") is None
