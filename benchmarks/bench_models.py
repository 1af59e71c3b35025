"""Model-layer benchmarks; prints tables.

1. Response cache: N calls to a FakeModel with a fixed latency through CachedModel, then the same
   N calls again. Target: the second pass makes 0 inner calls and takes <= 5 % of the first.
2. Local model (only when llama-cpp-python is installed; ``--local SPEC`` to choose the model,
   default local:gemma3-270m): prompt and generation tokens per second, and the wall time of one
   20-message summary request.

Usage: python benchmarks/bench_models.py [--calls 200] [--latency-ms 50] [--local SPEC | --no-local]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rollsum.models import CachedModel, CompletionRequest, FakeModel, from_spec
from rollsum.models.local import llama_available
from rollsum.types import Message


def _requests(n: int) -> list[CompletionRequest]:
    return [CompletionRequest(system="Summarize the conversation.",
                              messages=[Message("user", f"Message {i}: the build {i} passed on runner {i % 7}.")],
                              max_tokens=64, prompt_id="bench@1") for i in range(n)]


def bench_cache(calls: int, latency_ms: float) -> bool:
    requests = _requests(calls)
    with tempfile.TemporaryDirectory() as tmp:
        inner = FakeModel("extractive", latency_ms=latency_ms)
        cached = CachedModel(inner, Path(tmp) / "cache.sqlite")
        t0 = time.perf_counter()
        for r in requests:
            cached.complete(r)
        first = time.perf_counter() - t0
        calls_after_first = inner.calls
        t0 = time.perf_counter()
        for r in requests:
            cached.complete(r)
        second = time.perf_counter() - t0
        inner_second = inner.calls - calls_after_first
        stats = cached.stats
        cached.close()
    ratio = second / first if first else float("inf")
    ok = inner_second == 0 and ratio <= 0.05
    print(f"## Response cache: {calls} calls, FakeModel latency {latency_ms:g} ms\n")
    print("| pass | inner calls | wall s | ms/call |")
    print("|---|---:|---:|---:|")
    print(f"| first (cold) | {calls_after_first} | {first:.3f} | {1000 * first / calls:.2f} |")
    print(f"| second (warm) | {inner_second} | {second:.3f} | {1000 * second / calls:.3f} |")
    print(f"\nsecond/first = {100 * ratio:.2f} % (target <= 5 %), hits={stats.hits}, misses={stats.misses}, "
          f"saved tokens in/out = {stats.saved_input_tokens}/{stats.saved_output_tokens}: "
          f"{'PASS' if ok else 'FAIL'}\n")
    return ok


def bench_local(spec: str) -> None:
    model = from_spec(spec, n_ctx=4096)
    print(f"## Local model: {spec}\n")
    long_text = " ".join(f"Sentence {i} says that the release train {i} leaves at {i % 12} o'clock." for i in range(60))
    prompt_req = CompletionRequest(system="Summarize.", messages=[Message("user", long_text)], max_tokens=1)
    t0 = time.perf_counter()
    out = model.complete(prompt_req)
    prompt_s = time.perf_counter() - t0
    gen_req = CompletionRequest(system="", messages=[Message("user", "Write a long story about a lighthouse.")],
                                max_tokens=128)
    short = CompletionRequest(system="", messages=[Message("user", "Write a long story about a lighthouse.")],
                              max_tokens=1)
    t0 = time.perf_counter()
    model.complete(short)
    base_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen = model.complete(gen_req)
    gen_s = time.perf_counter() - t0
    turns = [Message("user" if i % 2 == 0 else "assistant",
                     f"Turn {i}: we discussed item {i}; owner is person {i % 5}; due in {i + 1} days.")
             for i in range(20)]
    transcript = "\n".join(f"{m.role}: {m.content}" for m in turns)
    summary_req = CompletionRequest(system="Summarize this conversation in a few sentences.",
                                    messages=[Message("user", transcript)], max_tokens=200)
    t0 = time.perf_counter()
    summary = model.complete(summary_req)
    summary_s = time.perf_counter() - t0
    gen_tokens = max(1, gen.output_tokens - 1)
    print("| measure | value |")
    print("|---|---:|")
    print(f"| prompt tokens/s ({out.input_tokens} prompt tokens) | {out.input_tokens / prompt_s:.0f} |")
    print(f"| generation tokens/s ({gen.output_tokens} tokens) | {gen_tokens / max(1e-9, gen_s - base_s):.1f} |")
    print(f"| 20-message summary wall s ({summary.input_tokens} in, {summary.output_tokens} out) | {summary_s:.2f} |")
    print(f"\nsummary text (first 160 chars): {summary.text[:160]!r}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--local", default="local:gemma3-270m", help="local model spec to time")
    parser.add_argument("--no-local", action="store_true")
    args = parser.parse_args(argv)
    ok = bench_cache(args.calls, args.latency_ms)
    if args.no_local:
        pass
    elif llama_available():
        bench_local(args.local)
    else:
        print("## Local model: skipped (llama-cpp-python not installed; extra 'local')\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
