from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import dates
from rollsum.summarizers.dates import anchor_dates, format_date, parse_day, parse_formatted

MONDAY = date(2023, 5, 8)  # a Monday


@pytest.mark.parametrize(("text", "expected"), [
    ("I went yesterday.", "I went yesterday (7 May 2023)."),
    ("Yesterday morning was rough.", "Yesterday morning (7 May 2023) was rough."),
    ("We talked last night.", "We talked last night (7 May 2023)."),
    ("the day before yesterday", "the day before yesterday (6 May 2023)"),
    ("See you tomorrow!", "See you tomorrow (9 May 2023)!"),
    ("the day after tomorrow", "the day after tomorrow (10 May 2023)"),
    ("two days ago", "two days ago (6 May 2023)"),
    ("3 weeks ago", "3 weeks ago (17 April 2023)"),
    ("a month ago", "a month ago (April 2023)"),
    ("ten years ago", "ten years ago (2013)"),
    ("in 2 weeks", "in 2 weeks (22 May 2023)"),
    ("in a few days", "in a few days (a few days after 8 May 2023)"),
    ("a couple of weeks ago", "a couple of weeks ago (a couple of weeks before 8 May 2023)"),
    ("last Saturday", "last Saturday (6 May 2023)"),
    ("last Monday", "last Monday (1 May 2023)"),  # strictly before, a week back on a Monday
    ("next Monday", "next Monday (15 May 2023)"),  # strictly after
    ("next Saturday", "next Saturday (13 May 2023)"),
    ("this Friday", "this Friday (12 May 2023)"),
    ("last Fri", "last Fri (5 May 2023)"),
    ("last week", "last week (the week before 8 May 2023)"),
    ("next week", "next week (the week after 8 May 2023)"),
    ("last weekend", "last weekend (6–7 May 2023)"),
    ("this weekend", "this weekend (13–14 May 2023)"),
    ("next weekend", "next weekend (20–21 May 2023)"),
    ("last month", "last month (April 2023)"),
    ("next month", "next month (June 2023)"),
    ("last year", "last year (2022)"),
    ("this year", "this year (2023)"),
])
def test_relative_expressions_are_anchored(text: str, expected: str) -> None:
    assert anchor_dates(text, MONDAY)[0] == expected


@pytest.mark.parametrize("text", [
    "I went bowling today.", "Tonight we cook.", "It happened recently.", "the other day",
    "On Friday we met.", "last summer", "the past year was hard", "in a way", "Last but not least",
    "I'll see you next time.",
])
def test_unreliable_or_same_day_expressions_are_left_alone(text: str) -> None:
    assert anchor_dates(text, MONDAY) == (text, ())


def test_calendar_boundaries() -> None:
    new_year = date(2024, 1, 1)  # a Monday
    assert anchor_dates("yesterday", new_year)[0] == "yesterday (31 December 2023)"
    assert anchor_dates("last month", new_year)[0] == "last month (December 2023)"
    assert anchor_dates("last weekend", new_year)[0] == "last weekend (30–31 December 2023)"
    assert anchor_dates("this weekend", date(2023, 9, 29))[0] == "this weekend (30 September–1 October 2023)"
    assert anchor_dates("last weekend", date(2023, 5, 7))[0] == "last weekend (29–30 April 2023)"  # a Sunday
    assert anchor_dates("this weekend", date(2023, 5, 7))[0] == "this weekend (6–7 May 2023)"


def test_without_an_anchor_nothing_changes_and_anchoring_is_idempotent() -> None:
    assert anchor_dates("I went yesterday.", None) == ("I went yesterday.", ())
    once, found = anchor_dates("I went yesterday and next Friday.", MONDAY)
    assert found == ("7 May 2023", "12 May 2023")
    assert anchor_dates(once, MONDAY) == (once, ())


@pytest.mark.parametrize(("stamp", "day"), [
    ("2023-05-08T13:56:00", date(2023, 5, 8)), ("2024-03-04T09:05:00Z", date(2024, 3, 4)),
    ("2023-05-08T23:30:00+02:00", date(2023, 5, 8)),  # the speaker's wall-clock day, not UTC
    ("2023-05-08", date(2023, 5, 8)), ("not a date", None), ("", None), (None, None),
])
def test_parse_day(stamp: str | None, day: date | None) -> None:
    assert parse_day(stamp) == day


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31)))
def test_format_and_parse_round_trip_and_yesterday_is_the_day_before(d: date) -> None:
    assert parse_formatted(format_date(d)) == d
    _, found = anchor_dates("yesterday", d)
    assert found == (format_date(d - timedelta(days=1)),)
    last = parse_formatted(anchor_dates("last Sunday", d)[1][0])
    assert last is not None and last.weekday() == 6 and 1 <= (d - last).days <= 7
    nxt = parse_formatted(anchor_dates("next Sunday", d)[1][0])
    assert nxt is not None and nxt.weekday() == 6 and 1 <= (nxt - d).days <= 7


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*dates._TRIGGERS, *dates._UNITS, "ago", " in ", "in ", "x", " ", "las", "t ", "in"]),
                max_size=8).map("".join))
def test_the_relative_date_pre_check_is_its_trigger_and_unit_lists(low: str) -> None:
    """`_maybe_relative` is written out for speed: it must say what the trigger and unit lists say
    (the lists are sampled, so a word added to one but not to the function fails here)."""
    expected = (any(t in low for t in dates._TRIGGERS)
                or ((" in " in low or low.startswith("in ")) and any(u in low for u in dates._UNITS)))
    assert dates._maybe_relative(low) == expected
