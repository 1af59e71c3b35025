"""Relative dates anchored to the day a message was written.

"I went bowling yesterday" is useless in a summary read weeks later: by then "yesterday" means
another day. The summary keeps the speaker's words and adds the calendar date they stood for,
computed from the message's own timestamp:

    yesterday          -> yesterday (7 May 2023)
    last Saturday      -> last Saturday (6 May 2023)
    two weeks ago      -> two weeks ago (24 April 2023)
    last week          -> last week (the week before 8 May 2023)
    last weekend       -> last weekend (6–7 May 2023)
    next month         -> next month (June 2023)
    a few days ago     -> a few days ago (a few days before 8 May 2023)

Conventions (deterministic, documented in docs/summarizers.md):

- The anchor is the *wall-clock date written in the timestamp* (``2023-05-08T23:30:00+02:00``
  is 8 May): the speaker's day, not a converted UTC day.
- ``last <weekday>`` is the latest such day strictly before the anchor; ``next <weekday>`` the
  first strictly after; ``this <weekday>`` / ``coming <weekday>`` the first on or after.
- ``this weekend`` is the weekend of the anchor's week (or the current one on a Saturday or
  Sunday); ``last weekend`` the one before it; ``next weekend`` the one after.
- Vague quantities (``a few``, ``several``, ``a couple of``) are anchored as a phrase
  ("a few days before 8 May 2023"), never turned into a made-up exact date.
- Same-day expressions ("today", "tonight", "this morning") are left alone: every summary line
  already carries the day it was said on.
- Expressions without a reliable reading ("recently", "the other day", bare "Friday", "last
  summer") and messages without a parseable timestamp are left as they are.
- An expression already followed by a parenthesis is left alone, so anchoring is idempotent.

Dates are written "7 May 2023" (day, English month name, year; no locale dependence): the form
people and models read without ambiguity, unlike 05/07/2023.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_ABBR = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
                 "sat": 5, "sun": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_VAGUE = ("a couple of", "a few", "couple of", "few", "several")
_QUANTITY = (r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|"
             r"eight|nine|ten|eleven|twelve)")
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PART = r"(?: morning| afternoon| evening| night)?"

# One alternation, tried left to right: longer phrases first so "the day before yesterday" is
# not read as "yesterday".
_RELATIVE_RE = re.compile(
    r"\b(?=[ytlnpcai\d])(?:"
    r"(?P<before_yesterday>the day before yesterday)"
    r"|(?P<after_tomorrow>the day after tomorrow)"
    rf"|(?P<yesterday>yesterday{_PART}|last night)"
    r"|(?P<today>today|tonight|this (?:morning|afternoon|evening))"
    rf"|(?P<tomorrow>tomorrow{_PART})"
    rf"|(?P<ago>{_QUANTITY} {_UNIT} ago)"
    rf"|(?P<in>in {_QUANTITY.replace('?P<n>', '?P<n2>')} {_UNIT.replace('?P<unit>', '?P<unit2>')})"
    r"|(?P<wd>(?P<wd_rel>last|next|this coming|this|coming|past) "
    r"(?P<wd_day>monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?)"
    r"|(?P<period>(?P<p_rel>last|next|this|past) (?P<p_unit>weekend|week|month|year))"
    r")\b",
    re.IGNORECASE,
)
# Cheap pre-check (substring tests run in C): the regex above runs only on text that has one of
# these, or " in " together with a unit of time.
_TRIGGERS = ("yesterday", "today", "tonight", "tomorrow", " ago", "last ", "next ", "this ", "coming ",
             "past ")
_UNITS = ("day", "week", "month", "year")


def _maybe_relative(low: str) -> bool:
    # written out: ten substring scans in C, without a generator's frame per trigger
    return ("yesterday" in low or "today" in low or "tonight" in low or "tomorrow" in low or " ago" in low
            or "last " in low or "next " in low or "this " in low or "coming " in low or "past " in low
            or ((" in " in low or low.startswith("in ")) and ("day" in low or "week" in low or "month" in low
                                                            or "year" in low)))


def may_hold_relative(text: str) -> bool:
    """False when `anchor_dates` certainly leaves `text` unchanged, whatever the anchor (a
    cheap pre-check: True is only a maybe, see `holds_relative`)."""
    return _maybe_relative(text.lower())


_PROBE_DAY = date(2000, 1, 3)


def holds_relative(text: str) -> bool:
    """Whether `anchor_dates` changes `text` (for one anchor, then for every anchor: which
    expressions it anchors depends on the text alone, only what it writes depends on the day).

    Callers cache per day only the sentences for which this is True: "this path", "the next
    step", "in the last run" pass `may_hold_relative` but anchor nothing.
    """
    return _maybe_relative(text.lower()) and anchor_dates(text, _PROBE_DAY)[0] != text


def format_date(d: date) -> str:
    return f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}"


def format_month(year: int, month: int) -> str:
    return f"{MONTH_NAMES[month - 1]} {year}"


def parse_day(timestamp: str | None) -> date | None:
    """The calendar date written in an ISO-8601 timestamp, or None when there is none."""
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.strip()).date()
    except ValueError:
        try:
            return date.fromisoformat(timestamp.strip()[:10])
        except ValueError:
            return None


_MONTH_INDEX = {m: i + 1 for i, m in enumerate(MONTH_NAMES)}


def parse_formatted(text: str) -> date | None:
    """The date of a `format_date` string ("7 May 2023"), or None."""
    parts = text.split()
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        return None
    month = _MONTH_INDEX.get(parts[1])
    if month is None:
        return None
    try:
        return date(int(parts[2]), month, int(parts[0]))
    except ValueError:
        return None


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    k = year * 12 + (month - 1) + delta
    return k // 12, k % 12 + 1


def _weekend_of(d: date) -> date:
    """The Saturday of the weekend belonging to d's Monday-to-Sunday week."""
    return d + timedelta(days=5 - d.weekday())


