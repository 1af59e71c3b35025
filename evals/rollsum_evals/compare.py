"""`rollsum compare`: is A really better than B, or is it noise?

Two configurations of one run, or the same configuration(s) in two runs of the same Units, or
one configuration against the nearest-in-tokens member of a grid (`--match-tokens`: "does this
preset beat truncation at the same main-model cost?"). Every comparison is paired — the same
answerable ask (probe at one asking turn) for retention, the same conversation for tokens and
cost, under A and under B — and the bootstrap resamples whole conversations, because asks of one
conversation succeed and fail together. All metrics of all pairs form one family for Holm's
correction, and the verdict is read off each (Holm-level) interval: it says "A better" or "B
better" only when the interval of A − B excludes zero.

A verdict is withheld, and the output says why, when it cannot mean anything: fewer than
`stats.MIN_CONVERSATIONS` paired conversations, or two different prompts on a summarizer that
does not follow prompts (extractive, `fake:`; `components.of_model(...).follows_prompt`), where
any difference comes from how the model reads the template's layout, not from the prompt.
Labels are matched after normalising spaces and parameter order; a miss suggests the nearest.

Over ~400 lines because it holds the three comparison forms (two configs of one run, two runs,
matched tokens against a grid) over one paired-bootstrap core, plus their markdown; the
statistics themselves are in `stats`.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals import analysis
from rollsum_evals.coverage import summary_line
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_num, fmt_usd, md_escape, md_table, text_table
from rollsum_evals.rundir.read import Run
from rollsum_evals.spec import components
from rollsum_evals.stats import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    MIN_CONVERSATIONS,
    WITHIN_ONLY,
    Interval,
    ask_level_bootstrap,
    holm_intervals,
    not_enough,
)
from rollsum_evals.verdicts import OK, Verdict

log = logging.getLogger(__name__)

A_BETTER, B_BETTER, NO_DIFFERENCE = "A better", "B better", "no detectable difference"

HIGHER_IS_BETTER = {"retention": True, "main_tokens_per_turn": False, "main_tokens_at_asks": False,
                    "main_input_tokens": False, "cost_usd": False}
UNIT_KEY = ("dataset", "conversation_id", "seed")
"""What makes two Units 'the same work' apart from the configuration (within a run)."""
ASK_KEY = ("probe_id", "asked_turn")
"""What makes two probe rows the same ask within one conversation."""
MATCH_TOLERANCE = 0.05
"""--match-tokens: the matched unit's main-model tokens must be within 5 % of A's."""


def unit_metrics(*runs: Run) -> tuple[str, str]:
    """(tokens, cost) columns compared per conversation: the main-model token figure retention
    is paired with (`analysis.pairing`: per call under sampled asks, at the asking turns
    otherwise) when every run has it, else tokens per conversation."""
    cols = {analysis.pairing(r)[0] for r in runs}
    col = cols.pop() if len(cols) == 1 else ""
    tokens = col if col and all(col in r.units.columns for r in runs) else "main_input_tokens"
    return tokens, "cost_usd"


# ---------------------------------------------------------------------------------------------
# Labels


def _split_params(inner: str) -> list[str]:
    """Top-level comma split: a JSON list value (`ages=[5,20]`) stays one parameter."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in inner:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def normalize_label(label: str) -> str:
    """A label as typed and as written by the run compare equal: no spaces, parameters sorted."""
    text = re.sub(r"\s+", "", label)
    base, sep, rest = text.partition("[")
    if not sep or "]" not in rest:
        return text
    inner, _, suffix = rest.rpartition("]")
    return f"{base}[{','.join(sorted(_split_params(inner)))}]{suffix}"


