"""ab_replay's reading at another machine's scale (benchmarks/ab_replay.py): a speedup measured
here carries the old copy's throughput there over to the new copy."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import ab_replay
import pytest


def test_the_new_copy_at_the_reference_scale_is_the_reference_times_the_speedup() -> None:
    # old 150 µs/msg and new 100 µs/msg here: 1.5x; the old copy ran 9,712 msg/s there
    assert ab_replay.at_scale(9712.0, 150e-6, 100e-6) == pytest.approx(14568.0)
    # a slower new copy reads below the reference (the ratio is not inverted)
    assert ab_replay.at_scale(9712.0, 100e-6, 200e-6) == pytest.approx(4856.0)
