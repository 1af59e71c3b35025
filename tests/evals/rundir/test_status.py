"""`rundir.status`: what a reader says about a run that did not give it Units to read.

A finished (sealed) run whose ``units.jsonl`` was lost on the way (a partial copy, a cleanup
script) read as "no unit finished (complete; 0 of N units) ... continue it with --resume": the
status of a run that never got going, for a run that finished. The seal records the journal, so
the reader's own line (the file, missing, the manifest records it) is what the user must see.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.rundir.format import UNITS_JOURNAL
from rollsum_evals.rundir.status import nothing_finished

from tests.support.specs import SMALL_FINISHED

SPEC = SMALL_FINISHED


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("status")
    (root / "s.toml").write_text(SPEC)
    assert main(["run", str(root / "s.toml"), "--out", str(root / "run"), "--no-progress",
                 "--no-unit-cache"]) == 0
    return root / "run"


def test_a_sealed_run_whose_units_journal_is_gone_is_not_a_run_where_nothing_finished(
        finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "received"
    shutil.copytree(finished_run, run)
    (run / UNITS_JOURNAL).unlink()
    assert nothing_finished(run) is None
    capsys.readouterr()
    for argv in (["report", str(run), "--out", str(tmp_path / "rep")],
                 ["compare", str(run), "--a", "since-last", "--b", "truncate"],
                 ["regress", str(run), "--baseline", str(tmp_path / "base.json"), "--promote"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, (argv, err)
        assert f"{run / UNITS_JOURNAL}: missing" in err[0] and "no unit finished" not in err[0], (argv, err)
    assert not (tmp_path / "rep").exists() and not (tmp_path / "base.json").exists()


def test_a_run_killed_before_its_first_unit_still_says_nothing_finished(
        finished_run: Path, tmp_path: Path) -> None:
    """The unsealed case keeps its line: a manifest without ``files`` and no journal."""
    import json

    run = tmp_path / "killed"
    run.mkdir()
    manifest = json.loads((finished_run / "manifest.json").read_text())
    manifest.pop("files")
    manifest["status"] = "running"
    (run / "manifest.json").write_text(json.dumps(manifest))
    line = nothing_finished(run)
    assert line is not None and "no unit finished (running; 0 of" in line
