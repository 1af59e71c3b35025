"""Issue #18 item 4 (reporting half): coverage next to every number — per category asks,
answerable and counted in the report, configs.csv, compare and regress; a run counting under
60 % of its non-adversarial asks says so in its first line. Item 6: with fewer than 5
conversations, compare and the report still give a direction, ask-level and labelled."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals import coverage
from rollsum_evals.analysis import load
from rollsum_evals.compare import compare_configs, to_markdown, verdict_text
from rollsum_evals.regress import regress
from rollsum_evals.report import write_report
from rollsum_evals.stats import WITHIN_ONLY

from tests.evals.report.fakerun import make_run

N = 300
# 12 probes, categories fact, number, identifier, date in turn (fakerun); probe 0 adversarial,
# probes 1, 2, 3, 5, 6 unsupported: 11 non-adversarial asks per conversation, 6 answerable
EXCLUDED = {0: "adversarial", 1: "unsupported", 2: "unsupported", 3: "unsupported", 5: "unsupported",
            6: "unsupported"}


def _probes(**kw: object) -> pd.DataFrame:
    return pd.DataFrame(kw)


def test_coverage_is_answerable_over_non_adversarial_asks_per_category() -> None:
    p = _probes(category=["single-hop", "single-hop", "temporal", "temporal", "adversarial"],
                answerable=[True, True, True, False, False],
                excluded=["", "", "", "unsupported", "adversarial"],
                retained=[1.0, math.nan, 0.0, math.nan, math.nan])
    table = coverage.by_category(p).astype(float)
    assert [table[c]["temporal"] for c in ("probes", "answerable", "counted")] == [2, 1, 1]
    assert table["counted"]["single-hop"] == 1  # an answerable ask without a score is not counted
    assert table["coverage"]["all"] == pytest.approx(3 / 4)  # the adversarial ask is not in the denominator
    assert math.isnan(table["coverage"]["adversarial"])
    cols = coverage.coverage_columns(p)
    assert cols == {"coverage": pytest.approx(0.75), "coverage_single-hop": 1.0, "coverage_temporal": 0.5}


@pytest.fixture(scope="module")
def low_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("cov") / "low", {"a": 0.6, "b": 0.3}, excluded=EXCLUDED)


def test_low_coverage_is_the_reports_first_line_and_every_table_shows_coverage(low_run: Path,
                                                                                 tmp_path: Path) -> None:
    write_report(low_run, tmp_path, n_resamples=N)
    md = (tmp_path / "report.md").read_text()
    assert md.splitlines()[2].startswith("**Low coverage: only 55 % of non-adversarial asks")
    assert "## Coverage by category" in md
    section = md.split("## Coverage by category")[1].split("## ")[0]
    # probe 0 is adversarial (its own category); fact = probes 4 and 8, both answerable
    assert "| adversarial | 8 | 0 | 0 | – |" in section
    assert "| fact | 16 | 16 | 16 | 100 % |" in section
    assert "| number | 24 | 8 | 8 | 33 % |" in section  # probes 1 (unsupported), 5 (unsupported), 9
    assert "| all | 96 | 48 | 48 | 55 % |" in section
    with (tmp_path / "configs.csv").open(newline="") as fh:
        rows = {r["config"]: r for r in csv.DictReader(fh)}
    assert float(rows["a"]["coverage"]) == pytest.approx(6 / 11)
    assert float(rows["a"]["coverage_number"]) == pytest.approx(1 / 3)
    assert float(rows["a"]["coverage_fact"]) == pytest.approx(1.0)
    html = (tmp_path / "report.html").read_text()
    assert "Low coverage: only 55 %" in html.split("<table")[0]  # above the first table


def test_enough_coverage_has_no_warning(tmp_path: Path) -> None:
    make_run(tmp_path / "r", {"a": 0.6}, excluded={0: "adversarial"})
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    assert "Low coverage" not in (tmp_path / "out" / "report.md").read_text()


def test_compare_and_regress_show_coverage(low_run: Path, tmp_path: Path) -> None:
    text = verdict_text(compare_configs(load(low_run), "a", "b", n_resamples=N))
    assert "A (a): coverage 55 % (48 answerable of 88 non-adversarial asks; " in text
    assert "number 33 %" in text
    baseline = tmp_path / "base.json"
    regress(low_run, baseline, promote=True, n_resamples=N)
    code, out = regress(low_run, baseline, n_resamples=N)
    assert code == 0
    assert "coverage 55 % (48 answerable of 88 non-adversarial asks" in out
    assert "warning: Low coverage" in out


def test_one_chat_gets_an_ask_level_direction_never_a_verdict(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "one", {"a": 0.9, "b": 0.1}, n_conversations=1, n_probes=60)
    comparison = compare_configs(load(run_dir), "a", "b", n_resamples=N)
    assert comparison.verdict == "not enough conversations (1)"
    retention = next(r for r in comparison.results if r.metric == "retention")
    assert retention.within is not None and retention.within.low > 0
    assert "A higher" in retention.direction and WITHIN_ONLY in retention.direction
    assert WITHIN_ONLY in verdict_text(comparison)
    assert "## Within these conversations only" in to_markdown(comparison)
    tokens = next(r for r in comparison.results if r.metric != "retention")
    assert tokens.within is None  # one conversation has one token figure: nothing to resample


def test_enough_conversations_get_no_ask_level_interval(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "many", {"a": 0.9, "b": 0.1}, n_conversations=6)
    comparison = compare_configs(load(run_dir), "a", "b", n_resamples=N)
    assert all(r.within is None and r.direction == "" for r in comparison.results)
    assert WITHIN_ONLY not in verdict_text(comparison)


def test_the_report_gives_few_conversations_an_ask_level_gain(tmp_path: Path) -> None:
    curve = {f"truncate-curve[keep={k}]": k / 100 for k in (10, 20, 40, 80)}
    tokens = {f"truncate-curve[keep={k}]": 1000 * k for k in (10, 20, 40, 80)}
    make_run(tmp_path / "r", {"a": 0.6, **curve}, tokens={"a": 20_000, **tokens}, n_conversations=2,
             n_probes=60)
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    first = md.splitlines()[2]
    # two conversations give no interval: the line says there is no verdict, not that none beats truncation
    assert first.startswith("**No verdict on 2 conversation(s) (an interval needs 5): the top gain, a, is +0.")
    assert "(not enough conversations (2))" in first
    assert f"Ask-level ({WITHIN_ONLY}): +0." in first and "retention higher than truncation's" in first
    assert f"gain, ask-level [95% CI] ({WITHIN_ONLY})" in md
    with (tmp_path / "out" / "configs.csv").open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["config"] == "a")
    assert row["gain_low"] == "" and float(row["gain_asks_low"]) > 0


_CELLS: dict[str, list[object]] = {"category": ["single-hop", "temporal", "adversarial", "", None],
          "answerable": [True, False, None],
          "retained": [1.0, 0.0, None],
          "excluded": ["", "adversarial", "unsupported", None]}


def _reference(rows: list[dict[str, object]]) -> dict[str, tuple[int, int, int, int]]:
    """by_category's counts the slow way: one ask at a time, in plain Python."""
    out: dict[str, list[int]] = {}
    for r in rows:
        cat = str(r["category"]) if r.get("category") not in (None, "") else "(none)"
        ans = bool(r["answerable"]) if r.get("answerable") is not None else False
        counted = ans and r.get("retained") is not None
        adv = r.get("excluded") == "adversarial" or r.get("category") == "adversarial"
        for key in (cat, "all"):
            c = out.setdefault(key, [0, 0, 0, 0])
            c[0] += 1
            c[1] += ans
            c[2] += counted
            c[3] += not adv
    return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


