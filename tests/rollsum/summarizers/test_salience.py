from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rollsum.summarizers.corpus import Corpus, Counts
from rollsum.summarizers.salience import (
    W_COMMON,
    W_CONTENT,
    W_DATE,
    W_NAME,
    W_NUMBER,
    Token,
    TokenCache,
    features,
    stem,
)
from rollsum.summarizers.selection import Candidate, select


def weights(text: str) -> dict[str, float]:
    keys, weights, _ = features(text)
    return dict(zip(keys, weights))


# -- features ---------------------------------------------------------------------------------

def test_word_kinds_get_their_weights() -> None:
    w = weights("Yesterday (7 May 2023) I really loved the pottery class with Priya in Lisbon, ticket "
                "INC-2093, 42 people, src/app.py:12 and load_config.")
    assert w == {"@7 May 2023": W_DATE, "yesterday": W_COMMON, "really": W_COMMON, "loved": W_COMMON,
                 "pottery": W_CONTENT, "class": W_CONTENT, "priya": W_NAME, "lisbon": W_NAME,
                 "ticket": W_CONTENT, "inc-2093": W_NAME, "42": W_NUMBER, "people": W_COMMON,
                 "src/app.py": W_NAME, "load_config": W_NAME}


def test_capitals_are_names_only_where_they_are_not_grammar() -> None:
    assert weights("Sweden is lovely.")["sweden"] == W_CONTENT  # first word: capital is grammar
    assert weights("We moved from Sweden.")["sweden"] == W_NAME
    assert weights("LGBTQ rights matter.")["lgbtq"] == W_NAME  # an acronym is a name anywhere
    assert weights("I met her in May.")["may"] == W_CONTENT  # months are calendar words, not names
    assert "r" not in weights("Glad you got some R&R.")  # single letters are not names


def test_filler_and_greetings_have_no_specific_word() -> None:
    for text in ("Hey Mel! Good to see you!", "Thanks so much, that means a lot to me.",
                 "Oh wow, really? That's amazing!", "I know, right? It was a great time honestly."):
        assert all(w < W_CONTENT for k, w in weights(text).items() if k not in ("mel",)), text


def test_sentence_factors() -> None:
    statement = features("Biscuit the greyhound eats salmon kibble every morning.")
    question = features("Does Biscuit the greyhound eat salmon kibble every morning?")
    dangling = features("It eats salmon kibble every morning with Biscuit.")
    fragment = features("Salmon kibble!")
    assert statement[2] == 1.0 and question[2] < 1.0 and dangling[2] < 1.0
    assert fragment[2] == pytest.approx(2 / 6)


def test_stem_folds_plurals_and_possessives() -> None:
    assert stem("paintings") == stem("painting") == stem("painting's") == "painting"
    assert stem("stories") == "story" and stem("class") == "class" and stem("bus") == "bus"


@given(st.text(max_size=200))
def test_features_never_fail_and_the_cache_never_changes_them(text: str) -> None:
    cache: dict[str, tuple[tuple[str, float, float], ...]] = {}
    assert features(text, cache) == features(text) == features(text, cache)


# -- corpus ---------------------------------------------------------------------------------

def test_specificity_falls_with_document_frequency() -> None:
    c = Counts()
    c.add([("boiler", "test")] * 99 + [("oksana",)])
    assert c.specificity("oksana") == 1.0
    assert c.specificity("test") < 0.05 < c.specificity("boiler") < 1.0 or c.specificity("test") < 0.05
    assert c.recurrence("oksana") == 1.0 < c.recurrence("test") <= 1.5


