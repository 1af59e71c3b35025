"""Gain: a configuration's retention minus truncation's retention at the same main-model tokens.

Retention alone follows token spend: a configuration that sends more of the conversation keeps
more of it, so ranking by retention recommends whatever is most expensive (issue #18: on unseen
LoCoMo chats the ranking was exactly the token order). What a summary has to beat is the cheapest
thing a team can ship — keeping the newest messages — *at the same cost*. So every sweep carries a
truncate grid (the spec's own, or one `spec/parse.py` adds: labels `truncate-curve[keep=…]`), and on
each conversation the truncate Units that fit the window trace a curve of retention over
main-model tokens per call. A configuration's Unit is placed on that curve at its own tokens
(linear interpolation between the two neighbouring grid points) and

    gain(unit) = retention(unit) − truncation's retention at the unit's tokens.

A configuration's gain is the mean over its Units weighted by their answerable asks (so it is
its pooled retention minus the pooled matched truncation), with a 95 % bootstrap interval that
resamples conversations (`stats.cluster_bootstrap`; none below `stats.MIN_CONVERSATIONS`).

What could mislead, and what is done about it:

- *Extrapolation.* A Unit whose tokens lie outside its conversation's curve (more than
  `EDGE_TOLERANCE` beyond the cheapest or the dearest truncate point) is not given a gain —
  nothing is invented past the grid — and is counted (`gain_outside`): the report flags it.
- *Few conversations.* No conversation-level interval below 5; the report then shows an
  ask-level interval (`ask_gains`) labelled "within these conversations only".
- *The curve is not a candidate.* The auto-added grid is the yardstick: `is_curve` labels are
  never ranked (truncate configurations the spec names itself are ordinary candidates, with a
  gain of about 0 by construction, so they never "beat truncation").

Pure functions over tables: `unit_gains` (one row per Unit), `config_gains` (one per
configuration) and `gains` (both) are what a tuner maximises; `ask_gains` pairs asks.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd

from rollsum_evals.stats import DEFAULT_ALPHA, DEFAULT_RESAMPLES, ask_level_bootstrap, cluster_bootstrap

REFERENCE_PRESET = "truncate"
"""The preset whose Units trace the curve a configuration is measured against."""
CURVE_LABEL = "truncate-curve"
"""Label of the truncate grid the harness adds to a sweep (`spec.auto_truncate_curve`)."""
CURVE_KEEPS: tuple[int, ...] = (2, 3, 4, 6, 8, 11, 15, 20, 27, 36, 49, 66, 89, 120, 162, 219, 296, 400, 540,
                                 729, 1000, 100_000)
"""`keep` values of the added grid: ~35 % apart (a curve interpolated between neighbours, not a
match within 5 % as `compare --match-tokens` needs), from two messages to everything that fits
the window (the last)."""
EDGE_TOLERANCE = 0.05
"""A Unit up to 5 % cheaper than the cheapest (or dearer than the dearest) truncate point of its
conversation takes that point's retention (the same tolerance as `compare --match-tokens`);
further out it has no gain."""

MIN_CURVE_POINTS = 3
"""A conversation with fewer truncate points (distinct token figures) has no curve: one truncate
configuration is a point to compare with (`compare`), not a line to place others on."""

UNIT_COLUMNS = ("config", "key", "cluster", "tokens", "retention", "weight")
"""What `unit_gains` reads: the configuration; `key`, the work a truncate Unit must share to be
on the same curve (dataset, conversation, seed, window); `cluster`, the conversation (what the
bootstrap resamples); main-model `tokens` per call; `retention` over the Unit's answerable asks;
`weight`, their number. An optional boolean `fits` (default True) leaves a truncate Unit whose
context overflowed the window off the curve."""


def is_curve(label: str) -> bool:
    """A configuration of the auto-added truncate grid (never a candidate)."""
    return label == CURVE_LABEL or label.startswith(CURVE_LABEL + "[")


def _curves(points: pd.DataFrame) -> dict[Any, tuple[np.ndarray, np.ndarray, list[str]]]:
    """Each conversation's (`key`) truncate points sorted by tokens (points at equal tokens
    averaged; the label kept is the first, for `ask_gains`), for the keys with at least
    `MIN_CURVE_POINTS` of them. One stable sort and one grouping over every key: a grouping per
    key was ~16 pandas groupbys per report. The rows of each (key, tokens) group are the ones,
    in the order, a per-key sort gave them (the sort is stable), so the means are the same floats."""
    pts = points.sort_values(["key", "tokens", "config"], kind="mergesort")
    grouped = pts.groupby(["key", "tokens"], sort=True).agg(retention=("retention", "mean"),
                                                             config=("config", "first"))
    keys = grouped.index.get_level_values(0).tolist()
    xs = grouped.index.get_level_values(1).to_numpy(dtype=float)
    ys = grouped["retention"].to_numpy(dtype=float)
    labels = [str(c) for c in grouped["config"]]
    curves: dict[Any, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    start = 0
    for end in range(1, len(keys) + 1):
        if end == len(keys) or keys[end] != keys[start]:
            if end - start >= MIN_CURVE_POINTS:
                curves[keys[start]] = (xs[start:end], ys[start:end], labels[start:end])
            start = end
    return curves


def unit_gains(units: pd.DataFrame, reference: Collection[str], *,
               edge_tolerance: float = EDGE_TOLERANCE) -> pd.DataFrame:
    """One row per Unit of every configuration but the added curve (`is_curve`): its gain over
    the curve the `reference` configurations' Units trace on its conversation (`UNIT_COLUMNS`),
    and where on the curve it fell.

    Columns added: `truncate_retention` (interpolated), `gain`, `lo`, `hi` (the truncate
    configurations on either side; equal at an end), `frac` (0 at `lo`, 1 at `hi`) and `place`:
    ``on`` (on the curve), ``below``/``above`` (outside it: no gain), ``none`` (fewer than
    `MIN_CURVE_POINTS` truncate Units of this conversation fit the window: no gain)."""
    ref = set(reference)
    fits = units["fits"].astype(bool) if "fits" in units.columns else pd.Series(True, index=units.index)
    names = units["config"].astype(str)
    is_ref = names.isin(ref)
    usable = units[is_ref & fits & units["tokens"].notna() & units["retention"].notna()]
    curves = _curves(usable)
    rows = []
    # a truncate configuration the spec names is a candidate too (on the curve: gain ~0); the
    # grid the harness added is only the yardstick
    for r in units[~names.map(is_curve)].to_dict("records"):
        out = {**r, "truncate_retention": math.nan, "gain": math.nan, "lo": "", "hi": "", "frac": math.nan}
        curve = curves.get(r["key"])
        t = float(r["tokens"]) if r["tokens"] is not None else math.nan
        if curve is None or math.isnan(t):
            out["place"] = "none"
        else:
            xs, ys, labels = curve
            if t < xs[0] * (1 - edge_tolerance):
                out["place"] = "below"
            elif t > xs[-1] * (1 + edge_tolerance):
                out["place"] = "above"
            else:
                i = int(np.searchsorted(xs, t, side="right"))
                lo, hi = max(i - 1, 0), min(i, len(xs) - 1)
                frac = 0.0 if lo == hi or t <= xs[lo] else min(1.0, (t - xs[lo]) / (xs[hi] - xs[lo]))
                truth = (1 - frac) * ys[lo] + frac * ys[hi]
                out.update(place="on", truncate_retention=truth, lo=labels[lo], hi=labels[hi], frac=frac,
                           gain=float(r["retention"]) - truth if not math.isnan(float(r["retention"])) else math.nan)
        rows.append(out)
    cols = [*units.columns, "truncate_retention", "gain", "lo", "hi", "frac", "place"]
    return pd.DataFrame(rows, columns=cols)


GAIN_COLUMNS = ("gain", "gain_low", "gain_high", "truncate_retention", "gain_units", "gain_outside")


def config_gains(per_unit: pd.DataFrame, *, alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> pd.DataFrame:
    """Per configuration (index): `gain` with its cluster-bootstrap interval (`gain_low`,
    `gain_high`; NaN below 5 conversations), the matched `truncate_retention`, `gain_units` (Units
    with a gain) and `gain_outside` (Units off the curve: outside its token range, or no truncate
    Unit of their conversation fits)."""
    rows = {}
    for cfg, g in per_unit.groupby("config", sort=True):
        on = g[g["place"] == "on"]
        iv = cluster_bootstrap(on["gain"].to_numpy(dtype=float), on["cluster"].astype(str).tolist(),
                               weights=on["weight"].to_numpy(dtype=float), alpha=alpha,
                               n_resamples=n_resamples, seed=seed)
        w = on["weight"].to_numpy(dtype=float)
        trunc = float(np.average(on["truncate_retention"], weights=w)) if len(on) and w.sum() > 0 else math.nan
        rows[str(cfg)] = {"gain": iv.estimate, "gain_low": iv.low, "gain_high": iv.high,
                          "truncate_retention": trunc, "gain_units": len(on), "gain_outside": len(g) - len(on)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(GAIN_COLUMNS))


def gains(units: pd.DataFrame, reference: Collection[str], *, alpha: float = DEFAULT_ALPHA,
          n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """`config_gains` of `unit_gains`: the per-unit table (`UNIT_COLUMNS`) in, per configuration
    gain and interval out. What a tuner maximises (`gain`, or `gain_low` to be safe)."""
    return config_gains(unit_gains(units, reference), alpha=alpha, n_resamples=n_resamples, seed=seed)


ASK_KEY = ("probe_id", "asked_turn")


def ask_gains(per_unit: pd.DataFrame, asks: pd.DataFrame) -> pd.DataFrame:
    """Per answerable ask of each Unit on the curve: `d` = retained − truncation's retained on the
    same ask, interpolated between the two truncate points (`lo`, `hi`, `frac`) like the Unit's
    gain. `asks`: columns config, key, probe_id, asked_turn, retained (answerable asks only).
    An ask that either truncate point did not ask is left out."""
    on = per_unit[per_unit["place"] == "on"][["config", "key", "lo", "hi", "frac"]]
    a = asks[["config", "key", *ASK_KEY, "retained"]]
    m = on.merge(a, on=["config", "key"])
    ref = a.rename(columns={"config": "ref", "retained": "r"})
    m = m.merge(ref.rename(columns={"ref": "lo", "r": "r_lo"}), on=["lo", "key", *ASK_KEY])
    m = m.merge(ref.rename(columns={"ref": "hi", "r": "r_hi"}), on=["hi", "key", *ASK_KEY])
    m["d"] = m["retained"].astype(float) - ((1 - m["frac"]) * m["r_lo"].astype(float)
                                            + m["frac"] * m["r_hi"].astype(float))
    return m[["config", "key", *ASK_KEY, "d"]]


def ask_level_gains(per_ask: pd.DataFrame, *, alpha: float = DEFAULT_ALPHA,
                    n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """Per configuration: the gain over its paired asks with an interval resampling *asks*
    (`stats.ask_level_bootstrap`): for fewer than 5 conversations, labelled `stats.WITHIN_ONLY`."""
    rows = {}
    for cfg, g in per_ask.groupby("config", sort=True):
        iv = ask_level_bootstrap(g["d"].to_numpy(dtype=float), alpha=alpha, n_resamples=n_resamples, seed=seed)
        rows[str(cfg)] = {"gain_asks": iv.estimate, "gain_asks_low": iv.low, "gain_asks_high": iv.high,
                          "gain_asks_n": len(g)}
    return pd.DataFrame.from_dict(rows, orient="index",
                                  columns=["gain_asks", "gain_asks_low", "gain_asks_high", "gain_asks_n"])
