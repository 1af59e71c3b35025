"""bench_memory's two inputs (benchmarks/bench_memory.py): with made-per-add, what the library
keeps of a message is counted (full-context keeps every `Message` in its window); with premade
the input list keeps the messages, so they are not."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_memory as bm
import bench_replay as br


def _cell(tmp_path: Path, how: str) -> tuple[float, float]:
    premade = br.mixed_stream(3000)
    path = tmp_path / f"{how}.pkl"
    path.write_bytes(pickle.dumps(br.compact(premade) if how == "made-per-add" else premade))
    return bm.worker("full-context", "memory", str(path))


def test_made_per_add_counts_the_messages_the_window_keeps(tmp_path: Path) -> None:
    made_bytes, made_objects = _cell(tmp_path, "made-per-add")
    premade_bytes, premade_objects = _cell(tmp_path, "premade")
    # full-context keeps all 3,000 messages active: one Message (plus tool metadata) each, made by
    # the replay only in made-per-add (both share the engine's own, constant objects)
    assert made_objects - premade_objects >= 1.0, (made_objects, premade_objects)
    assert made_bytes > premade_bytes > 0
