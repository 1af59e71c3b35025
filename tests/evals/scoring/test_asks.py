"""Probe timing: the sampled default is deterministic, uniform over each fact's remaining life and
weighs every fact equally; keys round-trip; re-scoring reproduces the same rows."""

from __future__ import annotations

import collections
import statistics

import pytest
from rollsum_evals.data.types import Probe
from rollsum_evals.scoring.asks import ProbeTiming, parse_timing, sampled_turns, schedule_asks

from rollsum.types import Message

N = 400
MSGS = tuple(Message("user", f"message {i}", id=f"m{i}") for i in range(N))


def _probes(n: int, evidence: int = 100) -> list[Probe]:
    return [Probe(f"p{k}", "q?", "a", evidence=(f"m{evidence}",)) for k in range(n)]


def test_the_default_is_one_sampled_age_per_fact_plus_the_end() -> None:
    t = ProbeTiming()
    assert (t.ask, t.draws, t.end, t.key) == ("sampled", 1, True, "sampled:1+end")
    asks = schedule_asks(_probes(3), MSGS, t)
    assert len(asks) == 6
    for p in ("p0", "p1", "p2"):
        turns = sorted(a.asked_turn for a in asks if a.probe.id == p)
        assert turns[1] == N - 1 and 100 <= turns[0] < N - 1


@pytest.mark.parametrize("key", ["sampled:1+end", "sampled:3", "sampled:2,seed=9+end", "end", "after:4",
                                 "ages:5,20+end", "ages:3"])
def test_keys_round_trip(key: str) -> None:
    assert parse_timing(key).key == key


@pytest.mark.parametrize("key", ["sampled:0", "sampled:x", "sampled:1,seed=", "sampled", "ages:", "after:0", "soon"])
def test_malformed_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match="probe timing"):
        parse_timing(key)


def test_draws_are_a_pure_function_of_probe_id_and_seed() -> None:
    t = parse_timing("sampled:2+end")
    once = [(a.key, a.asked_turn) for a in schedule_asks(_probes(50), MSGS, t)]
    again = [(a.key, a.asked_turn) for a in schedule_asks(_probes(50), MSGS, t)]
    assert once == again
    # a probe's asks do not depend on the other probes (order, presence)
    alone = [(a.key, a.asked_turn) for a in schedule_asks(_probes(50)[7:8], MSGS, t)]
    assert alone == [x for x in once if x[0].startswith("p7@")]
    shuffled = [(a.key, a.asked_turn) for a in schedule_asks(list(reversed(_probes(50))), MSGS, t)]
    assert sorted(shuffled) == sorted(once)
    other_seed = [(a.key, a.asked_turn) for a in schedule_asks(_probes(50), MSGS, parse_timing("sampled:2,seed=1+end"))]
    assert other_seed != once


def test_sampled_ages_are_uniform_over_the_remaining_life() -> None:
    """2,000 facts, evidence at 100 of 400 turns: the drawn turns must cover 100..398 evenly
    (the end, 399, is asked anyway). A chi-square over 10 bins with a fixed seed; a draw that
    clusters (e.g. always near the evidence, or a fixed grid) fails it."""
    turns = [t for k in range(2000) for t in sampled_turns(f"f{k}", 100, N - 1, 1, 0, end=True)]
    assert len(turns) == 2000 and min(turns) >= 100 and max(turns) <= N - 2
    bins = collections.Counter((t - 100) * 10 // (N - 1 - 100) for t in turns)
    expected = 2000 / 10
    chi2 = sum((bins[b] - expected) ** 2 / expected for b in range(10))
    assert chi2 < 21.67  # the 1 % critical value with 9 degrees of freedom
    assert statistics.mean(turns) == pytest.approx((100 + N - 2) / 2, rel=0.03)
    # without the end ask the end itself may be drawn
    assert max(t for k in range(2000) for t in sampled_turns(f"f{k}", 390, N - 1, 1, 0, end=False)) == N - 1


def test_every_fact_weighs_the_same_whatever_its_age() -> None:
    """Young and old facts get the same number of asks (a fixed age grid gives old facts more)."""
    probes = [Probe(f"p{e}", "q?", "a", evidence=(f"m{e}",)) for e in range(0, N - 3, 7)]
    sampled = collections.Counter(a.probe.id for a in schedule_asks(probes, MSGS, parse_timing("sampled:2+end")))
    assert set(sampled.values()) == {3}
    grid = collections.Counter(a.probe.id for a in schedule_asks(probes, MSGS, parse_timing("ages:5,20,60,150+end")))
    assert len(set(grid.values())) > 1  # what the default replaces


def test_draws_are_distinct_and_capped_by_the_life_left() -> None:
    assert sampled_turns("p", 396, N - 1, 5, 0, end=True) == [396, 397, 398]
    assert sampled_turns("p", N - 1, N - 1, 1, 0, end=True) == []  # evidence at the end: only the end ask
    turns = sampled_turns("p", 10, N - 1, 20, 0, end=True)
    assert len(turns) == len(set(turns)) == 20
    last = schedule_asks([Probe("z", "q?", "a", evidence=(f"m{N - 1}",))], MSGS, ProbeTiming())
    assert [(a.key, a.asked_turn, a.age_turns) for a in last] == [(f"z@{N - 1}", N - 1, 0)]


def test_a_probe_without_evidence_is_asked_once_at_the_end() -> None:
    asks = schedule_asks([Probe("x", "q?", "a")], MSGS, ProbeTiming())
    assert [(a.key, a.asked_turn) for a in asks] == [(f"x@{N - 1}", N - 1)]
