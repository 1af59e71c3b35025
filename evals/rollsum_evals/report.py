"""`rollsum report RUN`: one run directory in, report.md + self-contained report.html + figures out
(SVG by default, PNG with ``figures="png"``: `plots.FORMATS`).

The report answers "which configuration keeps the most early facts per token" at a glance: a
verdict, a ranked table of the configurations that are feasible and healthy with intervals
clustered by conversation, one section per reason a configuration is not ranked (degraded,
broken, infeasible, reference, error) with the reason in words, the asks that were excluded and
why, the retention/tokens plane with its Pareto frontier, where facts die, and what it cost.
`configs.csv` beside it holds every configuration's numbers and verdict for machines. The HTML
embeds its images and has no external CSS, JS or fonts, so it can be mailed or attached to a CI
run and still open offline.
Every piece of text that came from a conversation or a spec (questions, answers, summaries,
configuration labels) is passed through `html.escape`: a `<script>` in a chat shows as text.

Reads only the run directory (docs/run-format.md), through `rollsum_evals.analysis`.

Over ~400 lines because it writes two renderings (markdown and self-contained HTML) of the same
sections; the numbers come from `analysis`, the figures from `plots`, the keys from
`report_keys` and the drill-down from `drilldown`.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals import drilldown, plots, report_publish
from rollsum_evals.analysis import (
    PER_CALL,
    answerable_probes,
    best_by_gain,
    config_table,
    dataset_hashes,
    has_gains,
    load,
    lost_asks,
    ok_probes,
    ok_units,
    ranked,
    run_scorers,
    summaries_at_checkpoint,
    token_axis,
)
from rollsum_evals.coverage import by_category_of, coverage, fmt_share, low_coverage_line
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_interval, fmt_num, fmt_usd, html_table, md_escape, md_table
from rollsum_evals.gain import is_curve as is_curve_label
from rollsum_evals.report_keys import LEGEND_HEADERS, ConfigKeys, config_keys, config_params, grid_views, legend_rows
from rollsum_evals.report_qa import QA_CSV_COLUMNS, QA_HEADERS, QA_TEXT, QA_TITLE, has_qa, judge_notes, qa_rows
from rollsum_evals.rundir.journal import read_jsonl
from rollsum_evals.rundir.read import Run
from rollsum_evals.scoring import ALWAYS
from rollsum_evals.scoring.answer_retention import AnswerRetention
from rollsum_evals.scoring.cost import Cost
from rollsum_evals.stats import DEFAULT_RESAMPLES, MIN_CONVERSATIONS, WITHIN_ONLY, not_enough
from rollsum_evals.verdicts import (
    BROKEN,
    DEFAULT_THRESHOLDS,
    DEGRADED,
    ERROR,
    INFEASIBLE,
    OK,
    REFERENCE,
    Thresholds,
)

log = logging.getLogger(__name__)

TOP_CONFIGS = 2
"""How many of the best configurations get their summaries shown side by side."""


def rank_headers(tokens: str, asks: bool = False) -> tuple[str, ...]:
    """`asks`: add the ask-level gain interval (fewer than 5 conversations)."""
    return ("#", "config", "key", "gain vs truncate [95% CI]",
            *((f"gain, ask-level [95% CI] ({WITHIN_ONLY})",) if asks else ()),
            "retention [95% CI]", "coverage", tokens, "cost / conversation [95% CI]",
            "projected summarizer cost", "calls / message", "failed calls", "containment (old)",
            "conversations", "Pareto")


def unranked_headers(tokens: str) -> tuple[str, ...]:
    return ("config", "status", "why not ranked", "retention [95% CI]", tokens,
            "calls / message", "failed calls", "overflow turns", "peak context ÷ window")

SECTIONS: tuple[tuple[str, str, str], ...] = (
    (DEGRADED, "Degraded: summaries failing or thrashing",
     "The summarizer failed on more calls than the limit, or was called on most messages. Its "
     "retention is not what the configuration would deliver."),
    (BROKEN, "Broken: every summarizer call failed",
     "Nothing was summarized; whatever retention it shows comes from keeping messages verbatim."),
    (INFEASIBLE, "Infeasible: the context did not fit the window",
     "On some turns the context was larger than the main model's window: a real call would "
     "have been refused or truncated by the API."),
    (REFERENCE, "References (not candidates)",
     "Baselines that do not fit the window, drawn as a line on the retention-vs-tokens plot: full "
     "context is the ceiling a summary is measured against; a truncation that keeps more than the "
     "window holds overflows, and is no floor (the truncate curve, capped at the window, is)."),
    (ERROR, "Errors: units that did not finish",
     "Some conversations did not finish under this configuration; its numbers are incomplete."),
    (OK, "Not ranked: nothing to rank by",
     "Healthy and feasible, but without a retention figure (no answerable asks)."),
)
CURVE_TEXT = ("The truncate grid the harness adds to every sweep (labels `{label}[keep=…]`, capped at the "
              "window): on each conversation its Units trace retention over main-model tokens, and each "
              "configuration's gain is its retention minus this curve's at the configuration's tokens "
              "(docs/reports.md). It is the yardstick, never a candidate; every point is in configs.csv.")
EXCLUSION_WORDS = {"adversarial": "adversarial", "uncheckable": "not checkable",
                   "unsupported": "not supported by the conversation"}
CSV_COLUMNS = ("config", "rank", "status", "flags", "reason", "retention", "retention_low", "retention_high",
               "gain", "gain_low", "gain_high", "truncate_retention", "gain_units", "gain_outside",
               "gain_asks", "gain_asks_low", "gain_asks_high", "coverage",
               "retention_containment", "n_conversations", "n_units", "n_units_failed", "n_asks", "n_probes",
               "n_excluded_adversarial", "n_excluded_uncheckable", "n_excluded_unsupported",
               "main_tokens", "main_tokens_low", "main_tokens_high", "main_tokens_basis",
               "main_tokens_per_turn", "main_tokens_at_asks", "main_input_tokens",
               "cost_usd", "cost_usd_low", "cost_usd_high", "cost_main_usd",
               "cost_summarizer_usd", "projected_summarizer_cost_usd", "projected_model",
               "summarizer_attempts", "failures", "failure_rate", "summarizer_calls_per_message",
               "fallbacks", "cassette_misses", "clips", "overflow_turns", "max_context_ratio",
               "context_window", "pareto", "preset", "model", "prompt")
"""configs.csv, in this order (docs/reports.md documents each), then one `coverage_<category>` column
per category of the run (`coverage.coverage_columns`)."""


def _failed(r: Mapping[Any, Any]) -> str:
    """"failed/attempted" summarizer calls; "–" for a baseline (it has no summarizer)."""
    attempts, failures = r.get("summarizer_attempts", math.nan), r.get("failures", math.nan)
    if _missing(attempts) or r.get("baseline"):
        return "–"
    return f"{int(failures or 0):,}/{int(attempts):,}"


def _calls(r: Mapping[Any, Any]) -> str:
    return "–" if r.get("baseline") else fmt_num(r.get("summarizer_calls_per_message", math.nan), 2)


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _retention(r: Mapping[Any, Any]) -> str:
    return fmt_interval(r["retention"], r["retention_low"], r["retention_high"], int(r["n_conversations"]))


def _signed(v: Any) -> str:
    return "–" if _missing(v) else f"{float(v):+.3f}"


def _gain(r: Mapping[Any, Any]) -> str:
    """"+0.123 [+0.050, +0.200]"; the reason instead of an interval; "–" without a gain."""
    g = r.get("gain", math.nan)
    if _missing(g):
        return "– (off the truncate curve)" if int(r.get("gain_outside") or 0) and r.get("_curve_run") else "–"
    low, high = r.get("gain_low", math.nan), r.get("gain_high", math.nan)
    if _missing(low) or _missing(high):
        return f"{_signed(g)} ({not_enough(int(r['n_conversations']))})"
    return f"{_signed(g)} [{_signed(low)}, {_signed(high)}]"


def _gain_asks(r: Mapping[Any, Any]) -> str:
    g = r.get("gain_asks", math.nan)
    if _missing(g):
        return "–"
    low, high = r.get("gain_asks_low", math.nan), r.get("gain_asks_high", math.nan)
    if _missing(low):
        return f"{_signed(g)} (too few asks)"
    return f"{_signed(g)} [{_signed(low)}, {_signed(high)}]"


def few_conversations(table: pd.DataFrame) -> bool:
    """The ask-level gain columns are there: fewer than 5 conversations."""
    return "gain_asks" in table.columns and bool(ranked(table)["gain_asks"].notna().any()) if len(table) else False


def _projected(r: Mapping[Any, Any]) -> str:
    v = r.get("projected_summarizer_cost_usd", math.nan)
    if _missing(v) or r.get("baseline"):
        return "–"
    model = str(r.get("projected_model") or "")
    return f"{fmt_usd(v)}" + (f" ({model})" if model else "")


def ranked_rows(table: pd.DataFrame, keys: ConfigKeys | None = None) -> list[list[str]]:
    rows = []
    tokens = token_axis(table).column
    keys = keys or config_keys(table["config"])
    asks = few_conversations(table)
    curve_run = has_gains(table)
    for r in ranked(table).to_dict("records"):
        r["_curve_run"] = curve_run
        rows.append([str(r["rank"]), str(r["config"]), keys[str(r["config"])], _gain(r),
                     *([_gain_asks(r)] if asks else []), _retention(r),
                     fmt_share(r.get("coverage", math.nan)), fmt_num(r[tokens], 0),
                     f"{fmt_usd(r['cost_usd'])} [{fmt_usd(r['cost_usd_low'])}, {fmt_usd(r['cost_usd_high'])}]"
                     if not _missing(r["cost_usd_low"]) else fmt_usd(r["cost_usd"]),
                     _projected(r), _calls(r), _failed(r),
                     fmt_num(r.get("retention_containment", math.nan)), str(r["n_conversations"]),
                     "★" if r["pareto"] else ""])
    return rows


def unranked_rows(table: pd.DataFrame, status: str) -> list[list[str]]:
    rows = []
    tokens = token_axis(table).column
    curve = table["curve"].astype(bool) if "curve" in table.columns else pd.Series(False, index=table.index)
    for r in table[(table["status"] == status) & ~table["ranked"] & ~curve].to_dict("records"):
        ratio = r.get("max_context_ratio", math.nan)
        rows.append([str(r["config"]), str(r["status"]), str(r["reason"]), _retention(r),
                     fmt_num(r[tokens], 0), _calls(r), _failed(r), fmt_num(r.get("overflow_turns", math.nan), 0),
                     "–" if _missing(ratio) else f"{ratio:.2f}×"])
    return rows


def exclusion_rows(table: pd.DataFrame) -> list[list[str]]:
    """Asks and why some were not counted, per configuration; one row when all agree."""
    cols = ["n_asks", "n_probes", *(f"n_excluded_{k}" for k in EXCLUSION_WORDS)]
    counts = table[["config", *cols]]
    if len(counts) and (counts[cols].nunique() == 1).all():
        return [["every configuration", *(f"{int(v):,}" for v in counts[cols].iloc[0])]]
    return [[str(r["config"]), *(f"{int(r[c]):,}" for c in cols)] for r in counts.to_dict("records")]


EXCLUSION_HEADERS = ("config", "asks", "answerable (counted)",
                     *(f"excluded: {w}" for w in EXCLUSION_WORDS.values()))


def headline(table: pd.DataFrame, scorers: Sequence[str] | None = None) -> str:
    """One sentence: which configuration the report recommends, and what it left out.
    `scorers`: the run's, when known (`run_scorers`): a run scored without `cost` has no main
    tokens, so no gain even with its truncate curve; the sentence says that, not "no curve"."""
    if table.empty:
        return "No finished units."
    best = ranked(table)
    left_out = table[~table["ranked"] & ~table.get("curve", pd.Series(False, index=table.index)).astype(bool)]
    groups = left_out["status"].replace({OK: "without answerable asks"}).value_counts().sort_index()
    counts = ", ".join(f"{n} {s}" for s, n in groups.items())
    tail = f" {len(left_out)} configuration(s) not ranked ({counts})." if len(left_out) else ""
    if best.empty:
        if (table["status"] == OK).any():
            return "Nothing is ranked: no feasible, healthy configuration has answerable asks." + tail
        return "No configuration is both feasible and healthy: nothing is ranked." + tail
    axis = token_axis(table)
    ranked_n = f"{len(best)} configuration(s) ranked"
    if not has_gains(table):
        r = best.iloc[0].to_dict()
        if scorers is not None and Cost.name not in scorers:
            again = [n for n in scorers if n not in ALWAYS]  # (added by every plan anyway)
            return (f"Best: {r['config']} — retention {_retention(r)}; {ranked_n} by retention ({Cost.name} was "
                    f"not scored in this run (scorers: {', '.join(scorers) or 'none'}), so no main tokens, no cost "
                    f"and no gain over truncation: the 0 tokens and $0 below were not measured; re-score with "
                    f"`rollsum score RUN --scorers {','.join([*again, Cost.name])}`).{tail}")
        return (f"Best: {r['config']} — retention {_retention(r)} at {fmt_num(r[axis.column], 0)} "
                f"{axis.header}; {ranked_n} by retention (no truncate curve in this run, so no gain: "
                f"re-run it to rank at matched tokens).{tail}")
    return f"{pick_sentence(table)} {ranked_n} by gain over truncation at their tokens.{tail}"


def _at(r: Mapping[Any, Any], axis_column: str, header: str) -> str:
    return (f"retention {fmt_num(r['retention'])} vs truncation's {fmt_num(r.get('truncate_retention'))} at "
            f"{fmt_num(r[axis_column], 0)} {header}")


def pick_sentence(table: pd.DataFrame, budget: float | None = None) -> str:
    """Which configuration wins at matched tokens and by how much (within `budget` tokens per call
    when given), or that none beats truncation at its tokens — with the ask-level direction on
    fewer than 5 conversations, labelled as such."""
    axis = token_axis(table)
    within = "" if budget is None else f" within {fmt_num(budget, 0)} {axis.header}"
    best = best_by_gain(table, budget)
    if best is not None:
        r = best.to_dict()
        return (f"Best{within}: {r['config']} — gain {_gain(r)} over truncation at its tokens "
                f"({_at(r, axis.column, axis.header)}).")
    pool = ranked(table)
    if budget is not None:
        pool = pool[pool[axis.column].astype(float) <= budget]
    pool = pool[pool["gain"].notna()]
    if pool.empty:
        return f"No configuration{within} has a gain: none lies on the truncate curve." if budget is not None \
            else "No configuration beats truncation at its tokens: none lies on the truncate curve."
    r = pool.iloc[0].to_dict()
    # without an interval (too few conversations) nothing was tested: "no configuration beats
    # truncation" would read as a finding against a +0.7 gain, so the line says there is no verdict
    untested = _missing(r.get("gain_low")) or _missing(r.get("gain_high"))
    claim = (f"No verdict{within} on {int(r['n_conversations'])} conversation(s) (an interval needs "
             f"{MIN_CONVERSATIONS})" if untested else f"No configuration{within} beats truncation at its tokens")
    text = (f"{claim}: the top gain, {r['config']}, is "
            f"{_gain(r)} ({_at(r, axis.column, axis.header)}).")
    if not _missing(r.get("gain_asks_low")):
        direction = ("higher" if r["gain_asks_low"] > 0 else "lower" if r["gain_asks_high"] < 0
                     else "no different")
        text += (f" Ask-level ({WITHIN_ONLY}): {_gain_asks(r)}, retention {direction} than truncation's "
                 "on these asks.")
    return text


def budget_rows(table: pd.DataFrame, budgets: Sequence[float]) -> list[list[str]]:
    """One row per budget: the pick within it (`pick_sentence`)."""
    return [[fmt_num(b, 0), pick_sentence(table, b)] for b in budgets]


def run_budgets(run: Run) -> list[float]:
    """``[report] budgets`` of the run's spec (tokens per call), as recorded in its manifest."""
    spec = run.manifest.get("spec")
    report = spec.get("report") if isinstance(spec, Mapping) else None
    budgets = report.get("budgets") if isinstance(report, Mapping) else None
    if not isinstance(budgets, list):
        return []
    return sorted(float(b) for b in budgets if isinstance(b, (int, float)) and not isinstance(b, bool) and b > 0)


