"""Where a report is built: a temporary folder beside the target, moved into place whole.

`rollsum report` writes report.md, report.html, configs.csv and plots. Written one by one into
the target, a report killed midway (or stopped by a full disk) left configs.csv and plots without
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

FIGURE_SUFFIXES = (".svg", ".png")
"""`rollsum_evals.plots.FORMATS` (not imported here: it loads matplotlib). A report's plots of
either format are its files: a report in one replaces a previous one's plots in the other."""
REPORT_FILES = frozenset({"report.md", "report.html", "configs.csv"} | {
    f"{stem}{suffix}" for stem in ("retention_vs_tokens", "context_vs_window", "retention_by_age",
                                   "where_facts_die", "cost_split", "retention_by_category", "trend")
    for suffix in FIGURE_SUFFIXES})
"""What `rollsum_evals.report.write_report` writes, besides the numbered grid plots."""
_GRID = re.compile(r"grid_\d+\.(svg|png)")


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
