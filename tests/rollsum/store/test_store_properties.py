"""Random operation sequences against both stores at once.

The invariants are the ones the engine's "no message is ever lost" promise rests on: every
message added is readable exactly once with its content, every covered message names exactly
one existing summary that lists it, failed commits leave no trace, and the two stores agree.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum.errors import ConfigError
from rollsum.store import MemoryStore, SQLiteStore, Store
from rollsum.types import Message, SummaryRecord

CONVERSATIONS = ("a", "b")
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)  # SQLite needs valid UTF-8
OPS = st.sampled_from(["add", "add", "add", "commit", "commit", "bad_commit", "set_state", "reopen", "delete"])


def snapshot(store: Store) -> dict[str, tuple[object, ...]]:
    return {cid: (store.messages(cid), store.summaries(cid), store.latest_summary(cid),
                  store.totals(cid), store.window_rows(cid))  # type: ignore[attr-defined]
            for cid in CONVERSATIONS}


def check_invariants(store: Store, expected: dict[tuple[str, str], Message]) -> None:
    seen: Counter[tuple[str, str]] = Counter()
    for cid in CONVERSATIONS:
        rows = store.messages(cid)
        records = {r.id: r for r in store.summaries(cid)}
        in_summaries = Counter(mid for r in records.values() for mid in r.covered_ids)
        assert all(n == 1 for n in in_summaries.values()), "a message is in two summaries"
        for row in rows:
            key = (cid, row.message.id or "")
            seen[key] += 1
            assert row.message == expected[key]
            if row.state == "covered":
                assert row.summary_id in records and key[1] in records[row.summary_id].covered_ids
            else:
                assert row.summary_id is None and key[1] not in in_summaries
        assert sum(r.state == "covered" for r in rows) == sum(in_summaries.values())
        # what an engine opens from instead of the rows (`WindowedStore`) says what the rows say
        assert store.window_rows(cid) == [r for r in rows if r.state in ("active", "pending")]  # type: ignore[attr-defined]
        totals = store.totals(cid)  # type: ignore[attr-defined]
        if rows:
            assert totals is not None
            assert (totals.rows, totals.next_seq, totals.dropped, totals.summaries) == (
                len(rows), max((r.seq + 1 for r in rows), default=0), sum(r.state == "dropped" for r in rows),
                len(records))
    assert seen == Counter(expected.keys()), "a message was lost or duplicated"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_operations_keep_every_message_and_both_stores_agree(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "prop.db"
        mem: MemoryStore = MemoryStore()
        sql = SQLiteStore(path, synchronous="NORMAL")
        expected: dict[tuple[str, str], Message] = {}
        seqs = dict.fromkeys(CONVERSATIONS, 0)
        chain = dict.fromkeys(CONVERSATIONS, 0)
        counter = 0
        tokens: dict[str, tuple[str | None, int]] = {}  # the token total each store must keep, and its counter
        try:
            for _ in range(data.draw(st.integers(1, 30), label="ops")):
                op = data.draw(OPS, label="op")
                cid = data.draw(st.sampled_from(CONVERSATIONS), label="cid")
                rows = mem.messages(cid)
                coverable = [r.message.id or "" for r in rows if r.state in ("active", "pending")]
                if op == "add":
                    for _ in range(data.draw(st.integers(1, 4))):
                        counter += 1
                        m = Message(data.draw(st.sampled_from(["user", "assistant", "tool"])), data.draw(TEXT),
                                    id=f"m{counter}", meta={"n": counter, "tags": [data.draw(TEXT)]})
                        how = data.draw(st.sampled_from(["plain", "k", "k", "j"]), label="counter")
                        first = not any(k[0] == cid for k in expected)
                        known, total = tokens.get(cid, (None, 0))
                        tokens[cid] = (None, 0) if how == "plain" else (how, len(m.content)) if first else \
                            (how, total + len(m.content)) if known == how else (None, 0)
                        for s in (mem, sql):
                            if how == "plain":
                                s.add_message(cid, seqs[cid], m)
                            else:  # counted by one of two counters (a total of one, or unknown)
                                s.add_counted(cid, seqs[cid], m, len(m.content), how)
                        expected[(cid, f"m{counter}")] = m
                        seqs[cid] += 1
                elif op == "commit":
                    covered = data.draw(st.lists(st.sampled_from(coverable), unique=True) if coverable
                                        else st.just([]), label="covered")
                    counter += 1
                    record = SummaryRecord(
                        id=f"s{counter}", conversation_id=cid, text=data.draw(TEXT), covered_ids=tuple(covered),
                        created_at=data.draw(st.sampled_from(["t1", "t2"])), seq=chain[cid],
                        messages_covered=len(covered), meta={"k": [counter]})
                    chain[cid] += 1
                    for s in (mem, sql):
                        s.commit_summary(record, covered)
                elif op == "bad_commit":
                    bad = [r.message.id or "" for r in rows if r.state in ("covered", "dropped")] + ["ghost"]
                    covered = data.draw(st.lists(st.sampled_from(coverable), unique=True) if coverable
                                        else st.just([]))
                    covered.insert(data.draw(st.integers(0, len(covered))), data.draw(st.sampled_from(bad)))
                    record = SummaryRecord(id=f"x{counter}", conversation_id=cid, text="never",
                                           covered_ids=tuple(covered), created_at="t9")
                    for s in (mem, sql):
                        before = snapshot(s)
                        try:
                            s.commit_summary(record, covered)
                        except ConfigError:
                            pass
                        else:
                            raise AssertionError(f"{type(s).__name__} accepted {covered}")
                        assert snapshot(s) == before
                elif op == "set_state":
                    movable = [r.message.id or "" for r in rows if r.state != "covered"]
                    if movable:
                        ids = data.draw(st.lists(st.sampled_from(movable), min_size=1, unique=True))
                        state = data.draw(st.sampled_from(["pending", "dropped", "active"]))
                        for s in (mem, sql):
                            s.set_state(cid, ids, state, reason=f"r{counter}")  # type: ignore[arg-type]
                elif op == "reopen":
                    sql.close()
                    sql = SQLiteStore(path, synchronous="NORMAL")
                elif op == "delete" and data.draw(st.booleans()):  # rarer than the rest
                    for s in (mem, sql):
                        s.delete_conversation(cid)
                    expected = {k: v for k, v in expected.items() if k[0] != cid}
                    tokens.pop(cid, None)
            check_invariants(mem, expected)
            check_invariants(sql, expected)
            for cid, (known, total) in tokens.items():
                found = mem.totals(cid)
                assert found is not None and (found.counter, found.tokens) == (known, total if known else None)
            assert snapshot(sql) == snapshot(mem)
            assert sql.conversations() == mem.conversations()
        finally:
            sql.close()
