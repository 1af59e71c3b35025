"""Scorers and their registry.

A scorer is one class in one module plus one line in `_REGISTRY`. Each has a `version` that is
part of every Unit's id: changing how a number is computed makes old results visibly different
Units instead of silently mixing with new ones.
"""

from __future__ import annotations

from collections.abc import Iterable

from rollsum_evals.scoring.answer_retention import AnswerRetention
from rollsum_evals.scoring.base import ScoreContext, Scorer, Scores, merge
from rollsum_evals.scoring.cost import Cost
from rollsum_evals.scoring.fact_survival import FactSurvival
from rollsum_evals.scoring.qa import QA
from rollsum_evals.scoring.rouge import Rouge
from rollsum.errors import ConfigError

_REGISTRY: dict[str, type[Scorer]] = {
    "answer_retention": AnswerRetention,
    "fact_survival": FactSurvival,
    "cost": Cost,
    "qa": QA,
    "rouge": Rouge,
}


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(name: str) -> Scorer:
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ConfigError(f"unknown scorer {name!r}: expected one of {', '.join(_REGISTRY)}") from None


def versions(selected: Iterable[str]) -> dict[str, str]:
    return {n: get(n).version for n in selected}


def score_all(selected: Iterable[str], ctx: ScoreContext) -> Scores:
    out = Scores()
    for n in selected:
        merge(out, get(n).score(ctx))
    return out


__all__ = ["ScoreContext", "Scorer", "Scores", "get", "names", "score_all", "versions"]