def first_line(table: pd.DataFrame, probes: pd.DataFrame, scorers: Sequence[str] | None = None) -> str:
    """The report's first line: low coverage, if so, then the pick (`headline`). `scorers`: the
    run's (its manifest's ``scoring``), when known: a run re-scored without answer_retention
    has no retention to rank by and no ask marked answerable, which is not low coverage (the
    asks are answerable; nobody asked), so the line says what is missing instead."""
    retention = AnswerRetention.name
    if scorers is not None and retention not in scorers:
        return (f"{retention} was not scored in this run (scorers: {', '.join(scorers) or 'none'}): "
                f"no retention, no coverage, nothing ranked by them; re-score with `rollsum score RUN "
                f"--scorers {retention}`. {headline(table, scorers)}")
    warn = low_coverage_line(coverage(candidate_probes(table, probes)))
    return f"{warn} {headline(table, scorers)}" if warn else headline(table, scorers)


def candidate_probes(table: pd.DataFrame, probes: pd.DataFrame) -> pd.DataFrame:
    """The asks of the configurations that are not the added truncate curve (its asks are the
    same questions again, and would weigh coverage by the grid's size)."""
    if probes.empty or "config" not in probes.columns or "curve" not in table.columns:
        return probes
    curve = set(table.loc[table["curve"].astype(bool), "config"].astype(str))
    return probes[~probes["config"].astype(str).isin(curve)]


