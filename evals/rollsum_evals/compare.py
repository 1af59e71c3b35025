"""`rollsum compare`: is A really better than B, or is it noise?

Two configurations of one run, or the same configuration(s) in two runs of the same Units.
Every comparison is paired — the same probe (for retention) or the same conversation (for
tokens and cost) under A and under B — and the bootstrap resamples whole conversations, because
probes of one conversation succeed and fail together. All metrics of all pairs form one family
for Holm's correction, and the verdict is read off each (Holm-level) interval: it says "A better"
or "B better" only when the interval of A − B excludes zero.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals import analysis
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_num, fmt_usd, md_escape, md_table
from rollsum_evals.rundir.read import Run
from rollsum_evals.stats import DEFAULT_ALPHA, DEFAULT_RESAMPLES, Interval, holm_intervals

log = logging.getLogger(__name__)

A_BETTER, B_BETTER, NO_DIFFERENCE = "A better", "B better", "no detectable difference"

HIGHER_IS_BETTER = {"retention": True, "main_input_tokens": False, "cost_usd": False}
UNIT_METRICS = ("main_input_tokens", "cost_usd")
UNIT_KEY = ("dataset", "conversation_id", "seed")
"""What makes two Units 'the same work' apart from the configuration (within a run)."""


@dataclass(frozen=True)
class MetricResult:
    pair: str
    metric: str
    mean_a: float
    mean_b: float
    diff: Interval
    """A − B, at the Holm level this test was held to."""
    n_pairs: int

    @property
    def verdict(self) -> str:
        if not self.diff.excludes_zero:
            return NO_DIFFERENCE
        a_higher = self.diff.low > 0
        return A_BETTER if a_higher == HIGHER_IS_BETTER[self.metric] else B_BETTER


@dataclass
class SummaryDiff:
    pair: str
    conversation_id: str
    turn: int | None
    text_a: str
    text_b: str

    def unified(self, label_a: str, label_b: str) -> str:
        return "\n".join(difflib.unified_diff(self.text_a.splitlines(), self.text_b.splitlines(),
                                              fromfile=f"A: {label_a}", tofile=f"B: {label_b}",
                                              lineterm=""))


@dataclass
class Comparison:
    label_a: str
    label_b: str
    results: list[MetricResult]
    diffs: list[SummaryDiff] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    n_resamples: int = DEFAULT_RESAMPLES

    @property
    def verdict(self) -> str:
        """The headline: retention decides; a tie on retention falls back to 'no difference'."""
        for r in self.results:
            if r.metric == "retention":
                return r.verdict
        return NO_DIFFERENCE


@dataclass
class _Side:
    """One side's matched probes and units, keyed identically to the other side."""

    probes: pd.DataFrame
    units: pd.DataFrame


def _with_seed(run: Run, probes: pd.DataFrame) -> pd.DataFrame:
    cols = ["unit_id", *(c for c in ("seed",) if c in run.units.columns)]
    extra = run.units[cols]
    out = probes.drop(columns=[c for c in ("seed",) if c in probes.columns]).merge(extra, on="unit_id")
    if "seed" not in out.columns:
        out["seed"] = 0
    if "dataset" not in out.columns:
        out["dataset"] = ""
    return out


def _side(run: Run, config: str) -> _Side:
    units = analysis.ok_units(run)
    if config not in set(run.units["config"].astype(str)):
        known = ", ".join(sorted(set(run.units["config"].astype(str))))
        raise ConfigError(f"{run.path}: no configuration {config!r} in this run (configurations: {known})")
    units = units[units["config"].astype(str) == config].copy()
    if "seed" not in units.columns:
        units["seed"] = 0
    probes = _with_seed(run, analysis.ok_probes(run))
    probes = probes[probes["config"].astype(str) == config]
    return _Side(probes, units)


