"""The candidate pool's shortcuts give what their plain definitions give (issue #20).

`_distinct` finds duplicates with a set of normalized texts per key tuple instead of scanning
every kept body with the same keys; a long span (token-ratio, budget-rule-based: ~1,750
messages) repeats sentences hundreds of times, so the scan was quadratic there.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import salience
from rollsum.summarizers.extractive import _distinct, _norm, _Piece, _text


def scan_distinct(pieces: list[_Piece]) -> list[_Piece]:
    """The definition: a piece is kept unless it names nothing specific (and has no bonus) or
    an earlier kept piece has the same key tuple and the same normalized text."""
    out: list[_Piece] = []
    for p in pieces:
        if not p.text.content and p.bonus <= 0.0:
            continue
        if any(q.text.feat.keys == p.text.feat.keys and _norm(q.text.body) == _norm(p.text.body) for q in out):
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
    assert set(key_tuples) == {p.text.feat.keys for p in expected}


def test_distinct_tells_same_keys_apart_by_their_words() -> None:
    # "in" and "at" are function words: the same key tuple, different words. Both are kept
    # once each, whichever came first
    a = _text("Melanie paints in Sweden.", salience.features("Melanie paints in Sweden."), 5)
    b = _text("Melanie paints at Sweden.", salience.features("Melanie paints at Sweden."), 5)
    assert a.feat.keys == b.feat.keys
    pieces = [_Piece(t, "", "", -1 - i) for i, t in enumerate([a, b, b, a])]
    kept, key_tuples = _distinct(pieces, _norm)
    assert [p.group for p in kept] == [-1, -2]
    assert list(key_tuples) == [a.feat.keys]
