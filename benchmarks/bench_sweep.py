"""Sweep throughput: does the worker pool overlap model latency, and does the cache pay off?

A FakeModel with 50 ms latency per call stands in for an API model. The sweep is 16 synthetic
conversations × 4 summarizing configurations (64 Units), run with --jobs 16 on a cold cache,
then re-run identically into a fresh run directory (the model cache is warm).

Figures printed:
- wall time vs the critical path (the slowest single Unit) and vs the ideal bound
  max(critical path, total Unit time / jobs): 64 equal Units on 16 workers cannot beat 4×
  the critical path, so the bound is the fair yardstick;
- the warm re-run's wall time as a share of the cold run's.

Usage: .venv/bin/python benchmarks/bench_sweep.py [--jobs 16] [--messages 120] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

SPEC = """
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
params = {{ message_count_threshold = 12, messages_to_summarize = 6, recent_messages_to_keep = 4, token_threshold = 200{extra} }}

[[configs]]
preset = "token-ratio"
params = {{ trigger_ratio = 0.3, reset_ratio = 0.2, min_messages = 6{extra} }}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--messages", type=int, default=120)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--ledger", default=None, help="engine fact ledger: pin, retry or off (preset default)")
    args = ap.parse_args()

    from evals.rundir import load_run
    from evals.runner import run_sweep
    from evals.spec import parse_spec

    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        os.environ["ROLLSUM_CACHE_DIR"] = str(Path(tmp) / "cache")
        spec = parse_spec(SPEC.format(latency=args.latency_ms, conversations=args.conversations,
                                      messages=args.messages,
                                      extra=f', ledger = "{args.ledger}"' if args.ledger else ""),
                          "bench.toml")
        t = time.perf_counter()
        cold = run_sweep(spec, Path(tmp) / "cold", jobs=args.jobs, progress=False)
        cold_s = time.perf_counter() - t
        t = time.perf_counter()
        run_sweep(spec, Path(tmp) / "warm", jobs=args.jobs, progress=False)
        warm_s = time.perf_counter() - t
        units = load_run(Path(tmp) / "cold").units
        warm_units = load_run(Path(tmp) / "warm").units
        stats = load_run(Path(tmp) / "warm").manifest["cache"]["stats"]

    crit = float(units["wall_s"].max())
    total = float(units["wall_s"].sum())
    bound = max(crit, total / args.jobs)
    calls = int(units["summarizer_calls"].sum())
    same = units.drop(columns=["wall_s", "summarizer_latency_s"]).equals(
        warm_units.drop(columns=["wall_s", "summarizer_latency_s"]))
    rows = [
        ("units", f"{cold.total}"),
        ("model calls (cold)", f"{calls} × {args.latency_ms:.0f} ms"),
        ("jobs", f"{args.jobs}"),
        ("ledger", args.ledger or "preset default"),
        ("cold wall", f"{cold_s:.2f} s"),
        ("critical path (slowest unit)", f"{crit:.2f} s"),
        ("sum of unit times / jobs", f"{total / args.jobs:.2f} s"),
        ("cold wall / critical path", f"{cold_s / crit:.2f}×"),
        ("cold wall / ideal bound", f"{cold_s / bound:.2f}×  (target ≤ 1.3×)"),
        ("warm re-run wall", f"{warm_s:.2f} s"),
        ("warm / cold", f"{100 * warm_s / cold_s:.1f} %  (target ≤ 5 %)"),
        ("warm cache hits / misses", f"{stats.get('hits', 0)} / {stats.get('misses', 0)}"),
        ("tables identical cold vs warm", f"{same}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for k, v in rows:
        print(f"| {k.ljust(width)} | {v} |")


if __name__ == "__main__":
    main()