def _pair_metrics(pair: str, a: _Side, b: _Side, warnings: list[str],
                  ) -> list[tuple[str, str, pd.Series, pd.Series, list[str]]]:
    """(pair, metric, values A, values B, cluster labels) for every metric, aligned row by row."""
    out = []
    # a probe asked at several ages is several rows: pair by (probe, age)
    pk = [*UNIT_KEY, "probe_id", *(c for c in ("age_turns",) if c in a.probes and c in b.probes)]
    if not a.probes.empty and not b.probes.empty:
        m = a.probes[[*pk, "retained"]].merge(b.probes[[*pk, "retained"]], on=pk, suffixes=("_a", "_b"))
        unmatched = len(a.probes) + len(b.probes) - 2 * len(m)
        if unmatched:
            warnings.append(f"{pair}: {unmatched} probe(s) have no partner on the other side and are left out")
        clusters = (m["dataset"].astype(str) + "/" + m["conversation_id"].astype(str)).tolist()
        out.append((pair, "retention", m["retained_a"], m["retained_b"], clusters))
    uk = list(UNIT_KEY)
    m = a.units[[*uk, *UNIT_METRICS]].merge(b.units[[*uk, *UNIT_METRICS]], on=uk, suffixes=("_a", "_b"))
    unmatched = len(a.units) + len(b.units) - 2 * len(m)
    if unmatched:
        warnings.append(f"{pair}: {unmatched} unit(s) have no partner on the other side and are left out")
    clusters = (m["dataset"].astype(str) + "/" + m["conversation_id"].astype(str)).tolist()
    for metric in UNIT_METRICS:
        out.append((pair, metric, m[f"{metric}_a"].astype(float), m[f"{metric}_b"].astype(float), clusters))
    return out


def _run(pairs: Sequence[tuple[str, _Side, _Side]], *, alpha: float, n_resamples: int, seed: int,
         warnings: list[str]) -> list[MetricResult]:
    family = [item for pair, a, b in pairs for item in _pair_metrics(pair, a, b, warnings)]
    family = [f for f in family if len(f[2])]
    if not family:
        raise ConfigError("nothing to compare: the two sides share no conversation")
    intervals = holm_intervals([((va - vb).to_numpy(), cl) for _, _, va, vb, cl in family], alpha=alpha,
                               n_resamples=n_resamples, seed=seed)
    return [MetricResult(pair, metric, float(va.mean()), float(vb.mean()), iv, len(va))
            for (pair, metric, va, vb, _), iv in zip(family, intervals)]


def _best_conversation(a: _Side, b: _Side) -> str | None:
    """The conversation where A and B differ most: the most instructive one to read."""
    if a.units.empty or b.units.empty:
        return None
    m = a.units[["conversation_id", "retention"]].merge(b.units[["conversation_id", "retention"]],
                                                        on="conversation_id", suffixes=("_a", "_b"))
    if m.empty:
        return None
    m = m.assign(gap=(m["retention_a"] - m["retention_b"]).abs(), cid=m["conversation_id"].astype(str))
    m = m.sort_values(["gap", "cid"], ascending=[False, True], kind="mergesort")
    return str(m["cid"].iloc[0])


def _summary_diff(pair: str, run_a: Run, cfg_a: str, run_b: Run, cfg_b: str,
                  a: _Side, b: _Side) -> SummaryDiff | None:
    conv = _best_conversation(a, b)
    if conv is None:
        return None
    cp = analysis.checkpoint_across([(run_a, cfg_a), (run_b, cfg_b)], conv)
    text_a, text_b = cp.texts.values()
    return SummaryDiff(pair, conv, cp.turn, text_a, text_b)


