"""Peak memory per message of a replay, per store (issue #20, item 2: docs/storage.md quotes it).

Each cell (preset, store) replays the harness's synthetic mixed stream in a fresh process and
prints the peak of the Python heap the replay allocated (`tracemalloc`, started once the input
is loaded, so the input is not counted) divided by the messages, and the
garbage-collector-tracked objects the replay left alive per message (what every full collection
walks; the store used to keep one per message).

The input is made as `bench_replay.py` makes it (`--input`): ``made-per-add`` (the default, as an
application does) keeps compact rows and makes each `Message` (its own ``meta`` dict and lists)
just before its ``add()``, so whatever the library keeps of it -- the `Message` in the active
window, the store's packed row -- is counted and what it drops is not; ``premade`` builds every
`Message` before the replay, so a store that packs a message adds its row on top of a `Message`
the input list keeps alive anyway (the method before session 34). The text's strings are the
input's in both, so text is never counted.

    python benchmarks/bench_memory.py [--messages 100000] [--presets since-last evict-window ...]
                                      [--stores memory sqlite] [--input made-per-add premade]

SQLite uses a temporary file with ``synchronous="NORMAL"`` (the replay setting; FULL only adds
fsyncs, not memory); its own page cache (bounded, not per message) is C memory `tracemalloc`
does not see. Why not the resident set, as before session 34: unpickling the input leaves a
transient peak (the unpickler's memo) that the replay then grows into unseen, so a peak-RSS
difference read 0 bytes a message for half the cells. The benchmark may import the harness's
data generators (the library may not).
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

from bench_replay import INPUTS, compact, feed, mixed_stream


def worker(preset: str, store_kind: str, stream_file: str) -> tuple[float, float]:
    """One cell, over the messages (premade) or rows (made-per-add) pickled in `stream_file`:
    unpickled here, so the other form never existed in this process (a list of messages freed
    before the replay would leave its pages to the replay, and the peak would not see it)."""
    from rollsum import RollingSummarizer
    from rollsum.store import MemoryStore, SQLiteStore

    with open(stream_file, "rb") as f:
        items = pickle.load(f)
    n = len(items)
    msgs = feed(items)
    gc.collect()
    objects = len(gc.get_objects())
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore() if store_kind == "memory" else SQLiteStore(Path(tmp) / "chat.db",
                                                                         synchronous="NORMAL")
        tracemalloc.start()
        rs = RollingSummarizer.from_preset(preset, store=store)
        for m in msgs:
            rs.add(m)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        gc.collect()
        objects = len(gc.get_objects()) - objects
        rs.close()
        store.close()
    return peak / n, objects / n


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--presets", nargs="+", default=["full-context", "since-last", "evict-window",
                                                     "budget-rule-based"])
    ap.add_argument("--stores", nargs="+", default=["memory", "sqlite"], choices=["memory", "sqlite"])
    ap.add_argument("--input", nargs="+", default=["made-per-add"], choices=INPUTS,
                    help="each Message made just before its add() (an application's), and/or all "
                         "made before the replay (the method before session 34)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        preset, kind, stream_file = args.worker
        print(*worker(preset, kind, stream_file))
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    print(f"{'preset':<20}{'store':<8}{'input':>13}{'messages':>10}{'heap bytes/msg':>16}{'objects/msg':>13}")
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        premade = mixed_stream(args.messages)
        files = {}
        for how in args.input:
            files[how] = os.path.join(tmp, f"{how}.pkl")
            with open(files[how], "wb") as f:
                pickle.dump(compact(premade) if how == "made-per-add" else premade, f)
        for preset in args.presets:
            for kind in args.stores:
                for how in args.input:
                    out = subprocess.run([sys.executable, os.path.join(here, "bench_memory.py"), "--worker", preset,
                                          kind, files[how]], capture_output=True, text=True, check=True,
                                         env={**os.environ,
                                              "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")})
                    per, objs = map(float, out.stdout.split()[-2:])
                    print(f"{preset:<20}{kind:<8}{how:>13}{args.messages:>10}{per:>16,.0f}{objs:>13.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