def _format_weekend(sat: date) -> str:
    sun = sat + timedelta(days=1)
    if sat.month == sun.month:
        return f"{sat.day}–{sun.day} {MONTH_NAMES[sun.month - 1]} {sun.year}"
    if sat.year == sun.year:
        return f"{sat.day} {MONTH_NAMES[sat.month - 1]}–{format_date(sun)}"
    return f"{format_date(sat)}–{format_date(sun)}"


def _quantity(raw: str) -> int | None:
    """The number in "two weeks ago"; None for vague quantities ("a few")."""
    low = raw.lower()
    if low in _VAGUE:
        return None
    if low.isdigit():
        return int(low)
    return _NUMBERS.get(low)


def _shift(anchor: date, n: int, unit: str, sign: int) -> str:
    if unit == "day":
        return format_date(anchor + timedelta(days=sign * n))
    if unit == "week":
        return format_date(anchor + timedelta(days=sign * 7 * n))
    if unit == "month":
        y, m = _add_months(anchor.year, anchor.month, sign * n)
        return format_month(y, m)
    return str(anchor.year + sign * n)


def _resolve(m: re.Match[str], anchor: date) -> str | None:
    """The anchor text for one matched expression (without parentheses), or None to leave it."""
    kind = m.lastgroup
    if kind == "before_yesterday":
        return format_date(anchor - timedelta(days=2))
    if kind == "after_tomorrow":
        return format_date(anchor + timedelta(days=2))
    if kind == "yesterday":
        return format_date(anchor - timedelta(days=1))
    if kind == "today":
        return None  # the day itself: every summary line already carries its day
    if kind == "tomorrow":
        return format_date(anchor + timedelta(days=1))
    if kind in ("ago", "in"):
        raw, unit = (m.group("n"), m.group("unit")) if kind == "ago" else (m.group("n2"), m.group("unit2"))
        unit = unit.lower()
        sign = -1 if kind == "ago" else 1
        n = _quantity(raw)
        if n is None:
            return f"{raw.lower()} {unit}s {'before' if sign < 0 else 'after'} {format_date(anchor)}"
        if n == 0 or n > 200:
            return None
        return _shift(anchor, n, unit, sign)
    if kind == "wd":
        rel = m.group("wd_rel").lower()
        day = m.group("wd_day").lower()
        target = _WEEKDAY_ABBR[day] if day in _WEEKDAY_ABBR else _WEEKDAYS.index(day)
        delta = (target - anchor.weekday()) % 7
        if rel in ("last", "past"):
            back = (anchor.weekday() - target) % 7 or 7
            return format_date(anchor - timedelta(days=back))
        if rel == "next":
            return format_date(anchor + timedelta(days=delta or 7))
        return format_date(anchor + timedelta(days=delta))
    if kind == "period":
        rel = m.group("p_rel").lower()
        unit = m.group("p_unit").lower()
        if unit == "week":
            word = {"last": "before", "past": "before", "next": "after", "this": "of"}[rel]
            return f"the week {word} {format_date(anchor)}"
        if unit == "weekend":
            sat = anchor - timedelta(days=1) if anchor.weekday() == 6 else _weekend_of(anchor)
            if rel in ("last", "past"):
                sat -= timedelta(days=7)
            elif rel == "next":
                sat += timedelta(days=7)
            return _format_weekend(sat)
        if rel == "past":
            return None  # "the past month/year" is a stretch of time, not a calendar period
        step = {"last": -1, "this": 0, "next": 1}[rel]
        if unit == "month":
            y, mo = _add_months(anchor.year, anchor.month, step)
            return format_month(y, mo)
        return str(anchor.year + step)
    return None


def anchor_dates(text: str, anchor: date | None) -> tuple[str, tuple[str, ...]]:
    """`text` with each relative date followed by its calendar reading, and those readings.

    Returns the text unchanged (and no readings) without an anchor or without a relative date.
    """
    if anchor is None or not _maybe_relative(text.lower()):
        return text, ()
    out: list[str] = []
    found: list[str] = []
    pos = 0
    for m in _RELATIVE_RE.finditer(text):
        end = m.end()
        if text.startswith(" (", end) or text.startswith("(", end):
            continue
        resolved = _resolve(m, anchor)
        if resolved is None:
            continue
        out.append(text[pos:end])
        out.append(f" ({resolved})")
        found.append(resolved)
        pos = end
    if not found:
        return text, ()
    out.append(text[pos:])
    return "".join(out), tuple(found)
