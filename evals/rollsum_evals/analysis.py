"""What report, compare and regress share: a run's tables read once, the Units and probes that
count, conversation clusters, the per-configuration table, and summaries at a checkpoint.

Every command reads a run through `load` (the one reader, `rollsum_evals.rundir.load_run`);
Units whose status is not ``ok`` are left out of every number and counted separately.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rollsum.errors import ConfigError
from rollsum_evals.rundir.read import Run, load_run
from rollsum_evals.stats import DEFAULT_RESAMPLES, cluster_bootstrap


def load(run_dir: str | os.PathLike[str]) -> Run:
    """A run directory; a missing or malformed one is a user mistake (ConfigError)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a run directory (expected the --out directory of `rollsum run`)")
    if not (path / "manifest.json").exists():
        raise ConfigError(f"{path}: no manifest.json; is this a run directory?")
    return load_run(path)


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
    units = run.units
    if "status" in units.columns:
        units = units[units["status"].astype(str) == "ok"]
    return units


def ok_probes(run: Run) -> pd.DataFrame:
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


def config_table(run: Run, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> pd.DataFrame:
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
    front = pareto_frontier(table["main_input_tokens"].astype(float).tolist(),
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


def _unit_records(run: Run, unit_id: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(turn made, generation, record) for one unit's summaries, in chain order."""
    out = [(int(line["turn"]), int(line["generation"]), line["record"])
           for line in run.summaries() if line.get("unit_id") == unit_id]
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
    if units.empty or not run.summaries():
        return None
    if conversation_id is None:
        with_summaries = {str(r.get("unit_id")) for r in run.summaries()}
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