COVERAGE_HEADERS = ("category", "asks", "answerable", "counted", "coverage")


def coverage_rows(table: pd.DataFrame) -> list[list[str]]:
    """Per category: asks, answerable, counted and coverage (a `coverage.by_category` table)."""
    return [[str(c), f"{int(r['probes']):,}", f"{int(r['answerable']):,}", f"{int(r['counted']):,}",
             fmt_share(r["coverage"])] for c, r in table.iterrows()]


def coverage_section(table: pd.DataFrame, probes: pd.DataFrame) -> tuple[str, list[list[str]]]:
    """(caption, rows): the per-category counts of the top configuration's asks, and whether every
    configuration counted the same."""
    cand = candidate_probes(table, probes)
    if cand.empty or "config" not in cand.columns:
        return "", []
    tables = by_category_of(cand, cand["config"])  # keys: the configurations with asks
    configs = [c for c in table["config"].astype(str) if c in tables]
    if not configs:
        return "", []
    first = configs[0]
    base = tables[first]
    same = all(tables[c].equals(base) for c in configs[1:])
    caption = (f"Asks of {first} by category" + ("; every configuration counted the same asks." if same else
               "; configurations differ: each one's coverage is in configs.csv (`coverage_<category>`).")
               + " Coverage = answerable ÷ non-adversarial asks; counted = answerable asks with a score.")
    return caption, coverage_rows(base)