def compare_configs(run: Run, config_a: str, config_b: str, *, alpha: float = DEFAULT_ALPHA,
                    n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Comparison:
    """Two configurations of one run, paired by probe / by conversation."""
    analysis.check_columns(run)
    a, b = _side(run, config_a), _side(run, config_b)
    warnings: list[str] = []
    pair = f"{config_a} vs {config_b}"
    results = _run([(pair, a, b)], alpha=alpha, n_resamples=n_resamples, seed=seed, warnings=warnings)
    diff = _summary_diff(pair, run, config_a, run, config_b, a, b)
    return Comparison(config_a, config_b, results, [diff] if diff else [], warnings, n_resamples)


def compare_runs(run_a: Run, run_b: Run, config: str | None = None, *,
                 alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> Comparison:
    """The same configuration(s) in two runs of the same Units (e.g. before/after a change)."""
    analysis.check_columns(run_a)
    analysis.check_columns(run_b)
    cfgs_a, cfgs_b = set(run_a.units["config"].astype(str)), set(run_b.units["config"].astype(str))
    warnings: list[str] = []
    if config is not None:
        for run, cfgs in ((run_a, cfgs_a), (run_b, cfgs_b)):
            if config not in cfgs:
                raise ConfigError(f"{run.path}: no configuration {config!r} "
                                  f"(configurations: {', '.join(sorted(cfgs))})")
        configs = [config]
    else:
        configs = sorted(cfgs_a & cfgs_b)
        if not configs:
            raise ConfigError(f"{run_a.path} and {run_b.path} share no configuration label")
        only = sorted(cfgs_a ^ cfgs_b)
        if only:
            warnings.append(f"configuration(s) in only one run, not compared: {', '.join(only)}")
    sides = [(c, _side(run_a, c), _side(run_b, c)) for c in configs]
    results = _run(sides, alpha=alpha, n_resamples=n_resamples, seed=seed, warnings=warnings)
    diffs = [d for c, a, b in sides if (d := _summary_diff(c, run_a, c, run_b, c, a, b)) is not None]
    return Comparison(run_a.name, run_b.name, results, diffs[:3], warnings, n_resamples)


# ---------------------------------------------------------------------------------------------
# Output


TABLE_HEADERS = ("pair", "metric", "A", "B", "A − B [CI]", "CI level", "Holm p", "verdict")


def _fmt(metric: str, v: float) -> str:
    return fmt_usd(v) if metric == "cost_usd" else fmt_num(v, 0 if "tokens" in metric else 3)


def table_rows(comparison: Comparison) -> list[list[str]]:
    rows = []
    for r in comparison.results:
        d = r.diff
        rows.append([r.pair, r.metric, _fmt(r.metric, r.mean_a), _fmt(r.metric, r.mean_b),
                     f"{_fmt(r.metric, d.estimate)} [{_fmt(r.metric, d.low)}, {_fmt(r.metric, d.high)}]",
                     f"{100 * (1 - d.alpha):.1f}%", f"{d.p_value:.3g}", r.verdict])
    return rows


def verdict_text(comparison: Comparison) -> str:
    """The plain-text table the CLI prints."""
    rows = [list(TABLE_HEADERS), *table_rows(comparison)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = f"A = {comparison.label_a}\nB = {comparison.label_b}\nverdict (retention): {comparison.verdict}"
    return head + "\n\n" + "\n".join(lines) + "".join(f"\nwarning: {w}" for w in comparison.warnings)


def to_markdown(comparison: Comparison) -> str:
    c = comparison
    md = [f"# A/B: {md_escape(c.label_a)} vs {md_escape(c.label_b)}", "",
          f"- **A** = `{md_escape(c.label_a)}`", f"- **B** = `{md_escape(c.label_b)}`",
          f"- **Verdict (retention): {c.verdict}**", "",
          f"Paired by probe (retention) and by conversation (tokens, cost); {c.n_resamples} bootstrap "
          "resamples of conversations; intervals at Holm-corrected levels over all rows (family-wise "
          "95 %). A verdict names a winner only when its interval excludes 0.", "",
          md_table(TABLE_HEADERS, table_rows(c)), ""]
    for w in c.warnings:
        md.append(f"> warning: {md_escape(w)}")
    for d in c.diffs:
        turn = d.turn if d.turn is not None else "end"
        md += ["", f"## Summaries at the same checkpoint — {md_escape(d.pair)}", "",
               f"Conversation `{md_escape(d.conversation_id)}`, turn {turn} "
               "(the conversation where A and B differ most).", "", "```diff",
               (d.unified(c.label_a, c.label_b) or "(identical summaries)").replace("```", "ʼʼʼ"), "```"]
    return "\n".join(md) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_")[:60] or "x"


def write_compare(comparison: Comparison, out_dir: str | os.PathLike[str]) -> Path:
    path = Path(out_dir) / "compare.md"
    atomic_write_text(path, to_markdown(comparison))
    return path


def default_out_dir(run: Run, label_a: str, label_b: str) -> Path:
    return Path("reports") / run.name / f"compare_{_slug(label_a)}_vs_{_slug(label_b)}"
