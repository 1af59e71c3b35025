"""The candidate pool's shortcuts give what their plain definitions give (issue #20).

`_new_pieces` makes no piece for a sentence said again on a day it was already said in the
span (`_distinct` would drop it), and `_distinct` finds duplicates with a set of normalized
texts per key tuple instead of scanning every kept body with the same keys. A long span
(token-ratio, budget-rule-based: ~1,750 messages) repeats sentences hundreds of times. A
message's day is cached by the date part of its timestamp.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest, dates, salience
from rollsum.summarizers.base import SummaryDraft
from rollsum.summarizers.extractive import (
    TOOL_ERROR_BONUS,
    _distinct,
    _norm,
    _Ordinals,
    _Piece,
    _PrefixCosts,
    _Span,
    _text,
    split_sentences,
)
from rollsum.summarizers.tools import format_tool_summary, summarize_tool_result
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord


def scan_distinct(pieces: list[_Piece]) -> list[_Piece]:
    """The definition: a piece is kept unless it names nothing specific (and has no bonus) or
    an earlier kept piece has the same key tuple and the same normalized text."""
    out: list[_Piece] = []
    for p in pieces:
        if not p.text.content and p.bonus <= 0.0:
            continue
        if any(q.text.keys == p.text.keys and _norm(q.text.body) == _norm(p.text.body) for q in out):
            continue
        out.append(p)
    return out


_BODIES = ["Melanie paints in Sweden.", "melanie PAINTS in sweden", "Melanie paints, in Sweden!",
           "MELANIE paints in Sweden.", "Melanie paints Sweden.", "the the the", "Ticket PAY-4821 is open.",
           "ticket pay-4821 is open", "Ticket PAY 4821 is open.", "It is fine.", "Sweden Melanie paints.",
           "Melanie paints in Sweden?", "Melanie paints at Sweden."]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_BODIES), st.sampled_from([0.0, 1.5])), max_size=25))
def test_distinct_keeps_what_scanning_the_kept_pieces_keeps(plan: list[tuple[str, float]]) -> None:
    # bodies that differ only by case or punctuation, some with the same keys and some not
    # ("PAINTS" is a name where "paints" is a word), and some that name nothing
    texts = {b: _text(b, salience.features(b), len(b)) for b in _BODIES}
    pieces = [_Piece(texts[b], "Caroline", "", -1 - i, bonus) for i, (b, bonus) in enumerate(plan)]
    kept, key_tuples = _distinct(pieces, _norm)
    expected = scan_distinct(pieces)
    assert [id(p) for p in kept] == [id(p) for p in expected]
    assert set(key_tuples) == {p.text.keys for p in expected}


def test_distinct_tells_same_keys_apart_by_their_words() -> None:
    # "in" and "at" are function words: the same key tuple, different words. Both are kept
    # once each, whichever came first
    a = _text("Melanie paints in Sweden.", salience.features("Melanie paints in Sweden."), 5)
    b = _text("Melanie paints at Sweden.", salience.features("Melanie paints at Sweden."), 5)
    assert a.keys == b.keys
    pieces = [_Piece(t, "", "", -1 - i) for i, t in enumerate([a, b, b, a])]
    kept, key_tuples = _distinct(pieces, _norm)
    assert [p.group for p in kept] == [-1, -2]
    assert list(key_tuples) == [a.keys]


class _EveryPiece(ExtractiveSummarizer):
    """The definition `_new_pieces` shortcuts: a piece for every sentence, repeats included, and
    every piece's day for the order check."""

    def _new_pieces(self, messages: Sequence[Message], speakers: set[str]) -> _Span:
        out: list[_Piece] = []
        for i, m in enumerate(messages):
            day, anchor = self._day(m.created_at)
            if m.role == "tool":
                ts = summarize_tool_result(m)
                out.append(_Piece(self._tool_text(format_tool_summary(ts), " | ".join(ts.key_facts)), "", day, -1 - i,
                                  TOOL_ERROR_BONUS if ts.status == "error" else 0.0, tool=True))
                continue
            speaker = (m.name or "").strip()
            if speaker:
                speakers.add(speaker)
            else:
                speaker = "User" if m.role == "user" else "Assistant"
            for sentence in split_sentences(m.content):
                hit = self._sentence(sentence, anchor)
                self._features[hit.body] = hit
                out.append(_Piece(hit, speaker, day, -1 - i))
        return _Span(out, [p.text.keys for p in out], [p.day for p in out])


_SAID = ["Yesterday Omar moved the INC-2093 review to Tuesday.", "We booked the cabin in Tromsø for March.",
         "Ok. Thanks!", "Two weeks ago build 42 failed on src/app.py:12.", "yesterday omar moved the INC-2093 review "
         "to tuesday", "The budget is 1,200 euros."]
"""Repeated sentences, one with a relative date (its text depends on the day) and a copy of it
that differs only by case and punctuation."""


def _message(i: int, kind: int, day: int) -> Message:
    stamp = (date(2024, 3, 1) + timedelta(days=day)).isoformat() + f"T09:{i % 60:02d}:00Z"
    if kind >= len(_SAID):
        return Message("tool", "make: ruff: No such file or directory\nError 127", id=f"m{i}", name="execute_bash",
                       meta={"command": "make lint"}, created_at=stamp)
    return Message("user" if i % 2 else "assistant", f"{_SAID[kind]} {_SAID[(kind + i) % len(_SAID)]}", id=f"m{i}",
                   name=("Priya", None)[i % 2], created_at=stamp)


