"""What a run records about its code: the replay fingerprint moves with the code that changes a
replay and nothing else; the git sha is this project's or none."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import rollsum_evals
from rollsum_evals.run.provenance import git_sha, project_root, replay_fingerprint, scoring_fingerprint

import rollsum

LIB = Path(rollsum.__file__).resolve().parent
HARNESS = Path(rollsum_evals.__file__).resolve().parent


def _copy(tmp: Path) -> tuple[Path, Path]:
    lib, harness = tmp / "rollsum", tmp / "rollsum_evals"
    shutil.copytree(LIB, lib, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(HARNESS, harness, ignore=shutil.ignore_patterns("__pycache__"))
    return lib, harness


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")


def test_editing_a_scorer_or_a_report_keeps_the_replays_and_editing_the_replay_does_not(tmp_path: Path) -> None:
    lib, harness = _copy(tmp_path)
    replay0, scoring0 = replay_fingerprint(lib, harness), scoring_fingerprint(harness)
    assert replay0 == replay_fingerprint(LIB, HARNESS)  # same bytes, same fingerprint

    for path in (harness / "report.py", harness / "plots.py", harness / "cli" / "score_cmd.py"):
        _edit(path)
    assert (replay_fingerprint.__wrapped__(lib, harness), scoring_fingerprint.__wrapped__(harness)) == (
        replay0, scoring0)

    _edit(harness / "scoring" / "answer_retention.py")
    assert replay_fingerprint.__wrapped__(lib, harness) == replay0
    assert scoring_fingerprint.__wrapped__(harness) != scoring0

    for path in (harness / "replay" / "trace.py", harness / "run" / "unit.py", lib / "engine.py"):
        before = replay_fingerprint.__wrapped__(lib, harness)
        _edit(path)
        assert replay_fingerprint.__wrapped__(lib, harness) != before, path


def test_git_sha_only_for_a_checkout_of_this_project(tmp_path: Path) -> None:
    # an installed package inside some other repository: no sha, not that repository's
    other = tmp_path / "other-repo"
    pkg = other / "lib" / "site-packages" / "rollsum"
    pkg.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    assert project_root(pkg) is None and git_sha(pkg) is None
    # a checkout of this project: the sha of its HEAD
    mine = tmp_path / "checkout"
    (mine / "rollsum").mkdir(parents=True)
    (mine / "pyproject.toml").write_text('[project]\nname = "rollsum"\n')
    subprocess.run(["git", "init", "-q", str(mine)], check=True)
    subprocess.run(["git", "-C", str(mine), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(["git", "-C", str(mine), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert project_root(mine / "rollsum") == mine.resolve() and git_sha(mine / "rollsum") == head
