from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from rollsum_evals.run.pool import process_pool

from tests.support.specs import GATED_TWO_UNITS


def test_many_jobs_share_a_few_worker_processes() -> None:
    """--jobs 64 on two cores must not start 64 processes (their serial start-up delayed the
    last Units by ~1 s); every call still runs, outside the calling process."""
    pool = process_pool(64, cpus=2)
    try:
        assert pool.processes <= 4
        pids = [f.result(timeout=60) for f in [pool.submit(os.getpid) for _ in range(40)]]
    finally:
        pool.shutdown()
    assert os.getpid() not in pids
    assert 1 <= len(set(pids)) <= pool.processes


def test_an_exception_in_a_call_reaches_its_future_only() -> None:
    pool = process_pool(2, cpus=2)
    try:
        bad = pool.submit(int, "not a number")
        good = pool.submit(int, "7")
        with pytest.raises(ValueError, match="not a number"):
            bad.result(timeout=60)
        assert good.result(timeout=60) == 7
    finally:
        pool.shutdown()


def test_a_dead_worker_fails_pending_calls_instead_of_hanging() -> None:
    pool = process_pool(1, cpus=1)
    try:
        dying = pool.submit(os._exit, 3)
        with pytest.raises(BrokenProcessPool):
            dying.result(timeout=60)
        with pytest.raises(BrokenProcessPool):
            pool.submit(os.getpid)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def test_no_submit_after_shutdown() -> None:
    pool = process_pool(1, cpus=1)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(os.getpid)


SHADOW_SPEC = """
name = "shadow"
cache = "off"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=30&seed=2"
[[configs]]
preset = "since-last"
[[configs]]
preset = "truncate"
"""
ROLLSUM_SCRIPT = Path(sys.executable).parent / "rollsum"


@pytest.mark.slow
@pytest.mark.skipif(not ROLLSUM_SCRIPT.exists(), reason="the rollsum command is not installed in this environment")
def test_workers_import_the_installed_package_not_a_rollsum_folder_in_the_current_directory(
        tmp_path: Path) -> None:
    """A checkout (or any `rollsum/` folder) in the current directory must not shadow the
    installed package in worker processes: it did, and every Unit failed."""
    shadow = tmp_path / "rollsum"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise RuntimeError("imported ./rollsum, not the installed package")\n')
    (tmp_path / "s.toml").write_text(SHADOW_SPEC)
    out = subprocess.run([str(ROLLSUM_SCRIPT), "-q", "run", "s.toml", "--out", "run", "--jobs", "2",
                          "--executor", "process", "--no-progress"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "ROLLSUM_CACHE_DIR": str(tmp_path / "c")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "4/4 units" in out.stdout and " 0 errors" in out.stdout




def _holders(path: Path) -> list[int]:
    """Processes other than this one with `path` open (the worker blocked at the gate)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd) == str(path) for fd in (entry / "fd").iterdir()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to find the worker")
def test_a_worker_killed_mid_sweep_is_one_line_and_resume_finishes_the_run(tmp_path: Path) -> None:
    """A worker process killed by the kernel (the out-of-memory killer at scale) ended `rollsum
    run --executor process` with a BrokenProcessPool traceback. Now one line naming the worker and
    the signal, the manifest interrupted with that reason, and `--resume` completes the run."""
    import json
    import signal
    import time

    from tests.support.gate import Gate, subprocess_env

    spec = tmp_path / "oom.toml"
    spec.write_text(GATED_TWO_UNITS)
    out = tmp_path / "run"
    cli = [sys.executable, "-m", "rollsum_evals", "run", str(spec), "--out", str(out), "--no-progress",
           "--executor", "process", "--jobs", "2"]
    with Gate(tmp_path / "gate") as gate:
        proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=gate.env())
        try:
            deadline = time.monotonic() + 600  # bounds a hang only: the Unit cannot pass the gate
            while not (workers := _holders(gate.path)) and proc.poll() is None:
                assert time.monotonic() < deadline, "no worker reached the gate"
                time.sleep(0.02)
            assert proc.poll() is None, proc.communicate()
            os.kill(workers[0], signal.SIGKILL)
            _, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    lines = stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in stderr, stderr
    assert f"worker process {workers[0]} was killed by SIGKILL" in lines[0] and "--resume" in lines[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and "SIGKILL" in manifest["reason"]
    done = subprocess.run([*cli, "--resume"], capture_output=True, text=True, timeout=300, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "manifest.json").read_text())["units_done"] == 2
