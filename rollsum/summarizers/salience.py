"""What a sentence says that is specific to this conversation: its informative words, weighted.

A sentence is worth keeping in proportion to the specific things it names: people, places,
products, identifiers, quantities, dates, and the uncommon words that describe what happened.
`features` turns a sentence into those words (normalized keys) and a base weight for each:

==================  ======  ===============================================================
kind                weight  examples
==================  ======  ===============================================================
function word       0       the, and, I'm, you, oh, yeah (`vocabulary.FUNCTION_WORDS`)
common word         0.2     really, amazing, think, thing, people (`vocabulary.COMMON_WORDS`)
content word        1.0     bowling, adoption, pottery, latency, refund, Saturday
number              1.5     2, 42, 1,200, $30
name / identifier   2.0     Sweden, LGBTQ, PAY-4821, src/app.py, load_config, camelCase
anchored date       1.5     (7 May 2023), (the week before 9 June 2023): one unit each
==================  ======  ===============================================================

A capitalized word counts as a name only where capitals are not grammar (not the first word of
the sentence); month and weekday names are content words. The conversation's own participants
are demoted to common words when scoring (`extractive` does this): their names are in every
line's speaker prefix and "Thanks, Caroline!" says nothing about Caroline.

Sentence-level multipliers: a question ×0.6 (questions ask, answers tell), a sentence opening
with a pronoun that points elsewhere ("That's", "It", "They") ×0.85, a fragment of fewer than six
words ×words/6 (both are less self-contained out of their context).

How much a word is worth *in context* (how often it recurs in the span and the previous summary,
and whether a kept line already says it) is decided by `selection`, not here: features depend
on the text alone, so they are cached by text.
"""

from __future__ import annotations

import re

from rollsum.summarizers.vocabulary import COMMON_WORDS, FUNCTION_WORDS

W_COMMON = 0.2
W_CONTENT = 1.0
W_NUMBER = 1.5
W_NAME = 2.0
W_DATE = 1.5
QUESTION_FACTOR = 0.6
ANAPHORA_FACTOR = 0.85
FULL_SENTENCE_WORDS = 6
"""Sentences shorter than this many words ("Luna and Oliver!", "Agreed, Mel.") are fragments that
lean on their context: their value is scaled by words / FULL_SENTENCE_WORDS."""

_TOKEN_RE = re.compile(r"[\w$#@][\w'’./:@#$%+\-]*")
_STRIP = "'’.:/-+"
# an anchor added by `dates.anchor_dates` (or any parenthesis ending in a year): one date unit
_ANCHOR_RE = re.compile(r" ?\(([^()]{0,48}?\b\d{4})\)")
_ANCHOR_AT_PAREN_RE = re.compile(r"\(([^()]{0,48}?\b\d{4})\)")
"""`_ANCHOR_RE` without its optional leading space: every match of `_ANCHOR_RE` holds one, so a
text where this finds none has no anchor. It starts with a literal, which the regex engine
scans for; `_ANCHOR_RE` is tried at every character (most texts with a parenthesis hold a
call, "read_file(path='src/app.py')", not a date)."""
_LINE_SUFFIX_RE = re.compile(r"(?<=\w\.\w)(?::\d+)+$|(?<=\w\.\w\w)(?::\d+)+$|(?<=\w\.\w\w\w)(?::\d+)+$")
"""a path's ":12" line suffix (src/app.py:12 -> src/app.py)"""
_INNER_UPPER_RE = re.compile(r"[a-z][A-Z]")
_CALENDAR = frozenset([
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
])
_ANAPHORA_WORDS = ("it", "it's", "its", "that", "that's", "this", "these", "those", "they", "they're",
                   "them", "he", "she", "he's", "she's", "there", "which", "thats", "theyre")