BUDGET_HEADERS = ("budget (main tokens / call)", "pick")
BUDGET_TEXT = ("The spec's `[report] budgets`: for each, the ranked configuration with the highest gain over "
               "truncation among those spending at most that many main-model tokens per call.")


def budget_labels(axis_header: str) -> tuple[tuple[str, str], str]:
    """The budget table's headers and caption in the token figure budgets are held to (the
    report's axis, `pick_sentence`): a run asked at chosen moments (`ages`, `end`) compares them
    with the tokens at the asks, which the header called "main tokens / call"."""
    if axis_header == "main tokens / call":
        return BUDGET_HEADERS, BUDGET_TEXT
    return ((f"budget ({axis_header})", "pick"),
            f"The spec's `[report] budgets`: for each, the ranked configuration with the highest gain over "
            f"truncation among those at most that many {axis_header} (the token figure this report ranks by: "
            f"docs/reports.md).")


def truncation_points(table: pd.DataFrame) -> pd.DataFrame:
    """(tokens, retention) of every truncate configuration that is ok (fits the window), sorted by
    tokens: the curve the retention plot draws."""
    if table.empty or "preset" not in table.columns:
        return pd.DataFrame(columns=["tokens", "retention"])
    col = token_axis(table).column
    trunc = (table["preset"].astype(str) == "truncate") | table["config"].astype(str).map(is_curve_label)
    t = table[trunc & (table["status"] == OK) & table["retention"].notna()]
    pts = pd.DataFrame({"tokens": t[col].astype(float), "retention": t["retention"].astype(float)})
    return pts.dropna().groupby("tokens")["retention"].mean().reset_index().sort_values(by="tokens")


