from __future__ import annotations

from pathlib import Path

import pandas as pd
import rollsum_evals
from rollsum_evals.run import run_sweep
from rollsum_evals.run.pool import choose_executor
from rollsum_evals.run.scheduler import Scheduler
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.units import Unit

SPEC = """
name = "sched"
context_window = 3000
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=3&messages=40&seed=9"

[[configs]]
preset = "full-context"

[[configs]]
preset = "since-last"
grid = { keep_last = [4, 8] }

[[configs]]
preset = "evict-window"
"""


def _unit(uid: str, config: str, preset: str = "since-last", model: str = "fake:mode=extractive") -> Unit:
    return Unit(unit_id=uid, dataset="d", conversation_id=uid, dataset_hash="h", config=config,
                preset=preset, params_json="{}", prompt="", model=model, seed=0, context_window=1000)


def test_process_executor_gives_the_same_tables_as_one_thread(tmp_path: Path) -> None:
    spec = parse_spec(SPEC, "s.toml")
    r1 = run_sweep(spec, tmp_path / "t", jobs=1, executor="thread", progress=False)
    r4 = run_sweep(spec, tmp_path / "p", jobs=4, executor="process", progress=False)
    assert r1.executor == "thread" and r4.executor == "process" and r4.done == r4.total == 12
    a, b = rollsum_evals.load_run(tmp_path / "t"), rollsum_evals.load_run(tmp_path / "p")
    cols = list(NON_DETERMINISTIC_UNIT_COLUMNS)
    pd.testing.assert_frame_equal(a.units.drop(columns=cols), b.units.drop(columns=cols))
    pd.testing.assert_frame_equal(a.probes, b.probes)
    pd.testing.assert_frame_equal(a.turns, b.turns)
    assert b.manifest["executor"] == "process" and b.manifest["timing"]["unit_cpu_s"] > 0
    assert b.manifest["timing"]["units"] == 12
    run_sweep(spec, tmp_path / "p", jobs=1, executor="thread", resume=True, progress=False)
    resumed = rollsum_evals.load_run(tmp_path / "p").manifest  # says whose figures they are: nothing ran
    assert resumed["executor"] == "thread" and resumed["timing"] == {"unit_cpu_s": 0, "unit_wall_s": 0, "units": 0}


def test_auto_keeps_threads_for_small_limited_or_injected_sweeps() -> None:
    big = 100_000
    assert choose_executor("auto", jobs=16, messages=big, limited=False, injected=False, cpus=2) == "process"
    assert choose_executor("auto", jobs=16, messages=100, limited=False, injected=False, cpus=2) == "thread"
    assert choose_executor("auto", jobs=1, messages=big, limited=False, injected=False, cpus=2) == "thread"
    assert choose_executor("auto", jobs=16, messages=big, limited=True, injected=False, cpus=2) == "thread"
    assert choose_executor("auto", jobs=16, messages=big, limited=False, injected=True, cpus=2) == "thread"
    assert choose_executor("auto", jobs=16, messages=big, limited=False, injected=False, cpus=1) == "thread"
    assert choose_executor("process", jobs=1, messages=1, limited=True, injected=True) == "process"


def test_scheduler_samples_every_config_then_runs_the_expensive_one_first() -> None:
    units = [_unit(f"{c}{i}", c) for c in ("cheap", "dear") for i in range(4)]
    units.append(_unit("base0", "base", preset="full-context"))
    sched = Scheduler(units, lambda u: 100)
    first_two = {sched.pop().config, sched.pop().config}
    assert first_two == {"cheap", "dear"}  # unknown summarizing configs are sampled first
    sched.observe(_unit("cheap0", "cheap"), wall_s=0.1)
    sched.observe(_unit("dear0", "dear"), wall_s=3.0)
    order = [sched.pop().config for _ in range(len(sched))]
    assert order == ["dear"] * 3 + ["cheap"] * 3 + ["base"]
    assert sched.peek() is None


def test_scheduler_prefers_longer_conversations_within_a_config() -> None:
    units = [_unit("a", "c"), _unit("b", "c"), _unit("z", "c")]
    sizes = {"a": 10, "b": 300, "z": 50}
    sched = Scheduler(units, lambda u: sizes[u.unit_id])
    assert [sched.pop().unit_id for _ in range(3)] == ["b", "z", "a"]