Features = tuple[tuple[str, ...], tuple[float, ...], float]
"""The informative words of one sentence: ``(keys, weights, factor)``, parallel tuples of keys
and base weights, and the sentence-level multiplier (question, dangling pronoun, fragment).

An exact tuple, not a named tuple: the summarizer keeps tens of thousands of them in its
bounded caches for the whole conversation, and the collector untracks an exact tuple of
strings, floats and exact tuples of those at its first young collection, so they are never
promoted nor walked by a full collection; a named tuple (a subclass) stays tracked and was
over half of what a long replay promoted to the old generation (docs/summarizers.md)."""


def stem(low: str) -> str:
    """A light plural/possessive folding so "paintings" and "painting's" count as "painting"."""
    if low.endswith(("'s", "’s")):
        low = low[:-2]
    if len(low) > 4 and low[-1] == "s" and low[-2] not in "su'’":
        low = low[:-3] + "y" if low.endswith("ies") else low[:-1]
    return low


def _kind_weight(tok: str, low: str, first: bool) -> float:
    """The base weight of one token (see the module table); 0 for function words."""
    if not tok.isalpha():  # all letters: no digit (no character is both), most tokens
        has_digit = False
        has_alpha = False
        for ch in tok:
            if ch.isdigit():
                has_digit = True
            elif ch.isalpha():
                has_alpha = True
        if has_digit:
            return W_NAME if has_alpha else W_NUMBER
    if len(tok) == 1:
        return 0.0  # a lone letter ("R&R", "a", "x") names nothing
    if low in _CALENDAR and (low != "may" or (tok[0].isupper() and not first)):
        return W_CONTENT
    if low in FUNCTION_WORDS:
        return 0.0
    if low in COMMON_WORDS:
        return W_COMMON
    # an inner capital needs a capital: a token equal to its lower case holds none (no regex pass)
    if "_" in tok or "/" in tok or "." in tok or (tok != low and _INNER_UPPER_RE.search(tok)):
        return W_NAME
    if tok[0].isupper():
        if tok.isupper():
            return W_NAME  # an acronym: LGBTQ, NASA, AWS
        if not first:
            return W_NAME
    return W_CONTENT


_ANAPHORA = frozenset(stem(w) for w in _ANAPHORA_WORDS)

Token = tuple[str, float, float]
"""(key, weight as a sentence's first word, weight elsewhere)."""
TokenCache = dict[str, tuple[Token, ...]]
"""whitespace-separated chunk -> its tokens: classification is the hot path of a replay, and a
conversation's vocabulary is small."""
_CACHE_LIMIT = 50_000


_WORD_WEIGHT: dict[str, float] = {**dict.fromkeys(COMMON_WORDS, W_COMMON), **dict.fromkeys(FUNCTION_WORDS, 0.0),
                                   **dict.fromkeys(_CALENDAR - {"may"}, W_CONTENT)}
"""A listed word's weight as `_kind_weight` gives it to a lowercase token of two letters or
more: a calendar word is a content word (but lowercase "may", a function word), a function
word weighs 0 (many are also common words: "do", "one", "wow"), a common word `W_COMMON`;
any other such word is a content word."""


_PUNCT_TAIL = ',.!?;:)"]'
"""Marks a word is followed by ("fun!", "today.", "jungle]"): none starts a token, and those
a token may hold ("." and ":") are in `_STRIP`, so a chunk that is a word and these is one token,
the word."""


