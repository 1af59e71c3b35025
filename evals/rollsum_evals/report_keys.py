"""Short configuration keys (C1, C2, …) for plots, and the legend that maps them back.

Grid labels such as ``since-last[keep_last=6,messages_per_summary=20]`` differ only at their end,
exactly where a plot label is cut; a plot therefore names configurations by key and the report
carries a legend table with each key's full label and parameters. Keys are derived from the
*sorted* labels of a run (numbers compared as numbers, so ``keep_last=2`` comes before
``keep_last=10``), never from a ranking: the same run always gives the same keys, and re-scoring
or a different threshold cannot renumber them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rollsum_evals.rundir.format import PARAM_PREFIX

_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def natural_key(label: str) -> tuple[tuple[int, float, str], ...]:
    """Sort key comparing the digit runs of a label as numbers (``2`` < ``10``)."""
    parts = _NUMBER.split(label)
    return tuple((1, float(p), "") if i % 2 else (0, 0.0, p) for i, p in enumerate(parts) if p != "")


@dataclass(frozen=True, slots=True)
class ConfigKeys:
    """label -> key, in key order."""

    keys: Mapping[str, str]

    def __getitem__(self, label: str) -> str:
        return self.keys[label]

    def labels(self) -> list[str]:
        return list(self.keys)

    def rename(self, df: pd.DataFrame, column: str = "config") -> pd.DataFrame:
        """A copy of `df` whose `column` holds keys instead of labels (unknown labels kept)."""
        if df.empty or column not in df.columns:
            return df
        return df.assign(**{column: df[column].astype(str).map(lambda c: self.keys.get(c, c))})


def config_keys(labels: Iterable[str]) -> ConfigKeys:
    """C1…Cn over the distinct labels in natural order."""
    ordered = sorted({str(x) for x in labels}, key=natural_key)
    return ConfigKeys({label: f"C{i}" for i, label in enumerate(ordered, start=1)})


def config_params(units: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (index = label): its ``param_*`` columns as in the units table
    (first unit of each configuration; every unit of a configuration has the same parameters)."""
    cols = [c for c in units.columns if c.startswith(PARAM_PREFIX)]
    if units.empty or "config" not in units.columns:
        return pd.DataFrame(columns=cols)
    return units.drop_duplicates("config").set_index("config")[cols]


def _fmt(v: Any) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{v:g}" if isinstance(v, float) else str(v)


LEGEND_HEADERS = ("key", "config", "status", "preset", "parameters")


def legend_rows(keys: ConfigKeys, table: pd.DataFrame, params: pd.DataFrame) -> list[list[str]]:
    """Legend rows in key order: key, full label, verdict status, preset, ``name=value`` pairs."""
    by = table.set_index("config") if len(table) else table
    rows = []
    for label, key in keys.keys.items():
        status = str(by.loc[label, "status"]) if label in by.index and "status" in by.columns else ""
        preset = str(by.loc[label, "preset"]) if label in by.index and "preset" in by.columns else ""
        pairs = []
        if label in params.index:
            for col, v in params.loc[label].items():
                text = _fmt(v)
                if text:
                    pairs.append(f"{str(col).removeprefix(PARAM_PREFIX)}={text}")
        rows.append([key, label, status, preset, ", ".join(pairs) or "–"])
    return rows


MAX_PAIRS = 3
"""Per preset, at most this many parameter pairs get a heatmap (a 4-parameter grid has 6)."""


@dataclass(frozen=True, slots=True)
class GridView:
    """One preset's configurations over two swept parameters (a heatmap's input)."""

    preset: str
    x: str
    y: str
    frame: pd.DataFrame
    """One row per configuration: x, y, key, retention, cost_usd."""
    averaged_over: tuple[str, ...]
    """Other parameters that vary too: a cell is the mean over them."""


def grid_views(table: pd.DataFrame, params: pd.DataFrame, keys: ConfigKeys) -> list[GridView]:
    """Every preset whose configurations sweep two or more parameters, one view per pair (the
    pairs of the most-valued parameters first, at most `MAX_PAIRS`)."""
    import itertools

    if table.empty or params.empty:
        return []
    joined = table.set_index("config").join(params, how="inner")
    views = []
    for preset, grp in joined.groupby("preset", sort=True):
        swept = [c for c in params.columns if grp[c].dropna().nunique() > 1]
        swept.sort(key=lambda c: (-grp[c].nunique(), c))
        for x, y in list(itertools.combinations(swept, 2))[:MAX_PAIRS]:
            frame = pd.DataFrame({"x": grp[x].to_numpy(dtype=object), "y": grp[y].to_numpy(dtype=object),
                                  "key": [keys[c] for c in grp.index],
                                  "retention": grp["retention"].astype(float).to_numpy(),
                                  "cost_usd": grp["cost_usd"].astype(float).to_numpy()})
            frame = frame.dropna(subset=["x", "y"]).rename(columns={"x": x.removeprefix(PARAM_PREFIX),
                                                                    "y": y.removeprefix(PARAM_PREFIX)})
            others = tuple(c.removeprefix(PARAM_PREFIX) for c in swept if c not in (x, y))
            views.append(GridView(str(preset), x.removeprefix(PARAM_PREFIX), y.removeprefix(PARAM_PREFIX),
                                  frame, others))
    return views
