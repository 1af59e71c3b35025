"""The counts behind the rate limits and the backoff, and their saved form (`rollsum.cadence`)."""

from __future__ import annotations

import pytest

from rollsum.cadence import Cadence, backoff


def _busy() -> Cadence:
    return Cadence(total_added=50, since_summary=7, since_attempt=3, attempts=4, failures=2, retry_at=58,
                   model_failures=1, model_retry_at=52, guard_at=900, total_evicted=11, evicted_since=2,
                   min_tokens_since=1234)


def test_what_is_saved_is_read_back_by_an_engine_that_knows_only_the_message_count() -> None:
    saved = _busy().saved()
    assert saved["last_attempt_at"] == 47 and saved["summary_at"] == 43  # absolute message counts
    later = Cadence(total_added=60)  # ten more messages arrived before the next engine opened it
    later.restore(saved)
    assert (later.since_attempt, later.since_summary) == (13, 17)
    assert later.saved() == {**saved, "last_attempt_at": 47, "summary_at": 43}


def test_the_cheap_key_changes_exactly_when_the_saved_form_does() -> None:
    c = _busy()
    key, saved = c.key(), c.saved()
    c.total_added += 1
    c.since_summary += 1
    c.since_attempt = (c.since_attempt or 0) + 1  # a message: nothing to save
    assert c.key() == key and c.saved() == saved
    c.attempted()
    assert c.key() != key and c.saved() != saved


def test_a_damaged_row_changes_nothing() -> None:
    c = Cadence(total_added=10, attempts=1)
    with pytest.raises(ValueError, match="failures"):
        c.restore({**_busy().saved(), "failures": -1})
    assert c == Cadence(total_added=10, attempts=1)


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff(k, 2, 64) for k in (1, 2, 3, 6, 7, 40)] == [2, 4, 8, 64, 64, 64]
    assert backoff(1, 10, 3) == 10  # the cap is never below the cooldown
    c = Cadence(total_added=20)
    c.failed(2, 64)
    c.failed(2, 64)
    assert (c.failures, c.retry_at, c.in_backoff()) == (2, 24, True)
    assert not Cadence(total_added=20, attempts=2).rate_allows(10)
    assert Cadence(total_added=20, attempts=1).rate_allows(10)
    assert Cadence(total_added=0, attempts=99).rate_allows(0)  # 0: no cap


class _Kept:
    """A store's cadence half, as `cadence.save`/`cadence.load` use it."""

    def __init__(self, saved: dict[str, object] | None = None) -> None:
        self.saved = saved

    def save_cadence(self, conversation_id: str, saved: dict[str, object]) -> None:
        self.saved = dict(saved)

    def cadence(self, conversation_id: str) -> dict[str, object] | None:
        return self.saved


def test_save_then_load_gives_the_same_counts_and_key() -> None:
    from rollsum import cadence

    c, store = _busy(), _Kept()
    key = cadence.save(store, "c", c)  # type: ignore[arg-type]
    fresh = Cadence(total_added=c.total_added)
    assert cadence.load(store, "c", fresh) == key == fresh.key()  # type: ignore[arg-type]


def test_saving_with_the_key_just_compared_saves_what_saving_without_it_does() -> None:
    """The engine passes the key it compared to `cadence.save` (computed once); what is kept
    and returned is what computing it inside gives, for a busy cadence and a fresh one."""
    from rollsum import cadence

    for c in (_busy(), Cadence()):
        plain, passed = _Kept(), _Kept()
        assert cadence.save(passed, "c", c, c.key()) == cadence.save(plain, "c", c)  # type: ignore[arg-type]
        assert passed.saved == plain.saved == c.saved(c.key())


def test_a_damaged_saved_cadence_loads_nothing() -> None:
    """An unreadable row changes none of the counts the rows implied and reports no key."""
    from rollsum import cadence

    c = Cadence(total_added=7, attempts=2)
    before = c.key()
    assert cadence.load(_Kept({"attempts": -1}), "c", c) is None  # type: ignore[arg-type]
    assert c.key() == before


def test_observed_keeps_the_lowest_context_since_the_summary() -> None:
    c = Cadence()
    assert [c.observed(t) for t in (500, 300, 400, 300)] == [True, True, False, False]  # True: save again
    assert c.min_tokens_since == 300