def test_by_category_counts_each_ask_once_in_its_category_and_in_all() -> None:
    """The per-category counts (one groupby over per-ask flags, issue #20's report time) equal a
    plain count over the asks, with coverage = answerable / non-adversarial, on many mixes of
    categories, missing values and exclusions."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        rows: list[dict[str, object]] = [{k: rng.choice(v) for k, v in _CELLS.items()}
                                         for _ in range(rng.randint(1, 25))]
        df = pd.DataFrame(rows).astype({"answerable": "object"})
        table = coverage.by_category(df)
        want = _reference(rows)
        assert list(table.index) == [*sorted(k for k in want if k != "all"), "all"]
        for cat, (n, ans, counted, non_adv) in want.items():
            row = table.loc[cat].to_dict()
            assert (row["probes"], row["answerable"], row["counted"], row["non_adversarial"]) == (
                n, ans, counted, non_adv)
            assert math.isnan(row["coverage"]) if not non_adv else row["coverage"] == ans / non_adv
        assert {k: str(v) for k, v in table.dtypes.items()} == {
            "probes": "int64", "answerable": "int64", "counted": "int64", "coverage": "float64",
            "non_adversarial": "int64"}


def test_coverage_columns_coverage_is_the_whole_configs_not_a_categorys() -> None:
    """configs.csv's `coverage` comes from by_category's "all" row (perf20b), not counted again:
    it must still be answerable / non-adversarial over every ask, not the first category's."""
    p = _probes(category=["single-hop", "single-hop", "temporal", "temporal", "adversarial"],
                answerable=[True, True, True, False, False],
                excluded=["", "", "", "unsupported", "adversarial"],
                retained=[1.0, math.nan, 0.0, math.nan, math.nan])
    cols = coverage.coverage_columns(p)
    assert cols["coverage"] == coverage.coverage(p) == 3 / 4
    assert cols["coverage_single-hop"] == 1.0 and cols["coverage_temporal"] == 0.5
    assert math.isnan(coverage.coverage_columns(p.iloc[:0])["coverage"])


def test_by_category_of_gives_each_configuration_its_own_by_category_frame() -> None:
    """`by_category_of` (one groupby over every configuration's asks, issue #20's report time)
    returns, per configuration, exactly the frame `by_category` gives that configuration's asks
    alone: same rows, order, values and dtypes, so `.equals` between configurations (the report's
    "every configuration counted the same asks") means what it meant."""
    import random

    rng = random.Random(11)
    for _ in range(150):
        rows: list[dict[str, object]] = [{**{k: rng.choice(v) for k, v in _CELLS.items()},
                                          "config": rng.choice(["a", "b", "c[x=1]"])}
                                         for _ in range(rng.randint(1, 30))]
        df = pd.DataFrame(rows).astype({"answerable": "object"})
        df.index = rng.sample(range(1000), len(df))  # a filtered table's index, not 0..n-1
        got = coverage.by_category_of(df, df["config"])
        assert set(got) == set(df["config"])
        for cfg, table in got.items():
            pd.testing.assert_frame_equal(table, coverage.by_category(df[df["config"] == cfg]))
            assert repr(coverage.columns_of(table)) == repr(coverage.coverage_columns(df[df["config"] == cfg]))
