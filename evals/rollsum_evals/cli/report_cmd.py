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


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("report", help="write report.md, a self-contained report.html and PNG plots for a run",
                       description="Write report.md, a self-contained report.html (plots embedded, "
                       "conversation text escaped) and the PNG plots for one run directory.")
    p.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    p.add_argument("--out", type=Path, default=None, help="output directory (default reports/<run-name>/)")
    p.add_argument("--history", type=Path, default=None,
                   help="regression history JSONL to plot as a trend "
                   "(default reports/baselines/<run-name>.history.jsonl if it exists)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.set_defaults(func=_report)

    c = sub.add_parser("compare", help="paired A/B test: two configs of one run, or two runs of the same units",
                       description="Paired, conversation-clustered bootstrap comparison. Either "
                       "`compare RUN --a CONFIG_A --b CONFIG_B` or `compare RUN_A RUN_B [--config C]`.")
    c.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="one run (with --a/--b) or two runs")
    c.add_argument("--a", dest="config_a", help="configuration label A (one-run form)")
    c.add_argument("--b", dest="config_b", help="configuration label B (one-run form)")
    c.add_argument("--config", help="two-run form: compare only this configuration (default: all shared)")
    c.add_argument("--out", type=Path, default=None, help="directory for compare.md")
    c.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    c.set_defaults(func=_compare)

    r = sub.add_parser("regress", help="regression gate against a committed baseline (exit 1 on regression)",
                       description="Compare a run with a baseline; exit 1 with a table when retention "
                       "drops or cost rises beyond the baseline interval plus tolerance, 0 otherwise.")
    r.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    r.add_argument("--baseline", type=Path, required=True, help="baseline JSON, e.g. reports/baselines/nightly.json")
    r.add_argument("--promote", action="store_true", help="write this run as the new baseline (atomically)")
    r.add_argument("--tolerance", type=float, default=0.01,
                   help="absolute retention tolerance below the interval's lower bound (default 0.01)")
    r.add_argument("--cost-tolerance", type=float, default=0.05,
                   help="relative cost/token tolerance above the interval's upper bound (default 0.05)")
    r.add_argument("--strict", action="store_true", help="a dataset hash mismatch fails the gate")
    r.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    r.set_defaults(func=_regress)


def _positive(value: int, flag: str) -> int:
    if value < 100:
        raise ConfigError(f"{flag}: expected at least 100 resamples, got {value}")
    return value


def _report(args: argparse.Namespace) -> int:
    from rollsum_evals.report import write_report
    from rollsum_evals.rundir.status import run_banner

    path = write_report(args.run, args.out, history=args.history,
                        n_resamples=_positive(args.resamples, "--resamples"))
    banner = run_banner(args.run)
    if banner:
        print(f"warning: {banner}", file=sys.stderr)
    print(Path(path).resolve())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from rollsum_evals import analysis, compare

    n = _positive(args.resamples, "--resamples")
    if len(args.runs) == 1:
        if not (args.config_a and args.config_b):
            raise ConfigError("compare RUN needs --a CONFIG_A and --b CONFIG_B (or give two runs)")
        run = analysis.load(args.runs[0])
        result = compare.compare_configs(run, args.config_a, args.config_b, n_resamples=n, seed=args.seed)
        out = args.out or compare.default_out_dir(run, args.config_a, args.config_b)
    elif len(args.runs) == 2:
        if args.config_a or args.config_b:
            raise ConfigError("--a/--b are for one run; with two runs use --config (optional)")
        run_a, run_b = analysis.load(args.runs[0]), analysis.load(args.runs[1])
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

    if args.tolerance < 0 or args.cost_tolerance < 0:
        raise ConfigError("--tolerance and --cost-tolerance must be ≥ 0")
    code, text = regress.regress(args.run, args.baseline, promote=args.promote,
                                 tolerance=regress.Tolerance(args.tolerance, args.cost_tolerance),
                                 strict=args.strict, n_resamples=_positive(args.resamples, "--resamples"))
    print(text)
    return code
