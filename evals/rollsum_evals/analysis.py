"""What report, compare and regress share: a run's tables read once, the Units and asks that
count, conversation clusters, the per-configuration table with each configuration's verdict
(status, flags, reason; rules in `rollsum_evals.verdicts`), the ranking, and summaries at a
checkpoint.

Every command reads a run through `load` (the one reader, `rollsum_evals.rundir.load_run`);
Units whose status is not ``ok`` are left out of every number and make their configuration's
status ``error``. Retention everywhere is the mean of `retained` over *answerable* asks.

Over ~400 lines because it is the single shared layer report, compare and regress read
(statuses, ranking, intervals, asks counted); splitting it would invite the three commands to
disagree again, which is what issue #9 was about.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals import gain
from rollsum_evals.coverage import by_category_of, columns_of
from rollsum_evals.rundir.read import Run, load_run
from rollsum_evals.scoring.answer_retention import EXCLUDED
from rollsum_evals.spec import components
from rollsum_evals.stats import DEFAULT_RESAMPLES, MIN_CONVERSATIONS, Interval, cluster_bootstrap
from rollsum_evals.verdicts import DEFAULT_THRESHOLDS, OK, STATUSES, Health, Thresholds, Verdict, judge


def load(run_dir: str | os.PathLike[str]) -> Run:
    """A run directory; a missing or malformed one is a user mistake (ConfigError)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a run directory (expected the --out directory of `rollsum run`)")
    if not (path / "manifest.json").exists():
        raise ConfigError(f"{path}: no manifest.json; is this a run directory?")
    return load_run(path)


def only_datasets(run: Run, datasets: Sequence[str]) -> Run:
    """The same run restricted to some of its datasets (e.g. compare on LoCoMo only)."""
    known = sorted(set(run.units["dataset"].astype(str))) if "dataset" in run.units.columns else []
    missing = [d for d in datasets if d not in known]
    if missing:
        raise ConfigError(f"{run.path}: no dataset {', '.join(map(repr, missing))} in this run "
                          f"(datasets: {', '.join(known)})")
    units = run.units[run.units["dataset"].astype(str).isin(datasets)]
    keep = set(units["unit_id"])
    probes = run.probes[run.probes["unit_id"].isin(keep)] if "unit_id" in run.probes.columns else run.probes
    turns = run.turns[run.turns["unit_id"].isin(keep)] if "unit_id" in run.turns.columns else run.turns
    return Run(path=run.path, manifest=run.manifest, units=units, probes=probes, turns=turns)


