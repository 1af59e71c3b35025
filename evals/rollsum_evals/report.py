"""`rollsum report RUN`: one run directory in, report.md + self-contained report.html + PNGs out.

The report answers "which configuration keeps the most early facts per token" at a glance: a
ranked table with intervals clustered by conversation, the retention/tokens plane with its
Pareto frontier, where facts die, and what it cost. The HTML embeds its images and has no
external CSS, JS or fonts, so it can be mailed or attached to a CI run and still open offline.
Every piece of text that came from a conversation or a spec (questions, answers, summaries,
configuration labels) is passed through `html.escape`: a `<script>` in a chat shows as text.

Reads only the run directory (docs/run-format.md), through `rollsum_evals.load_run` when available.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rollsum_evals import plots
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.stats import DEFAULT_RESAMPLES, cluster_bootstrap
from rollsum.errors import ConfigError

log = logging.getLogger(__name__)

TOP_CONFIGS = 2
"""How many of the best configurations get their summaries shown side by side."""


# ---------------------------------------------------------------------------------------------
# Reading a run directory


@dataclass
class RunView:
    """The parts of a run the reports need, whichever loader produced them."""

    path: Path
    manifest: dict[str, Any]
    units: pd.DataFrame
    probes: pd.DataFrame
    turns: pd.DataFrame
    summaries: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The run directory's name: `runs/nightly` reports to `reports/nightly/`."""
        return self.path.resolve().name


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                # A torn last line is what a killed run leaves behind; anything else is corruption.
                log.warning("%s:%d: skipping unreadable JSON line (%s)", path, lineno, err.msg)
    return rows


