"""``--executor ray`` on a real 2-node Ray cluster that never leaves loopback.

The cluster lives in a network, PID and mount namespace this module makes (``unshare -n -p -f
-m --mount-proc``, then ``ip link set lo up``): its nodes bind 127.0.0.1 because nothing else
exists there, and every Ray process and every ``rollsum`` driver (`ray_driver.py`, entered
with ``nsenter``) lives in it. ``ray stop`` in that namespace sees only its own processes;
closing the namespace's first process (a ``cat`` on a pipe this module holds) ends whatever is
left, even if pytest itself dies. Readiness is polled (the GCS port, then the node count);
timeouts are upper bounds. One cluster per module (the tests share it, xdist group ``ray``).

Skipped, with the reason, where Ray is not installed or namespaces cannot be made (not root).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals.cli import main
from rollsum_evals.run.ray_executor import RUNNERS_PER_CPU
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

DRIVER = Path(__file__).with_name("ray_driver.py")
PORT = 6379  # the namespace is private: no other process can hold it
ADDRESS = f"127.0.0.1:{PORT}"
UP_TO_S = 600.0
"""Upper bound for a cluster to come up or a driver to finish on a loaded 2-core machine."""
RAY = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONSAFEPATH": "1",
       # a dead node is noticed in seconds, not half a minute
       "RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "4",
       "RAY_health_check_initial_delay_ms": "0"}

SPEC = """
name = "ray-small"
context_window = 3000
cache = "user"
models = ["fake:mode=extractive"]
scorers = ["answer_retention", "fact_survival", "cost"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=3&messages=60&seed=5"

[[configs]]
preset = "full-context"

[[configs]]
preset = "since-last"
grid = { keep_last = [2, 6] }
"""
TOTAL = 9
SLOW_SPEC = SPEC.replace("fake:mode=extractive", "fake:mode=extractive,latency_ms=40").replace(
    "conversations=3", "conversations=6")
BUDGET_SPEC = """
name = "ray-budget"
context_window = 8000
cache = "off"
models = ["anthropic:claude-haiku-4-5"]
[[datasets]]
name = "chat"
source = "synth:chat?conversations=4&messages=300&seed=21"
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 10], messages_per_summary = [4, 10] }
"""
VICTIM_SPEC = """
name = "ray-victim"
context_window = 3000
cache = "off"
models = ["fake:mode=extractive"]
[[datasets]]
name = "chat"
source = "synth:chat?conversations=6&messages=60&seed=8"
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 6] }
"""


def _why_not() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "the ray extra is not installed (pip install 'rollsum[ray]')"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not available to make a private network namespace"
    probe = subprocess.run(["unshare", "-n", "-p", "-f", "-m", "--mount-proc", "true"], capture_output=True,
                           check=False)
    if probe.returncode != 0:
        return "cannot make network/PID namespaces here (unshare needs root or user namespaces)"
    return None


class Cluster:
    """A private namespace holding a Ray cluster; `run` executes a command inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.temp = Path(tempfile.mkdtemp(prefix="rs-ray-", dir="/tmp"))  # short: Ray's socket paths
        self.env = {**os.environ, **ENV}
        self.holder = subprocess.Popen(
            ["unshare", "-n", "-p", "-f", "-m", "--mount-proc", "sh", "-c",
             "ip link set lo up && echo ready && exec cat"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "ready":
            raise RuntimeError("the namespace did not come up")
        children = Path(f"/proc/{self.holder.pid}/task/{self.holder.pid}/children").read_text().split()
        self.enter = ["nsenter", "-t", children[0], "-n", "-p", "-m"]

    def run(self, argv: list[str], *, env: dict[str, str] | None = None, check: bool = True,
            timeout: float = UP_TO_S) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.enter, *argv], capture_output=True, text=True, env={**self.env, **(env or {})},
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{argv[:4]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n"
                                 f"{done.stderr[-4000:]}")
        return done

    def driver(self, command: str, arg: dict[str, Any]) -> dict[str, Any]:
        done = self.run([sys.executable, str(DRIVER), command, json.dumps(arg)])
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return out

    def popen_driver(self, command: str, arg: dict[str, Any]) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.enter, sys.executable, str(DRIVER), command, json.dumps(arg)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
                                start_new_session=True)

    def start_node(self, *, head: bool = False, extra: list[str] | None = None,
                   env: dict[str, str] | None = None) -> None:
        common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000"]
        if head:
            args = ["start", "--head", f"--port={PORT}", "--include-dashboard=false", "--disable-usage-stats",
                    f"--temp-dir={self.temp}", *common]
        else:
            args = ["start", f"--address={ADDRESS}", *common]
        self.run([*RAY, *args, *(extra or [])], env=env)

    def wait_nodes(self, n: int) -> None:
        self.driver("wait", {"address": ADDRESS, "nodes": n, "timeout": UP_TO_S})

    def kill_node_with(self, marker: str) -> None:
        """SIGKILL the raylet whose command line carries `marker` and every process under it
        (its workers): the node dies at once, as a machine that loses power."""
        rows = [line.split(None, 2) for line in self.run(["ps", "-ww", "-eo", "pid,ppid,args"]).stdout.splitlines()[1:]]
        raylets = {pid for pid, _, args in rows if "raylet/raylet" in args and marker in args}
        assert raylets, "the victim node's raylet is not running"
        doomed = set(raylets)
        while True:
            more = {pid for pid, ppid, _ in rows if ppid in doomed} - doomed
            if not more:
                break
            doomed |= more
        self.run(["kill", "-9", *sorted(doomed)])

    def close(self) -> None:
        try:
            self.run([*RAY, "stop", "--force", "--grace-period", "1"], check=False, timeout=60)
        finally:
            if self.holder.stdin is not None:
                self.holder.stdin.close()  # the namespace's init exits: the kernel ends the rest
            self.holder.wait(timeout=60)
            shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = _why_not()
    if reason is not None:
        pytest.skip(reason)
    c = Cluster(tmp_path_factory.mktemp("ray"))
    try:
        c.start_node(head=True)
        c.start_node()
        c.wait_nodes(2)
        yield c
    finally:
        c.close()


