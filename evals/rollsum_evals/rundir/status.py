"""Whether a run finished, in one line a report can show (a killed run must not look whole).

The manifest's ``status`` is written at the start (``running``), on Ctrl-C (``interrupted``), on
a stop (``stopped: budget``, ``stopped: <cause>`` for a credential or connection failure) and at
the end (``complete``). A SIGKILL leaves ``running``; the manifest's ``pid`` and ``host`` tell a
run that is still going from one that was killed. Counts come from the journal, which is
current even when the manifest is not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rollsum_evals.rundir.format import STATUS_ERROR, UNITS_JOURNAL

FINISHED = "complete"


def process_alive(pid: Any, host: Any) -> bool | None:
    """True/False for a process on this host; None when that cannot be known (the manifest's
    ``pid``/``host`` may be missing or of another machine). The check is the store's
    (`rollsum.store.sqlite.process_alive`), without its start time: the manifest has none."""
    from rollsum.store.sqlite import process_alive as alive

    if not isinstance(pid, int) or not isinstance(host, str):
        return None
    return alive(pid, "", host)


def banner(manifest: Mapping[str, Any], done: int, errors: int, *, alive: bool | None = None) -> str | None:
    """One line saying a run is not whole (None when it is complete). Pure: `run_banner` reads
    the inputs from a run directory."""
    status = str(manifest.get("status") or "running")
    if status == FINISHED:
        return None
    total = int(manifest.get("units_total") or 0)
    counts = f"{done} of {total} units finished" + (f", {errors} with errors" if errors else "")
    how = f"`rollsum run {manifest.get('spec_path') or 'SPEC'} --out RUN --resume`"
    if status == "running":
        if alive:
            return f"STILL RUNNING: {counts} so far; the numbers below are partial"
        return (f"INTERRUPTED (the run stopped without finishing, e.g. it was killed): {counts}; "
                f"the numbers below are partial; continue it with {how}")
    if status == "interrupted":
        return f"INTERRUPTED: {counts}; the numbers below are partial; continue it with {how}"
    return f"INCOMPLETE ({status}): {counts}; the numbers below are partial; continue it with {how}"


def run_banner(path: str | os.PathLike[str]) -> str | None:
    """`banner` for a run directory (its manifest and its units journal). A complete run has
    no banner whatever its counts, so its units journal is not decoded (a report asks twice:
    ~0.02 s each on a 640-Unit sweep)."""
    from rollsum_evals.rundir.journal import RunDir

    rd = RunDir(Path(path))
    manifest = rd.read_manifest()
    if str(manifest.get("status") or "running") == FINISHED:
        return None
    rows = rd.unit_rows()
    errors = sum(1 for r in rows.values() if r.get("status") == STATUS_ERROR)
    return banner(manifest, len(rows), errors, alive=process_alive(manifest.get("pid"), manifest.get("host")))


def _sealed_with_units(manifest: Mapping[str, Any]) -> bool:
    """The run was sealed with a non-empty units journal: if it reads as empty now, it was lost
    or emptied since, and "no unit finished" would send the user to resume a run that finished."""
    files = manifest.get("files")
    sealed = files.get(UNITS_JOURNAL) if isinstance(files, dict) else None
    return isinstance(sealed, dict) and bool(sealed.get("bytes"))


def nothing_finished(path: str | os.PathLike[str]) -> str | None:
    """One line when not a single Unit of the run finished (stopped on a credential or the
    network at the first call, killed at once): there is nothing to report, compare or gate, and
    saying so beats a table with no columns. None otherwise, and for anything that is not a
    readable run directory (the reader then says what is wrong with it)."""
    from rollsum.errors import RollsumError
    from rollsum_evals.rundir.format import MANIFEST
    from rollsum_evals.rundir.journal import RunDir

    rd = RunDir(Path(path))
    if not (rd.path / MANIFEST).is_file():
        return None
    try:
        manifest = rd.read_manifest()
        if _sealed_with_units(manifest) or rd.unit_rows():
            return None  # a seal that records Units: a missing journal is damage the reader names
    except (RollsumError, OSError, ValueError):
        return None
    status = str(manifest.get("status") or "running")
    reason = " ".join(str(manifest.get("reason") or "").split())
    why = f"{status}: {reason}" if reason else status
    total = int(manifest.get("units_total") or 0)
    how = f"`rollsum run {manifest.get('spec_path') or 'SPEC'} --out {path} --resume`"
    return (f"{path}: no unit finished ({why}; 0 of {total} units), so there is nothing to read yet; "
            f"fix the cause and continue it with {how}")


RESCORING = "rescoring"
"""Manifest key `rollsum score` writes, with the scored files left out of the seal, just before
it replaces them (``{started_at, scorers, timing}``) and drops once the new seal is written. A
score killed in between leaves it: readers and ``--resume`` refuse the run in one line (its
tables may be half old, half new) and a second `rollsum score` completes it."""


def rescoring_problem(path: object, manifest: Mapping[str, Any]) -> str | None:
    """One line when the run's scores were being replaced (`RESCORING`), else None."""
    pending = manifest.get(RESCORING)
    if not isinstance(pending, dict):
        return None
    scorers = ",".join(str(s) for s in pending.get("scorers") or [] if s != "health")
    timing = pending.get("timing")
    command = (f"rollsum score {path}" + (f" --scorers {scorers}" if scorers else "")
               + (f" --timing {timing}" if timing else ""))
    return (f"{path}: its scores are being replaced (`rollsum score` started {pending.get('started_at')}) or "
            f"that re-scoring stopped before it finished, so its tables are not final; once no `rollsum "
            f"score` is running, complete it with `{command}`")
