"""``--retry-errors``: run the failed Units of a run again, keep the rest.

Failed means a Unit whose row says ``error`` (its replay or its scoring broke), or one whose
summaries, or QA answers or judge grades, failed against a model that is not deterministic (a
real API: a 429 or a dropped connection may not happen again). An offline model's failures are results and stay. The
failed Units are dropped from the journals (`RunDir.forget`) and the run is resumed, which
replays exactly them; the check that the spec and code match the run comes first, so a refused
retry forgets nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.run.model_factory import deterministic
from rollsum_evals.run.resume import check_resume
from rollsum_evals.rundir.format import STATUS_ERROR
from rollsum_evals.rundir.journal import RunDir
from rollsum_evals.rundir.lock import RunLock
from rollsum_evals.spec.schema import SweepSpec


def is_failed(row: Mapping[str, Any], scoring_models: Sequence[str] = ()) -> bool:
    """`scoring_models`: the run's QA answering and judging models. An ask whose call failed
    against a real API (excluded and counted, ``qa_failures``/``judge_failures``) is as worth
    retrying as a failed summary: after an outage every ask of every Unit had failed, and
    ``--retry-errors`` re-ran only the Units whose summaries had."""
    if row.get("status") == STATUS_ERROR:
        return True
    if int(row.get("n_failures") or 0) > 0 and not deterministic(str(row.get("model") or "")):
        return True
    asks = int(row.get("qa_failures") or 0) + int(row.get("judge_failures") or 0)
    return asks > 0 and any(not deterministic(m) for m in scoring_models if m)


def forget_failed(path: str | Path, spec: SweepSpec) -> int:
    """Drop the failed Units of the run at `path` from its journals; how many there were."""
    rd = RunDir(path)
    if not rd.file("manifest.json").exists():
        raise ConfigError(f"{rd.path}: no run to retry (no manifest.json): run the spec there first")
    with RunLock(rd.path):  # released before the resume takes it again: it refuses a writer that came in between
        manifest = rd.read_manifest()
        check_resume(rd, manifest, spec, spec.scoring)
        rd.expect(manifest)  # a damaged run is not retried over
        scoring_models = (spec.qa_model or "", spec.judge_model or "")
        failed = {uid for uid, row in rd.unit_rows().items() if is_failed(row, scoring_models)}
        if failed and manifest.get("files"):
            # the journals change: the seal of the finished run no longer holds (the resume
            # that follows seals it again)
            rd.write_manifest({k: v for k, v in manifest.items() if k != "files"})
        rd.forget(failed)
    return len(failed)
