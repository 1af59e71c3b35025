"""`analysis.by_config` (perf20b): the per-configuration split config_table and config_health
take in one pass must hand each configuration exactly the rows the old per-configuration mask
``frame[frame["config"] == cfg]`` selected — same rows, same order, same index."""

from __future__ import annotations

import math

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