def _chain(s: ExtractiveSummarizer, messages: list[Message], span: int, budget: int) -> list[SummaryDraft]:
    previous: SummaryRecord | None = None
    out = []
    for start in range(0, len(messages), span):
        draft = s.summarize(SummaryRequest("c", messages[start:start + span], previous=previous, max_tokens=budget))
        previous = SummaryRecord(id=f"s{start}", conversation_id="c", text=draft.text, seq=start,
                                 messages_covered=start + span)
        out.append(draft)
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SAID)), st.integers(0, 4)), min_size=2, max_size=50),
       st.integers(2, 25), st.sampled_from([40, 120, 400]), st.sampled_from(["select", "append"]))
def test_a_span_that_repeats_sentences_summarizes_as_one_with_a_piece_for_each(
        plan: list[tuple[int, int]], span: int, budget: int, merge: Literal["select", "append"]) -> None:
    # days in any order: the pieces are sorted by day when they are out of order, so which copy
    # of a repeated sentence survives depends on its day
    messages = [_message(i, kind, day) for i, (kind, day) in enumerate(plan)]
    fast = _chain(ExtractiveSummarizer(merge=merge), messages, span, budget)
    plain = _chain(_EveryPiece(merge=merge), messages, span, budget)
    assert fast == plain


def test_a_repeat_on_another_day_is_its_own_piece_and_the_order_sees_every_day() -> None:
    booked, budget = "We booked the cabin in Tromsø for March.", "The budget is 1,200 euros."

    def said(i: int, text: str, day: int) -> Message:
        return Message("user", text, id=f"m{i}", created_at=f"2024-03-0{day}T09:0{i}:00Z")

    # said twice on 3 March (one piece), then on 1 March (its own piece: it sorts first), then
    # again on 3 March (no piece, but its day makes the span's days out of order)
    messages = [said(0, f"{booked} {booked}", 3), said(1, booked, 1), said(2, budget, 1), said(3, booked, 3)]
    new = ExtractiveSummarizer()._new_pieces(messages, set())
    assert [(p.text.body, p.day, p.group) for p in new.pieces] == [
        (booked, "3 March 2024", -1), (booked, "1 March 2024", -2), (budget, "1 March 2024", -3)]
    assert new.day_runs == ["3 March 2024", "1 March 2024", "3 March 2024"]
    b, c = new.pieces[0].text.keys, new.pieces[2].text.keys
    assert b != c
    assert new.docs == [b, b, b, c, b]  # every sentence is a document, repeats included


_STAMP = st.tuples(
    st.sampled_from(["2024-03-04", "2024-03-05", "2024-02-30", "2023-12-31", " 2024-03-04", " 2024-03-05",
                     "\t2024-03-05", "2024-W10-1", "2024-W10-2", "2024-064", "2024-065", "20240304", "20240305",
                     "2024-3-04", "abcd-ef-gh", "2024-03-0", "2024-03-1", "", "-2024-03-0"]),
    st.lists(st.sampled_from(["T", "09:03:22", "Z", "+14:00", "-05:00", " ", "x", "99:99", ".123", "1", "4",
                              "T23:59:59.999999", "\n", "-"]), max_size=4).map("".join)).map("".join)
"""Extended ISO dates with any time after them (valid or not), and timestamps whose first ten
characters are not their date: a leading space, week, ordinal and basic forms, broken ones."""


@settings(max_examples=400, deadline=None)
@given(st.lists(_STAMP, min_size=1, max_size=20))
def test_a_timestamps_day_is_what_parse_day_gives_with_the_cache_warm(stamps: list[str]) -> None:
    s = ExtractiveSummarizer()
    for stamp in stamps:  # one summarizer: each stamp meets the entries of the ones before it
        d = dates.parse_day(stamp)
        assert s._day(stamp) == (("", None) if d is None else (dates.format_date(d), d)), stamp


def test_a_line_prefix_costs_what_its_text_counts() -> None:
    for counter in (HeuristicCounter(), HeuristicCounter(chars_per_token=1.0)):
        costs = _PrefixCosts(counter)
        for _ in range(2):  # counted when first asked, then kept
            assert costs["8 May 2023", "Caroline"] == counter.count("[8 May 2023] Caroline: ")
            assert costs["8 May 2023", ""] == counter.count("[8 May 2023] ")
            assert costs["", "Dr. Amy Ellis"] == counter.count("Dr. Amy Ellis: ")
            assert costs["", ""] == 0


def test_a_days_sort_key_is_its_ordinal() -> None:
    ordinals = _Ordinals()
    for _ in range(2):
        assert ordinals["8 May 2023"] == date(2023, 5, 8).toordinal()
        assert ordinals["29 February 2024"] == date(2024, 2, 29).toordinal()
        assert ordinals[""] == 0


def test_the_prefix_costs_follow_the_summarizers_counter() -> None:
    # lines on two days carry their day: prefixes are counted, by the counter in use
    messages = [Message("user", f"We booked the cabin in Tromso for trip {i}.", id=f"m{i}", name="Caroline",
                        created_at=f"2024-03-0{1 + i % 2}T09:00:00Z") for i in range(4)]
    s = ExtractiveSummarizer()
    s.summarize(SummaryRequest("c", messages, max_tokens=400))
    assert s._prefix_costs[("1 March 2024", "Caroline")] == s.counter.count("[1 March 2024] Caroline: ")
    s.counter = HeuristicCounter(chars_per_token=1.0)
    s.summarize(SummaryRequest("c", messages, max_tokens=400))
    assert s._prefix_costs.counter is s.counter
    assert s._prefix_costs[("1 March 2024", "Caroline")] == s.counter.count("[1 March 2024] Caroline: ")
