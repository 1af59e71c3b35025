"""A candidate's key weights are the per-key definition, however they are computed (issue #20).

`ExtractiveSummarizer._weights` looks each key's document frequency up (a name's negated),
computes the factor of each distinct frequency once (`Counts.by_frequency`) and multiplies
with lookups, and weighs a candidate holding a participant's name key by key. The definition:
for every key, ``w × sentence factor × (its name multiplier if w is a name's, number's or
date's weight, else its specificity)``, with a participant's name weighing as a common word.
The result must be the same floats (the selection compares them).
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import ExtractiveSummarizer, salience
from rollsum.summarizers.corpus import Counts
from rollsum.summarizers.extractive import _participant_keys, _text

_WORDS = ["Melanie", "Mel", "Caroline", "Sweden", "pottery", "painting", "the", "really", "42", "PAY-4821",
          "src/app.py", "caroline", "amy", "Saturday", "May", "adoption", "bowling", "thanks", "(7 May 2023)",
          "Tromsø", "1,200"]


def definition(body: str, counts: Counts, speakers: list[str]) -> tuple[float, ...]:
    """The per-key definition, each factor from `Counts.factors` of that key alone."""
    full, short = _participant_keys(speakers)
    keys, weights, factor = salience.features(body)
    out = []
    for k, w in zip(keys, weights):
        word, name = counts.factors([k])
        spec = word[k]
        if k in full:
            word_f, name_f = salience.W_COMMON * spec, salience.W_COMMON / salience.W_NAME * spec
        elif k in short:
            word_f, name_f = spec, salience.W_COMMON / salience.W_NAME * spec
        else:
            word_f, name_f = spec, name[k]
        out.append(w * factor * (name_f if w >= salience.W_NUMBER else word_f))
    return tuple(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=9), min_size=1, max_size=12),
       st.lists(st.lists(st.sampled_from(_WORDS), max_size=6), max_size=30),
       st.lists(st.sampled_from(["Melanie Ortiz", "Caroline", "User", "Dr. Amy Ellis"]), max_size=2))
def test_weights_are_the_per_key_definition(sentences: list[list[str]], docs: list[list[str]],
                                            speakers: list[str]) -> None:
    # the conversation's counts from documents of the same words (n from 0: the n <= 1 case too)
    counts = Counts()
    counts.add([salience.features(" ".join(d)).keys for d in docs])
    bodies = ["It was " + " ".join(s) + "." for s in sentences]
    texts = [_text(b, salience.features(b), len(b)) for b in bodies]
    got = ExtractiveSummarizer._weights(texts, counts, _participant_keys(speakers))
    assert got == [definition(b, counts, speakers) for b in bodies]


def test_by_frequency_is_specificity_and_the_name_multiplier() -> None:
    counts = Counts()
    counts.add([("sweden", "pottery"), ("sweden",), ("sweden", "bowling"), ("x",)] * 50)
    n = counts.n
    table = counts.by_frequency([150, -150, 50, -50, 1, -1])
    for d in (150, 50, 1):
        spec = math.log((n + 1) / d) / math.log(n + 1)
        assert math.isclose(table[d], spec, rel_tol=1e-12)
        assert math.isclose(table[-d], min(1.5, 1 + 0.15 * math.log(d)) * math.sqrt(spec), rel_tol=1e-12)
    # a key no sentence holds counts as in one
    word, name = counts.factors(["absent"])
    assert word["absent"] == table[1] and name["absent"] == table[-1]
