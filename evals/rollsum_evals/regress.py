"""`rollsum regress RUN --baseline reports/baselines/NAME.json`: the nightly gate.

A baseline is a committed JSON file: the dataset hashes and library/scorer versions it was
measured with, and per configuration its verdict (status, flags), its retention, cost and
main-model tokens with their 95 % intervals, and **every answerable ask's verdict** (retained or
lost, per conversation, in a fixed ask order).

How a configuration is gated depends on whether its replay is deterministic
(`components.of_config(preset, model).deterministic`: offline summarizers, baselines, `fake:`):

- **Deterministic: paired per ask.** The same code on the same data gives the same verdict on
  every ask, so there is no noise to tolerate: the run's verdicts are compared with the
  baseline's ask by ask (same probe, same asking turn). The gate fails when the *net* number of
  retained asks lost (lost − gained, over the asks paired in both) exceeds `Tolerance.asks` of
  the configuration's answerable asks, or when as many asks cannot be paired at all (the
  probes, their timing or what counts as answerable changed: the baseline no longer describes
  the run). Cost and main-model tokens
  are compared as means over the same conversations. A between-conversation interval would be
  the wrong yardstick here: it measures how conversations differ, not how runs differ, and a
  bug that loses one fact in twenty hides inside it (issue #9: removing summaries from the
  context passed).
- **Non-deterministic** (a real model): the run's retention must stay above the baseline
  interval's lower bound minus `Tolerance.retention`, cost and tokens below its upper bound plus
  `Tolerance.cost`. With fewer than `stats.MIN_CONVERSATIONS` conversations there is no
  interval, and the gate fails rather than guess.

For every configuration: a status that was ``ok`` in the baseline and is not now (degraded,
broken, infeasible, error) fails, and a configuration missing from the run fails. A baseline
that shares no dataset or no ranked configuration with the run (`mismatch`) was made from
another spec: refused as a user mistake (`ConfigError`, exit 2), never gated into a FAIL.

The baseline is only rewritten when asked (`--promote`), atomically; the gate writes nothing
else unless asked (`--record-history` appends one line to NAME.history.jsonl beside the
baseline, which the report turns into a trend plot).

Over ~400 lines because the gate has two rules (paired asks for deterministic replays, intervals
for real models) and a baseline format it must check value by value before trusting it;
the baseline's validation is most of the length.
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
from rollsum.params import Range, check_number
from rollsum.safejson import JSONInputError, loads
from rollsum_evals import analysis
from rollsum_evals.coverage import coverage, low_coverage_line, summary_line
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_num, fmt_usd, text_table
from rollsum_evals.gain import is_curve
from rollsum_evals.rundir.read import Run
from rollsum_evals.rundir.status import FINISHED
from rollsum_evals.scoring import ALWAYS
from rollsum_evals.stats import DEFAULT_RESAMPLES, MIN_CONVERSATIONS, not_enough
from rollsum_evals.verdicts import DEFAULT_THRESHOLDS, OK, Thresholds

log = logging.getLogger(__name__)

BASELINE_FORMAT = 2
BANDED = ("retention", "cost_usd", "main_tokens", "main_input_tokens")
"""Per-configuration figures stored as {estimate, low, high}."""
COSTS = ("cost_usd", "main_tokens", "main_input_tokens")
COST_EPSILON = {"cost_usd": 1e-9, "main_tokens": 0.5, "main_input_tokens": 0.5}
"""Absolute slack on top of the relative tolerance, so a zero-cost baseline still compares sanely."""
RETAINED, LOST, NOT_ANSWERABLE, ABSENT = "1", "0", "-", "?"
"""One character per ask in a baseline's `verdicts` strings (ABSENT only ever in a run)."""

EXIT_PASS, EXIT_REGRESSION = 0, 1


