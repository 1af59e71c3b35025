"""What resuming a run checks and what it re-uses.

A run directory can only be continued by the code and inputs that started it: the same spec,
the same data (by content hash), the same replay code (fingerprint), the same run format and
the same scoring. Each mismatch is refused with one line saying which and what to do, because
mixing them would put Units of two different experiments in one table. What it re-uses: Units
whose replay was journaled before the kill are scored again from that replay, not replayed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.data.copies import DatasetCopies
from rollsum_evals.data.pinned import Dataset, DatasetSpec, Loader, kept_copy, load_dataset, sources
from rollsum_evals.run import provenance
from rollsum_evals.rundir.format import EVENTS, FORMAT_VERSION, SUMMARIES
from rollsum_evals.rundir.journal import ReplayLines, RunDir, lines
from rollsum_evals.rundir.status import rescoring_problem
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.spec.schema import SweepSpec


def check_resume(rd: RunDir, previous: Mapping[str, Any], spec: SweepSpec, plan: ScoringPlan) -> None:
    """One line for each reason a run cannot be continued by this spec and this code."""
    if not previous:
        return
    problem = rescoring_problem(rd.path, previous)
    if problem is not None:
        raise ConfigError(problem)
    if previous.get("format_version") != FORMAT_VERSION:
        raise ConfigError(f"{rd.path}: was written in run format {previous.get('format_version', 1)}, "
                          f"this rollsum writes {FORMAT_VERSION}; start a new run (another --out)")
    if previous.get("spec_sha256") != spec.sha256():
        raise ConfigError(f"{rd.path}: was started from a different spec (sha256 "
                          f"{str(previous.get('spec_sha256'))[:12]}…, now {spec.sha256()[:12]}…"
                          f"{_differences(previous.get('spec'), spec.raw)}); resume needs the same spec and options")
    fp = provenance.replay_fingerprint()
    if previous.get("replay_fingerprint") != fp:
        raise ConfigError(f"{rd.path}: was replayed by other code (fingerprint "
                          f"{str(previous.get('replay_fingerprint'))[:12]}…, now {fp[:12]}…); "
                          "its replays would not match new ones: start a new run (another --out)")
    scored = previous.get("scoring") or {}
    if scored and ScoringPlan.from_dict(scored) != plan:
        raise ConfigError(f"{rd.path}: was re-scored (scorers {', '.join(scored.get('scorers') or [])}, "
                          f"probe timing {scored.get('probe_timing')}); re-score it with the spec's "
                          "scoring (`rollsum score`) before resuming")
    if scored.get("fingerprint") != provenance.scoring_fingerprint():
        raise ConfigError(f"{rd.path}: was scored by other scorer code; re-score it (`rollsum score "
                          f"{rd.path}`) so old and new Units are scored alike, then resume")


def _differences(before: Any, now: Any, *, most: int = 3) -> str:
    """``; it differs in datasets[0].limit (2, now unset)``: which option a resume changed (a
    forgotten ``--limit`` or ``--set`` is the usual one), or nothing when only code differs."""
    found: list[str] = []

    def show(v: Any) -> str:
        text = "unset" if v is _UNSET else json.dumps(v, sort_keys=True, default=str)
        return text if len(text) <= 40 else text[:39] + "…"

    def walk(a: Any, b: Any, path: str) -> None:
        if len(found) > most:
            return
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key, _UNSET), b.get(key, _UNSET), f"{path}.{key}" if path else str(key))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        elif a != b:
            found.append(f"{path} ({show(a)}, now {show(b)})")

    walk(before, now, "")
    if not found:
        return "; the code of a component it names changed" if isinstance(before, Mapping) else ""
    more = ", …" if len(found) > most else ""
    return f"; it differs in {', '.join(found[:most])}{more}"


_UNSET = object()


def load_datasets(spec: SweepSpec, loader: Loader, previous: Mapping[str, Any],
                  copies: DatasetCopies | None = None) -> dict[str, Dataset]:
    """The spec's datasets, for a new run or (with `previous`, the run's manifest) a resumed
    one, which must get the very data it started with. A resumed ``hf:`` dataset is read from
    the copy the run kept (`copies`) when the spec reads it exactly as the run did: resuming
    needs neither the network nor the hub's dataset as it was (the copy is what the run
    replayed, checked by hash); anything else is loaded from its source and compared."""
    before = previous.get("datasets") or {}
    for ds in spec.datasets:
        info = before.get(ds.name) or {}
        for key, flag, now in (("skip_bad_records", "--skip-bad-records", ds.skip_bad_records),
                               ("max_line_bytes", "--max-line-bytes", ds.max_line_bytes)):
            if key in info and info[key] != now:
                raise ConfigError(f"{spec.path}: dataset '{ds.name}' was read with {flag} {info[key]}, now "
                                  f"{now}; resume needs the same options")
    out = {ds.name: _resumed_copy(ds, before.get(ds.name), copies) or load_dataset(ds, loader, where=spec.path)
           for ds in spec.datasets}
    for name, info in (previous.get("datasets") or {}).items():
        if name in out and info.get("sha256") != out[name].sha256:
            raise ConfigError(f"{spec.path}: dataset '{name}' ({sources(out[name].source)}) changed since the run "
                              f"started (sha256 "
                              f"{str(info.get('sha256'))[:12]}…, now {out[name].sha256[:12]}…); "
                              "start a new run (another --out)")
    return out


def _resumed_copy(ds: DatasetSpec, before: Mapping[str, Any] | None, copies: DatasetCopies | None) -> Dataset | None:
    """The run's kept copy of `ds` (`pinned.kept_copy`) when the spec reads it as the run did
    (else it is loaded from its source, then refused unless it is the same data)."""
    if not before or DatasetSpec.from_manifest(ds.name, before) != ds:
        return None
    return kept_copy(ds, before, copies)


def stored_replays(rd: RunDir, unit_ids: set[str]) -> dict[str, ReplayLines]:
    """Replays this run journaled before it was killed, for Units it did not finish scoring."""
    if not unit_ids:
        return {}
    traces = {u: r for u, r in rd.trace_records().items() if u in unit_ids}
    summaries = rd.rows_by_unit(SUMMARIES, unit_ids)
    events = rd.rows_by_unit(EVENTS, unit_ids)
    texts = rd.texts()
    out = {}
    for uid, rec in traces.items():
        ids = rec.get("text_ids") or []
        out[uid] = ReplayLines(texts={t: lines([texts[t]]) for t in ids if t in texts},
                               summaries=lines(summaries.get(uid, [])), events=lines(events.get(uid, [])),
                               traces=lines([rec]))
    return out