def pareto_frontier(tokens: Sequence[float], retention: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats on both axes (fewer tokens, more retention).

    Returned in increasing token order so they can be drawn as a step line.
    """
    order = sorted(range(len(tokens)), key=lambda i: (tokens[i], -retention[i]))
    frontier: list[int] = []
    best = -math.inf
    for i in order:
        if math.isnan(retention[i]) or math.isnan(tokens[i]):
            continue
        if retention[i] > best:
            frontier.append(i)
            best = retention[i]
    return frontier


REQUIRED_UNIT_COLUMNS = ("unit_id", "dataset", "conversation_id", "config", "retention",
                         "main_input_tokens", "cost_usd")
REQUIRED_PROBE_COLUMNS = ("unit_id", "conversation_id", "config", "probe_id", "retained")


def check_columns(run: Run) -> None:
    missing = [c for c in REQUIRED_UNIT_COLUMNS if c not in run.units.columns]
    if missing:
        raise ConfigError(f"{run.path / 'units.parquet'}: missing column(s) {', '.join(missing)} "
                          "(see docs/run-format.md)")
    if not run.probes.empty:
        missing = [c for c in REQUIRED_PROBE_COLUMNS if c not in run.probes.columns]
        if missing:
            raise ConfigError(f"{run.path / 'probes.parquet'}: missing column(s) {', '.join(missing)} "
                              "(see docs/run-format.md)")


def ok_units(run: Run) -> pd.DataFrame:
    return finished(run.units)


def finished(units: pd.DataFrame) -> pd.DataFrame:
    """The Units of a units table whose status is ``ok`` (all of them in a run without one)."""
    return units[units["status"].astype(str) == "ok"] if "status" in units.columns else units


EXCLUSIONS = EXCLUDED
"""Why an ask is not answerable (the probe table's `excluded`, written by the answer_retention
scorer, which owns the list): adversarial by design, an answer no text can state (yes/no), or one
the conversation up to the asking turn does not support."""


def excluded_reason(probes: pd.DataFrame) -> pd.Series:
    """Per ask, "" when answerable, else why not.

    The scorer's `excluded` column when the run has it. A run scored before it (answer_retention
    v2) is read by the rule that scorer used: adversarial rows excluded, and an ask whose answer
    the conversation up to the asking turn does not contain (`baseline_retained` false) is
    unsupported — what full context would send cannot answer it either.
    """
    if "excluded" in probes.columns:
        return probes["excluded"].fillna("").astype(str)
    out = pd.Series("", index=probes.index, dtype=object)
    if "baseline_retained" in probes.columns:
        supported = probes["baseline_retained"].astype("boolean").fillna(False).astype(bool)
        out[~supported] = "unsupported"
    if "category" in probes.columns:
        out[probes["category"].astype(str) == "adversarial"] = "adversarial"
    return out


def ok_probes(run: Run) -> pd.DataFrame:
    """Asks of finished units, with `retained` as float, `answerable` and `excluded` (see
    `excluded_reason`) and a conversation cluster key. Retention is the mean of `retained` over
    the `answerable` rows (`answerable_probes`)."""
    if run.probes.empty:
        return pd.DataFrame(columns=[*REQUIRED_PROBE_COLUMNS, "cluster", "answerable", "excluded"])
    good = set(ok_units(run)["unit_id"])
    probes = run.probes[run.probes["unit_id"].isin(good)].copy()
    probes["retained"] = probes["retained"].astype(float)
    probes["excluded"] = excluded_reason(probes)
    if "answerable" in probes.columns:
        probes["answerable"] = probes["answerable"].astype("boolean").fillna(False).astype(bool)
    else:
        probes["answerable"] = probes["excluded"] == ""
    probes["cluster"] = cluster_key(probes)
    return probes


def answerable_probes(run: Run) -> pd.DataFrame:
    """The asks retention is measured on (rank, compare and gate alike)."""
    probes = ok_probes(run)
    return probes[probes["answerable"]] if len(probes) else probes


def lost_asks(probes: pd.DataFrame, config: str) -> pd.DataFrame:
    """One configuration's asks whose answer its context did not support, oldest evidence first
    (the facts a summary had to carry): what the report's lost-facts table and its drill-down show."""
    lost = probes[(probes["config"].astype(str) == config) & (probes["retained"] < 0.5)]
    if "age_turns" in lost.columns:
        lost = lost.sort_values("age_turns", ascending=False, kind="mergesort")
    return lost


def cluster_key(frame: pd.DataFrame) -> pd.Series:
    """Conversations are the independent units of evidence; two datasets may reuse an id."""
    if "dataset" in frame.columns:
        return frame["dataset"].astype(str) + "/" + frame["conversation_id"].astype(str)
    return frame["conversation_id"].astype(str)


# ---------------------------------------------------------------------------------------------
# Per-configuration metrics and verdicts


class TokenAxis(NamedTuple):
    column: str
    """The table column ranking ties, the Pareto frontier and the plot use."""
    label: str
    """What it is, for an axis."""
    header: str
    """What it is, for a table column."""


PER_CALL = TokenAxis("main_tokens", "main-model input tokens per call (mean over each conversation)",
                     "main tokens / call")
AT_ASKS = TokenAxis("main_tokens", "main-model context tokens at the asking turns (mean)",
                    "main tokens at asks")
PER_CONVERSATION = TokenAxis("main_input_tokens", "main-model input tokens per conversation (sum over its calls)",
                             "main tokens / conversation")


def pairing(run: Run) -> tuple[str, TokenAxis]:
    """(unit column, axis) of the main-model token figure retention is paired with (the pairing
    docs/scoring.md defends, "Cost and retention at the same moments"): tokens per call when asks
    are sampled over each fact's life (the default), since retention then averages the same span
    the per-call cost covers; the context at the asking turns under any chosen-moment timing
    (end, after, ages), since retention then describes those moments only."""
    return pairing_of(str(run.manifest.get("probe_timing") or ""))


def pairing_of(timing: str) -> tuple[str, TokenAxis]:
    """`pairing` for a probe timing key (`ProbeTiming.key`, as a manifest records it): what a
    spec's runs will be ranked by, before any ran (`rollsum tune` names its token figure so)."""
    if timing.startswith("sampled"):
        return "main_tokens_per_turn", PER_CALL
    return "main_tokens_at_asks", AT_ASKS


SUM_COLUMNS = {"summarizer_attempts": "summarizer_attempts", "summarizer_failures": "failures",
               "summarizer_fallbacks": "fallbacks", "cassette_misses": "cassette_misses",
               "clips": "clips", "overflow_turns": "overflow_turns"}
