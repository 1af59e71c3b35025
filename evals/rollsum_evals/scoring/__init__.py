"""Scorers and their registry: a new scorer is one class in one module plus one line here.

The registry is what specs, `rollsum score` and the run format read: `names()` validates a
spec's ``scorers``, `get()` builds one, `columns()` gives the columns every run table carries
(those of every registered scorer, so two runs scored differently still line up), and
`needs()` says what a selection needs beyond the trace (``model``: build the scoring model).
"""

from __future__ import annotations

from collections.abc import Iterable

from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay.trace import Trace
from rollsum_evals.scoring.answer_retention import AnswerRetention
from rollsum_evals.scoring.asks import Ask, ProbeTiming, parse_timing, schedule_asks
from rollsum_evals.scoring.base import Column, ScoreInput, Scorer, Scores, ScoringPlan, merge
from rollsum_evals.scoring.cost import Cost
from rollsum_evals.scoring.fact_survival import FactSurvival
from rollsum_evals.scoring.health import Health
from rollsum_evals.scoring.qa import QA
from rollsum_evals.scoring.rouge import Rouge
from rollsum_evals.scoring.views import ContextViews, Shared
from rollsum_evals.units import Unit

_REGISTRY: dict[str, type[Scorer]] = {
    "answer_retention": AnswerRetention,
    "fact_survival": FactSurvival,
    "cost": Cost,
    "health": Health,
    "qa": QA,
    "rouge": Rouge,
}


ALWAYS: tuple[str, ...] = ("health",)
"""Scorers every plan runs, listed or not: without them a failed or overflowing configuration
would be scored like a healthy one (its columns would hold defaults)."""


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def with_always(selected: Iterable[str]) -> tuple[str, ...]:
    """`selected` plus the `ALWAYS` scorers it does not list, in that order."""
    chosen = tuple(selected)
    return chosen + tuple(n for n in ALWAYS if n not in chosen)


def get(name: str) -> Scorer:
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ConfigError(f"unknown scorer {name!r}: expected one of {', '.join(_REGISTRY)}") from None


def versions(selected: Iterable[str]) -> dict[str, str]:
    return {n: get(n).version for n in selected}


def needs(selected: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for n in selected:
        out |= get(n).needs
    return frozenset(out)


def columns(selected: Iterable[str] = ()) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """(unit columns, probe columns) of every registered scorer, then of `selected` ones that
    are not registered (none today: the hook for scorers plugged in by import path)."""
    unit: dict[str, Column] = {}
    probe: dict[str, Column] = {}
    for n in [*_REGISTRY, *selected]:
        s = get(n)
        for c in s.unit_columns:
            unit.setdefault(c.name, c)
        for c in s.probe_columns:
            probe.setdefault(c.name, c)
    return tuple(unit.values()), tuple(probe.values())


def score(plan: ScoringPlan, unit: Unit, conversation: Conversation, trace: Trace,
          model: Model | None = None, *, shared: Shared | None = None,
          judge_model: Model | None = None) -> tuple[list[Ask], Scores]:
    """Every selected scorer over one trace: the asks the plan's timing makes, and the columns.
    `shared` holds caches the caller may share between Units of one conversation."""
    asks = schedule_asks(conversation.probes, trace.messages, plan.timing)
    shared = shared if shared is not None else Shared()
    inp = ScoreInput(unit=unit, conversation=conversation, trace=trace, asks=asks, plan=plan,
                     model=model, views=ContextViews(trace, shared.normalized), shared=shared,
                     judge_model=judge_model)
    out = Scores()
    for n in plan.scorers:
        merge(out, get(n).score(inp))
    return asks, out


__all__ = ["Ask", "Column", "ProbeTiming", "ScoreInput", "Scorer", "Scores", "ScoringPlan", "Shared",
           "columns", "get", "names", "needs", "parse_timing", "schedule_asks", "score", "versions",
           "with_always"]


