"""Sweep throughput: does the worker pool overlap model latency, and does the cache pay off?

A FakeModel with 50 ms latency per call stands in for an API model. The sweep is 16 synthetic
conversations × 4 summarizing configurations (64 Units). Each scenario runs on a cold model
cache and a cold Unit-result cache (a fresh cache dir); the main scenario (--jobs 16, executor
auto) is then re-run identically into a fresh run directory, warm.

Why two yardsticks. The issue's target, "within 1.3× of the critical path (the slowest single
Unit)", is only reachable when every Unit can run at once (jobs ≥ units): 64 Units on 16
workers cannot beat total work / 16. So each scenario prints
- the critical path: the slowest Unit timed ALONE (in-sweep ``wall_s`` is inflated by the other
  Units competing for the CPU, which would flatter the ratio);
- the achievable bound max(critical path, total Unit work / jobs), total work = replay CPU +
  model latency summed over Units;
- the CPU floor: replay CPU / cores the executor can use (1 for threads: the GIL). Not part of
  the bound the target names, but it is why a threaded run cannot reach it;
- measured wall and both ratios. The --jobs 64 scenarios are where "1.3× the critical path" is
  a meaningful target; the table says whether it is met.

Exit code: 1 on a miss: the main scenario over 1.5× its achievable bound, the --jobs 64 run on
the executor ``auto`` picks over 1.3× the critical path, the warm re-run over 5 % of the cold
run, or cached tables that differ from replayed ones; else 0.

``--executor ray``: instead, the same sweep on the local process pool and on a local Ray (one
machine, the same cores: Ray's own overhead), interleaved ``--repeats`` times, cold caches each
time; prints medians and the ratio Ray / process (target ≤ 1.3×; exit 1 above it). Ray is
started once before timing (as a cluster you join already runs; its start-up is printed
apart, like the forkserver's).

Usage: .venv/bin/python benchmarks/bench_sweep.py [--jobs 16] [--messages 120] [--latency-ms 50]
       .venv/bin/python benchmarks/bench_sweep.py --executor ray [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPEC = (
    """
name = "bench"
context_window = 4000
models = ["fake:mode=extractive,latency_ms={latency}"]
scorers = ["answer_retention", "fact_survival", "cost"]
cache = "user"

[[datasets]]
name = "chat"
source = "synth:chat?conversations={conversations}&messages={messages}&seed=11"

[[configs]]
preset = "since-last"
params = {{ messages_per_summary = 6, keep_last = 4{extra} }}

[[configs]]
preset = "evict-window"
params = {{ min_evicted = 6, tail = 6{extra} }}

[[configs]]
preset = "count-and-tokens"
"""
    "params = {{ message_count_threshold = 12, messages_to_summarize = 6, "
    "recent_messages_to_keep = 4, token_threshold = 200{extra} }}\n"
    """
