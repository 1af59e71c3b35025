from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.run import run_sweep
from rollsum_evals.spec.parse import parse_spec

SPEC = """
name = "kill"
context_window = 1500
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=20&messages=30&seed=7"

[[configs]]
preset = "full-context"
[[configs]]
preset = "truncate"
grid = { keep = [5, 10] }
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 4, 6] }
[[configs]]
preset = "token-ratio"
[[configs]]
preset = "evict-window"
[[configs]]
preset = "budget-rule-based"
[[configs]]
preset = "count-and-tokens"
params = { token_threshold = 300 }
"""


def _journaled(out: Path) -> int:
    path = out / "units.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow
def test_sigkill_at_five_random_moments_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    """Each kill lands after a random number of newly journaled Units (at most half of those
    left), not after a random time: a loaded machine slows the run and the kill alike, so the
    run is always still going when it is killed (it used to finish first under load)."""
    spec_file = tmp_path / "kill.toml"
    spec_file.write_text(SPEC)
    reference = run_sweep(parse_spec(SPEC, str(spec_file)), tmp_path / "ref", jobs=2, progress=False)
    assert reference.total == 200
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "rollsum_evals", "-q", "run", str(spec_file), "--out", str(out), "--jobs", "2",
           "--resume", "--no-progress"]
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    rng = random.Random(int(time.time()))
    kills = 0
    for _ in range(5):
        start = _journaled(out)
        target = start + rng.randint(1, max(1, (reference.total - start) // 2))
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 600  # bounds a hang only: the event is the journal's growth
        while proc.poll() is None and _journaled(out) < target and time.monotonic() < deadline:
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    a = pd.read_parquet(tmp_path / "ref" / "probes.parquet")
    b = pd.read_parquet(out / "probes.parquet")
    assert len(a) > 0
    pd.testing.assert_frame_equal(a, b)
    units = pd.read_parquet(out / "units.parquet")
    assert len(units) == 200 and units["unit_id"].is_unique