def resolve_label(run: Run, label: str) -> str:
    """The run's configuration label for what the user typed; a miss names the nearest."""
    labels = sorted(set(run.units["config"].astype(str)))
    if label in labels:
        return label
    by_norm = {normalize_label(x): x for x in labels}
    want = normalize_label(label)
    if want in by_norm:
        return by_norm[want]
    family = [x for x in labels if x.startswith(f"{want}[")]
    if family:  # a preset's name typed for one of its grid's labels: the nearest label was any other
        shown = ", ".join(repr(x) for x in family[:3]) + (f" and {len(family) - 3} more" if len(family) > 3 else "")
        raise ConfigError(f"{run.path}: {label!r} names {len(family)} configurations of this run, not one "
                          f"({shown}): give one configuration's label (a preset's name is taken only by --b with "
                          "--match-tokens)")
    near = difflib.get_close_matches(want, list(by_norm), n=1, cutoff=0.0)
    hint = f"; did you mean {by_norm[near[0]]!r}?" if near else ""
    listing = ", ".join(labels) if len(labels) <= 12 else f"{len(labels)} configurations; see configs.csv"
    raise ConfigError(f"{run.path}: no configuration {label!r} in this run{hint} (configurations: {listing})")


@dataclass(frozen=True)
class MetricResult:
    pair: str
    metric: str
    mean_a: float
    mean_b: float
    diff: Interval
    """A − B, at the Holm level this test was held to."""
    n_pairs: int
    withheld: str = ""
    """Why no verdict can be given whatever the numbers (e.g. a prompt-blind summarizer)."""
    within: Interval | None = None
    """Retention on fewer than `MIN_CONVERSATIONS` conversations: the ask-level paired interval
    (`stats.ask_level_bootstrap`), a direction "within these conversations only", never a verdict."""

    @property
    def direction(self) -> str:
        """The ask-level direction, labelled (`stats.WITHIN_ONLY`); "" when there is none."""
        w = self.within
        if w is None or math.isnan(w.estimate):
            return ""
        if not w.enough:
            return f"ask-level: {w.clusters} paired ask(s), too few for an interval ({WITHIN_ONLY})"
        side = "A higher" if w.low > 0 else "B higher" if w.high < 0 else "no direction"
        return (f"ask-level A − B {w.estimate:+.3f} [{w.low:+.3f}, {w.high:+.3f}] over {w.n:,} paired asks: "
                f"{side} ({WITHIN_ONLY})")

    @property
    def verdict(self) -> str:
        if self.withheld:
            return f"no verdict: {self.withheld}"
        if not self.diff.enough:
            return not_enough(self.diff.clusters)
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


@dataclass(frozen=True)
class Match:
    """--match-tokens: which member of B's grid stood in for B on one conversation."""

    conversation: str
    a_tokens: float
    b_config: str
    """The nearest B configuration ("" when B had no finished unit on this conversation)."""
    b_tokens: float
    matched: bool
    a_retention: float = math.nan
    """A's and B's retention over this conversation's paired answerable asks (matched only)."""
    b_retention: float = math.nan

    @property
    def gap(self) -> float:
        """(B − A) / A: the relative difference in main-model tokens."""
        return (self.b_tokens - self.a_tokens) / self.a_tokens if self.a_tokens else math.inf


@dataclass
class Comparison:
    label_a: str
    label_b: str
    results: list[MetricResult]
    diffs: list[SummaryDiff] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    n_resamples: int = DEFAULT_RESAMPLES
    matches: list[Match] = field(default_factory=list)
    """Filled by `compare_matched`: one per conversation of A."""
    coverage: list[str] = field(default_factory=list)
    """One line per side: how many of its asks retention counts, per category (`coverage`)."""

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
    units = units[units["config"].astype(str) == config].copy()
    if "seed" not in units.columns:
        units["seed"] = 0
    probes = _with_seed(run, analysis.answerable_probes(run))
    probes = probes[probes["config"].astype(str) == config]
    return _Side(probes, units)