def _read_parquet(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as err:  # pyarrow raises several unrelated types for a bad file
        raise ConfigError(f"{path}: cannot read {what} table ({err})") from err


def load(run_dir: str | os.PathLike[str]) -> RunView:
    """Load a run directory; a missing or malformed one is a user mistake (ConfigError)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a run directory (expected the --out directory of `rollsum run`)")
    if not (path / "manifest.json").exists():
        raise ConfigError(f"{path}: no manifest.json; is this a run directory?")
    try:
        from rollsum_evals.rundir import load_run  # the contract's owner: also reads a killed run's journals
    except ImportError:  # pragma: no cover - only before the runner existed
        pass
    else:
        run = load_run(path)
        return RunView(path, dict(run.manifest), run.units, run.probes, run.turns,
                       list(run.summaries()), list(run.events()))
    if not (path / "units.parquet").exists():
        raise ConfigError(f"{path}: no units.parquet; the run has not finished (re-run with --resume)")
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path / 'manifest.json'}: line {err.lineno}: invalid JSON ({err.msg})") from err
    units = _read_parquet(path / "units.parquet", "units")
    probes = (_read_parquet(path / "probes.parquet", "probes") if (path / "probes.parquet").exists()
              else pd.DataFrame())
    turns = (_read_parquet(path / "turns.parquet", "turns") if (path / "turns.parquet").exists()
             else pd.DataFrame())
    return RunView(path, manifest, units, probes, turns, _read_jsonl(path / "summaries.jsonl"),
                   _read_jsonl(path / "events.jsonl"))


REQUIRED_UNIT_COLUMNS = ("unit_id", "dataset", "conversation_id", "config", "retention",
                         "main_input_tokens", "cost_usd")
REQUIRED_PROBE_COLUMNS = ("unit_id", "conversation_id", "config", "probe_id", "retained")


def check_columns(run: RunView) -> None:
    missing = [c for c in REQUIRED_UNIT_COLUMNS if c not in run.units.columns]
    if missing:
        raise ConfigError(f"{run.path / 'units.parquet'}: missing column(s) {', '.join(missing)} "
                          "(see docs/run-format.md)")
    if not run.probes.empty:
        missing = [c for c in REQUIRED_PROBE_COLUMNS if c not in run.probes.columns]
        if missing:
            raise ConfigError(f"{run.path / 'probes.parquet'}: missing column(s) {', '.join(missing)} "
                              "(see docs/run-format.md)")


def ok_units(run: RunView) -> pd.DataFrame:
    units = run.units
    if "status" in units.columns:
        units = units[units["status"].astype(str) == "ok"]
    return units


def ok_probes(run: RunView) -> pd.DataFrame:
    """Probes of finished units, with `retained` as float and a conversation cluster key."""
    if run.probes.empty:
        return pd.DataFrame(columns=[*REQUIRED_PROBE_COLUMNS, "cluster"])
    good = set(ok_units(run)["unit_id"])
    probes = run.probes[run.probes["unit_id"].isin(good)].copy()
    probes["retained"] = probes["retained"].astype(float)
    probes["cluster"] = cluster_key(probes)
    return probes


def cluster_key(frame: pd.DataFrame) -> pd.Series:
    """Conversations are the independent units of evidence; two datasets may reuse an id."""
    if "dataset" in frame.columns:
        return frame["dataset"].astype(str) + "/" + frame["conversation_id"].astype(str)
    return frame["conversation_id"].astype(str)


# ---------------------------------------------------------------------------------------------
# Per-configuration metrics


METRICS = ("retention", "cost_usd", "main_input_tokens")


def config_table(run: RunView, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """One row per configuration, ranked by retention, with cluster-bootstrap 95 % intervals.

    Retention pools probes (each probe counts once); tokens and costs are means per Unit (one
    conversation through one configuration). Both resample conversations.
    """
    check_columns(run)
    units = ok_units(run).copy()
    units["cluster"] = cluster_key(units)
    probes = ok_probes(run)
    rows = []
    for cfg, grp in units.groupby("config", sort=True):
        row: dict[str, Any] = {"config": str(cfg), "units": len(grp),
                               "conversations": grp["cluster"].nunique()}
        for col in ("preset", "model", "prompt"):
            if col in grp.columns:
                row[col] = str(grp[col].iloc[0])
        p = probes[probes["config"] == cfg]
        if len(p):
            iv = cluster_bootstrap(p["retained"].to_numpy(), p["cluster"].tolist(),
                                   n_resamples=n_resamples, seed=seed)
        else:  # runs without a probes table still carry per-unit retention
            iv = cluster_bootstrap(grp["retention"].astype(float).to_numpy(), grp["cluster"].tolist(),
                                   n_resamples=n_resamples, seed=seed)
        row.update(probes=len(p), retention=iv.estimate, retention_low=iv.low, retention_high=iv.high)
        for metric in ("cost_usd", "main_input_tokens"):
            iv = cluster_bootstrap(grp[metric].astype(float).to_numpy(), grp["cluster"].tolist(),
                                   n_resamples=n_resamples, seed=seed)
            row.update({metric: iv.estimate, f"{metric}_low": iv.low, f"{metric}_high": iv.high})
        for col in ("cost_main_usd", "cost_summarizer_usd", "cost_judge_usd", "n_summaries",
                    "n_failures", "summarizer_calls", "stale_rate", "relative_retention", "qa_f1",
                    "rouge_l", "mean_context_tokens", "max_context_tokens"):
            if col in grp.columns:
                row[col] = float(pd.to_numeric(grp[col], errors="coerce").mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table = table.sort_values(["retention", "main_input_tokens", "config"],
                              ascending=[False, True, True], kind="mergesort").reset_index(drop=True)
    table.insert(0, "rank", range(1, len(table) + 1))
    front = plots.pareto_frontier(table["main_input_tokens"].astype(float).tolist(),
                                  table["retention"].astype(float).tolist())
    table["pareto"] = [i in set(front) for i in range(len(table))]
    return table


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


def _unit_records(run: RunView, unit_id: str) -> list[tuple[int | None, int, dict[str, Any]]]:
    """(turn, generation, record) for one unit's summaries, in chain order.

    A summaries.jsonl line is either a record with `unit_id` added, or (the runner's form)
    `{unit_id, config, conversation_id, generation, turn, record: {...}}`.
    """
    turn_of: dict[str, int] = {}
    for ev in run.events:
        if ev.get("unit_id") == unit_id and ev.get("kind") == "summary" and ev.get("record_id"):
            turn_of[str(ev["record_id"])] = int(ev.get("turn", 0))
    out = []
    for line in run.summaries:
        if line.get("unit_id") != unit_id:
            continue
        rec = line["record"] if isinstance(line.get("record"), dict) else line
        turn = line.get("turn")
        if turn is None:
            turn = turn_of.get(str(rec.get("id")))
        gen = line.get("generation", rec.get("seq", 0))
        out.append((None if turn is None else int(turn), int(gen or 0), rec))
    out.sort(key=lambda t: (t[1], -1 if t[0] is None else t[0]))
    return out


def _unit_of(run: RunView, config: str, conversation_id: str) -> str | None:
    units = ok_units(run)
    match = units[(units["config"].astype(str) == config)
                  & (units["conversation_id"].astype(str) == conversation_id)]
    return str(match["unit_id"].iloc[0]) if len(match) else None


def checkpoint_across(sides: Sequence[tuple[RunView, str]], conversation_id: str,
                      turn: int | None = None) -> Checkpoint:
    """The summary each (run, configuration) had at the same turn of the same conversation.

    Without an explicit turn the checkpoint is as late as possible while every side has made at
    least one summary by then, so the texts compare like with like.
    """
    records = []
    for run, cfg in sides:
        uid = _unit_of(run, cfg, conversation_id)
        records.append(_unit_records(run, uid) if uid else [])
    if turn is None:
        firsts = [next((t for t, _, _ in recs if t is not None), None) for recs in records]
        lasts = [recs[-1][0] for recs in records if recs]
        if lasts and all(t is not None for t in lasts) and all(f is not None for f in firsts):
            turn = max(min(t for t in lasts if t is not None), max(f for f in firsts if f is not None))
    texts = {}
    for (_, cfg), recs in zip(sides, records):
        chosen = [r for t, _, r in recs if turn is None or t is None or t <= turn]
        texts[cfg if cfg not in texts else f"{cfg} (B)"] = _render_summary(chosen[-1]) if chosen else ""
    return Checkpoint(conversation_id, turn, texts)


def summaries_at_checkpoint(run: RunView, configs: Sequence[str], conversation_id: str | None = None,
                            turn: int | None = None) -> Checkpoint | None:
    """Summaries of several configurations of one run at the same point of one conversation."""
    units = ok_units(run)
    units = units[units["config"].isin(list(configs))]
    if units.empty or not run.summaries:
        return None
    if conversation_id is None:
        with_summaries = {str(r.get("unit_id")) for r in run.summaries}
        convs = (units[units["unit_id"].isin(with_summaries)].groupby("conversation_id")["config"]
                 .nunique())
        full = convs[convs == len(set(configs))]
        if full.empty:
            return None
        conversation_id = str(sorted(full.index)[0])
    return checkpoint_across([(run, c) for c in configs], conversation_id, turn)


# ---------------------------------------------------------------------------------------------
# Formatting


def fmt_num(value: Any, digits: int = 3) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def fmt_usd(value: Any) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "–" if math.isnan(v) else f"${v:.4f}"


def fmt_ci(est: Any, low: Any, high: Any, digits: int = 3) -> str:
    return f"{fmt_num(est, digits)} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


def md_escape(text: str) -> str:
    """Keep table cells in one cell: pipes and newlines would break the Markdown table."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[str]], classes: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f'<table class="{html.escape(classes)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


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


def _manifest_rows(run: RunView) -> list[list[str]]:
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


def dataset_hashes(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Dataset name -> sha256, from the runner's `datasets: {name: {sha256, ...}}` or a flat map."""
    flat = manifest.get("dataset_sha256")
    if isinstance(flat, Mapping):
        return {str(k): str(v) for k, v in flat.items()}
    out = {}
    datasets = manifest.get("datasets")
    if isinstance(datasets, Mapping):
        for name, info in datasets.items():
            if isinstance(info, Mapping) and info.get("sha256"):
                out[str(name)] = str(info["sha256"])
    return out


def _history_path(run: RunView, history: Path | None) -> Path | None:
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
    hist_rows = _read_jsonl(hist_path) if hist_path is not None else []
    if hist_rows:
        figures.append(("Trend", f"From {hist_path}.",
                        plots.retention_trend(hist_rows, top, out / "trend.png")))

    summarized = {str(line.get("config")) for line in run.summaries}
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
