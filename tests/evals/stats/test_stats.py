import math

import numpy as np
import pytest
from rollsum_evals.stats import cluster_bootstrap, holm_adjust, holm_intervals, holm_levels, paired_bootstrap


def test_constant_values_give_a_degenerate_interval() -> None:
    iv = cluster_bootstrap([0.5] * 30, [i // 3 for i in range(30)], n_resamples=500)
    assert (iv.estimate, iv.low, iv.high) == (0.5, 0.5, 0.5)


def test_interval_is_reproducible_with_a_seed_and_contains_the_estimate() -> None:
    rng = np.random.default_rng(1)
    vals = rng.random(200)
    clusters = [i // 10 for i in range(200)]
    a = cluster_bootstrap(vals, clusters, seed=7, n_resamples=500)
    b = cluster_bootstrap(vals, clusters, seed=7, n_resamples=500)
    assert a == b
    assert a.low < a.estimate < a.high
    assert a.clusters == 20 and a.n == 200


def test_correlated_clusters_widen_the_interval_compared_with_independent_items() -> None:
    # Each conversation either keeps all its facts or none: only 10 independent observations.
    vals = [float(c % 2) for c in range(10) for _ in range(20)]
    by_conversation = [c for c in range(10) for _ in range(20)]
    by_item = list(range(200))
    clustered = cluster_bootstrap(vals, by_conversation, n_resamples=1000)
    naive = cluster_bootstrap(vals, by_item, n_resamples=1000)
    assert (clustered.high - clustered.low) > 2 * (naive.high - naive.low)


def test_nan_values_are_ignored() -> None:
    iv = cluster_bootstrap([1.0, math.nan, 0.0, 1.0], ["a", "a", "b", "b"], n_resamples=200)
    assert iv.estimate == pytest.approx(2 / 3)


def test_a_cluster_with_only_nan_values_is_not_counted() -> None:
    # c has values, all NaN: 2 clusters count towards the interval's minimum, not 3
    iv = cluster_bootstrap([1.0, math.nan, 0.0, math.nan, math.nan], ["a", "a", "b", "c", "c"],
                           n_resamples=200, min_clusters=3)
    assert iv.clusters == 2 and iv.n == 5 and not iv.enough
    assert cluster_bootstrap(np.array([math.nan, 2.0]), ("x", "y"), n_resamples=200).clusters == 1


def test_paired_identical_samples_show_no_difference() -> None:
    vals = np.random.default_rng(0).random(50)
    iv = paired_bootstrap(vals, vals, [i // 5 for i in range(50)], n_resamples=500)
    assert not iv.excludes_zero and iv.p_value == 1.0


def test_paired_clear_improvement_excludes_zero() -> None:
    rng = np.random.default_rng(0)
    b = rng.random(100)
    iv = paired_bootstrap(b + 0.2 + 0.01 * rng.standard_normal(100), b, [i // 10 for i in range(100)],
                          n_resamples=500)
    assert iv.low > 0.15 and iv.p_value == 0.0


def test_holm_adjusted_p_values_match_the_textbook_example() -> None:
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_holm_levels_step_down_and_stop_at_the_first_failure() -> None:
    levels = holm_levels([0.001, 0.5, 0.02], alpha=0.05)
    assert levels[0] == pytest.approx(0.05 / 3)
    assert levels[2] == pytest.approx(0.05 / 2)
    # 0.02 <= 0.025 passes; 0.5 fails at 0.05 -> stays 0.05
    assert levels[1] == pytest.approx(0.05)
    stopped = holm_levels([0.04, 0.045], alpha=0.05)  # 0.04 > 0.025 fails: the next is held there
    assert stopped == pytest.approx([0.025, 0.025])


def test_holm_intervals_widen_with_more_comparisons() -> None:
    rng = np.random.default_rng(3)
    d = rng.standard_normal(100) * 0.1 + 0.05
    cl = [i // 5 for i in range(100)]
    single = holm_intervals([(d, cl)], n_resamples=1000)[0]
    many = holm_intervals([(d, cl)] * 4, n_resamples=1000)
    widths = [iv.high - iv.low for iv in many]
    assert max(widths) > single.high - single.low
    assert min(widths) >= single.high - single.low - 1e-12


def test_weights_stand_for_repeated_values() -> None:
    # a conversation's mean over its asks, weighted by their count, is the pooled mean over the asks
    vals, clusters, weights = [1.0, 0.0, 0.5], ["a", "b", "c"], [3, 1, 2]
    expanded = [1.0] * 3 + [0.0] + [0.5] * 2
    weighted = cluster_bootstrap(vals, clusters, weights=weights, n_resamples=500, min_clusters=1)
    plain = cluster_bootstrap(expanded, ["a"] * 3 + ["b"] + ["c"] * 2, n_resamples=500, min_clusters=1)
    assert weighted.estimate == pytest.approx(4 / 6)
    assert (weighted.low, weighted.high) == pytest.approx((plain.low, plain.high))


def test_resample_matrices_are_made_once_per_seed_and_size_and_give_the_same_numbers() -> None:
    """A report bootstraps ~180 means over the same conversations: the seeded resample matrix is
    the same for each, so it is made once (`_draws`) — and the distribution is the one a fresh
    matrix gives, bit for bit."""
    from rollsum_evals import stats

    rng = np.random.default_rng(5)
    values, clusters = rng.random(200), [f"c{i % 16}" for i in range(200)]
    stats._draws.cache_clear()
    first = stats.bootstrap_distribution(values, clusters, n_resamples=500, seed=3)
    stats.bootstrap_distribution(values * 2, clusters, n_resamples=500, seed=3)
    assert stats._draws.cache_info().misses == 1 and stats._draws.cache_info().hits == 1
    draws = stats._new_draws(3, 16, 500)
    sums = np.bincount([int(c[1:]) for c in clusters], weights=values)
    counts = np.bincount([int(c[1:]) for c in clusters]).astype(float)
    assert np.array_equal(first[1], sums[draws].sum(axis=1) / counts[draws].sum(axis=1))
    assert not stats._draws(3, 16, 500).flags.writeable


def test_a_large_resample_matrix_is_not_kept() -> None:
    """`--resamples` goes up to 1,000,000: a matrix over `MAX_SHARED_DRAWS` entries is made per
    call and never cached (16 kept 1,000,000 × 64 matrices would be 8 GB)."""
    from rollsum_evals import stats

    stats._draws.cache_clear()
    n = stats.MAX_SHARED_DRAWS // 4 + 1
    stats.bootstrap_distribution([1.0, 0.0, 1.0, 1.0], ["a", "b", "c", "d"], n_resamples=n, seed=1)
    assert stats._draws.cache_info().currsize == 0
    stats.bootstrap_distribution([1.0, 0.0, 1.0, 1.0], ["a", "b", "c", "d"], n_resamples=100, seed=1)
    assert stats._draws.cache_info().currsize == 1
