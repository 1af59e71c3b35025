"""Scorers and their registry: a new scorer is one class in one module plus one line here
(or `register(name, cls)`), or none: a spec names it by import path, ``"package.module:Class"``.

`REGISTRY` is what specs, `rollsum score` and the run format read: `names()` lists the
registered scorers, `get()` builds one (by registered name or import path), `columns()` gives
the columns every run table carries (those of every registered scorer, so two runs scored
differently still line up, then those of the selected scorers named by import path), and
`needs()` says what a selection needs beyond the trace (``model``: build the scoring model).

A scorer named by import path is imported only by the commands that run it (`rollsum run`,
`rollsum score` when it is among the scorers it runs); its version, as `versions` records it in
the manifest and the score cache key, is its ``version`` attribute plus a fingerprint of its
source (`rollsum_evals.spec.imports.code_fingerprint`), so editing it re-scores instead of
serving stale cached scores. Readers (report, compare, regress) take its columns from the
tables and never import it.
"""

from __future__ import annotations

from collections.abc import Iterable

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum.registry import Registry
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

REGISTRY: Registry[type[Scorer]] = Registry("scorer", {
    "answer_retention": AnswerRetention,
    "fact_survival": FactSurvival,
    "cost": Cost,
    "health": Health,
    "qa": QA,
    "rouge": Rouge,
})
"""The scorers a spec can name by name (``scorers = ["NAME"]``); `register` adds one."""


def register(name: str, cls: type[Scorer], *, replace: bool = False) -> None:
    """Make scorer class `cls` reachable as ``scorers = ["NAME"]`` in every spec."""
    REGISTRY.register(name, cls, replace=replace)


ALWAYS: tuple[str, ...] = ("health",)
"""Scorers every plan runs, listed or not: without them a failed or overflowing configuration
would be scored like a healthy one (its columns would hold defaults)."""


def names() -> tuple[str, ...]:
    return REGISTRY.names()


def with_always(selected: Iterable[str]) -> tuple[str, ...]:
    """`selected` plus the `ALWAYS` scorers it does not list, in that order."""
    chosen = tuple(selected)
    return chosen + tuple(n for n in ALWAYS if n not in chosen)


def get(name: str) -> Scorer:
    """A scorer by registered name, or by import path ``"package.module:Class"`` (imported here)."""
    if name in REGISTRY:
        return REGISTRY[name]()
    if not plugins.is_import_path(name):
        raise ConfigError(f"unknown scorer {name!r}: expected one of {', '.join(REGISTRY)} "
                          "or an import path 'package.module:Class'")
    factory = plugins.load(name)
    scorer = plugins.construct(factory, {}, {}, what=f"scorer {name}") if callable(factory) else None
    if not isinstance(scorer, Scorer):
        raise ConfigError(f"scorer {name}: {type(factory).__name__} does not make a Scorer (expected a class "
                          "with name, version, unit_columns, probe_columns, needs and score(inp))")
    return scorer


def versions(selected: Iterable[str]) -> dict[str, str]:
    """Each scorer's version; a scorer named by import path adds its source's fingerprint."""
    from rollsum_evals.spec.imports import code_fingerprint

    return {n: get(n).version + (f"+code:{code_fingerprint([n])[:16]}" if plugins.is_import_path(n) else "")
            for n in selected}


def needs(selected: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for n in selected:
        out |= get(n).needs
    return frozenset(out)


def columns(selected: Iterable[str] = ()) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """(unit columns, probe columns) of every registered scorer, then of `selected` ones that
    are not registered (scorers named by import path)."""
    unit: dict[str, Column] = {}
    probe: dict[str, Column] = {}
    for n in [*REGISTRY, *(s for s in selected if s not in REGISTRY)]:
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


__all__ = [
    "REGISTRY",
    "Ask",
    "Column",
    "ProbeTiming",
    "ScoreInput",
    "Scorer",
    "Scores",
    "ScoringPlan",
    "Shared",
    "columns",
    "get",
    "names",
    "needs",
    "parse_timing",
    "register",
    "schedule_asks",
    "score",
    "versions",
    "with_always",
]