def test_corpus_follows_the_chain_and_rolls_back_an_uncommitted_summary() -> None:
    corpus = Corpus()
    counts, found = corpus.checkout("c", "", Counts)
    assert not found
    counts.add([("a", "b")])
    counts.positions = {"first line": 1.0}
    corpus.commit("c", "", {}, counts, [("a", "b")], "S1")
    counts, found = corpus.checkout("c", "S1", lambda: _counts([("rebuilt",)]))
    assert found and counts.n == 1 and counts.positions == {"first line": 1.0}
    counts.add([("c",), ("a",)])
    counts.positions = {"second": 2.0}
    corpus.commit("c", "S1", {"first line": 1.0}, counts, [("c",), ("a",)], "S2")
    # the engine could not commit S2 and asks again from S1: S2's span is taken back out
    counts, found = corpus.checkout("c", "S1", lambda: _counts([("rebuilt",)]))
    assert found and counts.n == 1 and dict(counts.df) == {"a": 1, "b": 1}
    assert counts.positions == {"first line": 1.0}


def _counts(docs: list[tuple[str, ...]]) -> Counts:
    counts = Counts()
    counts.add(docs)
    return counts


def test_corpus_rebuilds_when_the_chain_is_unknown() -> None:
    corpus = Corpus()
    counts, found = corpus.checkout("c", "some other summary", lambda: _counts([("x", "y"), ("x",)]))
    assert not found and counts.n == 2 and counts.df["x"] == 2 and counts.positions == {}


def test_corpus_is_bounded() -> None:
    corpus = Corpus(max_conversations=3)
    for i in range(10):
        counts, _ = corpus.checkout(f"c{i}", "", Counts)
        corpus.commit(f"c{i}", "", {}, counts, [], "S")
    assert len(corpus) == 3


# -- selection ------------------------------------------------------------------------------

def _classes_by_definition(chunk: str, kind_weight: Callable[[str, str, bool], float]) -> tuple[Token, ...]:
    """What `_classify` must give for `chunk`: both regexes asked of every token, and the
    first-word and plain weights from `kind_weight` (the module's own or a reference)."""
    from rollsum.summarizers.salience import _LINE_SUFFIX_RE, _STRIP, _TOKEN_RE

    expected = []
    for raw in _TOKEN_RE.findall(chunk):
        tok = _LINE_SUFFIX_RE.sub("", raw.rstrip(_STRIP))
        if tok:
            low = tok.lower().replace("’", "'")
            expected.append((stem(low), kind_weight(tok, low, True), kind_weight(tok, low, False)))
    return tuple(expected)


def cand(keys: str, weight: float = 1.0, cost: int = 10, group: int = 0, pos: float = 0.0) -> Candidate:
    ks = tuple(keys.split())
    return Candidate(ks, tuple(weight for _ in ks), cost, cost, group, pos)


def test_selection_prefers_value_per_token_and_respects_the_budget() -> None:
    cands = [cand("a b c", cost=10, group=0), cand("d e f g h i", cost=30, group=1), cand("j k", cost=5, group=2)]
    sel = select(cands, 16, span_end=3)
    assert sel.chosen == (0, 2) and sel.used == 15


def test_selection_skips_near_duplicates_and_worthless_lines() -> None:
    cands = [cand("sweden grandma necklace", group=0, pos=0), cand("sweden grandma necklace", group=1, pos=1),
             cand("x", weight=0.2, group=2, pos=2)]
    assert select(cands, 1_000, span_end=3).chosen == (0,)


def test_selection_spreads_lines_over_time_buckets() -> None:
    # ten strong early lines and ten weaker late ones, room for eight: late ones still get in
    early = [cand(f"e{i} f{i} g{i}", group=i, pos=i) for i in range(10)]
    late = [cand(f"l{i} m{i}", group=10 + i, pos=90 + i) for i in range(10)]
    chosen = select(early + late, 80, span_end=100).chosen
    assert len(chosen) == 8 and any(i >= 10 for i in chosen) and any(i < 10 for i in chosen)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aAmMyYzZ19_./-'ǅéÉ"), min_size=1, max_size=8))
