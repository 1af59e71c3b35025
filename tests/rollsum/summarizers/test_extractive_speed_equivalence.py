"""The replay hot path's shortcuts give what the plain definitions give (issue #20).

`split_sentences` splits lines with a string split before it looks for sentence ends, and the
summarizer caches each sentence's processing and each previous line's parse. These tests pin
them to the plain one-pass definitions, so a shortcut that changes a summary fails here rather
than in a nightly gate.
"""

from __future__ import annotations

import re
import string
from itertools import groupby

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers.extractive import (
    _ABBREVIATION_ENDS,
    _ABBREVIATION_RE,
    _ABBREVIATION_SPLIT_RE,
    _DAY_RE,
    _HEADER_LINE_RE,
    _ODD_DOT_END_RE,
    _ODD_MARK_END_RE,
    TOOL_ERROR_BONUS,
    ExtractiveSummarizer,
    split_sentences,
)

_ONE_REGEX = re.compile(r"(?<=[.!?…])\s+(?=[\"'“‘(\[]?[A-Z0-9\[])|\s*\n+\s*")


def one_regex_split(text: str) -> list[str]:
    """The definition: one regex over the whole text (sentence ends or line breaks), unless
    the text has no line break and no end punctuation followed by a space."""
    if not ("\n" in text or ". " in text or "! " in text or "? " in text or "… " in text):
        return [text.strip()] if text.strip() else []
    out: list[str] = []
    for piece in _ONE_REGEX.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREVIATION_RE.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


_ALPHABET = st.sampled_from([*"ab AZ09.!?…\n\t\r\"'“‘([:\x00", "Dr.", "J.", " \n ", "\n\n", "\u2028", "\xa0",
                             "approx.", "Prof.", "vs.", "etc.", "No.", "Fig.", "Mrs.", "xMr.", "_St.", "é.", "ts.",
                             "or.", ". ", "? ", "! ", "… "])
"""Abbreviations of every length, and ones glued to a word (no word boundary before them:
`split_sentences` searches only a sentence's last characters for one)."""


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_split_sentences_equals_the_one_regex_definition(text: str) -> None:
    assert split_sentences(text) == one_regex_split(text)


def test_split_sentences_on_the_cases_that_differ_between_lines_and_whole_text() -> None:
    # whitespace around a line break, a break after end punctuation before lower case, an
    # abbreviation at a line's end (joined with the next line), a tab after a full stop
    for text in ("A.  \n  next one", "Ends here.\nlower start", "Ask Dr.\nSmith today", "One.\tTwo", "x\r\ny. Z",
                 # every abbreviation's last letter, capitals at both ends of the alphabet (the
                 # string test before the regex must let each through)
                 "Plan Z. Then go", "Plan A. Then go", "Ask Mr. Li", "Ask Mrs. Li", "Ask Ms. Li", "Ask Dr. Li",
                 "Main St. Then", "Li Jr. Then", "Li Sr. Then", "Ask Prof. Li", "A vs. B", "Pens, etc. Then",
                 "No. Five", "See Fig. Two", "Some approx. Two", "Ask xMr. Li", "Ask (Dr. Li", "Ask é. Li",
                 # each end mark alone, and with a full stop (a text whose only mark is "." is
                 # split by a pattern of its own)
                 "Why? Because", "Stop! Now", "Wait… Then", "Done. Why? Because", "Done. Stop! Now",
                 "Done. Wait… Then", "Done. Next one",
                 # one line and no abbreviation: split by substitution, every mark, the text's
                 # own ends stripped; an abbreviation or a NUL anywhere takes the loop
                 " Done.  Why?\tBecause!  Wait… Then. ", "Ask Dr. Li. Then", "Wait! Dr. Li. Then",
                 "Done. Plan A. Then", "Done.\x00 Next", "A\x00B. Next", "Pens, etc. Then. Next",
                 "Done. (See Fig. Two) Then", "Done. [Sr. Li] Then", "\u2028Done.\u2028Next\u2028"):
        assert split_sentences(text) == one_regex_split(text), text


