"""`rollsum tune SPEC --out DIR`: search a preset's parameters instead of gridding them.

The last line printed is the absolute path of ``DIR/tune.md``; ``DIR/run`` is a run directory of
the best configurations on every conversation (`rollsum report DIR/run`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.cli.args import INT, POSITIVE_INT, check_locomo


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("tune", help="search a preset's parameters (Optuna) instead of a grid",
                       description="Search the [tune] space of SPEC: each trial is scored on a few conversations "
                       "first and only promising ones go on (successive halving); the objective is gain over "
                       "truncation at matched tokens, under the spec's constraints. Writes DIR/tune.json, "
                       "DIR/tune.md, DIR/grid.toml (the equivalent grid) and DIR/run (the best configurations "
                       "on every conversation). docs/tuning.md.")
    p.add_argument("spec", help="a sweep spec with a [tune] table (file), or a bundled one such as `tune`")
    p.add_argument("--out", metavar="DIR", required=True, help="the tune's directory (its study survives a kill)")
    p.add_argument("--seed", type=INT, default=None, metavar="N", help="sampler seed (default: [tune] seed, or 0)")
    p.add_argument("--trials", type=POSITIVE_INT, default=None, metavar="N",
                   help="trials to run in all (default: [tune] trials, or 40)")
    p.add_argument("--max-units", type=POSITIVE_INT, default=None, metavar="N",
                   help="stop proposing trials once N distinct units were evaluated (default: [tune] max_units)")
    p.add_argument("--jobs", type=POSITIVE_INT, default=4, metavar="N", help="units run concurrently (default 4)")
    p.add_argument("--executor", choices=("auto", "thread", "process"), default="auto",
                   help="how each evaluation runs its units (as in `rollsum run`)")
    p.add_argument("--resume", action="store_true", help="continue the tune in --out (same spec and seed)")
    p.add_argument("--locomo", metavar="PATH", help="locomo10.json: adds LoCoMo where the spec asks for it")
    p.add_argument("--no-progress", action="store_true", help="no line per trial on stderr")
    p.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    import logging

    import optuna

    from rollsum_evals.bundled import find_spec
    from rollsum_evals.tune.output import TUNE_MD, all_failed, trial_line
    from rollsum_evals.tune.search import TuneOptions, run_tune
    from rollsum_evals.tune.trials import TrialRecord

    optuna.logging.set_verbosity(logging.WARNING)  # one line per trial is ours; Optuna's INFO repeats it
    if args.locomo:
        check_locomo(args.locomo)
    if not args.out.strip():
        raise ConfigError("--out: expected a tune directory, got ''")

    def announce(record: TrialRecord, total: int) -> None:
        if not args.no_progress:
            print(trial_line(record, total), file=sys.stderr, flush=True)

    result = run_tune(find_spec(args.spec), args.out, TuneOptions(
        seed=args.seed, trials=args.trials, max_units=args.max_units, jobs=args.jobs, executor=args.executor,
        resume=args.resume, locomo=args.locomo, on_trial=announce))
    best = result.best
    print(f"{len(result.trials)} trials, {result.units_evaluated:,} units evaluated of {result.units_full_grid:,} "
          f"for the equivalent grid; best: {best.label if best else 'none (no feasible trial)'}")
    print((Path(result.out) / TUNE_MD).resolve())
    if all_failed(result.trials):
        print(f"error: every trial failed ({result.trials[0].reason or 'see tune.md'})", file=sys.stderr)
        return 1
    return 0