[[configs]]
preset = "token-ratio"
params = {{ trigger_ratio = 0.3, reset_ratio = 0.2, min_messages = 6{extra} }}
"""
)

BOUND_LIMIT = 1.5
CACHE_LIMIT = 0.05
CRITICAL_TARGET = 1.3
RAY_TARGET = 1.3


@dataclass
class Scenario:
    name: str
    jobs: int
    executor: str
    chosen: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    latency_s: float = 0.0
    units: Any = None


def _volatile() -> list[str]:
    from rollsum_evals.rundir.format import NON_DETERMINISTIC_UNIT_COLUMNS

    return list(NON_DETERMINISTIC_UNIT_COLUMNS)


def _run(spec: Any, tmp: Path, sc: Scenario, latency_ms: float) -> None:
    from rollsum_evals.run import run_sweep
    from rollsum_evals.rundir import load_run

    os.environ["ROLLSUM_CACHE_DIR"] = str(tmp / f"cache-{sc.name}")
    t = time.perf_counter()
    res = run_sweep(spec, tmp / sc.name, jobs=sc.jobs, executor=sc.executor, progress=False)
    sc.wall_s = time.perf_counter() - t
    run = load_run(tmp / sc.name)
    sc.chosen = res.executor
    sc.cpu_s = float(run.manifest["timing"]["unit_cpu_s"])
    sc.latency_s = int(run.units["summarizer_calls"].sum()) * latency_ms / 1000
    sc.units = run.units


def _slowest_alone(spec: Any, units: Any, candidates: int = 3) -> float:
    """Time the heaviest Units one at a time, uncached, with nothing else running."""
    from rollsum_evals.data.pinned import load_dataset
    from rollsum_evals.run.model_factory import ModelFactory
    from rollsum_evals.run.unit import Job, run_job
    from rollsum_evals.spec.expand import expand

    ds = {d.name: load_dataset(d) for d in spec.datasets}
    all_units = {u.unit_id: u for u in expand(spec, {n: (d.sha256, [c.id for c in d.conversations])
                                                     for n, d in ds.items()})}
    convs = {(n, c.id): c for n, d in ds.items() for c in d.conversations}
    heaviest = units.sort_values(["summarizer_calls", "wall_s"], ascending=False)["unit_id"][:candidates]
    worst = 0.0
    for uid in heaviest:
        u = all_units[uid]
        t = time.perf_counter()
        run_job(Job(u, convs[(u.dataset, u.conversation_id)], spec.scoring), models=ModelFactory())
        worst = max(worst, time.perf_counter() - t)
    return worst


def _start_forkserver() -> float:
    """Start the process executor's forkserver before timing anything: a CLI run pays this
    once (printed separately), and otherwise only the first process scenario would pay it."""
    from rollsum_evals.run.pool import process_pool

    t = time.perf_counter()
    pool = process_pool(1)
    pool.submit(time.sleep, 0).result()
    pool.shutdown()
    return time.perf_counter() - t


def _ray_vs_process(spec: Any, args: argparse.Namespace) -> int:
    """Ray on one machine beside the process pool, interleaved, medians; tables compared."""
    import statistics

    from rollsum_evals.run.ray_executor import connect

    pool_start = _start_forkserver()
    t = time.perf_counter()
    session = connect(None)
    ray_start = time.perf_counter() - t
    walls: dict[str, list[float]] = {"process": [], "ray": []}
    same = True
    try:
        with tempfile.TemporaryDirectory(prefix="bench_sweep_ray_") as tmp_s:
            tmp = Path(tmp_s)
            ref = None
            for i in range(args.repeats):
                for executor in ("process", "ray"):
                    sc = Scenario(f"{executor}-{i}", args.jobs, executor)
                    _run(spec, tmp, sc, args.latency_ms)
                    walls[executor].append(sc.wall_s)
                    units = sc.units.drop(columns=_volatile())
                    ref = units if ref is None else ref
                    same &= bool(ref.equals(units))
    finally:
        session.close()
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratio = med["ray"] / med["process"]
    print(f"{spec.name}: {args.conversations} conversations × 4 configs, {args.latency_ms:.0f} ms a call, "
          f"--jobs {args.jobs}, {os.cpu_count()} cores; start-up (not in the walls): forkserver "
          f"{pool_start:.2f} s, local Ray {ray_start:.2f} s ({session.cpus:g} CPUs)")
    print()
    print("| executor | walls s (interleaved) | median s |")
    print("|---|---|---|")
    for k, v in walls.items():
        print(f"| {k} | {', '.join(f'{x:.2f}' for x in v)} | {med[k]:.2f} |")
    print()
    met = ratio <= RAY_TARGET
    print(f"ray / process (median wall, target ≤ {RAY_TARGET}×): {ratio:.2f}× {'met' if met else 'NOT met'}; "
          f"tables identical: {same}")
    if not (met and same):
        print("MISS: " + ("tables differ" if not same else f"ray {ratio:.2f}× the process pool"), file=sys.stderr)
        return 1
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="ray: compare Ray on this machine with the process pool (see the docstring)")
    ap.add_argument("--repeats", type=int, default=3, help="with --executor ray: interleaved runs of each")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--all-jobs", type=int, default=64, help="the every-Unit-at-once scenario")
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--messages", type=int, default=120)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--ledger", default=None, help="engine fact ledger: pin, retry or off (preset default)")
    args = ap.parse_args()

    from rollsum_evals.run import run_sweep
    from rollsum_evals.rundir import load_run
    from rollsum_evals.spec.parse import parse_spec

    spec = parse_spec(SPEC.format(latency=args.latency_ms, conversations=args.conversations,
                                  messages=args.messages,
                                  extra=f', ledger = "{args.ledger}"' if args.ledger else ""),
                      "bench.toml")
    if args.executor == "ray":
        return _ray_vs_process(spec, args)
    cores = os.cpu_count() or 1
    scenarios = [Scenario("main", args.jobs, "auto"),
                 Scenario("thread", args.jobs, "thread"),
                 Scenario("process", args.jobs, "process"),
                 Scenario("all-thread", args.all_jobs, "thread"),
                 Scenario("all-process", args.all_jobs, "process")]
    pool_start = _start_forkserver()
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp_s:
        tmp = Path(tmp_s)
        for sc in scenarios:
            _run(spec, tmp, sc, args.latency_ms)
        main_sc = scenarios[0]
        os.environ["ROLLSUM_CACHE_DIR"] = str(tmp / "cache-main")
        t = time.perf_counter()
        warm = run_sweep(spec, tmp / "warm", jobs=args.jobs, progress=False)
        warm_s = time.perf_counter() - t
        warm_run = load_run(tmp / "warm")
        crit = _slowest_alone(spec, main_sc.units)

    drop = _volatile()
    ref = main_sc.units.drop(columns=drop)
    same_warm = ref.equals(warm_run.units.drop(columns=drop))
    same_exec = all(ref.equals(sc.units.drop(columns=drop)) for sc in scenarios[1:])
    ucache = warm_run.manifest["unit_cache"]

    print(f"{main_sc.units.shape[0]} units, {int(main_sc.units['summarizer_calls'].sum())} model calls × "
          f"{args.latency_ms:.0f} ms, {cores} cores, ledger {args.ledger or 'preset default'}")
    print(f"critical path (slowest unit, timed alone): {crit:.2f} s; process executor start-up "
          f"(once per CLI run, not in the walls below): {pool_start:.2f} s")
    print()
    print("| scenario | jobs | executor | wall s | work/jobs s | CPU floor s | bound s "
          "| wall/bound | wall/critical |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in scenarios:
        work = sc.cpu_s + sc.latency_s
        bound = max(crit, work / sc.jobs)
        floor = sc.cpu_s / (min(cores, sc.jobs) if sc.chosen == "process" else 1)
        print(f"| {sc.name} | {sc.jobs} | {sc.chosen} | {sc.wall_s:.2f} | {work / sc.jobs:.2f} | "
              f"{floor:.2f} | {bound:.2f} | {sc.wall_s / bound:.2f}× | {sc.wall_s / crit:.2f}× |")
    print()
    main_bound = max(crit, (main_sc.cpu_s + main_sc.latency_s) / main_sc.jobs)
    # Judged on the executor `auto` picks for this sweep (what a user gets), not the best of two.
    all_sc = next(s for s in scenarios[3:] if s.chosen == main_sc.chosen)
    all_met = all_sc.wall_s <= CRITICAL_TARGET * crit
    rows = [
        ("replay CPU summed over units (main)", f"{main_sc.cpu_s:.2f} s"),
        (f"main wall / achievable bound (limit {BOUND_LIMIT}×)", f"{main_sc.wall_s / main_bound:.2f}×"),
        (f"jobs {args.all_jobs} ({all_sc.chosen}, auto's pick): wall / critical path "
         f"(target ≤ {CRITICAL_TARGET}×)",
         f"{all_sc.wall_s:.2f} s / {crit:.2f} s = {all_sc.wall_s / crit:.2f}× "
         f"{'met' if all_met else 'NOT met'}"),
        ("warm re-run wall", f"{warm_s:.2f} s"),
        (f"warm / cold (target ≤ {CACHE_LIMIT:.0%})", f"{100 * warm_s / main_sc.wall_s:.1f} %"),
        ("warm unit-cache hits / misses", f"{ucache['hits']} / {ucache['misses']} ({warm.cached} copied)"),
        ("tables identical: cached vs replayed", f"{same_warm}"),
        ("tables identical: every executor and jobs", f"{same_exec}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for k, v in rows:
        print(f"| {k.ljust(width)} | {v} |")

    failed = []
    if main_sc.wall_s > BOUND_LIMIT * main_bound:
        failed.append(f"main scenario {main_sc.wall_s / main_bound:.2f}× its achievable bound")
    if warm_s > CACHE_LIMIT * main_sc.wall_s:
        failed.append(f"warm re-run {100 * warm_s / main_sc.wall_s:.1f} % of cold")
    if not all_met:
        failed.append(f"jobs {args.all_jobs} {all_sc.wall_s / crit:.2f}× the critical path "
                      f"(target {CRITICAL_TARGET}×)")
    if not (same_warm and same_exec):
        failed.append("tables differ")
    for f in failed:
        print(f"MISS: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
