"""A candidate's key weights are the per-key definition, however they are computed (issue #20).

`ExtractiveSummarizer._weights` looks each key's document frequency up (a name's as its code ``~d``),
computes the factor of each distinct frequency once (`Counts.factor_table`) and multiplies
with lookups, and weighs a candidate holding a participant's name key by key. The definition:
for every key, ``w × sentence factor × (its name multiplier if w is a name's, number's or
date's weight, else its specificity)``, with a participant's name weighing as a common word,
for the conversation's size rounded down to four significant bits (`corpus.table_size`: the
summarizer's factor table then serves many summaries in a row).
The result must be the same floats (the selection compares them).
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import ExtractiveSummarizer, salience
from rollsum.summarizers.corpus import Counts, table_size
from rollsum.summarizers.extractive import _participant_keys, _text

_WORDS = ["Melanie", "Mel", "Caroline", "Sweden", "pottery", "painting", "the", "really", "42", "PAY-4821",
          "src/app.py", "caroline", "amy", "Saturday", "May", "adoption", "bowling", "thanks", "(7 May 2023)",
          "Tromsø", "1,200"]


def rounded(n: int) -> int:
    """`table_size` written out: n with all but its four leading bits cleared."""
    drop = max(0, n.bit_length() - 4)
    return n >> drop << drop


def key_factors(counts: Counts, key: str) -> tuple[float, float]:
    """A key's specificity and its multiplier as a name, from the formulas (the same float
    operations, in the same order, as the summarizer has always used), for the conversation's
    size rounded down to four significant bits (the summarizer's `table_size`)."""
    n = rounded(counts.n)
    if n <= 1:
        return 1.0, 1.0
    log_n1 = math.log(n + 1)
    ld = math.log(counts.df.get(key) or 1)
    spec = (log_n1 - ld) * (1.0 / log_n1)
    spec = spec if spec > 0.0 else 0.0
    return spec, min(1.5, 1.0 + 0.15 * ld) * math.sqrt(spec)


def definition(body: str, counts: Counts, speakers: list[str]) -> tuple[float, ...]:
    """The per-key definition."""
    full, short = _participant_keys(speakers)
    keys, weights, factor = salience.features(body)
    out = []
    for k, w in zip(keys, weights):
        spec, as_name = key_factors(counts, k)
        if k in full:
            word_f, name_f = salience.W_COMMON * spec, salience.W_COMMON / salience.W_NAME * spec
        elif k in short:
            word_f, name_f = spec, salience.W_COMMON / salience.W_NAME * spec
        else:
            word_f, name_f = spec, as_name
        out.append(w * factor * (name_f if w >= salience.W_NUMBER else word_f))
    return tuple(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=9), min_size=1, max_size=12),
       st.lists(st.lists(st.sampled_from(_WORDS), max_size=6), max_size=30),
       st.lists(st.sampled_from(["Melanie Ortiz", "Caroline", "User", "Dr. Amy Ellis"]), max_size=2),
       st.sampled_from([1, 2, 300]))
def test_weights_are_the_per_key_definition(sentences: list[list[str]], docs: list[list[str]],
                                            speakers: list[str], repeats: int) -> None:
    # the conversation's counts from documents of the same words (n from 0: the n <= 1 case too)
    # (sentences repeated so that some frequencies pass the logarithm table's 4,096)
    counts = Counts()
    counts.add([salience.features(" ".join(d))[0] for d in docs] * repeats)
    bodies = ["It was " + " ".join(s) + "." for s in sentences]
    texts = [_text(b, salience.features(b), len(b)) for b in bodies]
    got = ExtractiveSummarizer._weights(texts, counts, _participant_keys(speakers))
    assert got == [definition(b, counts, speakers) for b in bodies]


def test_the_factor_table_is_specificity_and_the_name_multiplier() -> None:
    counts = Counts()
    counts.add([("sweden", "pottery"), ("sweden",), ("sweden", "bowling"), ("x",)] * 50)
    n = counts.n
    table = counts.factor_table()
    for d in (150, 50, 1):
        spec = math.log((n + 1) / d) / math.log(n + 1)
        assert math.isclose(table[d], spec, rel_tol=1e-12)
        assert math.isclose(table[~d], min(1.5, 1 + 0.15 * math.log(d)) * math.sqrt(spec), rel_tol=1e-12)
    # a key no sentence holds counts as in one
    word, name = counts.factors(["absent"])
    assert word["absent"] == table[1] and name["absent"] == table[~1]


def test_table_size_keeps_four_leading_bits_and_rounds_down() -> None:
    previous = 0
    for n in range(0, 70_000):
        size = table_size(n)
        assert size == rounded(n)
        if n < 16:
            assert size == n
        else:
            assert size <= n and 8 * (n - size) < n  # at most 1/8 below n
        assert size >= previous  # never falls as the conversation grows
        previous = size
    assert [table_size(n) for n in (15, 16, 17, 18, 100, 4_000)] == [15, 16, 16, 18, 96, 3_840]


def test_the_kept_table_is_the_one_for_the_current_size() -> None:
    counts = Counts()
    counts.add([("sweden", "pottery"), ("sweden",)] * 48)  # n = 96: 0b1100000, a step
    table = counts.factor_table(rounded=True)
    assert table.n == 96 and table[2] > 0.0
    counts.add([("sweden",)] * 5)  # n = 101: rounds to 96 still
    assert counts.factor_table(rounded=True) is table
    # the exact table for 101 is not the rounded one, and the rounded one is made again after it
    exact = counts.factor_table()
    assert exact.n == 101 and exact is not table
    assert exact[2] == (math.log(102) - math.log(2)) * (1.0 / math.log(102))
    again = counts.factor_table(rounded=True)
    assert again.n == 96 and again[2] == table[2]
    counts.add([("x",)] * 3)  # n = 104: the next step
    moved = counts.factor_table(rounded=True)
    assert moved.n == 104 and moved[2] == (math.log(105) - math.log(2)) * (1.0 / math.log(105))
    # a rolled-back span (`Corpus.checkout`) goes back to the smaller size's factors
    counts.remove([("x",)] * 3)
    assert counts.factor_table(rounded=True)[2] == table[2]


def test_no_character_is_both_a_letter_and_a_digit() -> None:
    # `salience._kind_weight` takes an all-letter token as holding no digit without looking
    for cp in range(0x110000):
        ch = chr(cp)
        assert not (ch.isalpha() and ch.isdigit()), hex(cp)


@given(st.text(st.sampled_from("aZé٣3²x_.-"), min_size=1, max_size=6), st.booleans())
def test_a_tokens_kind_is_what_its_characters_say(tok: str, first: bool) -> None:
    has_digit = any(ch.isdigit() for ch in tok)
    has_alpha = any(ch.isalpha() for ch in tok)
    weight = salience._kind_weight(tok, tok.lower(), first)
    if has_digit:
        assert weight == (salience.W_NAME if has_alpha else salience.W_NUMBER)
    else:
        assert weight != salience.W_NUMBER
