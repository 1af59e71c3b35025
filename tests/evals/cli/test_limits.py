"""Limits and signals of `rollsum run` (issue #19): a sweep is counted before anything is
built and refused above ``--max-units``; SIGTERM stops a run the way Ctrl-C does."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.run import run_sweep
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.spec import expand as expansion
from rollsum_evals.spec import imports
from rollsum_evals.spec.expand import count_units, expand
from rollsum_evals.spec.parse import load_spec, parse_spec

from tests.evals.cli.corpus import GOOD, spec
from tests.evals.cli.malformed import refused, run_cli
from tests.support.gate import Gate, subprocess_env
from tests.support.specs import GATED_TWO_UNITS

BIG_GRID = ("grid = { keep_last = [1,2,3,4,5,6,7,8,9,10], messages_per_summary = [2,3,4,5,6,7,8,9,10,11], "
            "max_passes = [1,2,3,4,5,6,7,8,9,10], retries = [0,1,2,3,4,5,6,7,8,9], "
            "summary_share = [0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95], "
            "max_output_tokens = [100,200,300,400,500,600,700,800,900,1000] }")
"""10^6 combinations: building them took over 40 s and 900 MB before anything was printed."""


SPECS = {
    "plain": spec(),
    "grid-models-prompts-windows-seeds": spec(preset="since-last", config="grid = { keep_last = [1, 2, 3] }",
                                              top='models = ["fake", "fake:mode=extractive", "extractive"]\n'
                                              'prompts = ["since-last/v1", "count-and-tokens/v1"]\n'
                                              'context_window = [4000, 8000]\n'
                                              "seeds = [1, 2]"),
    "baseline-and-own-models": spec(top='models = ["fake", "fake:mode=extractive"]') +
    '[[configs]]\npreset = "since-last"\nmodels = ["fake"]\nprompts = ["since-last/v1", "count-and-tokens/v1"]\n'
    "grid = { keep_last = [2, 4] }\n",
    "summarizer-grid": spec(preset="since-last", top='models = ["fake", "extractive"]\nprompts = ["since-last/v1", '
                            '"count-and-tokens/v1"]', config='grid = { summarizer = ["extractive", "tests.support.gate:'
                            'GatedSummarizer", "prompted"], keep_last = [1, 2] }'),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_count_is_the_number_of_units_expand_builds(tmp_path: Path, name: str) -> None:
    s = parse_spec(SPECS[name], str(tmp_path / "s.toml"))
    conversations = {ds.name: 3 for ds in s.datasets}
    built = expand(s, {ds.name: ("h", [f"c{i}" for i in range(3)]) for ds in s.datasets})
    assert count_units(s, conversations) == len(built) > 1


def test_a_sweep_over_the_limit_is_refused_in_one_line_before_any_unit_is_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.toml").write_text(spec(preset="since-last", config=BIG_GRID))
    (tmp_path / "data.jsonl").write_text(GOOD)

    def built(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the grid was built before it was counted")

    monkeypatch.setattr(expansion, "variants", built)
    monkeypatch.setattr(imports, "combinations", built)
    out = refused(["run", "s.toml", "--out", "out", "--no-progress"], tmp_path,
                  needle=("s.toml", "2,000,000 units", "--max-units 10,000"))
    assert "1,000,000 configurations" in out.lines[0]


def test_max_units_is_the_limit_both_ways(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(spec(config="grid = { keep = [3, 5] }"))
    (tmp_path / "data.jsonl").write_text(GOOD)
    refused(["run", "s.toml", "--out", "out", "--no-progress", "--max-units", "3"], tmp_path,
            needle=("4 units", "--max-units 3"))
    done = run_cli(["run", "s.toml", "--out", "out", "--no-progress", "--max-units", "4"], tmp_path)
    assert done.code == 0, done.describe()
    assert len(pd.read_parquet(tmp_path / "out" / "units.parquet")) == 4


# ----------------------------------------------------------------------------------------------
# SIGTERM


def _wait(cond: Callable[[], bool], what: str, timeout: float = 600.0) -> None:
    """Poll for an event the watched run cannot get past on its own (it waits at a `Gate`)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _status(out: Path) -> str | None:
    try:
        return str(json.loads((out / "manifest.json").read_text()).get("status"))
    except (OSError, ValueError):
        return None


def _table(path: Path, name: str) -> pd.DataFrame:
    df = pd.read_parquet(path / f"{name}.parquet")
    return df.drop(columns=[c for c in NON_DETERMINISTIC_UNIT_COLUMNS if c in df.columns])


@pytest.mark.slow
def test_sigterm_marks_the_run_interrupted_in_one_line_and_resume_is_exact(tmp_path: Path) -> None:
    spec_file = tmp_path / "term.toml"
    spec_file.write_text(GATED_TWO_UNITS)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "rollsum_evals", "run", str(spec_file), "--out", str(out), "--no-progress"]
    with Gate(tmp_path / "gate") as gate:
        proc = subprocess.Popen([*cmd, "--jobs", "2", "--executor", "thread"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=gate.env())
        try:
            _wait(lambda: _lines(out / "units.jsonl") >= 1 or proc.poll() is not None, "the first unit")
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(signal.SIGTERM)
            # the run stops while its second Unit still waits at the gate; then the gate opens so
            # that Unit's thread can end and the interpreter exit
            _wait(lambda: _status(out) != "running" or proc.poll() is not None, "the manifest to change")
            gate.open()
            _, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert "interrupted (SIGTERM)" in lines[0] and "--resume" in lines[0] and str(out) in lines[0], lines
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["reason"] == "interrupted (SIGTERM)"
    assert _lines(out / "units.jsonl") == 1

    done = subprocess.run([*cmd, "--resume", "--jobs", "1"], capture_output=True, text=True, timeout=300,
                          env=subprocess_env())
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    reference = run_sweep(load_spec(spec_file), tmp_path / "reference", jobs=1, progress=False)
    assert reference.done == 2
    for name in ("units", "probes", "turns"):
        pd.testing.assert_frame_equal(_table(out, name), _table(tmp_path / "reference", name))
    assert _lines(out / "units.jsonl") == 2
