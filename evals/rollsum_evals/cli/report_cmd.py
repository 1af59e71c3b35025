"""`rollsum report`, `rollsum compare`, `rollsum regress`: reading run directories.

Handlers import pandas/matplotlib lazily so `rollsum --help` stays instant. Exit codes follow
rollsum_evals.cli: 0 fine, 1 the regression gate failed, 2 a user mistake (raised as ConfigError and
printed in one line by the dispatcher).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.params import Range
from rollsum_evals.cli.args import INT, POSITIVE_INT, number

SHARE = number(integer=False, range=Range(0, 1), what="a share between 0 and 1")
POSITIVE = number(integer=False, range=Range(0, low_open=True), what="a number > 0")
NON_NEGATIVE = number(integer=False, range=Range(0), what="a number >= 0")


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("report", help="write report.md, a self-contained report.html and PNG plots for a run",
                       description="Write report.md, a self-contained report.html (plots embedded, "
                       "conversation text escaped) and the PNG plots for one run directory.")
    p.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    p.add_argument("--out", type=Path, default=None, help="output directory (default reports/<run-name>/)")
    p.add_argument("--history", type=Path, default=None,
                   help="regression history JSONL to plot as a trend "
                   "(default reports/baselines/<run-name>.history.jsonl if it exists)")
    p.add_argument("--resamples", type=POSITIVE_INT, default=2000, help="bootstrap resamples (default 2000)")
    _thresholds(p)
    p.set_defaults(func=_report)

    c = sub.add_parser("compare", help="paired A/B test: two configs of one run, or two runs of the same units",
                       description="Paired, conversation-clustered bootstrap comparison. Either "
                       "`compare RUN --a CONFIG_A --b CONFIG_B` or `compare RUN_A RUN_B [--config C]`; "
                       "`compare RUN --a CONFIG --b truncate --match-tokens` pairs each conversation with "
                       "the truncate grid point nearest in main-model tokens.")
    c.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="one run (with --a/--b) or two runs")
    c.add_argument("--a", dest="config_a", help="configuration label A (one-run form)")
    c.add_argument("--b", dest="config_b", help="configuration label B (one-run form)")
    c.add_argument("--config", help="two-run form: compare only this configuration (default: all shared)")
    c.add_argument("--out", type=Path, default=None, help="directory for compare.md")
    c.add_argument("--resamples", type=POSITIVE_INT, default=2000, help="bootstrap resamples (default 2000)")
    c.add_argument("--seed", type=INT, default=0, help="bootstrap seed (default 0)")
    c.add_argument("--match-tokens", action="store_true",
                   help="one-run form: --b names a preset (or label) with a grid; on each conversation A "
                   "is paired with B's ok configuration nearest in main-model tokens")
    c.add_argument("--dataset", action="append", default=[], metavar="NAME",
                   help="compare on this dataset of the run only (repeatable)")
    c.add_argument("--match-tolerance", type=POSITIVE, default=0.05, metavar="R",
                   help="--match-tokens: the match must be within this share of A's tokens (default 0.05)")
    c.set_defaults(func=_compare)

    r = sub.add_parser("regress", help="regression gate against a committed baseline (exit 1 on regression)",
                       description="Compare a run with a baseline; exit 1 with a table when a "
                       "configuration loses retained asks (paired per ask for deterministic replays, "
                       "against the baseline interval otherwise), stops being ok, or costs more; 0 "
                       "otherwise. Writes nothing unless --promote or --record-history.")
    r.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    r.add_argument("--baseline", type=Path, required=True, help="baseline JSON, e.g. reports/baselines/nightly.json")
    r.add_argument("--promote", action="store_true", help="write this run as the new baseline (atomically)")
    r.add_argument("--record-history", action="store_true",
                   help="append this gate run to NAME.history.jsonl beside the baseline (off by default: "
                   "the baseline directory is tracked)")
    r.add_argument("--ask-tolerance", type=NON_NEGATIVE, default=0.002,
                   help="deterministic configurations: net loss of retained asks allowed, as a share of "
                   "the configuration's answerable asks (default 0.002)")
    r.add_argument("--tolerance", type=NON_NEGATIVE, default=0.01,
                   help="non-deterministic configurations: absolute retention tolerance below the "
                   "baseline interval's lower bound (default 0.01)")
    r.add_argument("--cost-tolerance", type=NON_NEGATIVE, default=0.05,
                   help="relative cost/token tolerance above the baseline (default 0.05)")
    r.add_argument("--strict", action="store_true", help="a dataset hash mismatch fails the gate")
    r.add_argument("--resamples", type=POSITIVE_INT, default=2000, help="bootstrap resamples (default 2000)")
    r.set_defaults(func=_regress)


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


def _positive(value: int, flag: str) -> int:
    if value < 100:
        raise ConfigError(f"{flag}: expected at least 100 resamples, got {value}")
    return value


def _something_finished(*runs: Path) -> None:
    """A run in which no Unit finished is one line (`rundir.status.nothing_finished`)."""
    from rollsum_evals.rundir.status import nothing_finished

    for run in runs:
        message = nothing_finished(run)
        if message is not None:
            raise ConfigError(message)


def _report(args: argparse.Namespace) -> int:
    from rollsum_evals.report import write_report
    from rollsum_evals.rundir.status import run_banner

    _something_finished(args.run)
    path = write_report(args.run, args.out, history=args.history,
                        n_resamples=_positive(args.resamples, "--resamples"), thresholds=thresholds_from(args))
    banner = run_banner(args.run)
    if banner:
        print(f"warning: {banner}", file=sys.stderr)
    print(Path(path).resolve())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from rollsum_evals import analysis, compare

    n = _positive(args.resamples, "--resamples")
    _something_finished(*args.runs)
    if len(args.runs) == 1:
        if not (args.config_a and args.config_b):
            raise ConfigError("compare RUN needs --a CONFIG_A and --b CONFIG_B (or give two runs)")
        run = analysis.load(args.runs[0])
        if args.dataset:
            run = analysis.only_datasets(run, args.dataset)
        if args.match_tokens:
            result = compare.compare_matched(run, args.config_a, args.config_b, tolerance=args.match_tolerance,
                                             n_resamples=n, seed=args.seed)
        else:
            result = compare.compare_configs(run, args.config_a, args.config_b, n_resamples=n, seed=args.seed)
        out = args.out or compare.default_out_dir(run, result.label_a, args.config_b)
    elif len(args.runs) == 2:
        if args.match_tokens:
            raise ConfigError("--match-tokens compares two configurations of one run (--a/--b)")
        if args.config_a or args.config_b:
            raise ConfigError("--a/--b are for one run; with two runs use --config (optional)")
        run_a, run_b = analysis.load(args.runs[0]), analysis.load(args.runs[1])
        if args.dataset:
            run_a, run_b = analysis.only_datasets(run_a, args.dataset), analysis.only_datasets(run_b, args.dataset)
        result = compare.compare_runs(run_a, run_b, args.config, n_resamples=n, seed=args.seed)
        out = args.out or compare.default_out_dir(run_a, run_a.name, run_b.name)
    else:
        raise ConfigError(f"compare takes one or two run directories, got {len(args.runs)}")
    path = compare.write_compare(result, out)
    print(compare.verdict_text(result))
    print(f"\nwritten: {path}")
    return 0


def _regress(args: argparse.Namespace) -> int:
    from rollsum_evals import regress

    _something_finished(args.run)
    code, text = regress.regress(args.run, args.baseline, promote=args.promote,
                                 tolerance=regress.Tolerance(asks=args.ask_tolerance, retention=args.tolerance,
                                                             cost=args.cost_tolerance),
                                 strict=args.strict, n_resamples=_positive(args.resamples, "--resamples"),
                                 record_history=args.record_history)
    print(text)
    return code