"""Unit columns summed over a configuration's Units (unit column -> table column)."""
MEAN_COLUMNS = ("cost_main_usd", "cost_summarizer_usd", "cost_judge_usd", "projected_summarizer_cost_usd",
                "main_tokens_per_turn", "main_tokens_at_asks", "n_summaries", "stale_rate", "relative_retention",
                "qa_f1", "rouge_l", "mean_context_tokens", "max_context_tokens")
"""Unit columns averaged over a configuration's Units (present only when the run has them)."""
QA_SUM_COLUMNS = ("qa_failures", "judge_failures", "judge_controls", "judge_controls_accepted")
"""The model-graded path's unit columns that add up over a configuration's Units (qa scorer)."""


def token_axis(table: pd.DataFrame) -> TokenAxis:
    """The main-model token figure this table ranks and plots by: the run's pairing (recorded in
    `main_tokens_basis`), or, for a run scored before those columns existed, tokens per
    conversation — and the axis and header say which."""
    if "main_tokens" in table.columns and table["main_tokens"].notna().any():
        at_asks = "main_tokens_basis" in table.columns and bool((table["main_tokens_basis"] == AT_ASKS.header).any())
        return AT_ASKS if at_asks else PER_CALL
    return PER_CONVERSATION


def with_feasibility(run: Run) -> pd.DataFrame:
    """The units table with `overflow_turns` and `max_context_ratio`: the scorer's when the run
    has them, otherwise derived exactly from the turns table (each turn's context vs its window)."""
    units = run.units.copy()
    if "overflow_turns" in units.columns and "max_context_ratio" in units.columns:
        return units
    turns = run.turns
    if turns.empty or not {"unit_id", "context_tokens", "context_window"} <= set(turns.columns):
        units["overflow_turns"] = math.nan
        units["max_context_ratio"] = math.nan
        return units
    t = turns[turns["context_window"] > 0]
    ratio = t["context_tokens"].astype(float) / t["context_window"].astype(float)
    per_unit = pd.DataFrame({"unit_id": t["unit_id"], "over": ratio > 1.0, "ratio": ratio}).groupby("unit_id")
    derived = pd.DataFrame({"overflow_turns": per_unit["over"].sum().astype(float),
                            "max_context_ratio": per_unit["ratio"].max()})
    return units.merge(derived, left_on="unit_id", right_index=True, how="left")


def _sum(grp: pd.DataFrame, col: str) -> float:
    if col not in grp.columns:
        return math.nan
    return float(pd.to_numeric(grp[col], errors="coerce").sum(min_count=1))


class _Columns:
    """A table's int64 and float64 columns as numpy arrays, each taken once, for `_Rows`.
    `clustered`: its ``cluster`` column is `cluster_key` (set by `config_table`)."""

    def __init__(self, frame: pd.DataFrame, *, clustered: bool = False) -> None:
        self.frame = frame
        self.clustered = clustered
        self._arrays: dict[str, npt.NDArray[Any] | None] = {}

    def array(self, col: str) -> npt.NDArray[Any] | None:
        """The column's values; None for any other dtype (text, nullable, bool), which `_Rows`
        leaves to pandas."""
        if col not in self._arrays:
            dtype = self.frame[col].dtype
            plain = isinstance(dtype, np.dtype) and dtype in (np.dtype(np.int64), np.dtype(np.float64))
            self._arrays[col] = self.frame[col].to_numpy() if plain else None
        return self._arrays[col]


@dataclass(frozen=True)
class _Rows:
    """One configuration's rows of a table (`frame`, at positions `at` of `columns.frame`) with
    the reductions the configuration table takes of them. Each gives what pandas gives for the
    group's column after ``pd.to_numeric(errors="coerce")`` — ``.sum(min_count=1)``, ``.mean()``,
    ``.max()`` — bit for bit: pandas' nanops reduce the same values, in the same order, with the
    same numpy call (``ndarray.sum``: NaN set to 0, float64 sums for means), and so does this,
    from arrays taken once for the whole table. About 20 such pandas calls per configuration were
    a visible part of a report (40 configurations); other dtypes still go through pandas."""

    frame: pd.DataFrame
    columns: _Columns
    at: npt.NDArray[np.intp]

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _Rows:
        """All of `frame` (a caller without the whole table)."""
        return cls(frame, _Columns(frame), np.arange(len(frame)))

    def _values(self, col: str) -> npt.NDArray[Any] | None:
        a = self.columns.array(col)
        return None if a is None else a[self.at]

    def sum(self, col: str) -> float:
        if col not in self.frame.columns:
            return math.nan
        v = self._values(col)
        if v is None:
            return _sum(self.frame, col)
        if v.dtype.kind == "f":
            missing = np.isnan(v)
            return math.nan if missing.all() else float(np.where(missing, 0.0, v).sum())
        return float(v.sum()) if len(v) else math.nan

    def mean(self, col: str) -> float:
        v = self._values(col)
        if v is None:
            return float(pd.to_numeric(self.frame[col], errors="coerce").mean())
        if not len(v):
            return math.nan
        if v.dtype.kind == "f":
            missing = np.isnan(v)
            n = np.float64(len(v) - int(missing.sum()))
            return float(np.where(missing, 0.0, v).sum() / n) if n > 0 else math.nan
        return float(v.sum(dtype=np.float64) / np.float64(len(v)))

    def max(self, col: str) -> float:
        """The largest value; NaN when there is none (no column, no rows, all NaN)."""
        if col not in self.frame.columns:
            return math.nan
        v = self._values(col)
        if v is None:
            s = pd.to_numeric(self.frame[col], errors="coerce")
            return float(s.max()) if s.notna().any() else math.nan
        v = v[~np.isnan(v)] if v.dtype.kind == "f" else v
        return float(v.max()) if len(v) else math.nan

    def conversations(self) -> int:
        """Distinct conversations (`cluster_key`; its column when the table has it)."""
        return int((self.frame["cluster"] if self.columns.clustered else cluster_key(self.frame)).nunique())