def test_the_abbreviation_look_behinds_are_the_abbreviation_pattern() -> None:
    """`split_sentences` takes its loop only where `_ABBREVIATION_SPLIT_RE` finds an
    abbreviation before a sentence end (a NUL): it must find one wherever `_ABBREVIATION_RE`
    does, for every word it knows and every capital, after a word boundary and not inside a
    word."""
    words = [*_ABBREVIATION_ENDS, *(f"{c}." for c in string.ascii_uppercase)]
    assert _ABBREVIATION_RE.pattern == (r"(?:\b(?:" + "|".join(w[:-1] for w in _ABBREVIATION_ENDS)
                                        + r")\.|\b[A-Z]\.)$")
    for word in words:
        for before in ("", "x", " ", "é", "(", "\x00"):
            piece = before + word
            expected = _ABBREVIATION_RE.search(piece) is not None
            assert (_ABBREVIATION_SPLIT_RE.search(f"Then {piece}\x00Next") is not None) == expected, piece
            assert (_ABBREVIATION_SPLIT_RE.search(f"{piece}\x00Next") is not None) == expected, piece
            # the string-replace path's check: the same abbreviations before "<space>Next"
            for odd in (_ODD_DOT_END_RE, _ODD_MARK_END_RE):
                assert (odd.search(f"Then {piece} Next") is not None) == expected, piece
                assert (odd.search(f"{piece} Next") is not None) == expected, piece


def test_the_string_replace_path_is_taken_only_where_each_mark_and_space_is_an_end() -> None:
    """`_ODD_DOT_END_RE` / `_ODD_MARK_END_RE` must find every place where "<mark> " is not
    exactly a sentence end (other whitespace, two spaces, no sentence start after the space,
    the text's end), and nothing in plain text (else the fast path is never taken)."""
    for odd, marks in ((_ODD_DOT_END_RE, "."), (_ODD_MARK_END_RE, ".!?…")):
        for mark in marks:
            for after in ("\t", "\xa0", "\u2028", "\u3000", "\x1c", "  ", " a", " é", " ,", " (a", " \"a", " .",
                          " \x00"):
                assert odd.search(f"One{mark}{after}two") is not None, (mark, after)
            assert odd.search(f"One{mark} ") is not None, mark
            for after in (" A", " Z", " 0", " 9", " [", " (A", " \"A", " 'A", " “A", " ‘A", " [a", "A", "a", "\x00"):
                assert odd.search(f"One{mark}{after}") is None, (mark, after)
        assert odd.search("Calling read_file(path='src/app.py'). Then done") is None
    assert _ODD_DOT_END_RE.search("Why?\tBecause") is None  # only "." is the dot pattern's mark


def test_the_span_pieces_made_field_by_field_equal_the_class_call() -> None:
    """`_new_pieces` makes a said sentence's piece without calling `_Piece` (it sets the
    fields itself): each piece must equal the class call, every field set (an unset slot
    raises in the comparison) and at its default."""
    from rollsum.summarizers.extractive import _Piece
    from rollsum.types import Message

    s = ExtractiveSummarizer()
    messages = [Message("user", "I met Priya in Lisbon. We booked the 9:40 ferry to Porto!", name="Caroline",
                        created_at="2023-05-08T10:00:00"),
                Message("assistant", "Noted the ferry. Calling read_file(path='src/app.py').")]
    pieces = s._new_pieces(messages, set()).pieces
    assert len(pieces) == 4
    for p in pieces:
        assert p == _Piece(p.text, p.speaker, p.day, p.group)
        assert type(p) is _Piece


def test_a_repeated_sentence_with_a_relative_date_is_anchored_to_each_day_it_is_said() -> None:
    """The per-sentence cache must not reuse one day's anchor for another day."""
    from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
    from rollsum.types import Message

    said = "I went bowling with Priya in Lisbon yesterday and scored 212 points."
    s = ExtractiveSummarizer()
    first = s.summarize(SummaryRequest("c", [Message("user", said, created_at="2023-05-08T10:00:00")]))
    second = s.summarize(SummaryRequest("c", [Message("user", said, created_at="2023-05-20T10:00:00")]))
    assert "yesterday (7 May 2023)" in first.text
    assert "yesterday (19 May 2023)" in second.text


