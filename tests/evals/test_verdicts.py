"""The status rules: a configuration that overflows, fails, thrashes or did not finish is never ok."""

import math

from hypothesis import given
from hypothesis import strategies as st
from rollsum_evals.verdicts import (
    BROKEN,
    DEGRADED,
    ERROR,
    INFEASIBLE,
    OK,
    REFERENCE,
    Health,
    Thresholds,
    judge,
)

HEALTHY = Health(baseline=False, units=6, units_unfinished=0, conversations=6, asks=100, answerable=90,
                 attempts=60.0, failures=0.0, messages=1800.0, overflow_turns=0.0, max_context_ratio=0.8,
                 context_window=8000)


def _h(**kw: object) -> Health:
    return Health(**{**HEALTHY.__dict__, **kw})


def test_a_healthy_feasible_configuration_is_ok_and_ranked() -> None:
    v = judge(HEALTHY)
    assert (v.status, v.flags, v.ranked) == (OK, (), True)


def test_each_condition_gives_its_status_and_says_why() -> None:
    cases = {
        ERROR: _h(units_unfinished=1, unfinished_reasons=("stopped: budget",)),
        BROKEN: _h(failures=60.0),
        INFEASIBLE: _h(overflow_turns=12.0, max_context_ratio=1.31),
        DEGRADED: _h(failures=7.0),  # 11.7 % > 10 %
        REFERENCE: _h(baseline=True, attempts=0.0, failures=0.0, overflow_turns=400.0, max_context_ratio=3.7),
    }
    for status, health in cases.items():
        v = judge(health)
        assert v.status == status and not v.ranked, (status, v)
    assert "1 of 6 unit(s) did not finish (stopped: budget)" in judge(cases[ERROR]).reason
    assert "every summarizer call failed (60 of 60)" in judge(cases[BROKEN]).reason
    assert "on 12 turn(s), up to 1.31× the window" in judge(cases[INFEASIBLE]).reason
    assert "12 % of summarizer calls failed (7 of 60; limit 10 %)" in judge(cases[DEGRADED]).reason


def test_thrashing_is_degraded_and_the_limits_are_settable() -> None:
    thrash = _h(attempts=1000.0, messages=1800.0)  # 0.56 calls per message
    v = judge(thrash)
    assert v.status == DEGRADED and "thrashing" in v.flags and "0.56 summarizer calls per message" in v.reason
    assert judge(thrash, Thresholds(max_calls_per_message=0.6)).status == OK
    assert judge(_h(failures=7.0), Thresholds(max_failure_rate=0.2)).status == OK
    assert judge(_h(failures=6.0)).status == OK  # exactly 10 % is within the limit


def test_a_baseline_that_fits_is_a_candidate_and_one_that_does_not_is_a_reference() -> None:
    fits = _h(baseline=True, attempts=0.0, failures=0.0)
    assert judge(fits).status == OK
    ref = judge(_h(baseline=True, attempts=0.0, failures=0.0, overflow_turns=1.0))
    assert ref.status == REFERENCE
    # a truncation told to keep more than the window holds is a reference too, and it is no
    # ceiling: the reason names both kinds without calling every overflowing baseline one
    assert "ceiling" not in ref.reason and "truncation" in ref.reason


def test_no_answerable_asks_is_not_ranked_and_few_conversations_are_flagged() -> None:
    v = judge(_h(answerable=0))
    assert v.status == OK and not v.ranked and "no-answerable" in v.flags
    assert "not enough conversations (3)" in judge(_h(conversations=3)).reason
    assert "unanswerable-heavy" in judge(_h(answerable=30)).flags


def test_the_first_status_that_applies_wins_and_every_condition_is_still_flagged() -> None:
    """error > reference > broken > infeasible > degraded (the module docstring's order)."""
    everything = _h(units_unfinished=1, failures=60.0, overflow_turns=3.0, attempts=60.0)
    assert judge(everything).status == ERROR
    assert {"error", "overflow", "broken"} <= set(judge(everything).flags)
    ref = _h(baseline=True, units_unfinished=1, overflow_turns=3.0)
    assert judge(ref).status == ERROR
    assert judge(_h(baseline=True, overflow_turns=3.0, failures=60.0)).status == REFERENCE
    v = judge(_h(failures=60.0, overflow_turns=3.0))
    assert v.status == BROKEN and {"broken", "overflow"} <= set(v.flags)
    v = judge(_h(failures=7.0, overflow_turns=3.0))
    assert v.status == INFEASIBLE and {"degraded", "overflow"} <= set(v.flags)
    assert judge(_h(attempts=900.0, messages=1800.0)).status == OK  # exactly 0.5 calls per message


def test_unknown_health_is_said_not_assumed_healthy() -> None:
    v = judge(_h(attempts=math.nan, failures=math.nan))
    assert "health-unknown" in v.flags
    # a baseline never summarizes: no summarizer columns is nothing unknown
    assert "health-unknown" not in judge(_h(baseline=True, attempts=math.nan, failures=math.nan)).flags


counts = st.floats(min_value=0, max_value=500, allow_nan=False)


@given(attempts=counts, fail_share=st.floats(0, 1), messages=st.floats(1, 1000), overflow=st.integers(0, 5),
       unfinished=st.integers(0, 2), baseline=st.booleans(), max_rate=st.floats(0, 1),
       max_cpm=st.floats(0.01, 2))
def test_ok_means_feasible_healthy_and_finished(attempts: float, fail_share: float, messages: float,
                                                overflow: int, unfinished: int, baseline: bool,
                                                max_rate: float, max_cpm: float) -> None:
    failures = math.floor(attempts * fail_share)
    h = _h(attempts=float(math.floor(attempts)), failures=float(failures), messages=messages,
           overflow_turns=float(overflow), units_unfinished=unfinished, baseline=baseline)
    v = judge(h, Thresholds(max_failure_rate=max_rate, max_calls_per_message=max_cpm))
    if v.status == OK:
        assert overflow == 0 and unfinished == 0
        assert math.isnan(h.failure_rate) or h.failure_rate <= max_rate
        assert h.calls_per_message <= max_cpm
        assert not (h.attempts >= 1 and h.failures >= h.attempts)
    else:
        assert not v.ranked
    assert len(v.flags) == len(v.reasons)
