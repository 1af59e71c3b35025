"""Running sweeps: the sweep loop (`sweep`), one Unit (`unit`), models and caches (`models`),
the budget (`budget`), the scheduler (`scheduler`), the executors (`pool`) and what a run
records about its code (`provenance`)."""

from rollsum_evals.run.sweep import RunResult, run_sweep

__all__ = ["RunResult", "run_sweep"]
