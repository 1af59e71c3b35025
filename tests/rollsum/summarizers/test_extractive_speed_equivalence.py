"""The replay hot path's shortcuts give what the plain definitions give (issue #20).

`split_sentences` splits lines with a string split before it looks for sentence ends, and the
summarizer caches each sentence's processing and each previous line's parse. These tests pin
them to the plain one-pass definitions, so a shortcut that changes a summary fails here rather
than in a nightly gate.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers.extractive import _ABBREVIATION_RE, split_sentences

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


_ALPHABET = st.sampled_from([*"ab AZ09.!?…\n\t\r\"'“‘([:", "Dr.", "J.", " \n ", "\n\n", "\u2028", "\xa0"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_split_sentences_equals_the_one_regex_definition(text: str) -> None:
    assert split_sentences(text) == one_regex_split(text)


def test_split_sentences_on_the_cases_that_differ_between_lines_and_whole_text() -> None:
    # whitespace around a line break, a break after end punctuation before lower case, an
    # abbreviation at a line's end (joined with the next line), a tab after a full stop
    for text in ("A.  \n  next one", "Ends here.\nlower start", "Ask Dr.\nSmith today", "One.\tTwo", "x\r\ny. Z"):
        assert split_sentences(text) == one_regex_split(text), text
