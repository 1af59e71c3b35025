"""`rollsum report RUN`: one run directory in, report.md + self-contained report.html + PNGs out.

The report answers "which configuration keeps the most early facts per token" at a glance: a
ranked table with intervals clustered by conversation, the retention/tokens plane with its
Pareto frontier, where facts die, and what it cost. The HTML embeds its images and has no
external CSS, JS or fonts, so it can be mailed or attached to a CI run and still open offline.
Every piece of text that came from a conversation or a spec (questions, answers, summaries,
configuration labels) is passed through `html.escape`: a `<script>` in a chat shows as text.

Reads only the run directory (docs/run-format.md), through `rollsum_evals.analysis`.
"""

from __future__ import annotations

import base64
import html
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rollsum_evals import plots
from rollsum_evals.analysis import (
    config_table,
    dataset_hashes,
    load,
    ok_probes,
    summaries_at_checkpoint,
)
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.formatting import fmt_ci, fmt_num, fmt_usd, html_table, md_escape, md_table
from rollsum_evals.rundir.journal import read_jsonl
from rollsum_evals.rundir.read import Run
from rollsum_evals.stats import DEFAULT_RESAMPLES

log = logging.getLogger(__name__)

TOP_CONFIGS = 2
"""How many of the best configurations get their summaries shown side by side."""


RANK_HEADERS = ("#", "config", "retention [95% CI]", "main tokens", "cost USD [95% CI]", "units",
                "probes", "summaries", "failures", "Pareto")