@dataclass(frozen=True)
class Tolerance:
    asks: float = 0.002
    """Deterministic configurations: the net loss of retained asks (lost − gained) may be at most
    this share of the configuration's answerable asks (and as many may fail to pair). An
    unchanged re-run loses exactly 0; the smallest injected bug we test (since-last keep_last
    10 → 8) loses 0.6 % net on the nightly; 0.2 % (3 of the nightly's 1,964 asks per
    configuration) only absorbs floating-point tie-breaks that differ across machines, which
    churn asks both ways and net to about zero (docs/scoring.md, "The gate")."""
    retention: float = 0.01
    """Non-deterministic configurations: retention may fall this far (absolute) below the
    baseline interval's lower bound."""
    cost: float = 0.05
    """Relative: cost and tokens may rise this fraction above the baseline (deterministic: its
    mean; otherwise its interval's upper bound)."""


DEFAULT_TOLERANCE = Tolerance()


@dataclass(frozen=True)
class Check:
    config: str
    metric: str
    baseline: str
    limit: str
    current: str
    status: str
    """ok | REGRESSION | MISSING | improved"""


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


# ---------------------------------------------------------------------------------------------
# What a baseline pins


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
    spec = m.get("spec")
    return {
        "spec": str(spec.get("name", "")) if isinstance(spec, Mapping) else "",
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


def conversation_key(frame: pd.DataFrame) -> pd.Series:
    """dataset/conversation/seed: one Unit of a configuration."""
    seed = frame["seed"].astype(str) if "seed" in frame.columns else pd.Series("0", index=frame.index)
    return analysis.cluster_key(frame) + "/" + seed


Marks = dict[str, dict[str, dict[str, str]]]
"""config -> conversation key -> ask key -> RETAINED / LOST / NOT_ANSWERABLE (`ask_verdicts`)."""


def ask_verdicts(run: Run) -> Marks:
    """config -> conversation key -> ask key (`probe_id@asked_turn`) -> RETAINED / LOST /
    NOT_ANSWERABLE, for every ask of every finished Unit."""
    probes = analysis.ok_probes(run)
    out: Marks = {}
    if probes.empty:
        return out
    conv = conversation_key(probes)
    ask = probes["probe_id"].astype(str) + "@" + probes["asked_turn"].astype(str)
    mark = probes["retained"].gt(0.5).map({True: RETAINED, False: LOST}).where(probes["answerable"], NOT_ANSWERABLE)
    for cfg, c, a, v in zip(probes["config"].astype(str), conv, ask, mark):
        out.setdefault(cfg, {}).setdefault(c, {})[a] = v
    return out


def make_baseline(run: Run, name: str, *, n_resamples: int = DEFAULT_RESAMPLES,
                  now: Callable[[], datetime] = lambda: datetime.now(UTC),
                  table: pd.DataFrame | None = None, thresholds: Thresholds = DEFAULT_THRESHOLDS,
                  marks: Marks | None = None) -> dict[str, Any]:
    """`table` and `marks` (`analysis.config_table`, `ask_verdicts`): the run's, when the caller
    has them already."""
    if table is None:
        table = analysis.config_table(run, thresholds=thresholds, n_resamples=n_resamples)
    verdicts = ask_verdicts(run) if marks is None else marks
    asks: dict[str, list[str]] = {}
    for per_conv in verdicts.values():
        for conv, conv_marks in per_conv.items():
            asks[conv] = sorted(set(asks.get(conv, [])) | set(conv_marks))
    configs: dict[str, Any] = {}
    for r in table.to_dict("records"):
        cfg = str(r["config"])
        mine = verdicts.get(cfg, {})
        configs[cfg] = {
            **{m: {"estimate": _clean(r[m]), "low": _clean(r[f"{m}_low"]), "high": _clean(r[f"{m}_high"])}
               for m in BANDED},
            "status": str(r["status"]), "flags": [f for f in str(r["flags"]).split(";") if f],
            "deterministic": bool(r["deterministic"]), "units": int(r["n_units"]),
            "conversations": int(r["n_conversations"]), "probes": int(r["n_probes"]),
            "verdicts": {conv: "".join(mine[conv].get(a, NOT_ANSWERABLE) for a in keys)
                         for conv, keys in sorted(asks.items()) if conv in mine},
        }
    return {"format": BASELINE_FORMAT, "name": name, "created_at": now().isoformat(timespec="seconds"),
            "run": run.name, **pins(run), "thresholds": thresholds.to_dict(), "asks": asks, "configs": configs}


def read_baseline(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise ConfigError(f"{path}: baseline not found (create it with --promote)") from err
    except IsADirectoryError:
        raise ConfigError(f"{path}: a directory (expected a baseline JSON file, e.g. "
                          "reports/baselines/nightly.json)") from None
    if not raw.strip():
        raise ConfigError(f"{path}: the file is empty (expected a baseline JSON object; create it with --promote)")
    try:
        data = loads(raw)
    except JSONInputError as err:
        where = f"{err.line}: invalid JSON (" if err.line is not None else " not usable JSON ("
        raise ConfigError(f"{path}:{where}{err.message})") from None
    if not isinstance(data, dict):
        got = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
            type(data), "null")
        raise ConfigError(f"{path}: expected a baseline JSON object (format, configs, asks, ...), got {got}")
    if not isinstance(data.get("configs"), dict):
        raise ConfigError(f"{path}: field 'configs': expected an object of per-configuration metrics")
    if data.get("format") != BASELINE_FORMAT:
        raise ConfigError(f"{path}: baseline format {data.get('format')}, this gate reads format "
                          f"{BASELINE_FORMAT} (per-ask verdicts); re-promote it from a run: "
                          f"rollsum regress RUN --baseline {path} --promote")
    if not isinstance(data.get("asks"), dict):
        raise ConfigError(f"{path}: field 'asks': expected an object of conversation -> ask keys")
    problem = _baseline_problem(data)
    if problem is not None:
        raise ConfigError(f"{path}: {problem}")
    return data


def _baseline_problem(data: Mapping[str, Any]) -> str | None:
    """The first value of a baseline that the gate could not use as it reads it (a hand-edited
    or truncated baseline must fail in one line, never pass or crash the gate)."""
    if not data["configs"]:
        return "field 'configs': expected at least one configuration (an empty baseline would pass any run)"
    for conv, keys in data["asks"].items():
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return f"field asks.{conv}: expected a list of ask keys, got {keys!r}"
    thresholds = data.get("thresholds") or {}
    if not isinstance(thresholds, dict):
        return f"field 'thresholds': expected an object, got {thresholds!r}"
    known = set(DEFAULT_THRESHOLDS.to_dict())
    for key, value in thresholds.items():
        if key not in known:
            return f"field thresholds.{key}: expected one of {', '.join(sorted(known))}"
        if check_number(value, integer=False, range=Range(0)) is not None:
            return f"field thresholds.{key}: expected a number >= 0, got {value!r}"
    if not isinstance(data.get("dataset_sha256") or {}, dict):
        return f"field 'dataset_sha256': expected an object, got {data.get('dataset_sha256')!r}"
    for cfg, metrics in data["configs"].items():
        found = _config_problem(metrics)
        if found is not None:
            return f"field configs.{cfg}{found}"
    return None


def _config_problem(metrics: Any) -> str | None:
    if not isinstance(metrics, dict):
        return f": expected an object, got {metrics!r}"
    for m in BANDED:
        band = metrics.get(m)
        if not isinstance(band, dict) or not {"estimate", "low", "high"} <= set(band):
            return f".{m}: expected {{estimate, low, high}}"
        for key in ("estimate", "low", "high"):
            if band[key] is not None and check_number(band[key], integer=False) is not None:
                return f".{m}.{key}: expected a finite number or null, got {band[key]!r}"
    for key in ("status", "verdicts", "deterministic"):
        if key not in metrics:
            return f".{key}: missing"
    if not isinstance(metrics["status"], str):
        return f".status: expected a string, got {metrics['status']!r}"
    if not isinstance(metrics["deterministic"], bool):
        return f".deterministic: expected true or false, got {metrics['deterministic']!r}"
    verdicts = metrics["verdicts"]
    marks = {RETAINED, LOST, NOT_ANSWERABLE}
    if not isinstance(verdicts, dict) or not all(isinstance(v, str) and set(v) <= marks for v in verdicts.values()):
        return (f".verdicts: expected an object of conversation -> a string of {RETAINED} (retained), {LOST} (lost), "
                f"{NOT_ANSWERABLE} (not answerable) per ask")
    for key in ("units", "conversations", "probes"):
        if key in metrics and check_number(metrics[key], integer=True, range=Range(0)) is not None:
            return f".{key}: expected a count >= 0, got {metrics[key]!r}"
    if not isinstance(metrics.get("flags", []), list):
        return f".flags: expected a list, got {metrics['flags']!r}"
    return None


def _names(items: Any, most: int = 3) -> str:
    names = sorted(str(i) for i in items)
    return ", ".join(names[:most]) + (f", +{len(names) - most} more" if len(names) > most else "") or "none"


def _side(spec: Any, datasets: Any, ranked: Any) -> str:
    return (f"spec {str(spec)!r} " if spec else "") + f"(datasets {_names(datasets)}; {len(ranked)} configurations: " \
        f"{_names(ranked)})"


def mismatch(run: Run, baseline: Mapping[str, Any], configs: Any) -> str | None:
    """Why this baseline cannot gate this run at all, or None. A baseline made from another
    spec shares no dataset, or no configuration the report ranks (the truncate curve is the
    yardstick, not a configuration): every check would fail, and the failure would be a user
    mistake (the wrong --baseline), not a regression. Partial overlap is the gate's business: a
    configuration or dataset dropped from the run fails it, a new one is a warning."""
    now = pins(run)
    base_ds, run_ds = set(baseline.get("dataset_sha256") or {}), set(now["dataset_sha256"])
    base_cfg = {c for c in baseline["configs"] if not is_curve(c)}
    run_cfg = {c for c in configs if not is_curve(c)}
    no_dataset = bool(base_ds and run_ds and not base_ds & run_ds)
    if not no_dataset and not (base_cfg and run_cfg and not base_cfg & run_cfg):
        return None
    return (f"made from another spec, {'no dataset' if no_dataset else 'no configuration'} in common: the "
            f"baseline is {_side(baseline.get('spec'), base_ds, base_cfg)}, this run is "
            f"{_side(now['spec'], run_ds, run_cfg)}")


def _band(b: Mapping[str, Any]) -> tuple[float, float, float]:
    def f(v: Any) -> float:
        return math.nan if v is None else float(v)
    return f(b["estimate"]), f(b["low"]), f(b["high"])


# ---------------------------------------------------------------------------------------------
# The checks


@dataclass(frozen=True)
class Paired:
    """A configuration's asks, run against baseline, ask by ask."""

    answerable: int
    """Asks answerable in the baseline (the denominator of the tolerance)."""
    lost: int
    """Retained in the baseline, lost now (asks paired in both only)."""
    gained: int
    """Lost in the baseline, retained now."""
    unpaired: int
    """Answerable in the baseline, but absent from the run or not answerable in it."""
    retained_before: int
    retained_now: int

    @property
    def net_loss(self) -> int:
        return self.lost - self.gained


def pair_asks(baseline_asks: Mapping[str, list[str]], baseline_marks: Mapping[str, str],
              run_marks: Mapping[str, Mapping[str, str]]) -> Paired:
    answerable = lost = gained = unpaired = before = now = 0
    for conv, marks in baseline_marks.items():
        keys = baseline_asks.get(conv, [])
        current = run_marks.get(conv, {})
        for key, b in zip(keys, marks):
            if b == NOT_ANSWERABLE:
                continue
            answerable += 1
            r = current.get(key, ABSENT)
            before += b == RETAINED
            now += r == RETAINED
            if r not in (RETAINED, LOST):
                unpaired += 1
            elif b == RETAINED and r == LOST:
                lost += 1
            elif b == LOST and r == RETAINED:
                gained += 1
    return Paired(answerable, lost, gained, unpaired, before, now)


def _paired_checks(cfg: str, base: Mapping[str, Any], asks: Mapping[str, list[str]],
                   run_marks: Mapping[str, Mapping[str, str]], tolerance: Tolerance) -> list[Check]:
    p = pair_asks(asks, base["verdicts"], run_marks)
    allowed = math.floor(tolerance.asks * p.answerable)
    share = f"{p.retained_before / p.answerable:.3f}" if p.answerable else "n/a"
    now = f"{p.retained_now / p.answerable:.3f}" if p.answerable else "n/a"
    status = "REGRESSION" if p.net_loss > allowed else ("improved" if -p.net_loss > allowed else "ok")
    checks = [Check(cfg, f"retention (paired, {p.answerable:,} asks)", f"{share} ({p.retained_before:,} retained)",
                    f"net loss ≤ {allowed:,}", f"{now}: lost {p.lost:,}, gained {p.gained:,} (net "
                    f"{-p.net_loss:+,})", status)]
    if p.unpaired:
        checks.append(Check(cfg, "asks paired", f"{p.answerable:,}", f"unpaired ≤ {allowed:,}",
                            f"{p.unpaired:,} not in the run or no longer answerable",
                            "REGRESSION" if p.unpaired > allowed else "ok"))
    return checks


def _cost_check(cfg: str, metric: str, band: tuple[float, float, float], cur: float, deterministic: bool,
                tolerance: Tolerance) -> Check:
    est, low, high = band
    ref = est if deterministic else high
    limit = ref * (1 + tolerance.cost) + COST_EPSILON[metric]
    if math.isnan(est) and math.isnan(cur):
        status = "ok"
    elif math.isnan(limit) or math.isnan(cur):
        status = "REGRESSION"
    else:
        floor = (est if deterministic else low) * (1 - tolerance.cost)
        status = "REGRESSION" if cur > limit else ("improved" if cur < floor else "ok")
    shown = _f(metric, est) if deterministic else f"{_f(metric, est)} [{_f(metric, low)}, {_f(metric, high)}]"
    return Check(cfg, metric, shown, f"≤ {_f(metric, limit)}", _f(metric, cur), status)


def _interval_check(cfg: str, band: tuple[float, float, float], cur: float, clusters: int,
                    tolerance: Tolerance) -> Check:
    est, low, high = band
    shown = f"{_f('retention', est)} [{_f('retention', low)}, {_f('retention', high)}]"
    if math.isnan(low) or clusters < MIN_CONVERSATIONS:
        return Check(cfg, "retention (interval)", shown, "–",
                     f"{_f('retention', cur)}: {not_enough(clusters)} to gate a non-deterministic model",
                     "REGRESSION")
    limit = low - tolerance.retention
    if math.isnan(cur):
        status = "ok" if math.isnan(est) else "REGRESSION"
    else:
        status = "REGRESSION" if cur < limit else ("improved" if cur > high else "ok")
    return Check(cfg, "retention (interval)", shown, f"≥ {_f('retention', limit)}", _f("retention", cur), status)


GATED_BY: Mapping[str, tuple[str, ...]] = {"answer_retention": ("retention",), "cost": COSTS}
"""The scorer behind each gated figure. A run scored again without one (`rollsum score --scorers`)
has no such figure: compared anyway, its zeros read as "improved" and its blanks as regressions."""


def _unscored(baseline: Mapping[str, Any], now: Mapping[str, Any]) -> set[str]:
    """Scorers the baseline was scored with and the run was not (by the manifests' versions)."""
    base, run = set(baseline.get("scorer_versions") or {}), set(now.get("scorer_versions") or {})
    if not run:  # a manifest that names no scorers says nothing either way
        return set()
    return {s for s in GATED_BY if s in base and s not in run}


def check(run: Run, baseline: Mapping[str, Any], *, tolerance: Tolerance = DEFAULT_TOLERANCE,
          strict: bool = False, n_resamples: int = DEFAULT_RESAMPLES,
          table: pd.DataFrame | None = None, marks: Marks | None = None) -> GateResult:
    thresholds = Thresholds(**(baseline.get("thresholds") or {}))
    if table is None:
        table = analysis.config_table(run, thresholds=thresholds, n_resamples=n_resamples)
    current = {str(r["config"]): r for r in table.to_dict("records")}
    if marks is None:
        marks = ask_verdicts(run)
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
    unscored = _unscored(baseline, now_pins)
    for scorer in sorted(unscored):
        result.failures.append(
            f"{scorer} was not scored in this run (the baseline was): {', '.join(GATED_BY[scorer])} cannot be "
            f"gated; score the run again with it (rollsum score RUN --scorers "
            f"{','.join(sorted(set(baseline.get('scorer_versions') or {}) - set(ALWAYS)))})")
    for cfg in sorted(baseline["configs"]):
        base = baseline["configs"][cfg]
        if cfg not in current:
            result.checks.append(Check(cfg, "configuration", "present", "present", "missing", "MISSING"))
            continue
        row = current[cfg]
        was, now = str(base["status"]), str(row["status"])
        if was == OK and now != OK:
            result.checks.append(Check(cfg, "status", was, OK, f"{now}: {row['reason']}", "REGRESSION"))
        elif was != now:
            result.checks.append(Check(cfg, "status", was, "–", now, "improved" if now == OK else "ok"))
        deterministic = bool(base["deterministic"]) and bool(row["deterministic"])
        if "answer_retention" in unscored:
            pass  # its failure above says why: no retention to compare
        elif deterministic:
            result.checks += _paired_checks(cfg, base, baseline["asks"], marks.get(cfg, {}), tolerance)
        else:
            result.checks.append(_interval_check(cfg, _band(base["retention"]), float(row["retention"]),
                                                 int(row["n_conversations"]), tolerance))
        for m in () if "cost" in unscored else COSTS:
            band = _band(base[m])
            if math.isnan(band[0]) and math.isnan(float(row[m])):
                continue
            result.checks.append(_cost_check(cfg, m, band, float(row[m]), deterministic, tolerance))
    for cfg in sorted(set(current) - set(baseline["configs"])):
        result.warnings.append(f"configuration {cfg!r} is not in the baseline (not gated; --promote to add)")
    return result


# ---------------------------------------------------------------------------------------------
# Output


def _f(metric: str, v: float | None) -> str:
    if v is None:
        return "–"
    return fmt_usd(v) if metric == "cost_usd" else fmt_num(v, 0 if "tokens" in metric else 3)


def gate_table(result: GateResult) -> str:
    headers = ["config", "check", "baseline", "limit", "current", "status"]
    lines = text_table(headers, ([c.config, c.metric, c.baseline, c.limit, c.current,
                                  "MISSING from run" if c.status == "MISSING" else c.status] for c in result.checks))
    lines += [f"warning: {w}" for w in result.warnings]
    lines += [f"FAILED: {f}" for f in result.failures]
    n_bad = len(result.regressions)
    lines.append(f"gate: {'FAIL' if result.failed else 'PASS'} ({n_bad} problem(s), "
                 f"{len(result.checks)} check(s))")
    return "\n".join(lines)


def coverage_lines(run: Run, table: pd.DataFrame) -> list[str]:
    """What the gated retention counts, per category (`coverage`): one line when every gated
    configuration counts the same asks, else one per configuration. Display only: coverage is
    not gated (the paired-ask check already fails when what counts as answerable changes)."""
    probes = analysis.ok_probes(run)
    if probes.empty or table.empty:
        return []
    configs = [str(c) for c, curve in zip(table["config"], table.get("curve", [False] * len(table))) if not curve]
    lines = {c: summary_line(probes[probes["config"].astype(str) == c]) for c in configs}
    if len(set(lines.values())) == 1:
        return [f"{next(iter(lines.values()))} (every configuration)", *_low(next(iter(lines)), probes)]
    return [f"{c}: {line}" for c, line in lines.items()] + _low(configs[0], probes)


def _low(config: str, probes: pd.DataFrame) -> list[str]:
    line = low_coverage_line(coverage(probes[probes["config"].astype(str) == config]))
    return [f"warning: {line}"] if line else []


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
        "configs": {cfg: {**{m: v[m]["estimate"] for m in BANDED}, "status": v["status"]}
                    for cfg, v in new["configs"].items()},
        "problems": [] if result is None else result.regressions,
    }


