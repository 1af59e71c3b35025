"""The driver side of the Ray integration tests (`test_ray_cluster.py`), run as a script INSIDE
the test's private network and PID namespace: ``python ray_driver.py COMMAND JSON``.

It is a script, not test code: everything that must talk to the cluster (the ``rollsum``
driver, `ray.init`) has to live in the namespace, which the pytest process does not. Results go
back as one JSON line on stdout. The models it injects are defined here, in ``__main__``, so
Ray ships them to the workers by value (no import path needed on a worker).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rollsum.models.base import Completion, CompletionRequest, Model
from rollsum.models.fake import FakeModel

VICTIM_ENV = "ROLLSUM_TEST_VICTIM_DIR"
"""Set only in the environment of the node the fault test kills: a Unit that starts there says
so in a file and then waits for the node to die under it."""


def priced(spec: str) -> Model | None:
    """A FakeModel priced as the sweep's model spec (anthropic:claude-haiku-4-5): it costs money."""
    return None if spec == "extractive" else FakeModel("extractive", model="claude-haiku-4-5")


class VictimModel(FakeModel):
    """Extractive everywhere; on the victim node it blocks its first call forever (after
    saying so), so the node is killed mid-Unit for sure."""

    def complete(self, request: CompletionRequest) -> Completion:
        where = os.environ.get(VICTIM_ENV)
        if where:
            Path(where, f"started-{os.getpid()}").write_text("", encoding="utf-8")
            threading.Event().wait()
        return super().complete(request)


def victim(spec: str) -> Model | None:
    return None if spec == "extractive" else VictimModel("extractive")


MODELS = {"priced": priced, "victim": victim}


def wait_nodes(address: str, nodes: int, timeout: float) -> dict[str, Any]:
    """Readiness: the GCS port accepts, then `nodes` nodes are alive (polled; the timeout is an
    upper bound, never a wait)."""
    import ray

    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"no GCS at {address} after {timeout}s") from None
            time.sleep(0.2)
    ray.init(address=address, logging_level=30)
    alive = 0
    while time.monotonic() < deadline:
        alive = sum(1 for n in ray.nodes() if n["Alive"])
        if alive == nodes:
            return {"nodes": alive}
        time.sleep(0.2)
    raise SystemExit(f"{alive} of {nodes} nodes alive after {timeout}s")


def sweep(cfg: dict[str, Any]) -> dict[str, Any]:
    from rollsum_evals.run import run_sweep
    from rollsum_evals.spec.parse import parse_spec

    if cfg.get("cache_dir"):
        os.environ["ROLLSUM_CACHE_DIR"] = cfg["cache_dir"]
    spec = parse_spec(cfg["spec"])
    models = MODELS[cfg["models"]] if cfg.get("models") else None
    res = run_sweep(spec, cfg["out"], jobs=int(cfg.get("jobs", 2)), executor=cfg.get("executor", "ray"),
                    resume=bool(cfg.get("resume")), max_cost_usd=cfg.get("max_cost"), models=models,
                    progress=False, unit_cache=cfg.get("unit_cache"), ray_address=cfg.get("address"))
    manifest = json.loads((Path(cfg["out"]) / "manifest.json").read_text(encoding="utf-8"))
    return {"ran": res.ran, "scored": res.scored, "cached": res.cached, "done": res.done, "total": res.total,
            "spent": res.spent_usd,
            "stopped": res.stopped_for_budget, "units_stopped": res.stopped, "executor": res.executor,
            "cluster": manifest.get("cluster"), "cache_stats": (manifest.get("cache") or {}).get("stats") or {},
            "unit_cache": manifest.get("unit_cache")}


def rescore_run(cfg: dict[str, Any]) -> dict[str, Any]:
    from rollsum_evals.rescore import rescore

    models = MODELS[cfg["models"]] if cfg.get("models") else None
    res = rescore(cfg["run"], scorers=cfg.get("scorers"), executor="ray", ray_address=cfg.get("address"),
                  jobs=int(cfg.get("jobs", 2)), model=cfg.get("model"), models=models)
    return {"units": res.units, "errors": res.errors, "spent_usd": res.spent_usd}


def main() -> None:
    command, arg = sys.argv[1], json.loads(sys.argv[2])
    if command == "wait":
        out = wait_nodes(arg["address"], int(arg["nodes"]), float(arg["timeout"]))
    elif command == "sweep":
        out = sweep(arg)
    elif command == "rescore":
        out = rescore_run(arg)
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
