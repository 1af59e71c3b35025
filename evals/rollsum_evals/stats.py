"""Confidence intervals that respect how eval data is correlated.

Probes from the same conversation are not independent: a configuration that loses one early fact
of a conversation tends to lose its neighbours too. Resampling probes would therefore give
intervals that are far too narrow, so every bootstrap here resamples whole *clusters*
(conversations) and recomputes a pooled mean from the resampled clusters' sums and counts.

Comparisons are *paired*: the value of A minus the value of B on the same probe (or the same
Unit) is resampled, which cancels the between-conversation variance that A and B share.

When several metrics or configuration pairs are tested together, Holm's step-down procedure
keeps the family-wise error at alpha; each interval is reported at the level at which it was
tested, so a verdict always follows from its own interval.

A bootstrap over k conversations can only produce k distinct resampled sets; with one
conversation every resample is the same and the "interval" has zero width whatever the truth.
Below `MIN_CONVERSATIONS` clusters no interval or p-value is computed at all (`Interval.enough`
is False, bounds and p are NaN), and every caller shows "not enough conversations (n)" instead
of a number that looks like certainty.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

DEFAULT_RESAMPLES = 2000
DEFAULT_ALPHA = 0.05
MIN_CONVERSATIONS = 5
"""Fewer independent conversations than this: no interval, no p-value, no verdict. With 4
clusters a percentile bootstrap has 35 distinct resamples and its 95 % interval is mostly the
spread of 4 numbers; 5 is the smallest count at which the interval is more than a min/max."""


def not_enough(clusters: int) -> str:
    """The words every report, comparison and gate uses instead of an interval."""
    return f"not enough conversations ({clusters})"


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a two-sided (1 - alpha) bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    alpha: float = DEFAULT_ALPHA
    p_value: float = 1.0
    """Two-sided bootstrap p-value for 'the true value is 0' (meaningful for differences)."""
    n: int = 0
    clusters: int = 0
    """Clusters (conversations) that had at least one value."""
    min_clusters: int = MIN_CONVERSATIONS

    @property
    def enough(self) -> bool:
        """Enough conversations for an interval (else low, high and p_value are NaN)."""
        return self.clusters >= self.min_clusters

    @property
    def excludes_zero(self) -> bool:
        """Only ever True for an interval that was computed (never on too few conversations)."""
        return self.enough and (self.low > 0.0 or self.high < 0.0)

    def to_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


def _cluster_index(clusters: Sequence[Hashable]) -> tuple[npt.NDArray[np.int64], int]:
    codes: dict[Hashable, int] = {}
    idx = np.fromiter((codes.setdefault(c, len(codes)) for c in clusters), dtype=np.int64,
                      count=len(clusters))
    return idx, len(codes)


def bootstrap_distribution(values: Sequence[float] | npt.ArrayLike, clusters: Sequence[Hashable], *,
                           n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                           weights: Sequence[float] | npt.ArrayLike | None = None,
                           ) -> tuple[float, npt.NDArray[np.float64]]:
    """The pooled mean and its cluster-bootstrap distribution.

    `weights` (default 1 each): a value that stands for several items (a conversation's mean
    over its asks, weighted by their count) so the pooled mean equals the mean over the items.
    Resamples are drawn with a seeded generator so a report is reproducible byte for byte.
    """
    vals = np.asarray(values, dtype=np.float64)
    if vals.shape[0] != len(clusters):
        raise ValueError(f"{vals.shape[0]} values but {len(clusters)} cluster labels")
    w = np.ones_like(vals) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = ~np.isnan(vals) & ~np.isnan(w) & (w > 0)
    vals, w = vals[keep], w[keep]
    cl = [c for c, k in zip(clusters, keep.tolist()) if k]
    if vals.size == 0:
        return float("nan"), np.full(1, np.nan)
    idx, k = _cluster_index(cl)
    sums = np.bincount(idx, weights=vals * w, minlength=k)
    counts = np.bincount(idx, weights=w, minlength=k).astype(np.float64)
    estimate = float(sums.sum() / counts.sum())
    shared = k <= MAX_SHARED_CLUSTERS and k * n_resamples <= MAX_SHARED_DRAWS
    draws = _draws(seed, k, n_resamples) if shared else _new_draws(seed, k, n_resamples)
    boot = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return estimate, boot


MAX_SHARED_CLUSTERS = 64
"""Resample matrices of up to this many clusters are made once per (seed, size) and shared
(`_draws`): a report draws the same 2,000 x 16 matrix for each of ~180 means; a bigger one (an
ask-level bootstrap resamples every ask) is made per call, not kept."""


MAX_SHARED_DRAWS = 256_000
"""And of at most this many entries (2 MB; the default 2,000 resamples × 64 clusters is 128,000):
`--resamples` goes up to 1,000,000, and 16 kept matrices of 1,000,000 × 64 would be 8 GB."""


def _new_draws(seed: int, k: int, n_resamples: int) -> npt.NDArray[np.int64]:
    """Which cluster each resample takes at each of its `k` places (seeded: reproducible)."""
    return np.random.default_rng(seed).integers(0, k, size=(n_resamples, k))


@lru_cache(maxsize=16)
def _draws(seed: int, k: int, n_resamples: int) -> npt.NDArray[np.int64]:
    """`_new_draws`, made once and shared (read-only): the same integers, so the same floats."""
    draws = _new_draws(seed, k, n_resamples)
    draws.flags.writeable = False
    return draws


def _interval_from(estimate: float, boot: npt.NDArray[np.float64], alpha: float, n: int,
                   clusters: int, min_clusters: int = MIN_CONVERSATIONS) -> Interval:
    nan = float("nan")
    if np.isnan(estimate):
        return Interval(nan, nan, nan, alpha, nan, n, clusters, min_clusters)
    if clusters < min_clusters:
        return Interval(estimate, nan, nan, alpha, nan, n, clusters, min_clusters)
    low, high = (float(q) for q in np.quantile(boot, [alpha / 2, 1 - alpha / 2]))
    # Floating-point sums of identical values can wobble in the last bit; clamp so a
    # degenerate distribution gives a degenerate interval exactly at the estimate.
    if np.ptp(boot) <= 1e-12 * max(1.0, abs(estimate)):
        low = high = estimate
    p = min(1.0, 2.0 * min(float(np.mean(boot <= 0)), float(np.mean(boot >= 0))))
    return Interval(estimate, low, high, alpha, p, n, clusters, min_clusters)


def _clusters_with_values(values: Sequence[float] | npt.ArrayLike, clusters: Sequence[Hashable]) -> int:
    """Distinct clusters with at least one non-NaN value (one `np.isnan` over the array, not one
    per value: ~180 calls over up to ~1,000 asks each in a report)."""
    vals = np.asarray(values, dtype=np.float64)
    return len(set(itertools.compress(clusters, (~np.isnan(vals)).tolist())))


def cluster_bootstrap(values: Sequence[float] | npt.ArrayLike, clusters: Sequence[Hashable], *,
                      alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = 0, min_clusters: int = MIN_CONVERSATIONS,
                      weights: Sequence[float] | npt.ArrayLike | None = None) -> Interval:
    """Mean of `values` (weighted by `weights`, default 1 each) with an interval from
    resampling whole clusters (conversations)."""
    estimate, boot = bootstrap_distribution(values, clusters, n_resamples=n_resamples, seed=seed, weights=weights)
    return _interval_from(estimate, boot, alpha, len(clusters), _clusters_with_values(values, clusters),
                          min_clusters)


WITHIN_ONLY = "within these conversations only: says nothing about other chats"
"""The label of every ask-level interval (`ask_level_bootstrap`)."""

MIN_ASKS = 20
"""An ask-level interval on fewer paired asks than this is not shown: it would be the spread of a
handful of 0/1 values."""


def ask_level_bootstrap(values: Sequence[float] | npt.ArrayLike, *, alpha: float = DEFAULT_ALPHA,
                        n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Interval:
    """Mean of per-ask (paired) values with an interval that resamples asks, not conversations.

    With fewer than `MIN_CONVERSATIONS` conversations there is no conversation-level interval,
    but a user with one exported chat still wants a direction. Resampling the asks of these
    conversations answers "would another draw of questions about *these* chats agree?" — it
    treats asks as independent, which they are not across chats, so it is always shown with
    `WITHIN_ONLY` and never turns into a verdict. Its `clusters` is the number of asks."""
    vals = np.asarray(values, dtype=np.float64)
    return cluster_bootstrap(vals, list(range(vals.shape[0])), alpha=alpha, n_resamples=n_resamples,
                             seed=seed, min_clusters=MIN_ASKS)


def paired_bootstrap(a: Sequence[float] | npt.ArrayLike, b: Sequence[float] | npt.ArrayLike,
                     clusters: Sequence[Hashable], *, alpha: float = DEFAULT_ALPHA,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Interval:
    """Mean of A − B over matched items, resampling clusters of pairs."""
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return cluster_bootstrap(diff, clusters, alpha=alpha, n_resamples=n_resamples, seed=seed)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (monotone, capped at 1), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def holm_levels(p_values: Sequence[float], alpha: float = DEFAULT_ALPHA) -> list[float]:
    """The per-test alpha at which each hypothesis is examined under Holm's procedure.

    The smallest p is tested at alpha/m, the next at alpha/(m-1), ... . Once one test fails,
    every later one is held to the failing level, so its (wider) interval contains zero too and
    the verdict still follows the interval.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    levels = [alpha] * m
    stopped: float | None = None
    for rank, i in enumerate(order):
        level = alpha / (m - rank)
        if stopped is not None:
            levels[i] = stopped
            continue
        levels[i] = level
        if p_values[i] > level:
            stopped = level
    return levels


