"""Running sweeps: the sweep loop (`sweep`), one Unit (`unit`), models and caches (`models`),
the budget (`budget`), the scheduler (`scheduler`), the executors (`pool`) and what a run
records about its code (`provenance`).

`run_sweep` and `RunResult` are imported on first use (module ``__getattr__``): importing any
submodule runs this file first, and the CLI imports `run.interrupt` for every command, so an
eager import of the sweep loop (pandas, the scorers, the executors) cost every ``rollsum report``
~1 s before it read anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollsum_evals.run.sweep import RunResult, run_sweep

__all__ = ["RunResult", "run_sweep"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rollsum_evals.run import sweep

        return getattr(sweep, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
