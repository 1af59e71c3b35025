"""The hand-check agreement estimator (benchmarks/handcheck_agreement.py): weighted by the
population's stratum sizes, not by how many judgments each stratum happens to have."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import handcheck_agreement as ha
from handcheck_agreement import Scored, Stratum

# Equal allocation (10 judged per stratum) over a population that is 90 % the stratum judges agree on.
EQUAL = [Stratum(size=900, judged=10, agreed=10), Stratum(size=100, judged=10, agreed=5)]
# Unequal allocation: pooling the counts (29/50) and averaging the strata (0.7) both differ from 0.8.
UNEQUAL = [Stratum(size=100, judged=40, agreed=20), Stratum(size=300, judged=10, agreed=9)]


def test_the_estimate_weights_each_stratum_by_its_population_share() -> None:
    assert ha.stratified(EQUAL) == pytest.approx(0.9 * 1.0 + 0.1 * 0.5)  # 0.95
    assert ha.unweighted(EQUAL) == pytest.approx(15 / 20)  # what equal weights give
    assert ha.stratified(UNEQUAL) == pytest.approx(0.25 * 0.5 + 0.75 * 0.9)  # 0.80
    assert ha.unweighted(UNEQUAL) == pytest.approx(29 / 50)


def test_a_stratum_absent_from_the_population_has_no_weight_and_an_unjudged_one_is_refused() -> None:
    assert ha.stratified([*EQUAL, Stratum(size=0, judged=10, agreed=0)]) == pytest.approx(0.95)
    with pytest.raises(ValueError, match="no judgment"):
        ha.stratified([*EQUAL, Stratum(size=50, judged=0, agreed=0)])


def test_the_bootstrap_is_centred_on_the_weighted_estimate() -> None:
    lo, hi = ha.stratified_bootstrap(EQUAL, np.random.default_rng(1), resamples=4000)
    assert lo < 0.95 <= hi
    assert lo > 0.85  # equal weights would centre it on 0.75
    lo, hi = ha.stratified_bootstrap(UNEQUAL, np.random.default_rng(1), resamples=4000)
    assert lo < 0.80 < hi and abs((lo + hi) / 2 - 0.80) < 0.06  # pooled counts: 0.58, mean of strata: 0.70


def test_wilson_effective_n_matches_the_formula_and_keeps_width_when_every_judgment_agreed() -> None:
    # V = sum W^2 q(1-q)/n with q = (x+1)/(n+2); n_eff = qbar(1-qbar)/V; Wilson at the estimate.
    q1, q2 = 11 / 12, 6 / 12
    var = 0.81 * q1 * (1 - q1) / 10 + 0.01 * q2 * (1 - q2) / 10
    qbar = 0.9 * q1 + 0.1 * q2
    n, p, z = qbar * (1 - qbar) / var, 0.95, ha.Z95
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert ha.stratified_wilson(EQUAL) == pytest.approx((centre - half, centre + half))
    # all agree: the plain variance is 0, but 20 judgments cannot show 100 %
    lo, hi = ha.stratified_wilson([Stratum(500, 10, 10), Stratum(500, 10, 10)])
    assert hi == pytest.approx(1.0) and lo < 0.9


def test_wilson_matches_the_textbook_interval() -> None:
    lo, hi = ha.wilson(277 / 320, 320)
    assert (round(lo, 3), round(hi, 3)) == (0.824, 0.899)  # docs/scoring.md's pooled blind interval


def _s(cell: tuple[str, str], agree: bool) -> Scored:
    return Scored("s", cell, None, agree, agree)


def test_strata_take_sizes_from_the_population_and_merge_an_unjudged_retained_sibling() -> None:
    cells = [("t", "matcher"), ("t", "verbatim"), ("t", "lost")]
    scored = [_s(("t", "verbatim"), True), _s(("t", "verbatim"), False), _s(("t", "lost"), True)]
    strata = ha.strata_of(scored, {("t", "matcher"): 30, ("t", "verbatim"): 70, ("t", "lost"): 100}, cells)
    assert sorted((s.size, s.judged, s.agreed) for s in strata) == [(100, 1, 1), (100, 2, 1)]
    assert ha.stratified(strata) == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)


def test_a_malformed_judgments_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "j.tsv"
    bad.write_text("sheet\tconfig\tconversation\tturn\tquestion\tjudge\ns1\ttruncate\tc\t3\tQ?\tmaybe\n")
    with pytest.raises(SystemExit) as e:
        ha.read_judgments(bad)
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == f"{bad}:2: expected judge 'retained' or 'lost' and an integer turn"
    bad.write_text("sheet\tconfig\tjudge\n")
    with pytest.raises(SystemExit):
        ha.read_judgments(bad)
    assert capsys.readouterr().err.startswith(f"{bad}:1: expected a header naming")
    good = tmp_path / "g.tsv"
    good.write_text("sheet\tconfig\tconversation\tturn\tquestion\tjudge\tdrawn_stratum\n"
                    "s1\ttruncate\tc\t3\tQ? \tRetained\tlost\n")
    [j] = ha.read_judgments(good)
    assert (j.key, j.judge, j.drawn) == (("truncate", "c", 3, "Q?"), True, "lost")
