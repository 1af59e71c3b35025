"""The run directory: its format (`format`), the writer (`journal`), the one reader (`read`),
and the Unit-result cache (`unit_cache`). Contract: docs/run-format.md."""

from rollsum_evals.rundir.format import FORMAT_VERSION, NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.rundir.journal import RunDir, UnitResult
from rollsum_evals.rundir.read import Run, load_run

__all__ = ["FORMAT_VERSION", "NON_DETERMINISTIC_UNIT_COLUMNS", "Run", "RunDir", "UnitResult", "load_run"]
