"""Peak memory per message of a replay, per store (issue #20, item 2: docs/storage.md quotes it).

Each cell (preset, store) replays the harness's synthetic mixed stream in a fresh process and
prints the growth of the process's peak resident set over the replay divided by the messages
(the input list is built before the replay starts, so it is not counted), and the
garbage-collector-tracked objects the replay left alive per message (what every full collection
walks; the store used to keep one per message).

    python benchmarks/bench_memory.py [--messages 100000] [--presets since-last evict-window ...]
                                      [--stores memory sqlite]

SQLite uses a temporary file with ``synchronous="NORMAL"`` (the replay setting; FULL only adds
fsyncs, not memory). The benchmark may import the harness's data generators (the library may not).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path


def worker(preset: str, store_kind: str, n: int) -> tuple[float, float]:
    from bench_replay import mixed_stream

    from rollsum import RollingSummarizer
    from rollsum.store import MemoryStore, SQLiteStore

    msgs = mixed_stream(n)
    gc.collect()
    objects = len(gc.get_objects())
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore() if store_kind == "memory" else SQLiteStore(Path(tmp) / "chat.db",
                                                                         synchronous="NORMAL")
        peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        rs = RollingSummarizer.from_preset(preset, store=store)
        for m in msgs:
            rs.add(m)
        peak1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        gc.collect()
        objects = len(gc.get_objects()) - objects
        rs.close()
        store.close()
    return (peak1 - peak0) * 1024 / n, objects / n


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--presets", nargs="+", default=["full-context", "since-last", "evict-window",
                                                     "budget-rule-based"])
    ap.add_argument("--stores", nargs="+", default=["memory", "sqlite"], choices=["memory", "sqlite"])
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        preset, kind, n = args.worker
        print(*worker(preset, kind, int(n)))
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    print(f"{'preset':<20}{'store':<8}{'messages':>10}{'peak bytes/msg':>16}{'objects/msg':>13}")
    for preset in args.presets:
        for kind in args.stores:
            out = subprocess.run([sys.executable, os.path.join(here, "bench_memory.py"), "--worker", preset, kind,
                                  str(args.messages)], capture_output=True, text=True, check=True,
                                 env={**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")})
            per, objs = map(float, out.stdout.split()[-2:])
            print(f"{preset:<20}{kind:<8}{args.messages:>10}{per:>16,.0f}{objs:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
