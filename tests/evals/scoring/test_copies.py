"""The copy rule (answer_retention v7) recognises what the extractive summarizer writes."""

from __future__ import annotations

import dataclasses
from datetime import date

from rollsum_evals.scoring import copies
from rollsum_evals.scoring import support as sp

from rollsum.summarizers.base import SummaryRequest
from rollsum.summarizers.extractive import ExtractiveSummarizer, split_sentences
from rollsum.types import Message

LONG = ("I spent the whole weekend at the pottery studio downtown, where the instructor showed us how to center "
        "the clay on the wheel, trim the foot of a bowl, and glaze it in three layers of blue and green, and then "
        "we fired everything in the big kiln out back, which took hours, and I loved every minute of it, honestly.")
MSGS = (
    Message("user", "Hey Mel! I went to a support group yesterday, it was really powerful.", name="Caroline",
            created_at="2023-05-08T10:00:00"),
    Message("assistant", LONG, name="Melanie", created_at="2023-05-08T10:05:00"),
    Message("user", "Last week I bought a new Prius; it was a big step for me.", name="Caroline",
            created_at="2023-05-09T10:00:00"),
)
CHAT = sp.claim("", "x", ("Caroline", "Melanie"))


def _found(sentence: str, speaker: str, units: list[sp.Unit]) -> bool:
    assert CHAT is not None
    c = dataclasses.replace(CHAT, source=frozenset({sp.stem(speaker.lower())}))
    return any(copies.copied_in(sentence, frozenset(), u, c) for u in units)


def test_every_sentence_the_extractive_summarizer_copies_is_recognised_as_its_speakers() -> None:
    # its copies carry a day and a speaker prefix, anchored dates ("yesterday (7 May 2023)") and
    # a sentence over 280 characters cut at a clause ("… which took hours …")
    text = ExtractiveSummarizer().summarize(SummaryRequest("c", MSGS, max_tokens=2000)).text
    assert "(7 May 2023)" in text and "took hours …" in text  # the normalisations the rule must see through
    units = sp.summary_units(text)
    said = [(s, m.name or "") for m in MSGS for s in split_sentences(m.content) if sp.content(s)]
    assert len(said) == 4
    for sentence, speaker in said:
        if sentence == "Hey Mel!":
            continue  # not kept: nothing specific
        assert _found(sentence, speaker, units), sentence
        other = "Melanie" if speaker == "Caroline" else "Caroline"
        assert not _found(sentence, other, units), sentence   # not their words
    # with the speakers swapped, no copy is theirs
    swapped = [sp.Unit(u.text, {"Caroline": "Melanie", "Melanie": "Caroline"}.get(u.speaker, u.speaker))
               for u in units]
    assert not any(_found(s, who, swapped) for s, who in said)


def test_the_informative_sentences_are_those_sharing_a_word_with_the_ask() -> None:
    msg = "Hey Mel! I went to a support group yesterday. The weather was lovely."
    keys = copies.keys("What group did Caroline go to?", "LGBTQ support group", ("caroline", "melanie"))
    assert "caroline" not in keys and "go" not in keys                  # names and light words tie nothing
    assert copies.informative(msg, keys) == ("I went to a support group yesterday.",)
    # none shares a word: the message as a whole is the evidence
    assert copies.informative(msg, frozenset({"kayak"})) == tuple(split_sentences(msg))


def test_for_a_time_answer_the_sentence_dating_it_relative_to_the_message_is_informative() -> None:
    msg = "Hey Caroline! Last night was amazing! We celebrated my daughter's birthday with a concert."
    keys = copies.keys("When is Melanie's daughter's birthday?", "13 August", ("caroline", "melanie"))
    birthday = "We celebrated my daughter's birthday with a concert."
    assert copies.informative(msg, keys) == (birthday,)
    assert copies.informative(msg, keys, date(2023, 8, 14)) == (birthday, "Last night was amazing!")
    # no relative date in the message: nothing added; no keyed sentence: the whole message, as before
    assert copies.informative("We celebrated my daughter's birthday.", keys, date(2023, 8, 14)) == (
        "We celebrated my daughter's birthday.",)
    assert copies.informative(msg, frozenset({"kayak"}), date(2023, 8, 14)) == copies.informative(
        msg, frozenset({"kayak"}))
