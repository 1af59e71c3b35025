"""`rollsum compare`: a paired, conversation-clustered A/B test of two configurations of one run,
or of two runs of the same Units (exit 0; a user mistake is one line, exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.cli.args import NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT
from rollsum_evals.cli.reading import resamples, something_finished


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
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
    c.add_argument("--seed", type=NON_NEGATIVE_INT, default=0, help="bootstrap seed (default 0)")
    c.add_argument("--match-tokens", action="store_true",
                   help="one-run form: --b names a preset (or label) with a grid; on each conversation A "
                   "is paired with B's ok configuration nearest in main-model tokens")
    c.add_argument("--dataset", action="append", default=[], metavar="NAME",
                   help="compare on this dataset of the run only (repeatable)")
    c.add_argument("--match-tolerance", type=POSITIVE, default=0.05, metavar="R",
                   help="--match-tokens: the match must be within this share of A's tokens (default 0.05)")
    c.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    from rollsum_evals import analysis, compare

    n = resamples(args.resamples, "--resamples")
    something_finished(*args.runs)
    if len(args.runs) == 1:
        if not (args.config_a and args.config_b):
            raise ConfigError("compare RUN needs --a CONFIG_A and --b CONFIG_B (or give two runs)")
        if args.config_a == args.config_b:
            raise ConfigError(f"--a and --b: expected two different configurations, got {args.config_a!r} twice "
                              "(a configuration compared with itself differs by nothing)")
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
    print(f"\nwritten: {Path(path).resolve()}")
    return 0