def holm_intervals(values: Sequence[tuple[Sequence[float] | npt.ArrayLike, Sequence[Hashable]]], *,
                   alpha: float = DEFAULT_ALPHA, n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int = 0, min_clusters: int = MIN_CONVERSATIONS) -> list[Interval]:
    """Cluster-bootstrap intervals of several (difference) means, Holm-corrected as a family.

    Each item is (per-item differences, cluster labels). The same seed is used for every item
    so that the family is reproducible. Items on too few conversations are not tested: they
    get no interval and do not count in the family (they cannot reject anything).
    """
    dists = [bootstrap_distribution(v, c, n_resamples=n_resamples, seed=seed) for v, c in values]
    raw = [_interval_from(est, boot, alpha, len(c), _clusters_with_values(v, c), min_clusters)
           for (est, boot), (v, c) in zip(dists, values)]
    tested = [i for i, iv in enumerate(raw) if iv.enough]
    levels = holm_levels([raw[i].p_value for i in tested], alpha)
    adjusted_p = holm_adjust([raw[i].p_value for i in tested])
    out = list(raw)
    for i, level, p in zip(tested, levels, adjusted_p):
        est, boot = dists[i]
        iv = _interval_from(est, boot, level, raw[i].n, raw[i].clusters, min_clusters)
        out[i] = Interval(iv.estimate, iv.low, iv.high, level, p, iv.n, iv.clusters, min_clusters)
    return out