def ranked_rows(table: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in table.to_dict("records"):
        rows.append([str(r["rank"]), str(r["config"]),
                     fmt_ci(r["retention"], r["retention_low"], r["retention_high"]),
                     fmt_num(r["main_input_tokens"], 0),
                     f"{fmt_usd(r['cost_usd'])} [{fmt_usd(r['cost_usd_low'])}, {fmt_usd(r['cost_usd_high'])}]",
                     str(r["units"]), str(r["probes"]), fmt_num(r.get("n_summaries", float("nan")), 1),
                     fmt_num(r.get("n_failures", float("nan")), 1), "★" if r["pareto"] else ""])
    return rows


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
    if history is not None:
        return history
    candidate = Path("reports") / "baselines" / f"{run.name}.history.jsonl"
    return candidate if candidate.exists() else None


def _lost_examples(probes: pd.DataFrame, config: str, limit: int = 8) -> list[list[str]]:
    lost = probes[(probes["config"] == config) & (probes["retained"] < 0.5)]
    if "age_turns" in lost.columns:
        lost = lost.sort_values("age_turns", ascending=False, kind="mergesort")
    rows = []
    for r in lost.head(limit).to_dict("records"):
        rows.append([str(r.get("conversation_id", "")), str(r.get("category", "")),
                     str(r.get("question", "")), str(r.get("answer", "")),
                     str(r.get("age_turns", "")), str(r.get("died_at_generation", ""))])
    return rows


def write_report(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                 history: Path | None = None, n_resamples: int = DEFAULT_RESAMPLES) -> Path:
    """Write report.md, report.html and the PNGs; return the path of report.html."""
    run = load(run_dir)
    out = Path(out_dir) if out_dir is not None else Path("reports") / run.name
    out.mkdir(parents=True, exist_ok=True)
    table = config_table(run, n_resamples=n_resamples)
    probes = ok_probes(run)
    configs = table["config"].tolist() if not table.empty else []
    top = configs[: plots.MAX_SERIES]

    figures: list[tuple[str, str, Path]] = []
    figures.append(("Retention vs tokens", "Higher and further left is better; red points are on "
                    "the Pareto frontier (no configuration keeps more facts with fewer tokens).",
                    plots.retention_vs_tokens(table, out / "retention_vs_tokens.png")))
    if not probes.empty and "age_turns" in probes.columns:
        figures.append(("Retention by fact age", f"Top {len(top)} configurations by retention.",
                        plots.retention_by_age(probes, top, out / "retention_by_age.png")))
    if not probes.empty and "died_at_generation" in probes.columns:
        figures.append(("Where facts die", "Generation = index in the summary chain of the first "
                        "summary that lost a fact it had.",
                        plots.where_facts_die(probes, configs, out / "where_facts_die.png")))
    figures.append(("Cost split", "Main model, summarizer and judge, by the price table.",
                    plots.cost_split(table, out / "cost_split.png")))
    if not probes.empty and "category" in probes.columns:
        figures.append(("Retention by category", "LoCoMo categories and synthetic kinds.",
                        plots.retention_by_category(probes, configs, out / "retention_by_category.png")))
    hist_path = _history_path(run, history)
    hist_rows = list(read_jsonl(hist_path)) if hist_path is not None else []
    if hist_rows:
        figures.append(("Trend", f"From {hist_path}.",
                        plots.retention_trend(hist_rows, top, out / "trend.png")))

    summarized = {str(line.get("config")) for line in run.summaries()}
    shown = [c for c in configs if c in summarized][:TOP_CONFIGS]
    checkpoint = summaries_at_checkpoint(run, shown) if shown else None
    n_err = int((run.units["status"].astype(str) != "ok").sum()) if "status" in run.units.columns else 0
    lost = _lost_examples(probes, configs[0]) if configs and not probes.empty else []
    lost_headers = ("conversation", "category", "question", "answer", "age (turns)", "died at gen")

    # ---- Markdown
    md = [f"# rollsum report: {md_escape(run.name)}", "", md_table(("field", "value"), _manifest_rows(run)), ""]
    if n_err:
        md += [f"**{n_err} unit(s) failed** and are left out of every figure below.", ""]
    md += ["## Ranked configurations", "",
           "Retention pools probes; intervals are 95 % bootstrap intervals resampling conversations.",
           "", md_table(RANK_HEADERS, ranked_rows(table)) if not table.empty else "_no finished units_", ""]
    for title, caption, path in figures:
        md += [f"## {title}", "", caption, "", f"![{title}]({path.name})", ""]
    if checkpoint is not None:
        md += ["## Summaries at a checkpoint", "",
               f"Conversation `{md_escape(checkpoint.conversation_id)}`, turn "
               f"{checkpoint.turn if checkpoint.turn is not None else 'end'}.", ""]
        for cfg, text in checkpoint.texts.items():
            md += [f"### {md_escape(cfg)}", "", "```text", text.replace("```", "ʼʼʼ"), "```", ""]
    if lost:
        md += [f"## Facts lost by the top configuration ({md_escape(configs[0])})", "",
               md_table(lost_headers, lost), ""]
    atomic_write_text(out / "report.md", "\n".join(md))

    # ---- HTML
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>rollsum report: {e(run.name)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>rollsum report: {e(run.name)}</h1>",
             html_table(("field", "value"), _manifest_rows(run), "meta")]
    if n_err:
        parts.append(f'<p class="warn"><b>{n_err} unit(s) failed</b> and are left out of every figure.</p>')
    parts.append("<h2>Ranked configurations</h2><p>Retention pools probes; intervals are 95 % "
                 "bootstrap intervals resampling conversations.</p>")
    parts.append(html_table(RANK_HEADERS, ranked_rows(table), "ranked") if not table.empty
                 else "<p>No finished units.</p>")
    for title, caption, path in figures:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        parts.append(f"<h2>{e(title)}</h2><p>{e(caption)}</p>"
                     f'<img class="plot" alt="{e(title)}" src="data:image/png;base64,{data}">')
    if checkpoint is not None:
        turn = checkpoint.turn if checkpoint.turn is not None else "end"
        parts.append(f"<h2>Summaries at a checkpoint</h2><p>Conversation "
                     f"<code>{e(checkpoint.conversation_id)}</code>, turn {e(str(turn))}.</p>"
                     '<div class="side">')
        for cfg, text in checkpoint.texts.items():
            parts.append(f"<div><h3>{e(cfg)}</h3><pre>{e(text) or '<i>(no summary yet)</i>'}</pre></div>")
        parts.append("</div>")
    if lost:
        parts.append(f"<h2>Facts lost by the top configuration ({e(configs[0])})</h2>")
        parts.append(html_table(lost_headers, lost, "lost"))
    parts.append("</body></html>")
    html_path = out / "report.html"
    atomic_write_text(html_path, "\n".join(parts))
    log.info("report written to %s", html_path)
    return html_path