def test_a_previous_summary_reads_back_the_same_with_warm_caches_as_with_cold_ones() -> None:
    """Previous lines are parsed once and cached by their text, sentences by theirs: a
    summarizer whose caches have seen these lines (under another conversation, so the
    statistics are rebuilt alike) gives what a fresh one gives."""
    from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
    from rollsum.types import Message, SummaryRecord

    span = [Message("user", f"Ticket INC-{100 + i} in Lisbon blocks the deploy of build {i}. "
                    f"Yesterday Omar said it is fine.", name="Priya", created_at=f"2023-05-{8 + i:02d}T10:00:00")
            for i in range(12)]
    warm = ExtractiveSummarizer(max_tokens=120)
    text = warm.summarize(SummaryRequest("c", span[:6])).text
    prev = SummaryRecord(id="s0", conversation_id="c", text=text, seq=0, messages_covered=6)
    warm.summarize(SummaryRequest("c", span[6:], previous=prev))
    again = warm.summarize(SummaryRequest("d", span[6:], previous=prev)).text
    cold = ExtractiveSummarizer(max_tokens=120).summarize(SummaryRequest("d", span[6:], previous=prev)).text
    assert again == cold
    assert "INC-" in cold


def _old_pieces_definition(s: ExtractiveSummarizer, text: str) -> list[object]:
    """A previous summary read back line by line as the summarizer first did it (every line
    parsed at every call, ranks and runs counted from the pieces), as comparable values."""
    out: list[tuple[object, ...]] = []
    speakers: set[str] = set()
    lines: dict[int, str] = {}
    day = ""
    group = 0
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or _HEADER_LINE_RE.match(line):
            continue
        dm = _DAY_RE.match(line)
        if dm:
            if dm.group(2) is None:
                day = dm.group(1)
                continue
            line_day, rest = dm.group(1), dm.group(2)
        else:
            line_day, rest = day, line
        speaker, parts, tool = s._old_line(rest)
        if tool:
            out.append((parts[0].body, "", line_day, group, TOOL_ERROR_BONUS if rest.startswith("[❌") else 0.0,
                        line, s.conversational))
        else:
            if speaker:
                speakers.add(speaker)
            out.extend((part.body, speaker, line_day, group, 0.0, line, False) for part in parts)
        if out and out[-1][3] == group:
            lines[group] = line
        group += 1
    rank: dict[object, int] = {}
    for p in out:
        rank.setdefault(p[3], len(rank))
    runs = [d for d, _ in groupby(p[2] for p in out)]
    return [out, speakers, set(runs), runs, rank, lines]


_SUMMARY_LINES = st.sampled_from([
    "[8 May 2023]", "[9 May 2023]", "Caroline: Pottery class in Lisbon. Then we met Dr. Okafor.",
    "[8 May 2023] Caroline: Pottery class in Lisbon.", "Mel:   ", "[9 May 2023] Mel: ", "  Assistant: Ran the tests.  ",
    "[✓ read_file: File: src/app.py | Lines: 12]", "[9 May 2023] [❌ execute_bash: Command: make | Exit: 2]",
    "[❌ grep: Pattern: \"x\" | Matches: 0]", "[Update 3]", "[Condensed history]", "## Notes", "", "   ",
    "--- Summarized Context (2 items) ---", "no speaker here. Two sentences.", "[8 May 2023] no speaker, a day.",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_SUMMARY_LINES, max_size=12).map("\n".join), min_size=1, max_size=3), st.booleans())
def test_a_previous_summary_reads_back_as_a_line_by_line_parse_gives(texts: list[str], conversational: bool) -> None:
    """`_old_pieces` reads each line once and keeps it (`_old_read`): a line met again, under
    another day header, at another place (group) or after a blank line that had no pieces,
    must read back as a fresh line-by-line parse of the whole text reads it."""
    s = ExtractiveSummarizer(conversational=conversational)
    for text in texts:
        s._old_memo.clear()
        got = s._old_pieces(text)
        pieces = [(p.text.body, p.speaker, p.day, p.group, p.bonus, p.source, p.tool) for p in got.pieces]
        assert [pieces, set(got.speakers), got.days, got.day_runs, got.rank, got.lines] == \
            _old_pieces_definition(s, text)