def curve_section(curve: pd.DataFrame, column: str, header: str) -> str:
    """What the added truncate grid is, and the token range it covers ("" without one)."""
    if curve.empty:
        return ""
    ok = curve[curve["status"] == OK]
    span = (f" Its {len(ok)} point(s) that fit span {fmt_num(ok[column].min(), 0)}–{fmt_num(ok[column].max(), 0)} "
            f"{header}; a configuration outside that range gets no gain (never extrapolated)." if len(ok) else
            " None of its points fits the window: there is no curve.")
    label = str(curve["config"].iloc[0]).partition("[")[0]
    return CURVE_TEXT.format(label=label) + span


def write_configs_csv(table: pd.DataFrame, path: Path) -> Path:
    """configs.csv: one row per configuration, every column in docs/reports.md."""
    per_category = sorted(c for c in table.columns if c.startswith("coverage_"))
    out = table.reindex(columns=[*CSV_COLUMNS, *(QA_CSV_COLUMNS if has_qa(table) else ()), *per_category])
    atomic_write_text(path, out.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    return path


CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
 color:#1d1d1f;padding:0 1em;line-height:1.45}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f2f4f7}tr:nth-child(even) td{background:#fafbfc}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.meta td:first-child{font-weight:600}
.side{display:flex;gap:1em}.side>div{flex:1;min-width:0}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f7f7f9;border:1px solid #e1e1e8;padding:.8em;
 font-size:.82em;max-height:36em;overflow:auto}
