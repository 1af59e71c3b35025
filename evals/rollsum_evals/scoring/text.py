"""Answer normalization and token F1, following the LoCoMo benchmark's evaluation.

Matching LoCoMo's method keeps our numbers comparable with published LoCoMo results: lowercase,
drop commas and punctuation, drop the words a/an/the/and, collapse whitespace; F1 compares
Porter-stemmed tokens.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any

_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
ADVERSARIAL_MARKERS: tuple[str, ...] = ("no information available", "not mentioned")


def normalize_answer(s: str) -> str:
    s = s.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


_PUNCT_TO_SPACE = str.maketrans({c: " " for c in string.punctuation})


def normalize_text(s: str) -> str:
    """Normalization for *containment*: LoCoMo's, except that punctuation separates words.

    LoCoMo deletes punctuation, which is right for token F1 but glues neighbours together in
    running text: "src/app.py:163:def" would become "srcapppy163def" and the gold answer
    "src/app.py" would not be found on a word boundary even in the full conversation. Commas
    are still dropped ("4,417" matches "4417"). Maps characters only, so normalizing a joined
    text equals joining the normalized parts.
    """
    s = s.replace(",", "").lower().translate(_PUNCT_TO_SPACE)
    return " ".join(_ARTICLES.sub(" ", s).split())


def contains(haystack_norm: str, needle: str) -> bool:
    """Is `needle` in the haystack (already `normalize_text`-ed), on word boundaries?

    Word boundaries matter: the gold answer "12" must not be found inside "1234".
    """
    n = normalize_text(needle)
    if not n:
        return False
    return f" {n} " in f" {haystack_norm} "


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stemmed: str = _stemmer().stem(word)
    return stemmed


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def _tokens(s: str) -> list[str]:
    return [_stem(w) for w in normalize_answer(s).split()]


def token_f1(prediction: str, gold: str) -> float:
    p, g = _tokens(prediction), _tokens(gold)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Multi-hop answers list several items: each gold item takes its best-matching prediction."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_f1(prediction: str, gold: str, category: str) -> float:
    """LoCoMo's per-category QA score."""
    if category == "adversarial":
        low = prediction.lower()
        return 1.0 if any(m in low for m in ADVERSARIAL_MARKERS) else 0.0
    if category == "multi-hop":
        return multi_answer_f1(prediction, gold)
    if category == "open-domain":
        gold = gold.split(";")[0]
    return token_f1(prediction, gold)