def _pair_metrics(pair: str, a: _Side, b: _Side, warnings: list[str], unit_cols: Sequence[str],
                  ) -> list[tuple[str, str, pd.Series, pd.Series, list[str]]]:
    """(pair, metric, values A, values B, cluster labels) for every metric, aligned row by row."""
    out = []
    # a probe asked at several turns is several rows: pair by (probe, asking turn)
    pk = [*UNIT_KEY, *(c for c in ASK_KEY if c in a.probes and c in b.probes)]
    if not a.probes.empty and not b.probes.empty:
        m = a.probes[[*pk, "retained"]].merge(b.probes[[*pk, "retained"]], on=pk, suffixes=("_a", "_b"))
        unmatched = len(a.probes) + len(b.probes) - 2 * len(m)
        if unmatched:
            warnings.append(f"{pair}: {unmatched} probe(s) have no partner on the other side and are left out")
        clusters = (m["dataset"].astype(str) + "/" + m["conversation_id"].astype(str)).tolist()
        out.append((pair, "retention", m["retained_a"], m["retained_b"], clusters))
    uk = list(UNIT_KEY)
    cols = list(unit_cols)
    m = a.units[[*uk, *cols]].merge(b.units[[*uk, *cols]], on=uk, suffixes=("_a", "_b"))
    unmatched = len(a.units) + len(b.units) - 2 * len(m)
    if unmatched:
        warnings.append(f"{pair}: {unmatched} unit(s) have no partner on the other side and are left out")
    clusters = (m["dataset"].astype(str) + "/" + m["conversation_id"].astype(str)).tolist()
    for metric in cols:
        out.append((pair, metric, m[f"{metric}_a"].astype(float), m[f"{metric}_b"].astype(float), clusters))
    return out


def _run(pairs: Sequence[tuple[str, _Side, _Side]], *, alpha: float, n_resamples: int, seed: int,
         warnings: list[str], unit_cols: Sequence[str], withheld: Mapping[str, str] | None = None,
         ) -> list[MetricResult]:
    family = [item for pair, a, b in pairs for item in _pair_metrics(pair, a, b, warnings, unit_cols)]
    family = [f for f in family if len(f[2])]
    if not family:
        raise ConfigError("nothing to compare: the two sides share no conversation")
    intervals = holm_intervals([((va - vb).to_numpy(), cl) for _, _, va, vb, cl in family], alpha=alpha,
                               n_resamples=n_resamples, seed=seed)
    return [MetricResult(pair, metric, float(va.mean()), float(vb.mean()), iv, len(va),
                         (withheld or {}).get(pair, ""),
                         _within(metric, va, vb, iv, n_resamples=n_resamples, seed=seed))
            for (pair, metric, va, vb, _), iv in zip(family, intervals)]


def _within(metric: str, va: pd.Series, vb: pd.Series, iv: Interval, *, n_resamples: int,
            seed: int) -> Interval | None:
    """Issue #18: one chat still gets a direction. With too few conversations for a verdict,
    retention's paired asks are resampled on their own (95 %, outside the Holm family: it never
    decides anything)."""
    if metric != "retention" or iv.enough or not len(va):
        return None
    return ask_level_bootstrap((va - vb).to_numpy(dtype=float), n_resamples=n_resamples, seed=seed)


def prompt_blind(run_a: Run, config_a: str, run_b: Run, config_b: str) -> str:
    """Why comparing these two is a comparison of prompts on a model that ignores them ("" if
    it is not): both sides send a prompt, the prompts differ, and a side's summarizer does not
    follow prompts, so any difference is the template's layout as the model reads it."""
    sides = []
    for run, cfg in ((run_a, config_a), (run_b, config_b)):
        u = run.units[run.units["config"].astype(str) == cfg]
        if u.empty:
            return ""
        first = u.iloc[0]
        preset, model = str(first.get("preset", "")), str(first.get("model", ""))
        follows = components.of_run_config(run.manifest, cfg, preset, model).follows_prompt
        sides.append((model, str(first.get("prompt", "")), follows))
    (ma, qa, fa), (mb, qb, fb) = sides
    if not qa or not qb or qa == qb:
        return ""
    blind = [m for m, follows in ((ma, fa), (mb, fb)) if not follows]
    if not blind:
        return ""
    return (f"prompts {qa!r} and {qb!r} on a prompt-blind summarizer ({', '.join(sorted(set(blind)))}): "
            "it does not follow instructions, so a difference would come from the template's layout")


def _status_warnings(verdicts: Mapping[str, Verdict], configs: Sequence[str], who: Sequence[str]) -> list[str]:
    """A side that is not ok: its numbers are not what the configuration would deliver.
    `verdicts`: `analysis.config_verdicts` of the side's run, computed once by the caller."""
    out = []
    for name, cfg in zip(who, configs):
        v = verdicts.get(cfg)
        if v is not None and v.status != OK:
            out.append(f"{name} ({cfg}) is {v.status}: {v.reason}")
    return out


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