def _classify(chunk: str) -> tuple[Token, ...]:
    """The tokens of one whitespace-separated chunk (the token cache's entries).

    A chunk that is a word of ASCII letters, lowercase or capitalized, and then only marks of
    `_PUNCT_TAIL` (nine in ten of a chat's distinct chunks) is one token, the word, weighed by
    a lookup in `_WORD_WEIGHT` as `_kind_weight` weighs it: the general path's regex, strips
    and weight tests are spared."""
    if chunk.isascii():
        word = chunk.rstrip(_PUNCT_TAIL)
        if word.isalpha():
            if word.islower():
                w = _WORD_WEIGHT.get(word, W_CONTENT) if len(word) > 1 else 0.0
                return ((stem(word), w, w),)
            if word[0].isupper() and word[1:].islower():  # capitalized, two letters or more
                low = word.lower()
                listed = _WORD_WEIGHT.get(low)
                if listed is None:  # a name, but capitals at a sentence's start are grammar
                    return ((stem(low), W_CONTENT, W_NAME),)
                if low == "may":  # the month, unless it is the sentence's first word
                    return ((low, 0.0, W_CONTENT),)
                return ((stem(low), listed, listed),)
    out = []
    for raw in _TOKEN_RE.findall(chunk):
        tok = raw.rstrip(_STRIP)
        if ":" in tok:  # a line suffix starts with ":" (most tokens hold none: no regex pass)
            tok = _LINE_SUFFIX_RE.sub("", tok)
        if tok:
            low = tok.lower().replace("’", "'")
            rest = _kind_weight(tok, low, False)
            # being the first word matters only to a capitalized token (a name, or "May")
            out.append((stem(low), _kind_weight(tok, low, True) if tok[0].isupper() else rest, rest))
    return tuple(out)


def _strip_anchors(text: str, keys: dict[str, float]) -> str:
    """`text` without its date anchors (`_ANCHOR_RE`'s matches, each with the space before
    it), each anchor added to `keys` as one date unit.

    One scan with `_ANCHOR_AT_PAREN_RE`, which starts with a literal (scanned for), instead of
    `_ANCHOR_RE`'s finditer and sub, tried at every character: the two find the anchors at
    the same "(" (`_ANCHOR_RE`'s optional space matches only just before one, and never
    inside the match before it, which ends with ")"), so the space before a match is the
    one `_ANCHOR_RE` would take."""
    kept: list[str] = []
    last = 0
    for m in _ANCHOR_AT_PAREN_RE.finditer(text):
        keys["@" + m.group(1)] = W_DATE
        start = m.start()
        kept.append(text[last:start - 1] if start and text[start - 1] == " " else text[last:start])
        last = m.end()
    if not kept:
        return text
    kept.append(text[last:])
    return "".join(kept)


def features(text: str, cache: TokenCache | None = None) -> Features:
    """The informative words of `text` (one sentence or one tool line).

    `cache` (owned by the caller, e.g. one per summarizer) memoizes token classification; it
    never changes the result.
    """
    keys: dict[str, float] = {}
    if "(" in text:
        text = _strip_anchors(text, keys)
    if cache is None:
        cache = {}
    elif len(cache) > _CACHE_LIMIT:
        cache.clear()
    get = cache.get
    chunks = text.split()
    first_key = ""
    rest = iter(chunks)
    for chunk in rest:
        hit = get(chunk)
        if hit is None:
            hit = cache[chunk] = _classify(chunk)
        if hit:
            # the sentence's first word: capitals there are grammar, not a name
            first_key, w, _ = hit[0]
            if w > 0.0:
                keys[first_key] = w
            for key, _, w in hit[1:]:
                if w > 0.0 and keys.get(key, 0.0) < w:
                    keys[key] = w
            break
    # the chunks after the first word's, repeats included: a key met again never raises its
    # weight past the max it already holds, and 4 % of a sentence's chunks repeat one before
    # it, so deduplicating them first (`dict.fromkeys`) cost more than it spared
    for chunk in rest:
        hit = get(chunk)
        if hit is None:
            hit = cache[chunk] = _classify(chunk)
        for key, _, w in hit:
            if w > 0.0 and keys.get(key, 0.0) < w:
                keys[key] = w
    n_tokens = len(chunks)
    factor = 1.0
    if text.rstrip().endswith("?"):
        factor *= QUESTION_FACTOR
    if first_key in _ANAPHORA:
        factor *= ANAPHORA_FACTOR
    if n_tokens < FULL_SENTENCE_WORDS:
        factor *= n_tokens / FULL_SENTENCE_WORDS
    return tuple(keys), tuple(keys.values()), factor