def _health(units: pd.DataFrame, done: pd.DataFrame | _Rows, answerable_n: int, asks: int, baseline: bool) -> Health:
    """`units`: every Unit of the configuration; `done`: the finished ones (numbers come from them)."""
    rows = done if isinstance(done, _Rows) else _Rows.of(done)
    status = units["status"].astype(str) if "status" in units.columns else pd.Series("ok", index=units.index)
    unfinished = status[status != "ok"]
    window = rows.max("context_window")
    return Health(
        baseline=baseline, units=len(units), units_unfinished=len(unfinished),
        unfinished_reasons=tuple(unfinished.tolist()), conversations=rows.conversations(),
        asks=asks, answerable=answerable_n,
        attempts=rows.sum("summarizer_attempts"), failures=rows.sum("summarizer_failures"),
        messages=rows.sum("n_messages"),
        fallbacks=_nz(rows.sum("summarizer_fallbacks")), cassette_misses=_nz(rows.sum("cassette_misses")),
        clips=_nz(rows.sum("clips")), overflow_turns=rows.sum("overflow_turns"),
        max_context_ratio=rows.max("max_context_ratio"),
        context_window=0 if math.isnan(window) else int(window),
        judge_controls=_nz(rows.sum("judge_controls")),
        judge_controls_accepted=_nz(rows.sum("judge_controls_accepted")))


def _nz(v: float) -> float:
    return 0.0 if math.isnan(v) else v


def _band(row: dict[str, Any], name: str, iv: Interval) -> None:
    row.update({name: iv.estimate, f"{name}_low": iv.low, f"{name}_high": iv.high})


def _qa_columns(row: dict[str, Any], grp: pd.DataFrame, health: Health) -> None:
    """The qa scorer's per-configuration figures, when the run has them: failures and controls
    summed, the judge's false-accept rate pooled, its agreement with the matcher weighted by the
    asks both graded, `judge_accuracy` and the list-price cost averaged per Unit (docs/scoring.md, "qa")."""
    if "qa_failures" not in grp.columns:  # scored with qa version 1
        return
    for col in QA_SUM_COLUMNS:
        if col in grp.columns:
            row[col] = _nz(_sum(grp, col))
    for col in ("judge_accuracy", "cost_judge_list_usd"):  # per Unit, like cost_judge_usd
        if col in grp.columns:
            row[col] = float(pd.to_numeric(grp[col], errors="coerce").mean())
    row["judge_false_accept"] = health.judge_false_accept
    if {"judge_matcher_n", "judge_matcher_agreement"} <= set(grp.columns):
        n = pd.to_numeric(grp["judge_matcher_n"], errors="coerce").fillna(0)
        agree = pd.to_numeric(grp["judge_matcher_agreement"], errors="coerce").fillna(0)
        row["judge_matcher_agreement"] = float((n * agree).sum() / n.sum()) if n.sum() else math.nan