@example("MAY")
@example("May")
@example("Priya")
def test_a_token_weighs_as_a_first_word_what_the_definition_says(chunk: str) -> None:
    """`_classify` asks for the first-word weight only of capitalized tokens: for every token it
    must still be `_kind_weight(tok, low, True)` ("May", "Priya" and "ǅemal" included)."""
    from rollsum.summarizers.salience import _classify, _kind_weight

    assert _classify(chunk) == _classes_by_definition(chunk, _kind_weight)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["(", ")", " (", " ", "7", "2023", "12345", "May", "x", "the week before ", ":",
                                 ":12", "src/app.py", "a.b", "read_file(path='a.py')", "é", "_"]),
                max_size=14).map("".join))
@example("(2023)")
@example("met x(7 May 2023)")
def test_the_anchor_pre_check_skips_only_texts_without_an_anchor(text: str) -> None:
    """`features` looks for anchors only where `_ANCHOR_AT_PAREN_RE` finds one: `_ANCHOR_RE`
    must find none where it finds none."""
    from rollsum.summarizers import salience

    if not salience._ANCHOR_AT_PAREN_RE.search(text):
        assert not salience._ANCHOR_RE.search(text)


def test_an_anchor_and_a_line_suffix_are_still_read() -> None:
    keys, _, _ = features("Ran it at src/app.py:12 and read_file(path='a.py') last week (the week before 9 June 2023)")
    assert keys[:2] == ("@the week before 9 June 2023", "ran") and "src/app.py" in keys


def _reference_kind_weight(tok: str, low: str, first: bool) -> float:
    """`salience._kind_weight` as first written: the inner-capital regex asked of every token
    that reaches it."""
    from rollsum.summarizers import salience

    has_digit = any(ch.isdigit() for ch in tok)
    if has_digit:
        return W_NAME if any(ch.isalpha() for ch in tok) else W_NUMBER
    if len(tok) == 1:
        return 0.0
    if low in salience._CALENDAR and (low != "may" or (tok[0].isupper() and not first)):
        return W_CONTENT
    if low in salience.FUNCTION_WORDS:
        return 0.0
    if low in salience.COMMON_WORDS:
        return W_COMMON
    if "_" in tok or "/" in tok or "." in tok or salience._INNER_UPPER_RE.search(tok):
        return W_NAME
    if tok[0].isupper() and (tok.isupper() or not first):
        return W_NAME
    return W_CONTENT


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aAbBzZ19:._/-'’ǅéÉ"), min_size=1, max_size=10))
@example("src/app.py:12")
@example("a.py:3:4")
@example("camelCase")
@example("iOS’s")
@example("ǅemal")
def test_classify_equals_the_definition_without_its_pre_checks(chunk: str) -> None:
    """`_classify` runs the line-suffix regex only on a token holding ":" and the inner-capital
    regex only on a token that is not its own lower case: every chunk must still classify as
    with both regexes asked of every token (a pre-check that skips a token the regex would
    change, e.g. ``tok[0].isupper()`` for "camelCase" or a digit test for "a.py:3:4", fails)."""
    from rollsum.summarizers.salience import _classify

    assert _classify(chunk) == _classes_by_definition(chunk, _reference_kind_weight)


def test_a_word_classifies_by_lookup_as_by_the_definition() -> None:
    """`_classify` reads a chunk that is a word of ASCII letters, lowercase or capitalized,
    from `_WORD_WEIGHT` (the listed words) without the general path: every listed word in
    both forms, lone letters and unlisted words (plurals folded) must classify as the
    definition does (a table where a function word overrides a calendar word, or a common
    word a function word; "May" weighed as a name or a first-word month; a capitalized word
    weighed as a name at the sentence's start, fails)."""
    from rollsum.summarizers import salience

    words = salience.FUNCTION_WORDS | salience.COMMON_WORDS | salience._CALENDAR
    lower = [*sorted(w for w in words if w.isascii() and w.isalpha()), "a", "x", "pottery", "paintings", "glass",
             "caroline"]
    for chunk in [*lower, *(w.capitalize() for w in lower)]:
        assert salience._classify(chunk) == _classes_by_definition(chunk, _reference_kind_weight), chunk


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["may", "May", "MAY", "mAy", "the", "The", "really", "Really", "monday", "Monday", "x", "I",
                        "caroline", "Caroline", "paintings", "Paintings", "iOS", "ab1"]),
       st.text(alphabet=st.sampled_from(',.!?;:)"]\'’-(…_/+%$#@1 ab'), max_size=4))
