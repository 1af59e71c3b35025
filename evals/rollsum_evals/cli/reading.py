"""What the commands that read a run directory (report, compare, regress) check first."""

from __future__ import annotations

from pathlib import Path

from rollsum.errors import ConfigError


def resamples(value: int, flag: str) -> int:
    """A bootstrap resample count: below 100 an interval means nothing."""
    if value < 100:
        raise ConfigError(f"{flag}: expected at least 100 resamples, got {value}")
    return value


def something_finished(*runs: Path) -> None:
    """A run in which no Unit finished is one line (`rundir.status.nothing_finished`)."""
    from rollsum_evals.rundir.status import nothing_finished

    for run in runs:
        message = nothing_finished(run)
        if message is not None:
            raise ConfigError(message)
