"""`bench_restart.py --late`: the per-request timing with a new and a kept summarizer agrees on
the summaries (the table's "same" column is what the docs quote)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from rollsum.store import MemoryStore
from tests.support.opening import Spy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_restart


def test_late_gives_the_same_summaries_with_a_new_and_a_kept_summarizer() -> None:
    """And the kept mode really keeps one summarizer: its engines never read the covered
    messages again, while a new summarizer per engine does (else the table's two rows would
    time the same thing)."""
    messages = bench_restart.mixed(400)
    new_store, kept_store = Spy(MemoryStore()), Spy(MemoryStore())
    new = bench_restart.late("since-last", messages, new_store, 60, 2_000, kept=False)
    kept = bench_restart.late("since-last", messages, kept_store, 60, 2_000, kept=True)
    assert new[0] == kept[0] and len(new[0]) > 5
    assert not math.isnan(new[2]) and not math.isnan(kept[2])  # a summary was made in the timed part
    assert kept_store.covered_reads == 0 < new_store.covered_reads
