"""`rollsum regress RUN --baseline reports/baselines/NAME.json`: the nightly gate.

A baseline is a committed JSON file: the dataset hashes and library/scorer versions it was
measured with, and per configuration the retention, cost and main-model tokens with their 95 %
intervals. A run regresses when a configuration's retention falls below the baseline interval's
lower bound minus a small absolute tolerance, or its cost / tokens rise above the upper bound
plus a relative tolerance. Using the interval, not the point estimate, keeps bootstrap noise
from paging anyone; the tolerance absorbs rounding and tiny price-table updates.

The baseline is only rewritten when asked (`--promote`), atomically; every gate run appends one
line to NAME.history.jsonl next to it, which the report turns into a trend plot.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals import analysis
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_num, fmt_usd
from rollsum_evals.rundir.read import Run
from rollsum_evals.stats import DEFAULT_RESAMPLES

log = logging.getLogger(__name__)

BASELINE_FORMAT = 1
GATED_METRICS = ("retention", "cost_usd", "main_input_tokens")
COST_EPSILON = {"cost_usd": 1e-9, "main_input_tokens": 0.5}
"""Absolute slack on top of the relative tolerance, so a zero-cost baseline still compares sanely."""

EXIT_PASS, EXIT_REGRESSION = 0, 1


@dataclass(frozen=True)
class Tolerance:
    retention: float = 0.01
    """Absolute: retention may fall this far below the baseline interval's lower bound."""
    cost: float = 0.05
    """Relative: cost and tokens may rise this fraction above the baseline interval's upper bound."""


@dataclass(frozen=True)
class Check:
    config: str
    metric: str
    baseline: tuple[float, float, float] | None
    """(estimate, low, high) of the baseline, None when the config is new."""
    limit: float | None
    current: float | None
    status: str
    """ok | REGRESSION | MISSING | new | improved"""


@dataclass
class GateResult:
    checks: list[Check]
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.failures) or any(c.status in ("REGRESSION", "MISSING") for c in self.checks)

    @property
    def regressions(self) -> list[str]:
        out = [f"{c.config}: {c.metric} {c.status.lower()}" for c in self.checks
               if c.status in ("REGRESSION", "MISSING")]
        return out + list(self.failures)


def _first_mapping(manifest: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        val = manifest.get(key)
        if isinstance(val, Mapping):
            return {str(k): v for k, v in val.items()}
    return {}


def pins(run: Run) -> dict[str, Any]:
    """What a baseline pins from the manifest: data identity and software versions."""
    m = run.manifest
    versions = _first_mapping(m, "package_versions", "versions", "packages")
    return {
        "dataset_sha256": analysis.dataset_hashes(m),
        "library_version": str(versions.get("rollsum", m.get("rollsum_version", ""))),
        "versions": versions,
        "scorer_versions": _first_mapping(m, "scorer_versions", "scorers"),
        "spec_sha256": str(m.get("spec_sha256", "")),
        "git_sha": str(m.get("git_sha", "")),
    }


def _clean(v: Any) -> float | None:
    f = float(v)
    return None if math.isnan(f) else f


def make_baseline(run: Run, name: str, *, n_resamples: int = DEFAULT_RESAMPLES,
                  now: Callable[[], datetime] = lambda: datetime.now(UTC),
                  table: pd.DataFrame | None = None) -> dict[str, Any]:
    if table is None:
        table = analysis.config_table(run, n_resamples=n_resamples)
    configs: dict[str, Any] = {}
    for r in table.to_dict("records"):
        configs[str(r["config"])] = {
            **{m: {"estimate": _clean(r[m]), "low": _clean(r[f"{m}_low"]), "high": _clean(r[f"{m}_high"])}
               for m in GATED_METRICS},
            "units": int(r["units"]), "probes": int(r["probes"]),
        }
    return {"format": BASELINE_FORMAT, "name": name, "created_at": now().isoformat(timespec="seconds"),
            "run": run.name, **pins(run), "configs": configs}


def read_baseline(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConfigError(f"{path}: baseline not found (create it with --promote)") from err
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: line {err.lineno}: invalid JSON ({err.msg})") from err
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict):
        raise ConfigError(f"{path}: field 'configs': expected an object of per-configuration metrics")
    for cfg, metrics in data["configs"].items():
        for m in GATED_METRICS:
            band = metrics.get(m) if isinstance(metrics, dict) else None
            if not isinstance(band, dict) or not {"estimate", "low", "high"} <= set(band):
                raise ConfigError(f"{path}: configs.{cfg}.{m}: expected {{estimate, low, high}}")
    return data


def _band(b: Mapping[str, Any]) -> tuple[float, float, float]:
    def f(v: Any) -> float:
        return float("nan") if v is None else float(v)
    return f(b["estimate"]), f(b["low"]), f(b["high"])


def check(run: Run, baseline: Mapping[str, Any], *, tolerance: Tolerance = Tolerance(),
          strict: bool = False, n_resamples: int = DEFAULT_RESAMPLES,
          table: pd.DataFrame | None = None) -> GateResult:
    if table is None:
        table = analysis.config_table(run, n_resamples=n_resamples)
    current = {str(r["config"]): r for r in table.to_dict("records")}
    result = GateResult([])
    now_pins = pins(run)
    base_ds, run_ds = baseline.get("dataset_sha256") or {}, now_pins["dataset_sha256"]
    for ds in sorted(set(base_ds) | set(run_ds)):
        if base_ds.get(ds) != run_ds.get(ds):
            msg = (f"dataset {ds!r} hash differs: baseline {str(base_ds.get(ds))[:12]}, "
                   f"run {str(run_ds.get(ds))[:12]} — the numbers may not be comparable")
            (result.failures if strict else result.warnings).append(msg)
    for key in ("library_version", "scorer_versions"):
        if baseline.get(key) not in (None, "", {}) and baseline.get(key) != now_pins[key]:
            result.warnings.append(f"{key} changed: baseline {baseline.get(key)}, run {now_pins[key]}")
    for cfg in sorted(baseline["configs"]):
        metrics = baseline["configs"][cfg]
        if cfg not in current:
            result.checks.append(Check(cfg, "retention", _band(metrics["retention"]), None, None, "MISSING"))
            continue
        row = current[cfg]
        for m in GATED_METRICS:
            est, low, high = _band(metrics[m])
            cur = float(row[m])
            if m == "retention":
                limit = low - tolerance.retention
                status = "REGRESSION" if cur < limit else ("improved" if cur > high else "ok")
            else:
                limit = high * (1 + tolerance.cost) + COST_EPSILON[m]
                status = "REGRESSION" if cur > limit else ("improved" if cur < low else "ok")
            if math.isnan(limit) or math.isnan(cur):
                status = "ok" if math.isnan(est) and math.isnan(cur) else "REGRESSION"
            result.checks.append(Check(cfg, m, (est, low, high), limit, cur, status))
    for cfg in sorted(set(current) - set(baseline["configs"])):
        result.warnings.append(f"configuration {cfg!r} is not in the baseline (not gated; --promote to add)")
    return result


def _f(metric: str, v: float | None) -> str:
    if v is None:
        return "–"
    return fmt_usd(v) if metric == "cost_usd" else fmt_num(v, 0 if "tokens" in metric else 3)


def gate_table(result: GateResult) -> str:
    headers = ["config", "metric", "baseline [95% CI]", "limit", "current", "status"]
    rows = [headers]
    for c in result.checks:
        base = (f"{_f(c.metric, c.baseline[0])} [{_f(c.metric, c.baseline[1])}, {_f(c.metric, c.baseline[2])}]"
                if c.baseline else "–")
        bound = ("≥ " if c.metric == "retention" else "≤ ") + _f(c.metric, c.limit) if c.limit is not None else "–"
        rows.append([c.config, c.metric, base, bound, _f(c.metric, c.current),
                     "MISSING from run" if c.status == "MISSING" else c.status])
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"warning: {w}" for w in result.warnings]
    lines += [f"FAILED: {f}" for f in result.failures]
    n_bad = len(result.regressions)
    lines.append(f"gate: {'FAIL' if result.failed else 'PASS'} ({n_bad} problem(s), "
                 f"{len(result.checks)} check(s))")
    return "\n".join(lines)


