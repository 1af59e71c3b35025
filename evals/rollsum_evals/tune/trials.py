"""A tune's trials as records, and the picks made from them (best, Pareto set, final run).

Pure functions over `TrialRecord`s: what `tune.json` lists, what `tune.md` ranks, and which
configurations the final run re-scores. Kept apart from the search loop (`tune.search`) so the
rules that decide "best" can be read and tested without Optuna or a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum_evals.tune.evaluate import Measured

FINAL_RUN = "run"
"""The tuned configurations' final run, a directory under the tuning output."""


@dataclass(slots=True)
class TrialRecord:
    """One trial as `tune.json` lists it."""

    number: int
    preset: str
    params: dict[str, Any]
    label: str
    state: str
    """complete, pruned (stopped at a rung), infeasible (status or constraints), failed (could
    not be built or run), budget (stopped by --max-units)."""
    conversations: int = 0
    """Conversations per dataset of the last rung it reached (the first ones of each dataset)."""
    gain: float = math.nan
    gain_low: float = math.nan
    gain_high: float = math.nan
    retention: float = math.nan
    tokens_per_call: float = math.nan
    calls_per_message: float = math.nan
    status: str = ""
    reason: str = ""
    prompt: str = ""
    model: str = ""
    units_after: int = 0
    """Units evaluated by the whole tune when this trial ended (the convergence plot's x)."""

    @property
    def feasible(self) -> bool:
        return self.state == "complete"


def fill(record: TrialRecord, m: Measured, conversations: int) -> None:
    record.conversations = conversations
    record.gain, record.gain_low, record.gain_high = m.gain, m.gain_low, m.gain_high
    record.retention, record.tokens_per_call, record.calls_per_message = m.retention, m.tokens_per_call, \
        m.calls_per_message
    record.status = m.status


def jsonable(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def records(study: Any) -> list[TrialRecord]:
    """Every ended trial's record, by trial number (a trial still running has none)."""
    out = []
    for t in study.get_trials(deepcopy=False):
        rec = t.user_attrs.get("record")
        if not rec:
            continue
        fields: dict[str, Any] = {k: (math.nan if v is None and k in _FLOATS else v) for k, v in rec.items()}
        out.append(TrialRecord(**fields))
    return sorted(out, key=lambda r: r.number)


_FLOATS = {"gain", "gain_low", "gain_high", "retention", "tokens_per_call", "calls_per_message"}


# ----------------------------------------------------------------------------------------------
# picking


def best_of(trials: Sequence[TrialRecord]) -> TrialRecord | None:
    """The feasible trial evaluated on every conversation with the highest gain (ties: fewer
    tokens, then the earlier trial)."""
    full = [t for t in trials if t.feasible and math.isfinite(t.gain)]
    if not full:
        return None
    return min(full, key=lambda t: (-t.gain, t.tokens_per_call, t.number))


def pareto_of(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Feasible, fully evaluated trials no other beats on both retention and tokens per call
    (one per label), cheapest first."""
    full = {t.label: t for t in sorted(trials, key=lambda t: t.number) if t.feasible
            and math.isfinite(t.retention) and math.isfinite(t.tokens_per_call)}
    pts = list(full.values())
    front = [t for t in pts if not any(
        (o.retention >= t.retention and o.tokens_per_call <= t.tokens_per_call)
        and (o.retention > t.retention or o.tokens_per_call < t.tokens_per_call) for o in pts)]
    return sorted(front, key=lambda t: (t.tokens_per_call, -t.retention))


def final_configs(trials: Sequence[TrialRecord], top: int) -> list[TrialRecord]:
    ranked = sorted((t for t in trials if t.feasible and math.isfinite(t.gain)),
                    key=lambda t: (-t.gain, t.tokens_per_call, t.number))
    chosen: dict[str, TrialRecord] = {}
    for t in [*ranked[:top], *pareto_of(trials)]:
        chosen.setdefault(t.label, t)
    return list(chosen.values())


__all__ = ["TrialRecord", "best_of", "fill", "final_configs", "jsonable", "pareto_of", "records"]


@dataclass(slots=True)
class TuneResult:
    """What `rollsum tune` found (`tune.search.run_tune`), written out by `tune.output`."""

    out: Path
    best: TrialRecord | None
    pareto: list[TrialRecord]
    trials: list[TrialRecord]
    units_evaluated: int
    units_full_grid: int
    grid_configs: int
    final: dict[str, Measured] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    rungs: list[int] = field(default_factory=list)
    tokens: str = "main tokens / call"
    """What `tokens_per_call` is, in the report's words (`analysis.pairing_of`): main-model tokens
    per call under sampled asks, the context at the asking turns ("main tokens at asks") under a
    chosen-moment probe timing."""
