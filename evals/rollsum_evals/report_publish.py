"""Where a report is built: a temporary folder beside the target, moved into place whole.

`rollsum report` writes report.md, report.html, configs.csv and PNGs. Written one by one into
the target, a report killed midway (or stopped by a full disk) left configs.csv and PNGs without
report.html, or an old report.html beside new files. Built in `fileio.building_dir` instead, the
target is the previous report or the new one, never a mix; the files a report writes are
replaced together (a plot the new report no longer draws goes with the old version), and
anything else in the folder (compare results, your own files) is carried over.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rollsum.errors import ConfigError
from rollsum_evals.fileio import NotOurs, building_dir

REPORT_FILES = frozenset({
    "report.md", "report.html", "configs.csv", "retention_vs_tokens.png", "context_vs_window.png",
    "retention_by_age.png", "where_facts_die.png", "cost_split.png", "retention_by_category.png", "trend.png"})
"""What `rollsum_evals.report.write_report` writes, besides the numbered grid plots."""
_GRID = re.compile(r"grid_\d+\.png")


def is_report_file(name: str) -> bool:
    """A file an earlier report wrote: replaced with the report (a plot the new report does not
    draw goes too), unlike anything else kept in the folder."""
    return name in REPORT_FILES or bool(_GRID.fullmatch(name))


@contextmanager
def building(target: str | os.PathLike[str]) -> Iterator[Path]:
    """The folder to write a report into; it becomes `target` when the block ends. A target that
    is the working folder is one line (ConfigError)."""
    try:
        with building_dir(target, is_report_file) as build:
            yield build
    except NotOurs as err:  # raised before the report is built: nothing was written
        raise ConfigError(f"report --out {err}") from None