def history_path(baseline_path: Path) -> Path:
    name = baseline_path.name.removesuffix(".json")
    return baseline_path.with_name(f"{name}.history.jsonl")


def append_history(path: Path, entry: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def history_entry(run: Run, baseline_name: str, result: GateResult | None,
                  new: Mapping[str, Any], when: datetime, promoted: bool) -> dict[str, Any]:
    return {
        "time": when.isoformat(timespec="seconds"), "run": run.name, "baseline": baseline_name,
        "git_sha": str(run.manifest.get("git_sha", "")),
        "status": "new" if result is None else ("fail" if result.failed else "pass"),
        "promoted": promoted,
        "configs": {cfg: {m: v[m]["estimate"] for m in GATED_METRICS} for cfg, v in new["configs"].items()},
        "problems": [] if result is None else result.regressions,
    }


def regress(run_dir: str | os.PathLike[str], baseline_path: str | os.PathLike[str], *, promote: bool = False,
            tolerance: Tolerance = Tolerance(), strict: bool = False, n_resamples: int = DEFAULT_RESAMPLES,
            now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> tuple[int, str]:
    """Run the gate; return (exit code, the table to print).

    With `promote`, the comparison is still printed and logged, then the run becomes the new
    baseline and the exit code is 0: promoting is the explicit act of accepting the numbers.
    """
    run = analysis.load(run_dir)
    path = Path(baseline_path)
    name = path.name.removesuffix(".json")
    when = now()
    table = analysis.config_table(run, n_resamples=n_resamples)
    new = make_baseline(run, name, now=lambda: when, table=table)
    result: GateResult | None = None
    if path.exists() or not promote:
        result = check(run, read_baseline(path), tolerance=tolerance, strict=strict, table=table)
    append_history(history_path(path), history_entry(run, name, result, new, when, promote))
    text = gate_table(result) if result is not None else f"no baseline at {path} yet"
    if promote:
        atomic_write_text(path, json.dumps(new, indent=2, sort_keys=True) + "\n")
        text += f"\npromoted: {path} now holds {len(new['configs'])} configuration(s) from run {run.name}"
        return EXIT_PASS, text
    assert result is not None
    return (EXIT_REGRESSION if result.failed else EXIT_PASS), text
