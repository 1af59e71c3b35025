"""One writer per run directory (issue #11): a second `run`, `--resume` or `score` on a run
directory that a live process is writing is refused with "run in progress (pid N)"; a killed
writer's lock is free at once; the tables of the run that kept going are exact."""

from __future__ import annotations

import errno
import fcntl
import json
import os
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
from rollsum_evals.rundir.lock import RunInProgress, RunLock
from rollsum_evals.spec.parse import load_spec

from rollsum.errors import ConfigError
from tests.support.gate import Gate, subprocess_env

SPEC = """
name = "lock"
context_window = 1500
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=3&messages=40&seed=5"

[[configs]]
preset = "since-last"
summarizer = "tests.support.gate:GatedSummarizer"
params = { messages_per_summary = 6, keep_last = 2 }
"""
"""The summarizer waits on the test's `Gate`: the first run cannot finish while the test holds
it, however slow or loaded the machine (issue #19: the old version assumed a ~3 s run outlived
four CLI start-ups, and went red under load)."""

TWO = SPEC.replace("conversations=3", "conversations=1") + '''
[[configs]]
preset = "truncate"
'''
"""One conversation, a baseline (no summarizer: it finishes at once) and a gated config: with
two jobs the journal gets the baseline's line while the other Unit waits at the gate."""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rollsum_evals", *args]


def _held(path: Path) -> bool:
    """Whether some process holds the run directory's lock (probed the way a writer takes it)."""
    lock = path / "run.lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        return err.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


def _journaled(out: Path) -> bool:
    journal = out / "units.jsonl"
    return journal.exists() and journal.stat().st_size > 0


def _wait(cond: Callable[[], bool], what: str, timeout: float = 600.0) -> None:
    """Poll for an event (a lock taken, a line written). The run being watched cannot get past
    it on its own (`Gate`), so the interval only costs time; the timeout only bounds a hang."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _table(path: Path, name: str) -> pd.DataFrame:
    df = pd.read_parquet(path / f"{name}.parquet")
    return df.drop(columns=[c for c in NON_DETERMINISTIC_UNIT_COLUMNS if c in df.columns])


@pytest.mark.slow
def test_a_second_writer_is_refused_while_the_first_runs_and_the_tables_are_exact(tmp_path: Path) -> None:
    spec = tmp_path / "lock.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    with Gate(tmp_path / "gate") as gate:
        first = subprocess.Popen(_cli("-q", "run", str(spec), "--out", str(out), "--jobs", "1", "--no-progress"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=gate.env())
        try:
            # it holds the lock and has written its manifest; it cannot finish while the gate is shut
            _wait(lambda: (out / "manifest.json").exists() or first.poll() is not None, "the first run to start")
            assert first.poll() is None, first.communicate()
            assert _held(out), "the first run wrote its manifest without holding the lock"
            refusals = {}
            for label, args in {"resume": ("run", str(spec), "--out", str(out), "--resume", "--no-progress"),
                                "run": ("run", str(spec), "--out", str(out), "--no-progress"),
                                "retry": ("run", str(spec), "--out", str(out), "--retry-errors", "--no-progress"),
                                "score": ("score", str(out))}.items():
                refusals[label] = subprocess.run(_cli(*args), capture_output=True, text=True, timeout=300,
                                                 env=gate.env())
            assert first.poll() is None, "the first run ended while its gate was shut"
            gate.open()
            _, stderr = first.communicate(timeout=300)
        finally:
            if first.poll() is None:
                first.kill()
    reference = run_sweep(load_spec(spec), tmp_path / "reference", jobs=1, progress=False)
    assert first.returncode == 0, stderr
    assert first.pid and reference.done == 3
    for label, r in refusals.items():
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (label, r.stderr)
        assert f"run in progress (pid {first.pid})" in lines[0], (label, lines)
        assert "Traceback" not in r.stderr
    for name in ("units", "probes", "turns"):
        pd.testing.assert_frame_equal(_table(out, name), _table(tmp_path / "reference", name))
    units = pd.read_parquet(out / "units.parquet")
    assert len(units) == 3 and units["unit_id"].is_unique
    journal = [json.loads(x) for x in (out / "units.jsonl").read_text().splitlines()]
    assert len(journal) == 3, "a refused writer appended to the journal"


@pytest.mark.slow
def test_a_killed_writers_lock_is_taken_over_by_resume(tmp_path: Path) -> None:
    spec = tmp_path / "lock.toml"
    spec.write_text(TWO)
    out = tmp_path / "run"
    with Gate(tmp_path / "gate") as gate:
        proc = subprocess.Popen(_cli("-q", "run", str(spec), "--out", str(out), "--jobs", "2", "--executor",
                                     "thread", "--no-progress"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=gate.env())
        try:
            _wait(lambda: _journaled(out) or proc.poll() is not None, "the first unit")
            assert proc.poll() is None, "the run finished while its gate was shut"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
    # the lock file still names the dead writer, but nothing holds the lock
    assert json.loads((out / "run.lock").read_text())["pid"] == proc.pid
    assert not _held(out)
    done = subprocess.run(_cli("-q", "run", str(spec), "--out", str(out), "--resume", "--no-progress"),
                          capture_output=True, text=True, timeout=300, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    reference = tmp_path / "reference"
    run_sweep(load_spec(spec), reference, jobs=1, progress=False)
    for name in ("units", "probes", "turns"):
        pd.testing.assert_frame_equal(_table(out, name), _table(reference, name))


def test_the_lock_refuses_a_second_holder_and_names_the_first(tmp_path: Path) -> None:
    first = RunLock(tmp_path)
    first.acquire()
    first.acquire()  # idempotent for its holder
    with pytest.raises(RunInProgress, match=rf"run in progress \(pid {os.getpid()}\)"):
        RunLock(tmp_path).acquire()
    first.release()
    with RunLock(tmp_path) as again:
        assert again.held
    assert not again.held


def test_run_sweep_and_rescore_take_the_lock(tmp_path: Path) -> None:
    from rollsum_evals.rescore import rescore

    spec = tmp_path / "lock.toml"
    spec.write_text(SPEC.replace("conversations=3", "conversations=1"))
    out = tmp_path / "run"
    run_sweep(load_spec(spec), out, progress=False)
    with RunLock(out):
        with pytest.raises(RunInProgress):
            run_sweep(load_spec(spec), out, resume=True, progress=False)
        with pytest.raises(RunInProgress):
            rescore(out)
    assert rescore(out).units == 1  # free again


def test_a_read_only_run_directory_is_one_line_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    real_open = os.open

    def refuse(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).endswith("run.lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(ConfigError, match="cannot write the run directory"):
        RunLock(tmp_path).acquire()


def test_a_lock_file_that_is_a_symbolic_link_is_refused_and_what_it_points_at_is_untouched(tmp_path: Path) -> None:
    """A received run directory can hold ``run.lock -> ~/notes.txt``: taking the lock truncates
    and writes the file, so following the link destroyed the file it pointed at."""
    from rollsum_evals.rundir.integrity import DamagedRun

    victim = tmp_path / "notes.txt"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.lock").symlink_to(victim)
    with pytest.raises(DamagedRun, match=r"run\.lock: a symbolic link .*notes\.txt"):
        RunLock(run).acquire()
    assert victim.read_text() == "precious\n"
    (run / "run.lock").unlink()
    (run / "run.lock").symlink_to(tmp_path / "not-yet")  # dangling: creating it would write outside too
    with pytest.raises(DamagedRun, match="symbolic link"):
        RunLock(run).acquire()
    assert not (tmp_path / "not-yet").exists()
