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
import os
import sys
import tempfile
import time
from pathlib import Path

from rollsum.errors import ModelError
from rollsum.models import CachedModel, CompletionRequest, FakeModel, from_spec
from rollsum.models.local import LocalModel, llama_available
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
    assert isinstance(model, LocalModel)
    engine = model.engine
    print(f"## Local model: {spec} (CPU, {os.cpu_count()} cores)\n")
    text = " ".join(f"Sentence {i} says that release train {i} leaves at {i % 12} o'clock." for i in range(40))
    tokens = engine.tokenize(text.encode("utf-8"))
    engine.reset()
    t0 = time.perf_counter()
    engine.eval(tokens)
    prompt_s = time.perf_counter() - t0
    engine.reset()
    t0 = time.perf_counter()
    out = engine.create_completion(prompt=text, max_tokens=64, temperature=0.0, seed=0)
    total_s = time.perf_counter() - t0
    generated = int(out["usage"]["completion_tokens"])
    gen_rate = generated / max(1e-9, total_s - prompt_s)
    turns = [Message("user" if i % 2 == 0 else "assistant",
                     f"Turn {i}: we discussed item {i}; the owner is person {i % 5}; it is due in {i + 1} days.")
             for i in range(20)]
    summary_req = CompletionRequest(system="Summarize this conversation in a few sentences.",
                                    messages=turns, max_tokens=200)
    t0 = time.perf_counter()
    try:
        summary = model.complete(summary_req)
        result = f"{summary.input_tokens} in, {summary.output_tokens} out: {summary.text[:100]!r}"
    except ModelError as err:
        result = f"{err.kind.value}: {err}"
    summary_s = time.perf_counter() - t0
    print("| measure | value |")
    print("|---|---:|")
    print(f"| prompt eval tokens/s ({len(tokens)} tokens) | {len(tokens) / prompt_s:.0f} |")
    print(f"| generation tokens/s ({generated} tokens, greedy) | {gen_rate:.1f} |")
    print(f"| one 20-message summary, wall s | {summary_s:.2f} |")
    print(f"\n20-message summary result: {result}\n")


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
