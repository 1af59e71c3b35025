"""What the commands that read a run directory (report, compare, regress) check first."""

from __future__ import annotations

from pathlib import Path

from rollsum.errors import ConfigError

MAX_RESAMPLES = 1_000_000
"""Above this a bootstrap interval moves by less than its own rounding, and its resample matrix
(resamples × conversations) would be gigabytes: 99,999,999,999 asked numpy for 1.46 TiB."""


def resamples(value: int, flag: str) -> int:
    """A bootstrap resample count: below 100 an interval means nothing, above `MAX_RESAMPLES`
    it costs memory and time and says nothing more."""
    if not 100 <= value <= MAX_RESAMPLES:
        raise ConfigError(f"{flag}: expected 100 to {MAX_RESAMPLES:,} resamples, got {value}")
    return value


def something_finished(*runs: Path) -> None:
    """A run in which no Unit finished is one line (`rundir.status.nothing_finished`)."""
    from rollsum_evals.rundir.status import nothing_finished

    for run in runs:
        message = nothing_finished(run)
        if message is not None:
            raise ConfigError(message)
