"""A report is built beside its folder and moved into place whole (issue #19 item 3).

Written file by file into the target, a report killed midway or stopped by a full disk left
configs.csv and PNGs without report.html, or an old report.html beside new files. Now the
target holds the previous report or the new one, never a mix; whatever else the folder holds
(compare results, your files) stays.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals import plots
from rollsum_evals.cli import main
from rollsum_evals.report import write_report

from tests.evals.report.fakerun import make_run

N = 100


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("pub") / "run", {"a": 0.6, "b": 0.8}, n_conversations=5)


def _full_disk(*_args: Any, **_kwargs: Any) -> Path:
    raise OSError(errno.ENOSPC, "No space left on device")


def _siblings(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}."))


def test_a_report_stopped_midway_leaves_no_partial_report(
        run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "rep"
    monkeypatch.setattr(plots, "cost_split", _full_disk)  # after configs.csv and two plots
    with pytest.raises(OSError):
        write_report(run_dir, target, n_resamples=N)
    assert not target.exists(), sorted(p.name for p in target.iterdir())
    assert _siblings(target) == []  # the half-built folder is gone too


def test_a_report_stopped_midway_keeps_the_previous_report_whole(
        run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "rep"
    write_report(run_dir, target, n_resamples=N)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    for name in ("configs.csv", "report.html", "retention_vs_tokens.svg"):
        (target / name).write_text(f"previous {name}")  # tell the previous version's files apart
        before[name] = (target / name).read_bytes()
    monkeypatch.setattr(plots, "cost_split", _full_disk)
    assert main(["report", str(run_dir), "--out", str(target), "--resamples", str(N)]) == 2
    assert "No space left" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert _siblings(target) == []


def test_a_new_report_replaces_the_previous_one_whole_and_keeps_what_else_is_there(
        run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rep"
    write_report(run_dir, target, n_resamples=N)
    (target / "grid_9.svg").write_bytes(b"a plot the new report does not draw")
    (target / "cost_split.png").write_bytes(b"a plot of an earlier --figures png report")
    (target / "compare_a_vs_b").mkdir()
    (target / "compare_a_vs_b" / "compare.md").write_text("kept")
    (target / "notes.txt").write_text("mine")
    (target / "report.html").write_text("previous")
    page = write_report(run_dir, target, n_resamples=N)
    assert page == target / "report.html" and "previous" not in page.read_text()
    assert not (target / "grid_9.svg").exists() and not (target / "cost_split.png").exists()
    assert (target / "compare_a_vs_b" / "compare.md").read_text() == "kept"
    assert (target / "notes.txt").read_text() == "mine"
    assert (target / "configs.csv").exists() and _siblings(target) == []


def test_what_a_killed_report_left_beside_the_folder_is_put_right_by_the_next_one(
        run_dir: Path, tmp_path: Path) -> None:
    """Killed between the swap and the carry-over: the previous version sits beside the new one
    with a compare folder still in it; killed while building: a half-built folder."""
    target = tmp_path / "rep"
    write_report(run_dir, target, n_resamples=N)
    previous = tmp_path / ".rep.previous-x1"
    (previous / "compare_a_vs_b").mkdir(parents=True)
    (previous / "compare_a_vs_b" / "compare.md").write_text("kept")
    (previous / "report.html").write_text("old")
    half = tmp_path / ".rep.building-x2"
    half.mkdir()
    (half / "configs.csv").write_text("half")
    write_report(run_dir, target, n_resamples=N)
    assert (target / "compare_a_vs_b" / "compare.md").read_text() == "kept"
    assert (target / "report.html").read_text() != "old"
    assert _siblings(target) == []


def test_the_working_folder_is_not_a_report_target(
        run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(run_dir), "--out", ".", "--resamples", str(N)]) == 2
    assert "working folder" in capsys.readouterr().err
