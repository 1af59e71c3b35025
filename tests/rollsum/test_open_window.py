"""Opening an engine on a stored conversation reads its window, not the conversation.

The docs endorse building the engine from its store for every request, so an open that read
every row (and decoded its meta, counted its tokens, read every summary record) cost each
request O(conversation). A store that keeps its totals (`rollsum.store.WindowedStore`) is read
for the active and pending rows, the totals and the latest summary record; the chain's earlier
records are read when `history` is first asked for. These tests pin what an open reads (a spy
store that counts rows), and that it opens the very engine a full read opens: same window,
counts, cadence, summary and chain, and the same summaries after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rollsum import Message
from rollsum.store import MemoryStore
from rollsum.tokens import HeuristicCounter, counter_key
from tests.support.opening import Spy, fill, make_store, open_engine, state, stream, ticking


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_an_open_reads_the_window_and_the_latest_record_not_the_conversation(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    fill("since-last", store, 600, ticking())
    spy = Spy(store)
    rs = open_engine("since-last", spy)
    window = len(rs._window.pinned) + len(rs._window.active) + len(rs._window.pending)
    assert spy.full_reads == 0
    assert spy.rows == window < 40, "an open reads the window's rows only"
    assert spy.records == 1, "the latest summary record only"
    chain = rs.history  # the rest of the chain on first use
    assert len(chain) > 20 and spy.records == 1 + len(chain)
    rs.close()
    store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("preset", ["since-last", "evict-window", "truncate", "clear+since-last", "budget-rule-based"])
def test_a_windowed_open_is_the_engine_a_full_read_opens(kind: str, preset: str, tmp_path: Path) -> None:
    """Two stores filled alike; one opened from its window, one (through a `Store`-only view)
    from every row: the same engine, and the same summaries and context after 60 more messages."""
    fast_store, full_store = make_store(kind, tmp_path, "fast"), make_store(kind, tmp_path, "full")
    fast_clock, full_clock = ticking(), ticking()
    fill(preset, fast_store, 300, fast_clock)
    fill(preset, full_store, 300, full_clock)
    fast_spy, full_spy = Spy(fast_store), Spy(full_store, plain=True)
    fast, full = open_engine(preset, fast_spy, fast_clock), open_engine(preset, full_spy, full_clock)
    assert fast_spy.full_reads == 0 and full_spy.full_reads == 1
    before = state(fast), state(full)
    assert before[0] == before[1]
    for m in stream(60, start=300):
        fast.add(m)
        full.add(m)
    after = state(fast), state(full)
    assert after[0] == after[1]
    for rs, store in ((fast, fast_store), (full, full_store)):
        rs.close()
        store.close()


def test_a_full_read_open_matches_with_the_chain_still_unread(tmp_path: Path) -> None:
    """A summary committed before `history` was read takes the chain's next number, and the
    chain read afterwards is the store's records, then this engine's, in order."""
    store, clock = MemoryStore(), ticking()
    fill("since-last", store, 300, clock)
    rs = open_engine("since-last", store, clock)
    count = len(store.summaries("c"))
    for m in stream(60, start=300):
        rs.add(m)
    assert rs._earlier == count - 1, "the chain was not read by adding messages"
    chain = rs.history
    assert [r.seq for r in chain] == list(range(len(chain))) and len(chain) > count
    assert chain == store.summaries("c")
    rs.close()


def test_another_counter_counts_again_once_and_keeps_its_total() -> None:
    """The store's token total is its counter's: an engine with another counter counts every
    message again (it must: `added_tokens` feeds the window guard), then keeps that total."""
    store = MemoryStore()
    fill("since-last", store, 200, ticking())
    other = HeuristicCounter(calibration=1.15)
    spy = Spy(store)
    rs = open_engine("since-last", spy, counter=other)
    assert spy.full_reads == 1
    expected = sum(other.count_message(r.message) for r in store.messages("c"))
    assert rs._added_tokens == expected
    rs.close()
    totals = store.totals("c")
    assert totals is not None and (totals.tokens, totals.counter) == (expected, counter_key(other))
    spy = Spy(store)
    rs = open_engine("since-last", spy, counter=HeuristicCounter(calibration=1.15))
    assert spy.full_reads == 0 and rs._added_tokens == expected
    rs.close()


def test_a_counter_without_a_key_reads_every_row_and_leaves_the_total_unknown() -> None:
    """A counter that cannot say what it counts (a subclass counting otherwise) is never given
    a stored total; the messages it stores come without a count, so the total is unknown."""
    class Words(HeuristicCounter):
        def count(self, text: str) -> int:
            return len(text.split())

    assert counter_key(Words()) is None and counter_key(HeuristicCounter()) is not None
    store = MemoryStore()
    fill("since-last", store, 100, ticking())
    spy = Spy(store)
    with open_engine("since-last", spy, counter=Words()) as rs:
        assert spy.full_reads == 1
        assert rs._added_tokens == sum(Words().count_message(r.message) for r in store.messages("c"))
        rs.add(Message("user", "one more"))
    totals = store.totals("c")
    assert totals is not None and totals.tokens is None
    spy = Spy(store)
    with open_engine("since-last", spy) as rs:  # the default counter counts again, once
        assert spy.full_reads == 1
        assert rs._added_tokens == sum(HeuristicCounter().count_message(r.message) for r in store.messages("c"))


def test_without_a_saved_cadence_the_rate_limits_come_from_every_row() -> None:
    """A store holding no cadence (written before it was kept): the counts the rows imply
    (`Cadence.resumed`) need every row, so the open reads them, as before."""
    store = MemoryStore()
    fill("since-last", store, 200, ticking())
    store._cadence.clear()
    spy = Spy(store)
    fast = open_engine("since-last", spy)
    full = open_engine("since-last", Spy(store, plain=True), takeover=True)
    assert spy.full_reads == 1
    assert state(fast) == state(full)
