"""`rollsum regress`: the regression gate, a run against a committed baseline (exit 1 on a
regression, 0 otherwise; a user mistake is one line, exit 2)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rollsum_evals.cli.args import NON_NEGATIVE, POSITIVE_INT
from rollsum_evals.cli.reading import resamples, something_finished


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    r = sub.add_parser("regress", help="regression gate against a committed baseline (exit 1 on regression)",
                       description="Compare a run with a baseline; exit 1 with a table when a "
                       "configuration loses retained asks (paired per ask for deterministic replays, "
                       "against the baseline interval otherwise), stops being ok, or costs more; 0 "
                       "otherwise; 2 for a user mistake (e.g. a baseline made from another spec: no "
                       "dataset or configuration in common). Writes nothing unless --promote or "
                       "--record-history.")
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


def _regress(args: argparse.Namespace) -> int:
    from rollsum_evals import regress
    from rollsum_evals.rundir.status import run_banner

    something_finished(args.run)
    code, text = regress.regress(args.run, args.baseline, promote=args.promote,
                                 tolerance=regress.Tolerance(asks=args.ask_tolerance, retention=args.tolerance,
                                                             cost=args.cost_tolerance),
                                 strict=args.strict, n_resamples=resamples(args.resamples, "--resamples"),
                                 record_history=args.record_history)
    print(text)
    banner = run_banner(args.run)  # a killed or stopped run gated as it stands: say so, as report does
    if banner:
        print(f"warning: {banner}", file=sys.stderr)
    return code
