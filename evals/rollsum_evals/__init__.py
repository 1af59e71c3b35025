"""The rollsum evaluation harness: replay sweeps, score them, report.

`load_run(path)` reads a run directory (see docs/run-format.md). Heavy modules (pandas, the
runner) load on first use so that `rollsum --help` and `import rollsum_evals.data` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollsum_evals.rundir import Run, load_run
    from rollsum_evals.runner import RunResult, run_sweep
    from rollsum_evals.spec import SweepSpec, Unit, load_spec

__all__ = ["Run", "RunResult", "SweepSpec", "Unit", "load_run", "load_spec", "run_sweep"]

_LAZY = {
    "Run": "rollsum_evals.rundir", "load_run": "rollsum_evals.rundir",
    "RunResult": "rollsum_evals.runner", "run_sweep": "rollsum_evals.runner",
    "SweepSpec": "rollsum_evals.spec", "Unit": "rollsum_evals.spec", "load_spec": "rollsum_evals.spec",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rollsum_evals' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