def coverage_line(who: str, run: Run, configs: Sequence[str]) -> str:
    """"A (label): coverage 82 % (…)": the asks behind one side's retention."""
    probes = analysis.ok_probes(run)
    if len(probes):
        probes = probes[probes["config"].astype(str).isin(list(configs))]
    return f"{who} ({', '.join(configs)}): {summary_line(probes)}"


def compare_configs(run: Run, config_a: str, config_b: str, *, alpha: float = DEFAULT_ALPHA,
                    n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Comparison:
    """Two configurations of one run, paired by probe / by conversation."""
    analysis.check_columns(run)
    config_a, config_b = resolve_label(run, config_a), resolve_label(run, config_b)
    a, b = _side(run, config_a), _side(run, config_b)
    warnings = _status_warnings(analysis.config_verdicts(run), (config_a, config_b), ("A", "B"))
    pair = f"{config_a} vs {config_b}"
    blind = prompt_blind(run, config_a, run, config_b)
    results = _run([(pair, a, b)], alpha=alpha, n_resamples=n_resamples, seed=seed, warnings=warnings,
                   unit_cols=unit_metrics(run), withheld={pair: blind} if blind else None)
    diff = _summary_diff(pair, run, config_a, run, config_b, a, b)
    return Comparison(config_a, config_b, results, [diff] if diff else [], warnings, n_resamples,
                      coverage=[coverage_line("A", run, [config_a]), coverage_line("B", run, [config_b])])


UNMATCHABLE_FLAGS = frozenset({"error", "broken", "degraded", "thrashing"})
"""A B configuration with any of these is never a match: its numbers are not what it delivers.
Overflow is judged per Unit instead (`_matches`): a truncate grid point that overflows on one
long conversation is still a fair match on the conversations where it fits."""


def _matches(run: Run, a: _Side, candidates: Sequence[str], tokens: str, tolerance: float) -> list[Match]:
    """For each of A's conversations, B's finished unit that fits the window (among
    `candidates`) nearest in main-model tokens."""
    units = analysis.finished(analysis.with_feasibility(run))
    fits = ~(pd.to_numeric(units["overflow_turns"], errors="coerce").fillna(0) > 0)
    units = units[units["config"].astype(str).isin(candidates) & fits].copy()
    if "seed" not in units.columns:
        units["seed"] = 0
    out = []
    for row in a.units.sort_values(list(UNIT_KEY)).to_dict("records"):
        key = "/".join(str(row[k]) for k in UNIT_KEY)
        same = units[(units["dataset"] == row["dataset"]) & (units["conversation_id"] == row["conversation_id"])
                     & (units["seed"] == row["seed"])]
        a_tok = float(row[tokens])
        if same.empty:
            out.append(Match(key, a_tok, "", math.nan, False))
            continue
        gaps = (same[tokens].astype(float) - a_tok).abs()
        best = same.loc[gaps.sort_values(kind="mergesort").index[0]]
        b_tok = float(best[tokens])
        ok = a_tok > 0 and abs(b_tok - a_tok) <= tolerance * a_tok
        out.append(Match(key, a_tok, str(best["config"]), b_tok, ok))
    return out


def compare_matched(run: Run, config_a: str, config_b: str, *, tolerance: float = MATCH_TOLERANCE,
                    alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                    seed: int = 0) -> Comparison:
    """A against B at matched main-model tokens: B names a preset (or a label) with a grid in the
    run (e.g. truncate at keep values ~10 % apart). On each conversation A's unit is paired with
    the finished, ok B unit nearest in main-model tokens; a conversation whose nearest is more than
    `tolerance` away is reported unmatched and left out. Retention is then paired per ask."""
    analysis.check_columns(run)
    config_a = resolve_label(run, config_a)
    verdicts = analysis.config_verdicts(run)
    presets = run.units.drop_duplicates("config").set_index("config")["preset"].astype(str)
    named = [c for c in verdicts if c != config_a
             and (presets.get(c) == config_b or normalize_label(c) == normalize_label(config_b))]
    if not named:
        resolve_label(run, config_b)  # raises with the nearest label
        named = [resolve_label(run, config_b)]
    candidates = [c for c in named if not UNMATCHABLE_FLAGS & set(verdicts[c].flags)]
    warnings = _status_warnings(verdicts, (config_a,), ("A",))
    if len(candidates) < len(named):
        left = [f"{c} ({verdicts[c].status})" for c in named if c not in candidates]
        warnings.append(f"B: {len(left)} configuration(s) not used for matching: {', '.join(left)}")
    over = [c for c in candidates if "overflow" in verdicts[c].flags]
    if over:
        warnings.append(f"B: {len(over)} configuration(s) overflow the window on some conversations; "
                        "only their units that fit are used")
    if not candidates:
        raise ConfigError(f"{run.path}: no ok configuration for {config_b!r} to match tokens against")
    tokens, cost = unit_metrics(run)
    a = _side(run, config_a)
    matches = _matches(run, a, candidates, tokens, tolerance)
    good = [m for m in matches if m.matched]
    if len(good) < len(matches):
        warnings.append(f"{len(matches) - len(good)} of {len(matches)} conversation(s) have no {config_b} "
                        f"unit within {100 * tolerance:g} % of A's tokens and are left out")
    if not good:
        raise ConfigError(f"no conversation has a {config_b} configuration within {100 * tolerance:g} % of "
                          f"{config_a}'s main-model tokens; add grid points (e.g. keep values ~10 % apart)")
    keys = {m.conversation: m.b_config for m in good}
    a_units = a.units[_unit_keys(a.units).isin(keys)]
    a_probes = a.probes[_unit_keys(a.probes).isin(keys)]
    b_parts = [_side(run, cfg) for cfg in sorted(set(keys.values()))]
    b_units = pd.concat([s.units[_unit_keys(s.units).map(keys) == s_cfg]
                         for s, s_cfg in zip(b_parts, sorted(set(keys.values())))])
    b_probes = pd.concat([s.probes[_unit_keys(s.probes).map(keys) == s_cfg]
                          for s, s_cfg in zip(b_parts, sorted(set(keys.values())))])
    label_b = f"{config_b} (matched tokens)"
    pair = f"{config_a} vs {label_b}"
    blind = next((why for cfg in set(keys.values()) if (why := prompt_blind(run, config_a, run, cfg))), "")
    results = _run([(pair, _Side(a_probes, a_units), _Side(b_probes, b_units))], alpha=alpha,
                   n_resamples=n_resamples, seed=seed, warnings=warnings, unit_cols=(tokens, cost),
                   withheld={pair: blind} if blind else None)
    per_conv = _paired_retention(a_probes, b_probes)
    matches = [dataclasses.replace(m, a_retention=per_conv.get(m.conversation, (math.nan, math.nan))[0],
                                   b_retention=per_conv.get(m.conversation, (math.nan, math.nan))[1])
               if m.matched else m for m in matches]
    return Comparison(config_a, label_b, results, [], warnings, n_resamples, matches,
                      coverage=[coverage_line("A", run, [config_a]),
                                coverage_line("B", run, sorted(set(keys.values())))])


def _paired_retention(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per conversation, A's and B's retention over the asks both answered (the pairs compared)."""
    if a.empty or b.empty:
        return {}
    keys = [*UNIT_KEY, *ASK_KEY]
    m = a[[*keys, "retained"]].merge(b[[*keys, "retained"]], on=keys, suffixes=("_a", "_b"))
    m["conv"] = _unit_keys(m)
    means = m.groupby("conv")[["retained_a", "retained_b"]].mean()
    return {str(c): (float(r["retained_a"]), float(r["retained_b"])) for c, r in means.iterrows()}


def _unit_keys(frame: pd.DataFrame) -> pd.Series:
    return frame[list(UNIT_KEY)].astype(str).agg("/".join, axis=1)


SETUP_COLUMNS = ("context_window", "preset", "params", "prompt", "model", "main_model", "probe_timing")
"""What a configuration's Units were run with, beside the code: two runs compared label by label
are a before/after of a change only where these agree."""


def setup_differences(run_a: Run, run_b: Run, configs: Sequence[str]) -> list[str]:
    """Warnings for the `configs` whose Units in the two runs were not run alike: another window,
    parameters or model (a label can name another setup: a spec edited between runs), or other
    conversations; compared as the sets of values each run's Units hold. One line per
    difference, naming the configurations it applies to (a whole run at another window is one
    line, not one per configuration)."""
    found: dict[str, list[str]] = {}
    units_a, units_b = run_a.units, run_b.units
    label_a, label_b = units_a["config"].astype(str), units_b["config"].astype(str)  # once, not per label
    keys = [k for k in ("dataset", "conversation_id") if k in units_a.columns and k in units_b.columns]
    for config in configs:
        a = units_a[label_a == config]
        b = units_b[label_b == config]
        for col in SETUP_COLUMNS:
            if col in a.columns and col in b.columns:
                va, vb = sorted(set(a[col].astype(str))), sorted(set(b[col].astype(str)))
                if va != vb:
                    found.setdefault(f"{col} ({', '.join(va)} vs {', '.join(vb)})", []).append(config)
        if keys:
            ca = set(map(tuple, a[keys].astype(str).to_numpy().tolist()))
            cb = set(map(tuple, b[keys].astype(str).to_numpy().tolist()))
            if ca != cb:
                found.setdefault(f"the conversations replayed ({len(ca)} vs {len(cb)}, "
                                 f"{len(ca & cb)} in both)", []).append(config)
    return [f"run A and run B differ in {what} for {_some(cs)}: a difference there is the setup's, "
            "not only the change's" for what, cs in found.items()]


def scorer_differences(run_a: Run, run_b: Run) -> list[str]:
    """A warning when the two runs were last scored with other scorers (`rollsum score
    --scorers`): a metric one side did not score reads 0 or – there. Why: a run re-scored without
    `cost` showed `cost_usd $0.0000` against the other's and a cost difference, with no word."""
    a, b = analysis.run_scorers(run_a), analysis.run_scorers(run_b)
    if a is None or b is None or set(a) == set(b):
        return []
    only = [f"{n} only in run {side}" for side, mine, other in (("A", a, b), ("B", b, a))
            for n in mine if n not in other]
    return [f"run A and run B were scored with other scorers ({', '.join(only)}): a metric a run did not "
            "score reads 0 or – there (cost_usd and main tokens need cost); `rollsum score RUN --scorers ...` "
            "aligns them"]


def _some(configs: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(configs) - shown} more" if len(configs) > shown else ""
    return ", ".join(configs[:shown]) + more


def compare_runs(run_a: Run, run_b: Run, config: str | None = None, *,
                 alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> Comparison:
    """The same configuration(s) in two runs of the same Units (e.g. before/after a change)."""
    analysis.check_columns(run_a)
    analysis.check_columns(run_b)
    cfgs_a, cfgs_b = set(run_a.units["config"].astype(str)), set(run_b.units["config"].astype(str))
    warnings: list[str] = []
    if config is not None:
        config = resolve_label(run_a, config)
        if resolve_label(run_b, config) != config:
            raise ConfigError(f"{run_b.path}: no configuration {config!r} (it is labelled differently there)")
        configs = [config]
    else:
        configs = sorted(cfgs_a & cfgs_b)
        if not configs:
            raise ConfigError(f"{run_a.path} and {run_b.path} share no configuration label")
        only = sorted(cfgs_a ^ cfgs_b)
        if only:
            warnings.append(f"configuration(s) in only one run, not compared: {', '.join(only)}")
    warnings += setup_differences(run_a, run_b, configs)
    warnings += scorer_differences(run_a, run_b)
    verdicts_a, verdicts_b = analysis.config_verdicts(run_a), analysis.config_verdicts(run_b)
    for c in configs:
        warnings += (_status_warnings(verdicts_a, (c,), ("run A's",))
                     + _status_warnings(verdicts_b, (c,), ("run B's",)))
    sides = [(c, _side(run_a, c), _side(run_b, c)) for c in configs]
    results = _run(sides, alpha=alpha, n_resamples=n_resamples, seed=seed, warnings=warnings,
                   unit_cols=unit_metrics(run_a, run_b))
    diffs = [d for c, a, b in sides if (d := _summary_diff(c, run_a, c, run_b, c, a, b)) is not None]
    return Comparison(run_a.name, run_b.name, results, diffs[:3], warnings, n_resamples,
                      coverage=[coverage_line(f"run A {run_a.name}", run_a, configs),
                                coverage_line(f"run B {run_b.name}", run_b, configs)])


# ---------------------------------------------------------------------------------------------
# Output


TABLE_HEADERS = ("pair", "metric", "A", "B", "A − B [CI]", "CI level", "Holm p", "verdict")


def _fmt(metric: str, v: float) -> str:
    return fmt_usd(v) if metric == "cost_usd" else fmt_num(v, 0 if "tokens" in metric else 3)


def fmt_p(p: float, n_resamples: int) -> str:
    """A bootstrap p-value: none of n resamples crossing 0 means p < 1/n, not p = 0."""
    if math.isnan(p):
        return "–"
    return f"< {1 / n_resamples:.2g}" if p < 1 / n_resamples else f"{p:.3g}"


def table_rows(comparison: Comparison) -> list[list[str]]:
    rows = []
    for r in comparison.results:
        d = r.diff
        ci = (f"{_fmt(r.metric, d.estimate)} [{_fmt(r.metric, d.low)}, {_fmt(r.metric, d.high)}]" if d.enough
              else f"{_fmt(r.metric, d.estimate)} ({not_enough(d.clusters)})")
        rows.append([r.pair, r.metric, _fmt(r.metric, r.mean_a), _fmt(r.metric, r.mean_b), ci,
                     f"{100 * (1 - d.alpha):.1f}%" if d.enough else "–",
                     fmt_p(d.p_value, comparison.n_resamples) if d.enough else "–", r.verdict])
    return rows


MATCH_HEADERS = ("conversation", "A tokens", "matched B configuration", "B tokens", "B − A", "used",
                 "A retention", "B retention")


def match_rows(comparison: Comparison) -> list[list[str]]:
    return [[m.conversation, fmt_num(m.a_tokens, 0), m.b_config or "(none finished)", fmt_num(m.b_tokens, 0),
             "–" if math.isnan(m.gap) else f"{100 * m.gap:+.1f}%", "yes" if m.matched else "no: too far",
             fmt_num(m.a_retention), fmt_num(m.b_retention)]
            for m in comparison.matches]


def verdict_text(comparison: Comparison) -> str:
    """The plain-text table the CLI prints."""
    lines = text_table(TABLE_HEADERS, table_rows(comparison))
    if comparison.matches:
        lines += ["", *text_table(MATCH_HEADERS, match_rows(comparison))]
    head = f"A = {comparison.label_a}\nB = {comparison.label_b}\nverdict (retention): {comparison.verdict}"
    head += "".join(f"\ndirection, {r.pair}: {r.direction}" for r in comparison.results if r.direction)
    head += "".join(f"\n{c}" for c in comparison.coverage)
    return head + "\n\n" + "\n".join(lines) + "".join(f"\nwarning: {w}" for w in comparison.warnings)


def to_markdown(comparison: Comparison) -> str:
    c = comparison
    md = [f"# A/B: {md_escape(c.label_a)} vs {md_escape(c.label_b)}", "",
          f"- **A** = `{md_escape(c.label_a)}`", f"- **B** = `{md_escape(c.label_b)}`",
          f"- **Verdict (retention): {c.verdict}**", "",
          f"Paired by answerable ask (retention) and by conversation (tokens, cost); {c.n_resamples} "
          "bootstrap resamples of conversations; intervals at Holm-corrected levels over all rows "
          "(family-wise 95 %). A verdict names a winner only when its interval excludes 0; none is "
          f"given on fewer than {MIN_CONVERSATIONS} conversations.", "",
          md_table(TABLE_HEADERS, table_rows(c)), ""]
    directions = [f"- {md_escape(r.pair)}: {md_escape(r.direction)}" for r in c.results if r.direction]
    if directions:
        md += [f"## Within these conversations only ({len(directions)})", "",
               f"Fewer than {MIN_CONVERSATIONS} conversations: no verdict, but the paired asks, resampled on "
               "their own, give a direction. It says nothing about other chats.", "", *directions, ""]
    if c.coverage:
        md += ["## Coverage", "", "How many asks each side's retention counts (answerable ÷ non-adversarial), "
               "per category.", "", *(f"- {md_escape(x)}" for x in c.coverage), ""]
    if c.matches:
        md += ["## Matched units", "", "Each conversation of A against B's configuration nearest in "
               "main-model tokens (used only within the tolerance).", "", md_table(MATCH_HEADERS, match_rows(c)), ""]
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