def _counted(configs: Mapping[str, Any]) -> str:
    """How many configurations a baseline holds, the truncate curve the harness adds counted
    apart, in `rollsum init`'s words: "configurations" are the ones the report ranks."""
    curve = sum(1 for c in configs if is_curve(c))
    text = f"{len(configs) - curve} configurations"
    return text + (f" + {curve} truncation-curve points" if curve else "")


def _check_finished(run: Run, baseline: Path) -> None:
    """Only a finished run becomes the baseline. A nightly killed after 4 of 160 Units (or
    stopped by its budget) promoted as it stands would gate only what happened to finish, from
    then on, and say "promoted" with exit 0: the missing configurations would never be checked
    again."""
    status = str(run.manifest.get("status") or "running")
    if status == FINISHED:
        return
    total = int(run.manifest.get("units_total") or 0)
    spec = run.manifest.get("spec_path") or "SPEC"
    raise ConfigError(f"{run.path}: not promoted to {baseline}: the run is not finished (status {status}, "
                      f"{len(run.units)} of {total} units), so the baseline would gate only what finished; "
                      f"finish it with `rollsum run {spec} --out {run.path} --resume`, then promote")


def regress(run_dir: str | os.PathLike[str], baseline_path: str | os.PathLike[str], *, promote: bool = False,
            tolerance: Tolerance = DEFAULT_TOLERANCE, strict: bool = False, n_resamples: int = DEFAULT_RESAMPLES,
            record_history: bool = False, now: Callable[[], datetime] = lambda: datetime.now(UTC),
            ) -> tuple[int, str]:
    """Run the gate; return (exit code, the table to print). Writes nothing unless asked:
    `promote` rewrites the baseline, `record_history` appends to its history.

    With `promote`, the comparison is still printed, then the run becomes the new baseline and
    the exit code is 0: promoting is the explicit act of accepting the numbers. An old baseline
    this gate cannot read is replaced (and said so), since promoting is how it is upgraded.
    """
    run = analysis.load(run_dir)
    path = Path(baseline_path)
    if promote:
        _check_finished(run, path)
    name = path.name.removesuffix(".json")
    when = now()
    old: dict[str, Any] | None = None
    note = ""
    if path.exists() or not promote:
        try:
            old = read_baseline(path)
        except ConfigError as err:
            if not promote:
                raise
            note = f"the old baseline is not comparable ({err})\n"
    thresholds = Thresholds(**(old.get("thresholds") or {})) if old is not None else DEFAULT_THRESHOLDS
    table = analysis.config_table(run, thresholds=thresholds, n_resamples=n_resamples)
    other = mismatch(run, old, [str(c) for c in table["config"]]) if old is not None else None
    if other is not None:
        if not promote:  # the wrong --baseline: a user mistake (exit 2), not a regression (exit 1)
            raise ConfigError(f"{path}: {other}; gate it against its own spec's baseline, or --promote to "
                              "replace this one")
        note, old = f"the old baseline is not comparable ({other})\n", None
    marks = ask_verdicts(run)
    new = make_baseline(run, name, now=lambda: when, table=table, thresholds=thresholds, marks=marks)
    result = (check(run, old, tolerance=tolerance, strict=strict, table=table, marks=marks)
              if old is not None else None)
    if record_history:
        append_history(history_path(path), history_entry(run, name, result, new, when, promote))
    text = gate_table(result) if result is not None else note + f"no comparable baseline at {path} yet"
    # what the gated numbers count, above the table: the verdict stays the last line
    text = "".join(f"{line}\n" for line in coverage_lines(run, table)) + text
    if promote:
        atomic_write_text(path, json.dumps(new, indent=1, sort_keys=True) + "\n")
        text += f"\npromoted: {path.resolve()} now holds {_counted(new['configs'])} from run {run.name}"
        return EXIT_PASS, text
    assert result is not None
    return (EXIT_REGRESSION if result.failed else EXIT_PASS), text
