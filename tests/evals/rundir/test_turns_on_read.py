"""A finished run's turns table (the largest: one row per turn of every Unit) is decoded when
something reads `Run.turns`, not by `load_run`: a report of a finished run never reads it. Its
bytes and columns are still checked when the run is loaded."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.rundir import read
from rollsum_evals.rundir.integrity import DamagedRun
from rollsum_evals.rundir.read import Run, load_run

from tests.evals.report.fakerun import make_run


def test_the_turns_table_is_decoded_on_first_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_run(tmp_path / "r", {"a": 0.5, "b": 0.7}, n_conversations=2, n_probes=3, n_turns=8)
    decoded: list[int] = []
    real = read.read_table_bytes

    def counting(data: bytes) -> pd.DataFrame:
        decoded.append(len(data))
        return real(data)

    monkeypatch.setattr(read, "read_table_bytes", counting)
    run = load_run(path)
    assert len(decoded) == 2  # units and probes
    turns = run.turns
    assert len(decoded) == 3 and run.turns is turns  # decoded once, then kept
    pd.testing.assert_frame_equal(turns, pd.read_parquet(path / "turns.parquet"))
    assert len(turns) == 2 * 2 * 8


def test_a_run_takes_a_turns_table_or_a_function_making_it() -> None:
    empty = pd.DataFrame()
    frame = pd.DataFrame({"turn": [0, 1]})
    assert Run(Path("x"), {}, empty, empty, frame).turns is frame
    made = Run(Path("x"), {}, empty, empty, turns=lambda: frame)
    assert made.turns is frame
    with pytest.raises(TypeError):
        Run(Path("x"), {}, empty, empty)  # still required


def test_a_turns_table_without_a_declared_column_fails_when_the_run_is_loaded(tmp_path: Path) -> None:
    path = make_run(tmp_path / "r", {"a": 0.5}, n_conversations=1, n_probes=2, n_turns=4)
    pd.read_parquet(path / "turns.parquet").drop(columns=["context_tokens"]).to_parquet(path / "turns.parquet")
    with pytest.raises(DamagedRun, match=r"turns\.parquet: column 'context_tokens' is missing"):
        load_run(path)
