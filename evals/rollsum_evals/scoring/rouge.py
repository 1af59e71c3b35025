"""rouge: ROUGE-L of summaries against human reference summaries and against what they replaced.

Against references (LoCoMo session summaries): each reference is compared with the first
summary record whose chain covers all of the reference's messages. Against the replaced span:
each record's own text with the messages it covered, a rough faithfulness signal (recall of the
span's wording). Both are rouge-score's ROUGE-L F-measure with stemming: its tokenizer and
F-measure, with the LCS length computed bit-parallel (Hyyrö 2004) instead of by its O(n·m)
Python table, which took seconds per Unit on long spans. Tests check equality with
`rouge_scorer.RougeScorer`.
"""

from __future__ import annotations

import math
from functools import lru_cache

from rollsum_evals.scoring.base import Column, ScoreInput, Scores

SPAN_CHAR_CAP = 200_000
"""A guard against pathological spans (noted in docs/scoring.md)."""


class _CachedStemmer:
    """rouge-score's Porter stemmer, memoized: chat text repeats the same words constantly."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self._stem = lru_cache(maxsize=200_000)(porter.PorterStemmer().stem)

    def stem(self, word: str) -> str:
        out: str = self._stem(word)
        return out


@lru_cache(maxsize=1)
def _stemmer() -> _CachedStemmer:
    return _CachedStemmer()


def rouge_tokens(text: str) -> list[str]:
    from rouge_score import tokenize

    tokens: list[str] = tokenize.tokenize(text, _stemmer())
    return tokens


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, bit-parallel over `a`."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F-measure of `candidate` against `reference` (rouge-score's definition)."""
    ref, can = rouge_tokens(reference), rouge_tokens(candidate)
    if not ref or not can:
        return 0.0
    lcs = lcs_length(ref, can)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(can), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


class Rouge:
    name = "rouge"
    version = "1"
    needs: frozenset[str] = frozenset()
    unit_columns = (
        Column("rouge_l", "float", math.nan, "ROUGE-L F of summaries vs reference summaries"),
        Column("rouge_l_span", "float", math.nan, "ROUGE-L F of each record vs the messages it replaced"),
    )
    probe_columns = ()

    def score(self, inp: ScoreInput) -> Scores:
        records = inp.trace.summaries
        by_id = {m.id: m for m in inp.trace.messages}
        cumulative: list[set[str]] = []
        seen: set[str] = set()
        for r in records:
            seen = seen | set(r.covered_ids)
            cumulative.append(seen)
        ref_scores: list[float] = []
        for ref in inp.conversation.references:
            need = set(ref.covers)
            for rec, covered in zip(records, cumulative):
                if need and need <= covered:
                    ref_scores.append(rouge_l(ref.text, rec.render()))
                    break
        span_scores: list[float] = []
        for rec in records:
            span = "\n".join(by_id[i].content for i in rec.covered_ids if i in by_id)[:SPAN_CHAR_CAP]
            if span:
                span_scores.append(rouge_l(span, rec.text))
        return Scores(unit={
            "rouge_l": sum(ref_scores) / len(ref_scores) if ref_scores else math.nan,
            "rouge_l_span": sum(span_scores) / len(span_scores) if span_scores else math.nan,
        })
