"""`rollsum report`: a run directory's report (markdown, HTML, SVG or PNG plots).

`rollsum compare` and `rollsum regress` are `cli.compare_cmd` and `cli.regress_cmd`; what the
three share (a run with something finished, the resample count) is `cli.reading`. Handlers
import pandas/matplotlib lazily so `rollsum --help` stays instant. Exit codes follow
rollsum_evals.cli: 0 fine, 1 the regression gate failed, 2 a user mistake (raised as ConfigError and
printed in one line by the dispatcher).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rollsum_evals.cli.args import POSITIVE, POSITIVE_INT, SHARE
from rollsum_evals.cli.reading import resamples, something_finished

FIGURE_FORMATS = ("svg", "png")
"""`rollsum_evals.plots.FORMATS`, written out so that `--help` does not import matplotlib."""


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("report", help="write report.md, a self-contained report.html and the plots for a run",
                       description="Write report.md, a self-contained report.html (plots embedded, "
                       "conversation text escaped) and the plots (SVG, or PNG with --figures png) for one "
                       "run directory.")
    p.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    p.add_argument("--out", type=Path, default=None, help="output directory (default reports/<run-name>/)")
    p.add_argument("--history", type=Path, default=None,
                   help="regression history JSONL to plot as a trend "
                   "(default reports/baselines/<run-name>.history.jsonl if it exists)")
    p.add_argument("--resamples", type=POSITIVE_INT, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--figures", choices=FIGURE_FORMATS, default=FIGURE_FORMATS[0],
                   help="plot files: svg (default: vector, text drawn by the browser, cheaper to write) "
                   "or png (100 dpi pixels, for tools that do not read SVG); report.html embeds either")
    _thresholds(p)
    p.set_defaults(func=_report)


def _thresholds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-failure-rate", type=SHARE, default=0.10, metavar="R",
                   help="a configuration whose summarizer calls fail more often than this is "
                   "'degraded' and not ranked (default 0.10; docs/reports.md)")
    p.add_argument("--max-calls-per-message", type=POSITIVE, default=0.5, metavar="C",
                   help="more summarizer calls per message than this is 'thrashing': degraded, "
                   "not ranked (default 0.5)")


def thresholds_from(args: argparse.Namespace) -> Any:
    """The verdict thresholds of `_thresholds`'s options (their ranges are checked by their
    argparse types: SHARE and POSITIVE)."""
    from rollsum_evals.verdicts import Thresholds

    return Thresholds(max_failure_rate=args.max_failure_rate, max_calls_per_message=args.max_calls_per_message)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Everything alive now (the imported pandas, matplotlib, numpy and harness modules: ~116,000
    objects the collector tracks) left out of the cyclic garbage collector until the block ends
    (`gc.freeze`). A report allocates millions of short-lived objects, and each of the
    collector's full passes walked the whole import-time heap again: 4 passes, 0.28 s of a
    thresholds report's CPU on a loaded machine, 0.09 s frozen (`gc.callbacks`). Unfrozen afterwards, so an
    in-process caller (tests, a notebook) gets its heap collected as before; a caller that froze
    its own heap already is left as it was (`gc.unfreeze` would thaw its objects too)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block; the collector's state is restored after.
    For the report's imports: pandas, matplotlib and the harness make ~100k objects that live as
    long as the process and almost no garbage (~1,600 objects), yet the collector ran ~250 times
    over the growing heap while they loaded: 0.27 s of a 1.36 s import (gc.callbacks, loaded
    machine); paused, the import took 0.95 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _report(args: argparse.Namespace) -> int:
    with collector_paused():
        from rollsum_evals.report import write_report
        from rollsum_evals.rundir.status import run_banner

    something_finished(args.run)
    with frozen_heap():
        path = write_report(args.run, args.out, history=args.history,
                            n_resamples=resamples(args.resamples, "--resamples"),
                            thresholds=thresholds_from(args), figures=args.figures)
    banner = run_banner(args.run)
    if banner:
        print(f"warning: {banner}", file=sys.stderr)
    print(Path(path).resolve())
    return 0