def _tables(run: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    r = rollsum_evals.load_run(run)
    units = r.units.drop(columns=list(NON_DETERMINISTIC_UNIT_COLUMNS)).sort_values("unit_id").reset_index(drop=True)
    probes = r.probes.sort_values(list(r.probes.columns[:6])).reset_index(drop=True)
    return units, probes


def _assert_same_tables(a: Path, b: Path) -> None:
    ua, pa = _tables(a)
    ub, pb = _tables(b)
    pd.testing.assert_frame_equal(ua, ub)
    pd.testing.assert_frame_equal(pa, pb)


def _reference(tmp: Path, spec: str, name: str, *, executor: str = "process", models: Any = None) -> Path:
    from rollsum_evals.run import run_sweep
    from rollsum_evals.spec.parse import parse_spec

    out = tmp / name
    run_sweep(parse_spec(spec, "s.toml"), out, jobs=2, executor=executor, models=models, progress=False,
              unit_cache=False)
    return out


def _driver_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("ray_driver", DRIVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _journaled(run: Path) -> int:
    path = run / "units.jsonl"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


VICTIM_ATTEMPTS = 4


def _victim_reached(flags: Path, proc: subprocess.Popen[str]) -> bool:
    """True once a Unit is blocked on the victim node; False when the driver ended first (every
    runner was placed elsewhere: the sweep completed without touching the victim)."""
    deadline = time.monotonic() + UP_TO_S
    while not any(flags.iterdir()):
        if proc.poll() is not None:
            proc.communicate()
            return any(flags.iterdir())
        if time.monotonic() > deadline:
            raise AssertionError(f"no unit on the victim node and no end of the driver within {UP_TO_S}s")
        time.sleep(0.05)
    return True


def _wait_for(what: str, ready: Any, proc: subprocess.Popen[str]) -> None:
    """Poll a condition on files the driver writes; a driver that exits first fails the test."""
    deadline = time.monotonic() + UP_TO_S
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"the driver ended before {what}: {proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {UP_TO_S}s")
        time.sleep(0.05)


# ----------------------------------------------------------------------------------------------


def test_tables_equal_the_process_executors_and_a_rerun_makes_no_model_call_and_no_replay(
        cluster: Cluster, tmp_path: Path) -> None:
    ref = _reference(tmp_path, SPEC, "process")
    common = {"spec": SPEC, "address": ADDRESS, "jobs": 2, "cache_dir": str(tmp_path / "cache")}
    first = cluster.driver("sweep", {**common, "out": str(tmp_path / "a")})
    assert first["done"] == first["ran"] == TOTAL and first["executor"] == "ray"
    assert first["cluster"]["nodes"] == 2 and first["cluster"]["address"] == ADDRESS
    assert not first["cluster"]["local"] and first["cache_stats"]["misses"] > 0
    _assert_same_tables(ref, tmp_path / "a")
    again = cluster.driver("sweep", {**common, "out": str(tmp_path / "b")})
    assert again["ran"] == 0 and again["cached"] == TOTAL  # no replay: the driver's Unit cache
    # the Unit cache off: every Unit replays, and every model call is answered by the cache the
    # first run filled with the answers its workers sent back to the driver
    models = cluster.driver("sweep", {**common, "out": str(tmp_path / "c"), "unit_cache": False})
    assert models["ran"] == TOTAL
    assert models["cache_stats"]["misses"] == 0 and models["cache_stats"]["hits"] == first["cache_stats"]["misses"]
    _assert_same_tables(ref, tmp_path / "b")
    _assert_same_tables(ref, tmp_path / "c")


def test_max_cost_holds_across_both_nodes(cluster: Cluster, tmp_path: Path) -> None:
    cap = 0.02
    out = cluster.driver("sweep", {"spec": BUDGET_SPEC, "out": str(tmp_path / "b"), "address": ADDRESS, "jobs": 2,
                                   "models": "priced", "max_cost": cap})
    assert out["stopped"] and 0 < out["spent"] <= cap
    assert json.loads((tmp_path / "b" / "budget.json").read_text())["spent"] == pytest.approx(out["spent"])


def test_rescore_on_the_cluster_equals_rescoring_here(cluster: Cluster, tmp_path: Path) -> None:
    from rollsum_evals.rescore import rescore

    ref = _reference(tmp_path, SPEC, "here")
    shutil.copytree(ref, tmp_path / "there")
    rescore(ref, scorers=["answer_retention", "cost"])
    out = cluster.driver("rescore", {"run": str(tmp_path / "there"), "address": ADDRESS,
                                     "scorers": ["answer_retention", "cost"]})
    assert (out["units"], out["errors"], out["spent_usd"]) == (TOTAL, 0, 0.0)
    _assert_same_tables(ref, tmp_path / "there")


def test_a_paid_rescore_on_the_cluster_records_what_it_spent(cluster: Cluster, tmp_path: Path) -> None:
    """`rollsum score --executor ray` with a paid QA model charged nothing to the run's account:
    its ``spent_usd`` stayed the sweep's while the cluster paid for every QA call (the local
    executor records it). Now both charge the same."""
    from rollsum_evals.rescore import rescore

    ref = _reference(tmp_path, SPEC, "here")
    shutil.copytree(ref, tmp_path / "there")
    scorers, qa = ["answer_retention", "qa"], "anthropic:claude-haiku-4-5"
    here = rescore(ref, scorers=scorers, model=qa, models=_driver_module().priced)
    out = cluster.driver("rescore", {"run": str(tmp_path / "there"), "address": ADDRESS, "scorers": scorers,
                                     "model": qa, "models": "priced"})
    assert here.spent_usd > 0 and out["spent_usd"] == pytest.approx(here.spent_usd)
    spent = [json.loads((run / "manifest.json").read_text())["spent_usd"] for run in (ref, tmp_path / "there")]
    assert spent[1] == pytest.approx(spent[0])
    assert json.loads((tmp_path / "there" / "budget.json").read_text())["spent"] == pytest.approx(spent[1])


def test_the_driver_killed_then_resume_on_the_same_cluster_finishes_exactly(cluster: Cluster,
                                                                            tmp_path: Path) -> None:
    ref = _reference(tmp_path, SLOW_SPEC, "process")
    run = tmp_path / "ray"
    cfg = {"spec": SLOW_SPEC, "out": str(run), "address": ADDRESS, "jobs": 2, "cache_dir": str(tmp_path / "c")}
    proc = cluster.popen_driver("sweep", cfg)
    total = 18
    try:
        _wait_for("a third of the units journaled", lambda: _journaled(run) >= total // 3, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver (and nsenter): its tasks die with its job
        proc.communicate()
    before = _journaled(run)
    assert total // 3 <= before < total
    out = cluster.driver("sweep", {**cfg, "resume": True})
    assert out["done"] == total and out["ran"] + out["scored"] == total - before  # nothing twice
    _assert_same_tables(ref, run)


def test_a_worker_node_dying_mid_unit_still_gives_equal_tables(cluster: Cluster, tmp_path: Path) -> None:
    ref = _reference(tmp_path, VICTIM_SPEC, "thread", executor="thread", models=_driver_module().victim)
    flags = tmp_path / "victim"
    flags.mkdir()
    cluster.start_node(extra=["--resources", '{"victim_node": 1}'], env={"ROLLSUM_TEST_VICTIM_DIR": str(flags)})
    cluster.wait_nodes(3)
    total = 12
    # Ray's SPREAD placement is best effort: on a loaded machine every runner can land off the
    # victim node, and the sweep then simply finishes. That run says nothing about a node dying,
    # so it is set aside (it must still be complete) and the sweep is started again, at most
    # VICTIM_ATTEMPTS times; what is tested starts once a Unit is blocked on the victim node.
    for attempt in range(VICTIM_ATTEMPTS):
        run = tmp_path / f"ray-{attempt}"
        proc = cluster.popen_driver("sweep", {"spec": VICTIM_SPEC, "out": str(run), "address": ADDRESS, "jobs": 6,
                                              "models": "victim"})
        if _victim_reached(flags, proc):
            break
        assert proc.returncode == 0 and _journaled(run) == total, "a run that missed the victim must be complete"
    else:
        pytest.fail(f"no Unit was placed on the victim node in {VICTIM_ATTEMPTS} sweeps (Ray's SPREAD)")
    try:
        # SPREAD is best effort: every runner (one per CPU, three nodes of one CPU) can land on the
        # victim node, and then nothing is journaled until it dies; that is also a node dying mid-Unit
        runners = RUNNERS_PER_CPU * 3
        _wait_for("a third of the units journaled, or every runner blocked on the victim",
                  lambda: _journaled(run) >= total // 3 or len(list(flags.iterdir())) >= runners, proc)
        assert _journaled(run) < total  # the victim's Unit is still blocked
        cluster.kill_node_with("victim_node")
        stdout, stderr = proc.communicate(timeout=UP_TO_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["done"] == total
    _assert_same_tables(ref, run)


# -- without a cluster ------------------------------------------------------------------------------


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    reason = _why_not()
    if reason is not None:
        pytest.skip(reason)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC, encoding="utf-8")
    rollsum = [sys.executable, "-m", "rollsum_evals", "run", str(spec), "--out", str(tmp_path / "r"),
               "--executor", "ray", "--ray-address", "127.0.0.1:6390", "--no-progress"]
    done = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *rollsum],
                          capture_output=True, text=True, timeout=UP_TO_S, env={**os.environ, **ENV}, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:6390" in lines[0] and "no Ray cluster answers" in lines[0], lines
    assert not (tmp_path / "r").exists()


def test_without_the_extra_it_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC, encoding="utf-8")
    code = main(["run", str(spec), "--out", str(tmp_path / "r"), "--executor", "ray", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pip install 'rollsum[ray]'" in err[0], err
    assert not (tmp_path / "r").exists()
