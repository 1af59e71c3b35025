"""`bench_restart.py --late`: the per-request timing with a new and a kept summarizer agrees on
the summaries (the table's "same" column is what the docs quote)."""

from __future__ import annotations

import sys
from pathlib import Path

from rollsum.store import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_restart


def test_late_gives_the_same_summaries_with_a_new_and_a_kept_summarizer() -> None:
    messages = bench_restart.mixed(400)
    new = bench_restart.late("since-last", messages, MemoryStore(), 60, 2_000, kept=False)
    kept = bench_restart.late("since-last", messages, MemoryStore(), 60, 2_000, kept=True)
    assert new[0] == kept[0] and len(new[0]) > 5
    assert new[2] == new[2] and kept[2] == kept[2]  # a summary was made in the timed part (not NaN)
