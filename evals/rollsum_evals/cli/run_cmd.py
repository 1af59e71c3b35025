"""`rollsum run SPEC` and `rollsum demo`: run a sweep into a run directory (and report it).

SPEC is a file or the name of a bundled spec (`rollsum_evals.bundled`). The last line printed
is always an absolute path (the run directory, or the demo's report), so scripts can take it.
"""

from __future__ import annotations

import argparse
import glob
import logging
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.params import Range
from rollsum.redact import redact
from rollsum_evals.cli.args import POSITIVE_INT, check_locomo, number

log = logging.getLogger(__name__)

QUICKSTART = "quickstart"


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    run = sub.add_parser("run", help="replay a sweep spec into a run directory",
                         description="Replay every conversation of a sweep spec through every "
                         "configuration, score it, and write a run directory (docs/run-format.md).")
    run.add_argument("spec", help="sweep spec (TOML file), or the name of a bundled spec such as "
                     "thresholds (`rollsum list`)")
    run.add_argument("--out", metavar="DIR", help="run directory (default: runs/<spec>-<time>)")
    _common(run)
    run.add_argument("--resume", action="store_true",
                     help="continue a killed or budget-stopped run in --out (same spec and options)")
    run.add_argument("--retry-errors", action="store_true",
                     help="re-run only the failed Units of the run in --out (status error, or summaries "
                     "that failed against a real API), then finish it like --resume")
    run.add_argument("--model", metavar="SPEC",
                     help="summarizer model for every config, e.g. anthropic:claude-haiku-4-5")
    run.add_argument("--max-cost-usd", type=number(integer=False, range=Range(0), what="a number of dollars >= 0"),
                     metavar="X",
                     help="hard cap on real spend (summarizer + QA calls that miss the cache): a call "
                     "that could pass X dollars is refused, its unit ends 'stopped: budget', no "
                     "further unit starts, exit 1; --resume with a higher X continues")
    run.add_argument("--set", action="append", default=[], metavar="PRESET.PARAM=VALUE",
                     dest="overrides",
                     help="fix a parameter of every config with that preset (or label), "
                     "replacing any grid over it; repeatable, e.g. --set since-last.keep_last=2")
    run.add_argument("--executor", choices=("auto", "thread", "process", "ray"), default="auto",
                     help="auto (default): processes for large CPU-heavy sweeps, else threads; "
                     "threads suit API-bound models, processes CPU-bound replay; ray: Units as tasks "
                     "on a Ray cluster (the ray extra; docs/scale.md)")
    run.add_argument("--ray-address", metavar="HOST:PORT",
                     help="with --executor ray: join the cluster whose head is there (default: start a "
                     "private local Ray)")
    run.add_argument("--max-units", type=POSITIVE_INT, default=None, metavar="N",
                     help="refuse a sweep that expands to more than N units, counted before any is built "
                     "(default 10,000; docs/sweeps.md)")
    run.add_argument("--no-unit-cache", action="store_true",
                     help="replay every Unit even if an identical one is in the Unit-result cache")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="the offline quickstart sweep and its report",
                          description="Run the quickstart sweep (offline, synthetic data, the five "
                          "seed presets and the full-context and truncate baselines; the tool-clearing "
                          "presets are in the agents spec) and write its report; prints the report's "
                          "path last.")
    demo.add_argument("--out", metavar="DIR", help="directory for the run (DIR/run) and its report "
                      "(DIR/report); default runs/quickstart-<time> and reports/<that name>")
    _common(demo)
    demo.set_defaults(func=cmd_demo)


def _common(p: argparse.ArgumentParser) -> None:
    fail = p.add_mutually_exclusive_group()
    fail.add_argument("--fail-on-error", type=number(integer=False, range=Range(0)), metavar="X", default=None,
                      help="exit 1 when units errored beyond X: a share in (0, 1) or a count >= 1 "
                      "(default: any error fails)")
    fail.add_argument("--no-fail-on-error", action="store_true",
                      help="exit 0 however many units errored (they are still rows with status 'error')")
    p.add_argument("--jobs", type=POSITIVE_INT, default=4, metavar="N", help="Units run concurrently (default 4)")
    p.add_argument("--limit", type=POSITIVE_INT, metavar="N", default=None,
                   help="at most N conversations per dataset (a quick smoke run; recorded in the spec)")
    p.add_argument("--skip-bad-records", action="store_true",
                   help="leave out dataset records that cannot be used (counted in the manifest) instead of "
                   "stopping at the first one with its file and line")
    p.add_argument("--max-line-bytes", type=POSITIVE_INT, default=None, metavar="N",
                   help="longest dataset line read (default 32 MiB): raise it for one very long conversation")
    p.add_argument("--locomo", metavar="PATH", help="locomo10.json (relative to the current directory): adds "
                   "LoCoMo where the spec asks for it")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


RUNS = Path("runs")


def _run_stem(name: str) -> str:
    """The spec's name as the stem of its run directories. It is user text, so it is made a
    safe file name first (`safe_name`): a ``name`` of ``../../x`` or ``/abs/x`` stays inside
    ``runs/``, and a secret in it is masked before it can become a directory name."""
    from rollsum_evals.fileio import safe_name

    return safe_name(redact(name))