.warn{color:#a94442}
table.flagged td{background:#fdf1f0}
"""


def _manifest_rows(run: Run) -> list[list[str]]:
    m = run.manifest
    rows = [["run", run.name]]
    for key in ("spec_path", "spec_sha256", "git_sha", "started_at", "finished_at", "unit_count"):
        if m.get(key) not in (None, ""):
            rows.append([key, str(m[key])])
    hashes = dataset_hashes(m)
    if hashes:
        rows.append(["dataset sha256", ", ".join(f"{k}={v[:12]}" for k, v in sorted(hashes.items()))])
    for key in ("scorer_versions", "versions"):
        val = m.get(key)
        if isinstance(val, Mapping):
            rows.append([key, ", ".join(f"{k}={str(v)[:12]}" for k, v in sorted(val.items()))])
    return rows


def _history_path(run: Run, history: Path | None) -> Path | None:
    """The history to plot: the one the user named (which must exist: a mistyped path used to
    leave the trend out in silence), else the run's default one if there is one."""
    if history is not None:
        if not history.exists():
            raise ConfigError(f"--history {history}: no such file (expected the history JSONL that "
                              "`rollsum regress --record-history` writes beside the baseline)")
        return history
    candidate = Path("reports") / "baselines" / f"{run.name}.history.jsonl"
    return candidate if candidate.exists() else None


def _lost_examples(probes: pd.DataFrame, config: str, limit: int = 8) -> list[list[str]]:
    rows = []
    for r in lost_asks(probes, config).head(limit).to_dict("records"):
        rows.append([str(r.get("conversation_id", "")), str(r.get("category", "")),
                     str(r.get("question", "")), str(r.get("answer", "")),
                     str(r.get("age_turns", "")), str(r.get("died_at_generation", ""))])
    return rows


LEGEND_TEXT = ("Plots name configurations by key. Keys follow the sorted configuration labels of the run "
               "(numbers as numbers), so the same run always gets the same keys.")


def _keyed_history(entry: Mapping[str, Any], keys: ConfigKeys) -> dict[str, Any]:
    """A regression-history entry whose per-configuration metrics are keyed like the plots."""
    configs = entry.get("configs")
    if not isinstance(configs, Mapping):
        return dict(entry)
    return {**entry, "configs": {keys.keys.get(str(c), str(c)): v for c, v in configs.items()}}


READING = ("Retention = the share of *answerable* asks (a probe at one asking turn) whose answer the "
           "context at that turn supports; intervals are 95 % bootstrap intervals resampling "
           "conversations. Only configurations whose context always fit the window and whose "
           "summarizer was healthy (at most {fail} of calls failed, at most {cpm:g} calls per message) "
           "are ranked or on the Pareto frontier; the others are listed below with the reason. "
           "Cost / conversation is priced, not spent: the main model's input at the spec's `main_model` "
           "(default claude-haiku-4-5) plus the summarizer's and judge's calls at list price, so an "
           "offline run that spent $0 still shows what the main model would cost; projected "
           "summarizer cost prices an offline summarizer's calls at the model named.")


def _notes(run: Run, table: pd.DataFrame) -> list[str]:
    """Banners: what the reader must know before trusting any number below."""
    from rollsum_evals.rundir.status import run_banner

    notes = []
    status = run_banner(run.path)
    if status:
        notes.append(status)
    n_err = len(run.units) - len(ok_units(run))
    if n_err:
        notes.append(f"{n_err} unit(s) did not finish and are left out of every figure; their "
                     "configurations are not ranked.")
    if "answerable" not in run.probes.columns and not run.probes.empty:
        notes.append("This run was scored before the support-based metric: retention is the old "
                     "containment check over asks the conversation contains (re-score with `rollsum score`).")
    if len(table) and table["flags"].str.contains("health-unknown").any():
        notes.append("This run has no summarizer health columns: failures and thrashing cannot be "
                     "checked (re-score with `rollsum score`).")
    notes += judge_notes(table)
    skipped = skipped_records(run.manifest)
    if skipped:
        where = ", ".join(f"{n} in {ds}" for ds, n in sorted(skipped.items()))
        notes.append(f"{sum(skipped.values())} bad dataset record(s) were left out (--skip-bad-records: {where}): "
                     "every number below is of the conversations that could be read.")
    return notes


def skipped_records(manifest: Mapping[str, Any]) -> dict[str, int]:
    """Dataset -> bad records the run left out (``rollsum run --skip-bad-records``), where any were."""
    out = {}
    for name, info in (manifest.get("datasets") or {}).items():
        n = info.get("skipped_records") if isinstance(info, Mapping) else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            out[str(name)] = n
    return out


def write_report(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                 history: Path | None = None, n_resamples: int = DEFAULT_RESAMPLES,
                 thresholds: Thresholds = DEFAULT_THRESHOLDS, figures: str = plots.FORMATS[0]) -> Path:
    """Write report.md, report.html, configs.csv and the figures (`figures`: "svg" or "png",
    `plots.FORMATS`); return the path of report.html.
    They are written into a temporary folder beside the target and moved into place together
    (`report_publish`): a report killed midway leaves the previous one, never a mix."""
    if figures not in plots.FORMATS:
        raise ConfigError(f"figures: expected one of {', '.join(plots.FORMATS)}, got {figures!r}")
    run = load(run_dir)
    target = Path(out_dir) if out_dir is not None else Path("reports") / run.name
    with report_publish.building(target) as build:
        _write_files(run, build, history=history, n_resamples=n_resamples, thresholds=thresholds,
                     kind=figures)
    log.info("report written to %s", target / "report.html")
    return target / "report.html"


MIME = {"svg": "image/svg+xml", "png": "image/png"}
"""How report.html embeds a figure of each of `plots.FORMATS` (a data: URL in an <img>: an SVG
there is an image, never part of the page, so nothing in it can script or restyle the page)."""


def _write_files(run: Run, out: Path, *, history: Path | None, n_resamples: int, thresholds: Thresholds,
                 kind: str = plots.FORMATS[0]) -> Path:
    """Every file of the report, into `out` (the folder being built); figures in format `kind`."""
    full = config_table(run, thresholds=thresholds, n_resamples=n_resamples)
    write_configs_csv(full, out / "configs.csv")
    # the added truncate grid is the yardstick: drawn as a curve, listed in configs.csv, not a row
    is_curve = full["curve"].astype(bool) if len(full) else pd.Series(dtype=bool)
    table, curve = (full[~is_curve].reset_index(drop=True), full[is_curve]) if len(full) else (full, full)
    every_probe = ok_probes(run)
    curve_labels = set(curve["config"].astype(str)) if len(curve) else set()
    probes = answerable_probes(run)
    if curve_labels and "config" in probes.columns:
        probes = probes[~probes["config"].astype(str).isin(curve_labels)]
    best = ranked(table)["config"].tolist() if len(table) else []
    configs = table["config"].tolist() if len(table) else []
    keys = config_keys([*configs, *(probes["config"].astype(str) if "config" in probes.columns else [])])
    params = config_params(run.units)
    ktable, kprobes = keys.rename(table), keys.rename(probes)
    kconfigs = [keys[c] for c in configs]
    top = kconfigs[: plots.MAX_SERIES]
    axis = token_axis(table) if len(table) else PER_CALL
    tokens, axis_label = axis.header, axis.label

    figures: list[tuple[str, str, Path]] = []
    figures.append(("Retention vs tokens", f"x: {axis_label}. Higher and further left is better; red "
                    "points are on the Pareto frontier (no ranked configuration keeps more facts with "
                    "fewer tokens); grey crosses are not ranked (see their section); dashed lines are "
                    "references; the black line is truncation (keep the newest messages, capped at the window) "
                    "at each token figure, the curve gain is measured against.",
                    plots.retention_vs_tokens(ktable, out / f"retention_vs_tokens.{kind}",
                                              truncation=truncation_points(full))))
    figures.append(("Peak context vs the window", "Largest context of any turn divided by the main "
                    "model's window: past 1.0 a real call would not fit. Counted as the engine packs its window, "
                    "without the timestamps a config shows: they get what the window has left, the oldest "
                    "that do not fit left out (docs/scoring.md).",
                    plots.context_vs_window(ktable, out / f"context_vs_window.{kind}")))
    if not probes.empty and "age_turns" in probes.columns:
        figures.append(("Retention by fact age", f"Answerable asks; the first {len(top)} configurations "
                        "of the table (ranked first).",
                        plots.retention_by_age(kprobes, top, out / f"retention_by_age.{kind}")))
    if not probes.empty and "died_at_generation" in probes.columns:
        figures.append(("Where facts die", "Generation = index in the summary chain of the first "
                        "summary that lost a fact it had.",
                        plots.where_facts_die(kprobes, kconfigs, out / f"where_facts_die.{kind}")))
    figures.append(("Cost split", "Main model, summarizer and judge, by the price table; hatched: what an "
                    "offline summarizer's calls would cost at the projected model (not spent).",
                    plots.cost_split(ktable, out / f"cost_split.{kind}")))
    if not probes.empty and "category" in probes.columns:
        figures.append(("Retention by category", "Answerable asks; LoCoMo categories and synthetic kinds.",
                        plots.retention_by_category(kprobes, kconfigs, out / f"retention_by_category.{kind}")))
    for i, view in enumerate(grid_views(table, params, keys)):
        also = (f" {', '.join(view.averaged_over)} also vary: each cell is the mean over them."
                if view.averaged_over else "")
        figures.append((f"Grid: {view.preset}, {view.x} × {view.y}",
                        "Retention (left) and cost per conversation (right) of every configuration of the "
                        f"preset over two swept parameters; each cell names its configuration key(s).{also}",
                        plots.param_heatmap(view.frame, view.x, view.y, out / f"grid_{i + 1}.{kind}",
                                            f"{view.preset}: {view.x} (columns) × {view.y} (rows)")))
    hist_path = _history_path(run, history)
    hist_rows = list(read_jsonl(hist_path)) if hist_path is not None else []
    if hist_rows:
        figures.append(("Trend", f"From {hist_path}.",
                        plots.retention_trend([_keyed_history(h, keys) for h in hist_rows], top,
                                              out / f"trend.{kind}")))

    summarized = (set(run.units.loc[run.units["unit_id"].isin(run.summarized_units()), "config"].astype(str))
                  if "unit_id" in run.units else set())
    shown = [c for c in best if c in summarized][:TOP_CONFIGS]
    # the drill-down's Units are announced before the checkpoint reads its summaries: one scan
    # of the summaries journal for both
    facts = drilldown.plan(probes, keys)
    run.want_traces(facts.units)
    checkpoint = summaries_at_checkpoint(run, shown) if shown else None
    # the top *candidate*: a baseline that fits the window (full context on a short chat) ranks
    # first and loses nothing, which would hide what the best summarizing configuration lost
    baselines = set(table.loc[table["baseline"].astype(bool), "config"]) if len(table) else set()
    candidates = [c for c in best if c not in baselines] or best
    lost_config = candidates[0] if candidates else None
    lost = _lost_examples(probes, lost_config) if lost_config and not probes.empty else []
    lost_headers = ("conversation", "category", "question", "answer", "age (turns)", "died at gen")
    reading = READING.format(fail=f"{100 * thresholds.max_failure_rate:g} %",
                             cpm=thresholds.max_calls_per_message)
    notes = _notes(run, table)
    sections = [(title, text, unranked_rows(table, status)) for status, title, text in SECTIONS]
    sections = [s for s in sections if s[2]]
    scorers = run_scorers(run)
    first = first_line(table, every_probe, scorers)
    budgets = run_budgets(run)
    budget_table = budget_rows(table, budgets) if budgets and has_gains(table) else []
    budget_headers, budget_text = budget_labels(axis.header)
    cov_caption, cov_rows = coverage_section(table, every_probe)
    heads = rank_headers(tokens, few_conversations(table))
    curve_text = curve_section(curve, axis.column, tokens)

    # ---- Markdown
    md = [f"# rollsum report: {md_escape(run.name)}", "", f"**{md_escape(first)}**", "",
          md_table(("field", "value"), _manifest_rows(run)), ""]
    md += [f"**{md_escape(n)}**" for n in notes] + ([""] if notes else [])
    md += ["## Verdict", "", md_escape(headline(table, scorers)), ""]
    if budget_table:
        md += ["## At your budget", "", budget_text, "", md_table(budget_headers, budget_table), ""]
    md += ["## Ranked configurations", "", reading, ""]
    md += [md_table(heads, ranked_rows(table, keys)) if len(best) else "_no configuration is ranked_", ""]
    for title, text, rows in sections:
        md += [f"## {title}", "", text, "", md_table(unranked_headers(tokens), rows), ""]
    if curve_text:
        md += ["## Truncation curve (the yardstick, not a candidate)", "", md_escape(curve_text), ""]
    if len(table):
        md += ["## Asks counted", "", "Retention counts only answerable asks; the others are excluded, "
               "never counted as lost.", "", md_table(EXCLUSION_HEADERS, exclusion_rows(table)), ""]
    qa = qa_rows(table, keys)
    if qa:
        md += [f"## {QA_TITLE}", "", QA_TEXT, "", md_table(QA_HEADERS, qa), ""]
    if cov_rows:
        md += ["## Coverage by category", "", cov_caption, "", md_table(COVERAGE_HEADERS, cov_rows), ""]
    legend = legend_rows(keys, table, params)
    if legend:
        md += ["## Legend", "", LEGEND_TEXT, "", md_table(LEGEND_HEADERS, legend), ""]
    for title, caption, path in figures:
        md += [f"## {title}", "", caption, "", f"![{title}]({path.name})", ""]
    if checkpoint is not None:
        md += ["## Summaries at a checkpoint", "",
               f"Conversation `{md_escape(checkpoint.conversation_id)}`, turn "
               f"{checkpoint.turn if checkpoint.turn is not None else 'end'}.", ""]
        for cfg, text in checkpoint.texts.items():
            md += [f"### {md_escape(cfg)}", "", "```text", text.replace("```", "ʼʼʼ"), "```", ""]
    if lost_config is not None:
        md += [f"## Facts lost by the top configuration ({keys[lost_config]}: {md_escape(lost_config)})", ""]
        md += [md_table(lost_headers, lost) if lost else "_it lost no answerable fact_", ""]
    md += ["Every configuration's numbers, status and flags: `configs.csv` (docs/reports.md).", ""]
    atomic_write_text(out / "report.md", "\n".join(md))

    # ---- HTML
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>rollsum report: {e(run.name)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>rollsum report: {e(run.name)}</h1>", f'<p class="first"><b>{e(first)}</b></p>',
             html_table(("field", "value"), _manifest_rows(run), "meta")]
    parts += [f'<p class="warn"><b>{e(n)}</b></p>' for n in notes]
    parts.append(f"<h2>Verdict</h2><p><b>{e(headline(table, scorers))}</b></p>")
    if budget_table:
        parts.append(f"<h2>At your budget</h2><p>{e(budget_text)}</p>")
        parts.append(html_table(budget_headers, budget_table, "budgets"))
    parts.append(f"<h2>Ranked configurations</h2><p>{e(reading)}</p>")
    parts.append(html_table(heads, ranked_rows(table, keys), "ranked") if len(best)
                 else "<p>No configuration is ranked.</p>")
    for title, text, rows in sections:
        parts.append(f'<h2 class="warn">{e(title)}</h2><p>{e(text)}</p>')
        parts.append(html_table(unranked_headers(tokens), rows, "unranked flagged"))
    if curve_text:
        parts.append(f"<h2>Truncation curve (the yardstick, not a candidate)</h2><p>{e(curve_text)}</p>")
    if len(table):
        parts.append("<h2>Asks counted</h2><p>Retention counts only answerable asks; the others are "
                     "excluded, never counted as lost.</p>")
        parts.append(html_table(EXCLUSION_HEADERS, exclusion_rows(table), "asks"))
    if qa:
        parts.append(f"<h2>{e(QA_TITLE)}</h2><p>{e(QA_TEXT)}</p>")
        parts.append(html_table(QA_HEADERS, qa, "qa"))
    if cov_rows:
        parts.append(f"<h2>Coverage by category</h2><p>{e(cov_caption)}</p>")
        parts.append(html_table(COVERAGE_HEADERS, cov_rows, "coverage"))
    if legend:
        parts.append(f"<h2>Legend</h2><p>{e(LEGEND_TEXT)}</p>")
        parts.append(html_table(LEGEND_HEADERS, legend, "legend"))
    for title, caption, path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts.append(f"<h2>{e(title)}</h2><p>{e(caption)}</p>"
                     f'<img class="plot" alt="{e(title)}" src="data:{MIME[kind]};base64,{data}">')
    if checkpoint is not None:
        turn = checkpoint.turn if checkpoint.turn is not None else "end"
        parts.append(f"<h2>Summaries at a checkpoint</h2><p>Conversation "
                     f"<code>{e(checkpoint.conversation_id)}</code>, turn {e(str(turn))}.</p>"
                     '<div class="side">')
        for cfg, text in checkpoint.texts.items():
            parts.append(f"<div><h3>{e(cfg)}</h3><pre>{e(text) or '<i>(no summary yet)</i>'}</pre></div>")
        parts.append("</div>")
    if lost_config is not None:
        parts.append(f"<h2>Facts lost by the top configuration ({keys[lost_config]}: {e(lost_config)})</h2>")
        parts.append(html_table(lost_headers, lost, "lost") if lost else "<p>It lost no answerable fact.</p>")
    parts.append(drilldown.section(run, probes, keys, chosen_facts=facts))
    parts.append("<p>Every configuration's numbers, status and flags: <code>configs.csv</code>.</p>")
    parts.append("</body></html>")
    html_path = out / "report.html"
    atomic_write_text(html_path, "\n".join(parts))
    return html_path
