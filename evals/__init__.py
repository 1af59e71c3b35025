"""The rollsum evaluation harness: replay sweeps, score them, report.

`load_run(path)` reads a run directory (see docs/run-format.md). Heavy modules (pandas, the
runner) load on first use so that `rollsum --help` and `import evals.data` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.rundir import Run, load_run
    from evals.runner import RunResult, run_sweep
    from evals.spec import SweepSpec, Unit, load_spec

__all__ = ["Run", "RunResult", "SweepSpec", "Unit", "load_run", "load_spec", "run_sweep"]

_LAZY = {
    "Run": "evals.rundir", "load_run": "evals.rundir",
    "RunResult": "evals.runner", "run_sweep": "evals.runner",
    "SweepSpec": "evals.spec", "Unit": "evals.spec", "load_spec": "evals.spec",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evals' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