def _default_out(name: str) -> Path:
    """``runs/<name>-<time>`` (`_run_stem`)."""
    return RUNS / f"{_run_stem(name)}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def _latest_run(name: str) -> Path | None:
    """The newest run directory for this name (one with a manifest): those `_default_out` made,
    and ``runs/<name>`` itself, the directory `rollsum init` tells a user to pass as --out."""
    stem = _run_stem(name)
    runs = [p for p in (RUNS / stem, *RUNS.glob(f"{glob.escape(stem)}-*")) if (p / "manifest.json").exists()]
    return max(runs, key=lambda p: ((p / "manifest.json").stat().st_mtime_ns, p.name), default=None)


def _out_for(spec_name: str, args: argparse.Namespace, continuing: str | None) -> Path:
    """--out, or a fresh default. Continuing a run (--resume, --retry-errors) without --out
    would silently start a new one: refused, naming the directory it would have used."""
    if args.out is not None:
        if not args.out.strip():
            raise ConfigError("--out: expected a run directory, got ''")
        return Path(args.out)
    out = _default_out(spec_name)
    if continuing:
        latest = _latest_run(spec_name)
        hint = f"; the latest run of this spec is {latest} (--out {latest})" if latest else ""
        raise ConfigError(f"{continuing} needs --out RUN, the run directory to continue: without it this "
                          f"would start a new run in {out}{hint}")
    return out


def _run(spec_path: str | Path, args: argparse.Namespace, *, out: Path | None = None, resume: bool = False,
         retry_errors: bool = False, model: str | None = None, max_cost: float | None = None,
         executor: str = "auto", ray_address: str | None = None) -> Any:
    from rollsum_evals.formatting import fmt_usd
    from rollsum_evals.run import run_sweep
    from rollsum_evals.run.sweep import DEFAULT_MAX_UNITS
    from rollsum_evals.spec.parse import load_spec
    from rollsum_evals.spec.schema import ReadOptions

    if args.locomo:
        check_locomo(args.locomo)
    read = ReadOptions(skip_bad_records=args.skip_bad_records, max_line_bytes=args.max_line_bytes)
    spec = load_spec(spec_path, model_override=model, locomo=args.locomo,
                     overrides=getattr(args, "overrides", None) or (), limit=args.limit, read=read)
    for line in spec.skipped:
        print(f"warning: {line}", file=sys.stderr)
    continuing = "--retry-errors" if retry_errors else "--resume" if resume else None
    out = out or _out_for(spec.name, args, continuing)
    if retry_errors:
        from rollsum_evals.run.retry import forget_failed

        n = forget_failed(out, spec)
        print(f"{n} failed unit(s) in {out} to run again")
    result = run_sweep(spec, out, jobs=args.jobs, resume=resume or retry_errors, executor=executor,
                       max_cost_usd=max_cost, progress=not args.no_progress and sys.stderr.isatty(),
                       unit_cache=False if getattr(args, "no_unit_cache", False) else None,
                       max_units=getattr(args, "max_units", None) or DEFAULT_MAX_UNITS, ray_address=ray_address)
    if result.skipped_records:
        print(f"warning: {result.skipped_records} bad dataset record(s) left out (--skip-bad-records; counted "
              f"per dataset in {Path(result.run_dir) / 'manifest.json'})", file=sys.stderr)
    print(f"{result.done}/{result.total} units in {result.run_dir} "
          f"({result.ran} run now, {result.cached} from the unit cache, "
          f"{result.scored} scored from earlier replays, {result.errors} errors, "
          f"{fmt_usd(result.spent_usd)} spent, "
          f"{result.wall_s:.1f}s)")
    if result.stopped_for_budget:
        print(f"stopped by --max-cost-usd {max_cost} ({fmt_usd(result.spent_usd)} spent): {result.stopped} "
              f"units cut short, {result.skipped} not finished; continue with --resume and a higher "
              "budget", file=sys.stderr)
    elif result.exit_code_for(_threshold(args)):
        print(f"{result.errors_in_run} of {result.total} units errored (--fail-on-error "
              f"{_describe(_threshold(args))}): see the 'error' column of units.parquet", file=sys.stderr)
    return result


def _threshold(args: argparse.Namespace) -> float | None:
    """None/0: any error fails; --no-fail-on-error: none does."""
    if getattr(args, "no_fail_on_error", False):
        return math.inf
    value: float | None = getattr(args, "fail_on_error", None)
    return value


def _describe(threshold: float | None) -> str:
    if not threshold:
        return "default: any error fails"
    return f"{threshold:g} of units" if threshold < 1 else f"{threshold:g} units"


def cmd_run(args: argparse.Namespace) -> int:
    from rollsum_evals.bundled import find_spec

    result = _run(find_spec(args.spec), args, resume=args.resume, retry_errors=args.retry_errors,
                  model=args.model, max_cost=args.max_cost_usd, executor=args.executor,
                  ray_address=args.ray_address)
    print(Path(result.run_dir).resolve())
    return int(result.exit_code_for(_threshold(args)))


def quickstart_path() -> Path:
    from rollsum_evals.bundled import bundled_specs

    return bundled_specs()[QUICKSTART]


def cmd_demo(args: argparse.Namespace) -> int:
    from rollsum_evals.report import write_report

    if args.out:
        run_dir, report_dir = Path(args.out) / "run", Path(args.out) / "report"
    else:
        run_dir = _default_out(QUICKSTART)
        report_dir = Path("reports") / run_dir.name
    result = _run(quickstart_path(), args, out=run_dir)
    path = write_report(result.run_dir, report_dir)
    print(Path(path).resolve())
    return int(result.exit_code_for(_threshold(args)))