def config_table(run: Run, *, thresholds: Thresholds = DEFAULT_THRESHOLDS, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> pd.DataFrame:
    """One row per configuration: its verdict (status, flags, reason), rank and frontier
    membership, and its numbers with cluster-bootstrap 95 % intervals.

    Retention pools the *answerable* asks (each counts once; excluded ones are counted by
    reason); tokens and costs are means per Unit (one conversation through one configuration).
    Intervals resample conversations and are NaN below `stats.MIN_CONVERSATIONS`. Only `ok`
    configurations are ranked (1 = most retention, ties by fewer tokens) and only they can be
    on the Pareto frontier; the others follow, by status, with `rank` NA.
    """
    check_columns(run)
    every = with_feasibility(run)
    every["cluster"] = cluster_key(every)
    done_all = finished(every)
    probes = ok_probes(run)
    done_of, probes_of = _rows_by_config(done_all, clustered=True), by_config(probes)
    healths = _config_health(every, probes, done_of=done_of, probes_of=probes_of)
    paired_col, paired_axis = pairing(run)
    with_qa = "qa" in ((run.manifest or {}).get("scoring") or {}).get("scorers", ())
    rows = []
    none_done = _Rows(done_all.iloc[:0], _Columns(done_all.iloc[:0], clustered=True), np.arange(0, dtype=np.intp))
    coverage_of = by_category_of(probes, probes["config"]) if len(probes) else {}
    for cfg, units in _units_by_config(every):
        mine = done_of.get(cfg, none_done)
        grp = mine.frame
        p = probes_of.get(cfg, probes.iloc[:0])
        ans = p[p["answerable"]] if len(p) else p
        # the first Unit's values, column by column: `units.iloc[0]` built a ~80-column row
        first = {c: str(units[c].iloc[0]) if c in units.columns else "" for c in ("preset", "model", "prompt")}
        preset, model = first["preset"], first["model"]
        row: dict[str, Any] = {"config": str(cfg), "preset": preset, "model": model,
                               "prompt": first["prompt"],
                               "deterministic": components.of_run_config(run.manifest, str(cfg), preset,
                                                                         model).deterministic,
                               "baseline": components.is_baseline(preset),
                               "n_units": len(units), "n_units_failed": len(units) - len(grp),
                               "n_conversations": mine.conversations()}
        if len(p):
            iv = cluster_bootstrap(ans["retained"].to_numpy(), ans["cluster"].tolist(),
                                   n_resamples=n_resamples, seed=seed)
        else:  # runs without a probes table still carry per-unit retention
            iv = cluster_bootstrap(grp["retention"].astype(float).to_numpy(), grp["cluster"].tolist(),
                                   n_resamples=n_resamples, seed=seed)
        _band(row, "retention", iv)
        row["retention_containment"] = (float(ans["retained_containment"].astype(float).mean())
                                        if len(ans) and "retained_containment" in ans.columns else math.nan)
        row["n_asks"], row["n_probes"] = len(p), len(ans)
        # one count of the column, not a string comparison per reason (4 pandas ops per config)
        excluded = Counter(p["excluded"].tolist()) if len(p) else Counter()
        for reason in EXCLUSIONS:
            row[f"n_excluded_{reason}"] = excluded[reason]
        row.update(columns_of(coverage_of[str(cfg)]) if len(p) else {"coverage": math.nan})
        for table_col, unit_col in (("main_tokens", paired_col), ("main_input_tokens", "main_input_tokens")):
            if unit_col in grp.columns:
                _band(row, table_col, cluster_bootstrap(grp[unit_col].astype(float).to_numpy(),
                                                        grp["cluster"].tolist(), n_resamples=n_resamples,
                                                        seed=seed))
            else:
                row.update({table_col: math.nan, f"{table_col}_low": math.nan, f"{table_col}_high": math.nan})
        row["main_tokens_basis"] = paired_axis.header
        _band(row, "cost_usd", cluster_bootstrap(grp["cost_usd"].astype(float).to_numpy(), grp["cluster"].tolist(),
                                                 n_resamples=n_resamples, seed=seed))
        for col in MEAN_COLUMNS:
            if col in grp.columns:
                row[col] = mine.mean(col)
        for unit_col, table_col in SUM_COLUMNS.items():
            row[table_col] = mine.sum(unit_col)
        if "projected_model" in grp.columns:
            row["projected_model"] = ",".join(sorted({str(m) for m in grp["projected_model"] if str(m)}))
        health = healths[str(cfg)]
        row.update(failure_rate=health.failure_rate, summarizer_calls_per_message=health.calls_per_message,
                   max_context_ratio=health.max_context_ratio, context_window=health.context_window)
        if with_qa:
            _qa_columns(row, grp, health)
        verdict = judge(health, thresholds)
        curve = gain.is_curve(str(cfg))
        flags, reasons = list(verdict.flags), list(verdict.reasons)
        if curve:
            flags.append(CURVE_FLAG)
            reasons.append("the truncate grid the harness added: gain is measured against it, not a candidate")
        row.update(status=verdict.status, flags=";".join(flags), reason="; ".join(reasons), curve=curve,
                   ranked=verdict.ranked and not curve and not math.isnan(row["retention"]))
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table = _with_gains(table, done_all, probes, paired_col, n_resamples=n_resamples, seed=seed)
    tokens = token_axis(table).column
    order = {s: i for i, s in enumerate(STATUSES)}
    # ranked by gain over truncation at the same tokens (issue #18: by retention the ranking was
    # the token order); a configuration without a gain (no curve, off its range) follows, by retention
    table = table.assign(_unranked=~table["ranked"], _status=table["status"].map(order),
                         _neg_gain=-table["gain"].astype(float).fillna(-math.inf),
                         _neg_retention=-table["retention"].fillna(-1.0), _tok=table[tokens].fillna(math.inf))
    table = table.sort_values(["_unranked", "_status", "_neg_gain", "_neg_retention", "_tok", "config"],
                              kind="mergesort").drop(columns=["_unranked", "_status", "_neg_gain",
                                                              "_neg_retention", "_tok"])
    table = table.reset_index(drop=True)
    n_ranked = int(table["ranked"].sum())
    table.insert(0, "rank", pd.Series([*range(1, n_ranked + 1), *([None] * (len(table) - n_ranked))],
                                      dtype="Int64"))
    front = set(pareto_frontier(table[tokens].astype(float).tolist()[:n_ranked],
                                table["retention"].astype(float).tolist()[:n_ranked]))
    table["pareto"] = [i in front for i in range(len(table))]
    return table


CURVE_FLAG = "truncate-curve"
"""Flag of the configurations of the truncate grid the harness added (`gain.is_curve`)."""
OUTSIDE_FLAG = "beyond-truncate-curve"
"""Flag of a configuration some of whose Units lie outside their conversation's curve."""


def gain_units(done: pd.DataFrame, probes: pd.DataFrame, tokens: str) -> pd.DataFrame:
    """The per-unit table `gain.unit_gains` reads (`gain.UNIT_COLUMNS`, plus `fits` and
    `unit_id`) from the finished Units `with_feasibility` and the `ok_probes`: retention and
    weight from each Unit's answerable asks (the Unit's own `retention`, weight 1, for a run
    without a probe table)."""
    units = done.copy()
    window = units["context_window"].astype(str) if "context_window" in units.columns else ""
    seed = units["seed"].astype(str) if "seed" in units.columns else "0"
    units["key"] = cluster_key(units) + "/" + seed + "/" + window
    units["cluster"] = cluster_key(units)
    units["tokens"] = pd.to_numeric(units[tokens], errors="coerce") if tokens in units.columns else math.nan
    over = units["overflow_turns"] if "overflow_turns" in units.columns else pd.Series(0, index=units.index)
    units["fits"] = ~(pd.to_numeric(over, errors="coerce").fillna(0) > 0)
    if len(probes):
        ans = probes[probes["answerable"]]
        per = ans.groupby("unit_id")["retained"].agg(["mean", "count"])
        units["retention"] = units["unit_id"].map(per["mean"])
        units["weight"] = units["unit_id"].map(per["count"]).fillna(0).astype(float)
    else:
        units["retention"] = pd.to_numeric(units["retention"], errors="coerce")
        units["weight"] = 1.0
    units["config"] = units["config"].astype(str)
    return units[["unit_id", *gain.UNIT_COLUMNS, "fits"]]


def reference_configs(units: pd.DataFrame) -> list[str]:
    """Configurations whose Units trace the truncate curve: every truncate configuration (and
    the added grid, whatever its preset column says)."""
    labels = units["config"].astype(str)
    truncate = units["preset"].astype(str) == gain.REFERENCE_PRESET if "preset" in units.columns else False
    return sorted(set(labels[truncate | labels.map(gain.is_curve)]))


def _with_gains(table: pd.DataFrame, done: pd.DataFrame, probes: pd.DataFrame, tokens: str, *,
                n_resamples: int, seed: int) -> pd.DataFrame:
    """`table` with `gain.GAIN_COLUMNS`, and — on fewer than `MIN_CONVERSATIONS` conversations —
    the ask-level `gain_asks*` columns (`gain.ask_level_gains`); a flag for configurations with
    Units off the curve."""
    units = gain_units(done, probes, tokens)
    per_unit = gain.unit_gains(units, reference_configs(done))
    by_config = gain.config_gains(per_unit, n_resamples=n_resamples, seed=seed)
    out = table.merge(by_config, left_on="config", right_index=True, how="left")
    few = 0 < int(units["cluster"].nunique()) < MIN_CONVERSATIONS
    if few and len(probes) and len(per_unit):
        keyed = probes[probes["answerable"]].merge(units[["unit_id", "key"]], on="unit_id")
        keyed = keyed.assign(config=keyed["config"].astype(str))
        asks = gain.ask_level_gains(gain.ask_gains(per_unit, keyed), n_resamples=n_resamples, seed=seed)
        out = out.merge(asks, left_on="config", right_index=True, how="left")
    if not (per_unit["place"] == "on").any():
        return out  # no truncate curve in this run: nothing is off it
    outside = (out["gain_outside"].fillna(0) > 0) & (out["status"] == OK) & ~out["curve"].astype(bool)
    n_off = out["gain_outside"].fillna(0).astype(int)
    n_all = n_off + out["gain_units"].fillna(0).astype(int)
    flags, reasons = out["flags"].astype(str).tolist(), out["reason"].astype(str).tolist()
    for pos, off in enumerate(outside.tolist()):
        if not off:
            continue
        why = (f"{n_off.iloc[pos]} of {n_all.iloc[pos]} unit(s) outside the truncate curve's token range (or no "
               "truncate unit of their conversation fits the window): no gain for them, none extrapolated")
        flags[pos] = ";".join(f for f in (flags[pos], OUTSIDE_FLAG) if f)
        reasons[pos] = "; ".join(r for r in (reasons[pos], why) if r)
    return out.assign(flags=flags, reason=reasons)


def best_by_gain(table: pd.DataFrame, budget: float | None = None) -> pd.Series | None:
    """The ranked configuration with the highest gain whose interval (conversation-level) excludes
    0 — within `budget` main-model tokens when given; None when none does."""
    r = ranked(table)
    if r.empty or "gain_low" not in r.columns:
        return None
    if budget is not None:
        r = r[r[token_axis(table).column].astype(float) <= budget]
    beats = r[r["gain_low"].astype(float) > 0]
    return beats.iloc[0] if len(beats) else None


def has_gains(table: pd.DataFrame) -> bool:
    """The run has a truncate curve some ranked configuration could be placed on."""
    return "gain" in table.columns and bool(ranked(table)["gain"].notna().any()) if len(table) else False


def config_health(run: Run) -> dict[str, Health]:
    """Every configuration's aggregates (`verdicts.Health`), from its Units and answerable asks."""
    return _config_health(with_feasibility(run), ok_probes(run))


def _config_health(every: pd.DataFrame, probes: pd.DataFrame, *, done_of: Mapping[Any, _Rows] | None = None,
                   probes_of: Mapping[Any, pd.DataFrame] | None = None) -> dict[str, Health]:
    """`config_health` from the units table `with_feasibility` and the `ok_probes` already read
    (and their groupings, when the caller has them: `config_table`)."""
    done_all = finished(every)
    done_of = _rows_by_config(done_all) if done_of is None else done_of
    probes_of = by_config(probes) if probes_of is None else probes_of
    out = {}
    for cfg, units in _units_by_config(every):
        p = probes_of.get(cfg, probes.iloc[:0])
        n_ans = int(p["answerable"].sum()) if len(p) else 0
        preset = str(units["preset"].iloc[0]) if "preset" in units.columns else ""
        out[str(cfg)] = _health(units, done_of.get(cfg, _Rows.of(done_all.iloc[:0])), n_ans, len(p),
                                components.is_baseline(preset))
    return out


def _units_by_config(every: pd.DataFrame) -> Any:
    """``every.groupby("config", sort=True)`` over the columns read from all of a configuration's
    Units (count, status, preset, model, prompt): slicing every column of the units table (~80) per
    configuration, twice, was a visible part of the table's time."""
    return every[[c for c in ("config", "status", "preset", "model", "prompt") if c in every.columns]].groupby(
        "config", sort=True)


def _rows_by_config(frame: pd.DataFrame, *, clustered: bool = False) -> dict[Any, _Rows]:
    """`by_config` as `_Rows`: the same frames, with their positions, from one groupby."""
    if not len(frame) or "config" not in frame.columns:
        return {}
    columns = _Columns(frame, clustered=clustered)
    groups = frame.groupby("config", sort=False, dropna=True)
    at = groups.indices
    return {cfg: _Rows(grp, columns, np.asarray(at[cfg], dtype=np.intp)) for cfg, grp in groups}


def by_config(frame: pd.DataFrame) -> dict[Any, pd.DataFrame]:
    """`frame`'s rows per value of its `config` column, in their order: one pass instead of a
    boolean mask over the whole frame per configuration (40 configurations × the probe table was
    a visible part of the report's time). A configuration without rows is absent (callers take
    ``frame.iloc[:0]``); so are rows whose config is missing, which no mask ``== cfg`` selects."""
    if not len(frame) or "config" not in frame.columns:
        return {}
    return {cfg: grp for cfg, grp in frame.groupby("config", sort=False, dropna=True)}


def config_verdicts(run: Run, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, Verdict]:
    """Every configuration's verdict without the intervals (what compare and the gate check)."""
    return {cfg: judge(h, thresholds) for cfg, h in config_health(run).items()}


def ranked(table: pd.DataFrame) -> pd.DataFrame:
    """The ranked (ok) configurations of a `config_table`, best first."""
    return table[table["ranked"]] if len(table) else table


# ---------------------------------------------------------------------------------------------
# Summaries at a checkpoint


@dataclass(frozen=True)
class Checkpoint:
    conversation_id: str
    turn: int | None
    texts: dict[str, str]
    """config label -> the summary in effect at `turn` ("" when none was made yet)."""


def _render_summary(d: Mapping[str, Any]) -> str:
    """What went into the context: narrative, key points, structured facets, pinned facts."""
    parts = [str(d.get("text") or "").strip()]
    facets = d.get("facets")
    if isinstance(facets, Mapping):
        for name, items in facets.items():
            if items:
                parts.append(f"{name}:\n" + "\n".join(f"- {i}" for i in items))
    if d.get("key_points"):
        parts.append("Key points:\n" + "\n".join(f"- {p}" for p in d["key_points"]))
    if d.get("pinned_facts"):
        parts.append("Facts:\n" + "\n".join(f"- {f}" for f in d["pinned_facts"]))
    return "\n\n".join(p for p in parts if p)


def _unit_records(run: Run, unit_id: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(turn made, generation, record) for one unit's summaries, in chain order."""
    out = [(int(line["turn"]), int(line["generation"]), line["record"]) for line in run.unit_summaries(unit_id)]
    out.sort(key=lambda t: (t[1], t[0]))
    return out


def _unit_of(run: Run, config: str, conversation_id: str) -> str | None:
    units = ok_units(run)
    match = units[(units["config"].astype(str) == config)
                  & (units["conversation_id"].astype(str) == conversation_id)]
    return str(match["unit_id"].iloc[0]) if len(match) else None


def checkpoint_across(sides: Sequence[tuple[Run, str]], conversation_id: str,
                      turn: int | None = None) -> Checkpoint:
    """The summary each (run, configuration) had at the same turn of the same conversation.

    Without an explicit turn the checkpoint is as late as possible while every side has made at
    least one summary by then, so the texts compare like with like.
    """
    records = []
    for run, cfg in sides:
        uid = _unit_of(run, cfg, conversation_id)
        records.append(_unit_records(run, uid) if uid else [])
    if turn is None and records and all(records):
        turn = max(min(recs[-1][0] for recs in records), max(recs[0][0] for recs in records))
    texts = {}
    for (_, cfg), recs in zip(sides, records):
        chosen = [r for t, _, r in recs if turn is None or t <= turn]
        texts[cfg if cfg not in texts else f"{cfg} (B)"] = _render_summary(chosen[-1]) if chosen else ""
    return Checkpoint(conversation_id, turn, texts)


def summaries_at_checkpoint(run: Run, configs: Sequence[str], conversation_id: str | None = None,
                            turn: int | None = None) -> Checkpoint | None:
    """Summaries of several configurations of one run at the same point of one conversation."""
    units = ok_units(run)
    units = units[units["config"].isin(list(configs))]
    if units.empty or not run.summarized_units():
        return None
    run.want_traces(units["unit_id"].astype(str))  # only these Units' summary lines are decoded
    if conversation_id is None:
        with_summaries = run.summarized_units()
        convs = (units[units["unit_id"].isin(with_summaries)].groupby("conversation_id")["config"]
                 .nunique())
        full = convs[convs == len(set(configs))]
        if full.empty:
            return None
        conversation_id = str(sorted(full.index)[0])
    return checkpoint_across([(run, c) for c in configs], conversation_id, turn)


def dataset_hashes(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Dataset name -> sha256, from the manifest's `datasets: {name: {sha256, ...}}`."""
    out = {}
    datasets = manifest.get("datasets")
    if isinstance(datasets, Mapping):
        for name, info in datasets.items():
            if isinstance(info, Mapping) and info.get("sha256"):
                out[str(name)] = str(info["sha256"])
    return out


def run_scorers(run: Run) -> list[str] | None:
    """The scorers the run was last scored with (manifest ``scoring.scorers``), None when unknown:
    what the report and `compare` check before reading a figure one of them makes."""
    scoring = run.manifest.get("scoring")
    scorers = scoring.get("scorers") if isinstance(scoring, Mapping) else None
    return [str(s) for s in scorers] if isinstance(scorers, list) else None
