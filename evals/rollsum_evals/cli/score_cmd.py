"""`rollsum score RUN`: re-score a finished run's replays (no replay, no summarizer call)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.cli.args import POSITIVE_INT


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("score", help="re-score a finished run with other scorers or probe timing (no replay)",
                       description="Score every replay of a finished run again and rewrite its units and "
                       "probes tables: other scorers, other probe timing. Nothing is replayed; only a "
                       "scorer that needs a model (qa) calls one. Defaults: the run's own scoring.")
    p.add_argument("run", type=Path, help="run directory written by `rollsum run`")
    p.add_argument("--scorers", metavar="A,B", help="comma-separated scorer names or import paths "
                   "(default: the run's, if none is an import path)")
    timing = p.add_mutually_exclusive_group()
    timing.add_argument("--timing", metavar="KEY",
                        help="probe timing key: sampled:N[,seed=S][+end] (the default timing is "
                        "sampled:1+end), end, after:N, ages:A,B[+end]")
    timing.add_argument("--ages", metavar="N,M", help="ask each probe N, M ... turns after its evidence")
    timing.add_argument("--after", type=POSITIVE_INT, metavar="N",
                        help="ask each probe once, N turns after its evidence")
    timing.add_argument("--at-end", action="store_true", help="ask each probe once, at the end")
    p.add_argument("--no-end", action="store_true", help="with --ages: do not also ask at the end")
    p.add_argument("--model", metavar="SPEC", help="model for scorers that need one (default: the run's [qa] model)")
    p.add_argument("--judge-model", metavar="SPEC",
                   help="model that judges qa's answers (default: the run's [qa] judge_model, else --model)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="ray: score each conversation's Units as a task on a Ray cluster (the ray extra; "
                   "docs/scale.md)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="with --executor ray: join that cluster (default: start a private local Ray)")
    p.add_argument("--jobs", type=POSITIVE_INT, metavar="N",
                   help="with --executor ray: conversations scored at once (default 4; local re-scoring "
                   "runs in this process, one conversation at a time)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (shown only on a terminal)")
    p.set_defaults(func=cmd_score)


def _timing(args: argparse.Namespace) -> Any:
    from rollsum_evals.scoring.asks import parse_timing

    if args.no_end and not args.ages:
        raise ConfigError("--no-end: only together with --ages")
    if args.timing:
        try:
            return parse_timing(args.timing)
        except ValueError as err:
            raise ConfigError(str(err).replace("probe timing", "--timing")) from None
    if args.ages:
        key = f"ages:{args.ages}" + ("" if args.no_end else "+end")
    elif args.after is not None:
        key = f"after:{args.after}"
    elif args.at_end:
        key = "end"
    else:
        return None
    try:
        return parse_timing(key)
    except ValueError as err:
        if args.ages:  # the flag's own form, not the --timing keys it is turned into
            raise ConfigError(f"--ages {args.ages!r}: expected positive integers separated by commas (turns "
                              "after the evidence), e.g. --ages 5,20") from None
        raise ConfigError(str(err).replace(f"probe timing {key!r}", "--after")) from None


def cmd_score(args: argparse.Namespace) -> int:
    from rollsum_evals.rescore import rescore

    scorers = [s.strip() for s in args.scorers.split(",") if s.strip()] if args.scorers is not None else None
    if scorers is not None:
        from rollsum.plugins import is_import_path
        from rollsum_evals.scoring import names

        unknown = [s for s in scorers if s not in names() and not is_import_path(s)]
        if unknown or not scorers:
            raise ConfigError(f"--scorers {args.scorers!r}: expected scorer names from {', '.join(names())} "
                              "or import paths 'package.module:Class'"
                              + (f", got {', '.join(unknown)}" if unknown else ""))
    if args.ray_address and args.executor != "ray":
        raise ConfigError("--ray-address: only with --executor ray")
    if args.jobs is not None and args.executor != "ray":  # it was accepted and ignored: a big box scored serially
        raise ConfigError(f"--jobs {args.jobs}: only with --executor ray (local re-scoring runs in this process, "
                          "one conversation at a time)")
    result = rescore(args.run, scorers=scorers, timing=_timing(args), model=args.model, judge_model=args.judge_model,
                     executor=args.executor, ray_address=args.ray_address,
                     jobs=args.jobs if args.jobs is not None else 4, progress=not args.no_progress)
    plan = result.plan
    print(f"{result.units} units re-scored in {result.run_dir} ({', '.join(plan.scorers)}; probes "
          f"{plan.timing.key}; {result.errors} errors, ${result.spent_usd:.4f} spent, {result.wall_s:.1f}s, "
          "no replay)")
    print(Path(result.run_dir).resolve())  # the last line is what it wrote, absolute, as run's and report's
    return 0
