"""`analysis.by_config` (perf20b): the per-configuration split config_table and config_health
take in one pass must hand each configuration exactly the rows the old per-configuration mask
``frame[frame["config"] == cfg]`` selected — same rows, same order, same index."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from rollsum_evals.analysis import by_config


def test_by_config_gives_each_configuration_the_rows_a_mask_selects() -> None:
    frame = pd.DataFrame({"config": ["b", "a", "b", None, "c", "a", "b"],
                          "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, math.nan]},
                         index=[10, 3, 7, 1, 9, 0, 5])
    split = by_config(frame)
    assert set(split) == {"a", "b", "c"}  # a row without a configuration belongs to none
    for cfg, rows in split.items():
        pd.testing.assert_frame_equal(rows, frame[frame["config"] == cfg])


def test_by_config_of_an_empty_or_configless_frame_is_empty() -> None:
    assert by_config(pd.DataFrame(columns=["config", "v"])) == {}
    assert by_config(pd.DataFrame({"v": [1, 2]})) == {}


def _same(a: float, b: float) -> bool:
    """Equal to the last bit (NaN equal to NaN)."""
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def test_rows_reduce_each_configuration_bit_for_bit_as_pandas_does() -> None:
    """`analysis._Rows` (perf: numpy arrays taken once per table) must give the configuration
    table exactly what ``pd.to_numeric(group[col], errors="coerce")`` then ``.sum(min_count=1)``
    / ``.mean()`` / ``.max()`` gave per group: sums of values whose float order matters (0.1 +
    0.2 + 0.3 ≠ 0.3 + 0.2 + 0.1), NaNs, an all-NaN group, more than 8 rows (numpy's pairwise
    blocks), integers, and the dtypes left to pandas (text, nullable)."""
    import numpy as np
    from rollsum_evals.analysis import _rows_by_config

    rng = np.random.default_rng(7)
    n = 61
    configs = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)]
    configs[configs == "d"] = "c"
    configs[:3] = "d"  # "d": three rows, all NaN below
    floats = rng.random(n) * 10.0 ** rng.integers(-3, 6, n)
    floats[rng.random(n) < 0.2] = math.nan
    floats[:3] = math.nan
    frame = pd.DataFrame({
        "config": configs,
        "f": floats,
        "i": rng.integers(-5, 1_000_000, n),
        "text": [str(x) if k % 5 else "n/a" for k, x in enumerate(rng.random(n))],
        "nullable": pd.array([None if k % 4 == 0 else float(x) for k, x in enumerate(rng.random(n))], dtype="Float64"),
    }, index=rng.permutation(n) + 100)
    rows = _rows_by_config(frame)
    assert set(rows) == {"a", "b", "c", "d"}
    # the reference is pandas' own reduction: with bottleneck installed pandas would take its
    # nanmean (a plain loop, not numpy's pairwise sum), which differs in the last bits
    with pd.option_context("compute.use_bottleneck", False):
        _check_rows(frame, rows)
    empty = _rows_by_config(frame)["a"].__class__.of(frame.iloc[:0])
    assert math.isnan(empty.sum("f")) and math.isnan(empty.mean("i")) and math.isnan(empty.max("f"))


def _check_rows(frame: pd.DataFrame, rows: dict[Any, Any]) -> None:
    for cfg, mine in rows.items():
        group = frame[frame["config"] == cfg]
        pd.testing.assert_frame_equal(mine.frame, group)
        for col in ("f", "i", "text", "nullable"):
            s = pd.to_numeric(group[col], errors="coerce")
            assert _same(mine.sum(col), float(s.sum(min_count=1))), (cfg, col, "sum")
            assert _same(mine.mean(col), float(s.mean())), (cfg, col, "mean")
            assert _same(mine.max(col), float(s.max()) if s.notna().any() else math.nan), (cfg, col, "max")
        assert math.isnan(mine.sum("absent")) and math.isnan(mine.max("absent"))
