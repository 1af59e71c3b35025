"""One evaluation of a tune: a few configurations on the first N conversations of every dataset,
run through the normal sweep machinery into a run directory of its own, and read back as the
report reads it.

Why a run directory per evaluation instead of calling the replay directly: every unit then goes
through exactly what `rollsum run` does — unit cache, model cache, budget, executors, resume,
verdicts — so a tuned number means what the same number means in a report, and an evaluation
repeated at a later rung (or by a duplicate trial, or after a kill) costs no replay: the Unit
cache serves it. The truncation grid the gain is measured against is in every evaluation; it is
replayed once per conversation and served from the cache after that.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from rollsum.errors import ConfigError
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.spec.schema import SweepSpec

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class Measured:
    """What a tune needs of one configuration in one evaluation (a row of the report's table)."""

    label: str
    status: str
    reason: str
    gain: float
    gain_low: float
    gain_high: float
    retention: float
    tokens_per_call: float
    calls_per_message: float
    conversations: int

    @property
    def ok(self) -> bool:
        return self.status == "ok" and math.isfinite(self.gain)


def sub_spec(raw: Mapping[str, Any], path: str, configs: Sequence[Mapping[str, Any]], *,
             locomo: str | None, name: str) -> SweepSpec:
    """The spec of one evaluation: the tune spec's datasets, window, scorers and probes with
    these configs and the truncation curve (on whatever the spec or the environment says: the
    gain is measured against it). Parsed by the sweep's own
    parser, so a trial's parameters are checked exactly as a hand-written config's would be.
    Which conversations run is the evaluation's ``only``, not a ``limit``: a limit would pin a
    smaller dataset and give the same conversation other Unit ids (no Unit-cache sharing)."""
    sub = copy.deepcopy({k: v for k, v in raw.items() if k != "tune"})
    sub["name"] = name
    sub["configs"] = [dict(c) for c in configs]
    report = sub.get("report")
    # the gain is measured against the curve: never off here
    sub["report"] = {**(report if isinstance(report, dict) else {}), "truncate_curve": True}
    text = tomli_w.dumps(sub)
    return parse_spec(text, path, locomo=locomo)


def measure(run_dir: Path, labels: Sequence[str], *, n_resamples: int = 1000) -> dict[str, Measured]:
    """The report's per-configuration table for `labels` (status, gain over truncation with its
    interval, retention, tokens per call, summarizer calls per message)."""
    from rollsum_evals import analysis
    run = analysis.load(run_dir)
    table = analysis.config_table(run, n_resamples=n_resamples).set_index("config")
    out: dict[str, Measured] = {}
    for label in labels:
        if label not in table.index:
            raise ConfigError(f"{run_dir}: configuration {label!r} has no row (nothing finished?)")
        row = table.loc[label]
        out[label] = Measured(
            label=label, status=str(row.get("status", "error")), reason=str(row.get("reason", "") or ""),
            gain=_f(row.get("gain")), gain_low=_f(row.get("gain_low")), gain_high=_f(row.get("gain_high")),
            retention=_f(row.get("retention")), tokens_per_call=_f(row.get("main_tokens")),
            calls_per_message=_f(row.get("summarizer_calls_per_message")),
            conversations=int(_f(row.get("n_conversations"), 0.0)))
    return out


def _f(v: Any, default: float = math.nan) -> float:
    try:
        out = float(v)
    except (TypeError, ValueError):
        return default
    return out if math.isfinite(out) else default


def unit_ids(run_dir: Path) -> set[str]:
    """The Units an evaluation's run directory holds (what it cost, cached or not)."""
    from rollsum_evals.rundir.journal import RunDir

    return set(RunDir(run_dir).unit_rows())


__all__ = ["Measured", "measure", "sub_spec", "unit_ids"]
