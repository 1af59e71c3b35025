"""report/compare/regress exit cleanly on their error paths (issue #19 item 3).

- A run stopped on a refused key before any Unit finished was a ``KeyError: 'status'``
  traceback from `report`: now one line saying nothing finished, for compare and regress too.
- `compare` with an unknown label printed its line and then, now and then, aborted at exit
  ("terminate called without an active exception", SIGABRT): Arrow's thread pool, started by
  reading the run's parquet tables, still had a worker alive when the process ended at once.
  Reading a run now starts no native thread at all, which the test checks deterministically
  (the abort itself only happened in a few percent of exits).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest
from rollsum_evals.cli import main

from tests.support.anthropic import Handler
from tests.support.specs import SMALL_FINISHED

ONLY_SUMMARIZING = """
name = "nothing"
models = ["anthropic:claude-haiku-4-5"]
context_window = 4000
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=60&seed=3"

[[configs]]
preset = "since-last"
"""

FINISHED = SMALL_FINISHED


def test_reading_a_run_in_which_nothing_finished_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        served: Callable[[Handler], list[httpx2.Request]]) -> None:
    served(lambda request: httpx2.Response(401, json={"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}}))
    spec = tmp_path / "s.toml"
    spec.write_text(ONLY_SUMMARIZING)
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--no-progress", "--executor", "thread"]) == 2
    capsys.readouterr()
    for argv in (["report", str(run), "--out", str(tmp_path / "rep")],
                 ["compare", str(run), "--a", "since-last", "--b", "since-last"],
                 ["regress", str(run), "--baseline", str(tmp_path / "base.json"), "--promote"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no unit finished" in err[0] and "stopped: auth" in err[0], (argv, err)
        assert "--resume" in err[0]
    assert not (tmp_path / "rep").exists() and not (tmp_path / "base.json").exists()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finished")
    (root / "s.toml").write_text(FINISHED)
    assert main(["run", str(root / "s.toml"), "--out", str(root / "run"), "--no-progress"]) == 0
    return root / "run"


READ_AND_COUNT_THREADS = """
import os, sys
import pandas, pyarrow, pyarrow.parquet  # imported (and their own start-up threads made) first
from rollsum_evals import analysis
before = len(os.listdir("/proc/self/task"))
run = analysis.load(sys.argv[1])
assert len(run.units) and len(run.turns) and len(run.probes)
print(before, len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
def test_reading_a_run_starts_no_native_thread_that_could_outlive_the_command(finished_run: Path) -> None:
    out = subprocess.run([sys.executable, "-c", READ_AND_COUNT_THREADS, str(finished_run)],
                         capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    assert after == before, f"reading the run's tables started {after - before} thread(s)"


def test_compare_with_an_unknown_label_exits_2_with_one_line(finished_run: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "rollsum_evals", "compare", str(finished_run),
                          "--a", "nope", "--b", "truncate"], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no configuration 'nope'" in lines[0], lines