@example("today", ".")
@example("fun", "!")
@example("dogs", "'")
def test_a_word_and_its_marks_classify_as_by_the_definition(word: str, tail: str) -> None:
    """A word followed by marks ("fun!", "today.", "jungle]") is classified by the word alone
    only when every mark is one of `_PUNCT_TAIL`: any chunk must classify as the definition
    does (a mark set holding one a token keeps, "%", "_" or "$", or a word test that lets
    "mAy" or "iOS" through as capitalized, fails)."""
    from rollsum.summarizers import salience

    chunk = word + tail
    assert salience._classify(chunk) == _classes_by_definition(chunk, _reference_kind_weight)


def _reference_features(text: str) -> tuple[tuple[str, ...], tuple[float, ...], float]:
    """`features` by its definition: the anchors, then every token of the text in order (the
    first with its first-word weight), each key at its first place with the largest weight
    it is given; no cache, no skipped repeat."""
    from rollsum.summarizers import salience

    keys: dict[str, float] = {}
    for m in salience._ANCHOR_RE.finditer(text):
        keys["@" + m.group(1)] = W_DATE
    chunks = salience._ANCHOR_RE.sub("", text).split()
    tokens = [t for chunk in chunks for t in _classes_by_definition(chunk, _reference_kind_weight)]
    for i, (key, first, rest) in enumerate(tokens):
        w = first if i == 0 else rest
        if w > 0.0 and keys.get(key, 0.0) < w:
            keys[key] = w
    factor = 1.0
    if " ".join(chunks).endswith("?"):
        factor *= salience.QUESTION_FACTOR
    if tokens and tokens[0][0] in salience._ANAPHORA:
        factor *= salience.ANAPHORA_FACTOR
    if len(chunks) < salience.FULL_SENTENCE_WORDS:
        factor *= len(chunks) / salience.FULL_SENTENCE_WORDS
    return tuple(keys), tuple(keys.values()), factor


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["Paris", "paris", "paris,", "Paris's", "PARIS", "May", "may", "the", "It", "it",
                                 "2023", "(2023)", "(7 May 2023)", "really", "Really", "src/app.py:12", "app.py",
                                 "-", "?", "x", "painting", "paintings"]), max_size=12).map(" ".join))
@example("paris Paris paris")
@example("May May may")
def test_features_give_each_key_its_largest_weight_at_its_first_place(text: str) -> None:
    """A key said again, as the same chunk or another ("paris ... Paris"), keeps its first
    place and the largest of its weights: `features` reads every chunk after the first word's,
    repeats included, without deduplicating them first (a loop where the last weight wins, or
    one that reads the chunks out of order, e.g. from a set, fails)."""
    assert features(text) == _reference_features(text)
    cache: TokenCache = {}
    assert features(text, cache) == _reference_features(text) == features(text, cache)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["(", ")", " (", " ", "  ", "7", "2023", "12345", "May", "x", "the week before ",
                                 ":", "(7 May 2023)", " (2024)", "é", "_", "a (1999) b"]),
                max_size=14).map("".join))
@example("(2023)")
@example(" (2023)")
@example("(2023) (2024)")
@example("a  (7 May 2023).")
def test_anchors_are_stripped_as_the_anchor_pattern_strips_them(text: str) -> None:
    """`_strip_anchors` finds anchors by their "(" and takes the space before each: the same
    text and the same anchors as `_ANCHOR_RE`'s sub and finditer (a version that forgets the
    space, or takes the character before an anchor at the text's start, text[-1], fails)."""
    from rollsum.summarizers import salience

    keys: dict[str, float] = {}
    stripped = salience._strip_anchors(text, keys)
    assert stripped == salience._ANCHOR_RE.sub("", text)
    assert list(keys) == list(dict.fromkeys("@" + m.group(1) for m in salience._ANCHOR_RE.finditer(text)))
