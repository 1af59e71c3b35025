"""The rollsum evaluation harness: replay sweeps, score their traces, report.

`load_run(path)` reads a run directory (see docs/run-format.md). Heavy modules (pandas, the
runner) load on first use so that `rollsum --help` and `import rollsum_evals.data` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollsum_evals.rescore import RescoreResult, rescore
    from rollsum_evals.run import RunResult, run_sweep
    from rollsum_evals.rundir import Run, load_run
    from rollsum_evals.spec.parse import load_spec
    from rollsum_evals.spec.schema import SweepSpec
    from rollsum_evals.units import Unit

__all__ = ["RescoreResult", "Run", "RunResult", "SweepSpec", "Unit", "load_run", "load_spec", "rescore",
           "run_sweep"]

_LAZY = {
    "Run": "rollsum_evals.rundir", "load_run": "rollsum_evals.rundir",
    "RunResult": "rollsum_evals.run", "run_sweep": "rollsum_evals.run",
    "RescoreResult": "rollsum_evals.rescore", "rescore": "rollsum_evals.rescore",
    "SweepSpec": "rollsum_evals.spec.schema", "load_spec": "rollsum_evals.spec.parse", "Unit": "rollsum_evals.units",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rollsum_evals' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
