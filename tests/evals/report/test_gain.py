"""Issue #18 item 5: the pick is made at matched tokens. Each configuration's gain is its retention
minus truncation's retention at the same main-model tokens per call, interpolated per
conversation along the truncate curve; configurations are ranked by gain, "Best" needs a gain
whose interval excludes 0, the curve itself is never a candidate, nothing is extrapolated past
the curve, and `[report] budgets` names the pick within each budget."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals import gain
from rollsum_evals.analysis import config_table, load
from rollsum_evals.report import first_line, headline, write_report
from rollsum_evals.rundir.integrity import spec_sha256

from tests.evals.report.fakerun import make_run

N = 300
TURNS = 60
PER_CALL = TURNS // 2
"""fakerun: main tokens per call = (tokens + 10 × conversation index) / (turns // 2)."""


def _curve(points: dict[int, float]) -> dict[str, float]:
    return {f"truncate-curve[keep={k}]": keep for k, keep in points.items()}


CURVE = {10: 0.1, 20: 0.2, 40: 0.4, 80: 0.75, 120: 0.85}
CURVE_TOKENS = {f"truncate-curve[keep={k}]": 1000 * k for k in CURVE}


class _Table:
    """A config table read as floats: `t[col, config]` (NaN for NA), `t.flags(config)`."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def __getitem__(self, at: tuple[str, str]) -> float:
        col, cfg = at
        return float(pd.to_numeric(self.frame[col], errors="coerce").astype(float)[cfg])

    def flags(self, cfg: str) -> list[str]:
        return str(self.frame["flags"].astype(str)[cfg]).split(";")


def _table(path: Path, configs: dict[str, float], tokens: dict[str, int]) -> _Table:
    make_run(path, {**configs, **_curve(CURVE)}, tokens={**tokens, **CURVE_TOKENS}, n_probes=40)
    return _Table(config_table(load(path), n_resamples=N).set_index("config"))


def test_a_costlier_config_with_more_retention_but_less_gain_ranks_second(tmp_path: Path) -> None:
    # cheap keeps 0.5 at 20,000 tokens where truncation keeps 0.2 (gain ~ +0.3); dear keeps 0.8 at
    # 80,000 where truncation keeps 0.75 (gain ~ +0.05): by retention dear wins, at matched tokens cheap
    table = _table(tmp_path / "r", {"cheap": 0.5, "dear": 0.8}, {"cheap": 20_000, "dear": 80_000})
    assert table["retention", "dear"] > table["retention", "cheap"]
    assert table["gain", "cheap"] > table["gain", "dear"] + 0.1
    assert table["rank", "cheap"] == 1 and table["rank", "dear"] == 2
    assert table["gain", "cheap"] == pytest.approx(
        table["retention", "cheap"] - table["truncate_retention", "cheap"])
    assert table["gain_low", "cheap"] > 0  # 8 conversations: a conversation-level interval
    line = headline(table.frame.reset_index())
    assert line.startswith("Best: cheap — gain +0.")
    assert "over truncation at its tokens" in line


def test_the_added_truncate_curve_is_never_a_candidate(tmp_path: Path) -> None:
    table = _table(tmp_path / "r", {"cheap": 0.5}, {"cheap": 20_000})
    curve = table.frame[table.frame["curve"].astype(bool)]
    assert len(curve) == len(CURVE)
    assert curve["rank"].isna().all() and not curve["ranked"].any() and not curve["pareto"].any()
    assert (curve["status"] == "ok").all()  # statuses are untouched: a flag says why it is not ranked
    assert all("truncate-curve" in str(f).split(";") for f in curve["flags"])
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Truncation curve (the yardstick, not a candidate)" in md
    assert "truncate-curve[keep=10]" not in md.split("## Truncation curve")[0]  # not a ranked row
    with (tmp_path / "out" / "configs.csv").open(newline="") as fh:
        rows = {r["config"]: r for r in csv.DictReader(fh)}
    assert rows["truncate-curve[keep=10]"]["rank"] == "" and rows["cheap"]["rank"] == "1"
    assert {"gain", "gain_low", "gain_high"} <= set(rows["cheap"])
    assert float(rows["cheap"]["gain_low"]) > 0


def test_when_no_config_beats_truncation_the_first_line_says_so(tmp_path: Path) -> None:
    # "same" sits on the curve: same keep rate as truncation at its tokens, so its gain is ~0
    table = _table(tmp_path / "r", {"same": 0.4, "worse": 0.3}, {"same": 40_000, "worse": 60_000})
    assert table["gain", "same"] == pytest.approx(0.0, abs=1e-9)
    assert table["gain", "worse"] < 0
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text().splitlines()
    assert md[2].startswith("**No configuration beats truncation at its tokens")


def test_a_unit_outside_the_curve_gets_no_gain_and_is_flagged(tmp_path: Path) -> None:
    # 2,000 tokens is far below the cheapest truncate point (10,000): nothing to interpolate from
    table = _table(tmp_path / "r", {"tiny": 0.3, "cheap": 0.5}, {"tiny": 2_000, "cheap": 20_000})
    assert math.isnan(table["gain", "tiny"])
    assert table["gain_outside", "tiny"] == 8
    assert "beyond-truncate-curve" in table.flags("tiny")
    assert table["rank", "cheap"] == 1  # a configuration with a gain ranks before one without


def test_budgets_name_the_pick_within_each(tmp_path: Path) -> None:
    make_run(tmp_path / "r", {"cheap": 0.5, "mid": 0.8, **_curve(CURVE)},
             tokens={"cheap": 20_000, "mid": 45_000, **CURVE_TOKENS}, n_probes=40)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    manifest["spec"]["report"] = {"budgets": [1000, 1200]}  # tokens per call
    manifest["spec_sha256"] = spec_sha256(manifest["spec"], manifest.get("spec_code"))  # as `run` writes it
    (tmp_path / "r" / "manifest.json").write_text(json.dumps(manifest))
    table = _Table(config_table(load(tmp_path / "r"), n_resamples=N).set_index("config"))
    assert table["rank", "mid"] == 1  # gain ~ +0.35 at 45,000 vs cheap's ~ +0.3
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    section = md.split("## At your budget")[1].split("## ")[0]
    # cheap spends ~667 tokens per call, mid ~1,500: within 1,000 and 1,200 only cheap fits
    assert "| 1,000 | Best within 1,000 main tokens / call: cheap" in section
    assert "| 1,200 | Best within 1,200 main tokens / call: cheap" in section


def test_unit_gains_interpolate_per_conversation_and_never_extrapolate() -> None:
    rows = []
    for conv, shift in (("a", 0.0), ("b", 0.1)):
        for t, r in ((1000, 0.2), (2000, 0.4), (3000, 0.5)):
            rows.append({"config": f"truncate[keep={t}]", "key": conv, "cluster": conv, "tokens": t,
                         "retention": r + shift, "weight": 10})
        rows += [{"config": "x", "key": conv, "cluster": conv, "tokens": 1500, "retention": 0.6, "weight": 10},
                 {"config": "low", "key": conv, "cluster": conv, "tokens": 500, "retention": 0.6, "weight": 10},
                 {"config": "high", "key": conv, "cluster": conv, "tokens": 3100, "retention": 0.6, "weight": 10}]
    units = pd.DataFrame(rows)
    ref = [f"truncate[keep={t}]" for t in (1000, 2000, 3000)]
    per = gain.unit_gains(units, ref)
    per.index = per["config"] + "/" + per["key"]
    at = _Table(per)
    assert at["truncate_retention", "x/a"] == pytest.approx(0.3)
    assert at["truncate_retention", "x/b"] == pytest.approx(0.4)  # its own conversation's curve
    assert at["gain", "x/a"] == pytest.approx(0.3)
    assert per["place"]["low/a"] == "below" and math.isnan(at["gain", "low/a"])
    assert per["place"]["high/a"] == "on"  # within 5 % of the dearest point: that point
    assert at["truncate_retention", "high/a"] == pytest.approx(0.5)
    by = _Table(gain.gains(units, ref, n_resamples=N))
    assert by["gain", "x"] == pytest.approx(0.25)
    assert math.isnan(by["gain_low", "x"])  # 2 conversations: no interval
    assert by["gain_outside", "low"] == 2 and math.isnan(by["gain", "low"])
    # the spec's own truncate configurations are candidates on the curve: gain 0
    assert by["gain", "truncate[keep=2000]"] == pytest.approx(0.0)


def _one_curve(points: pd.DataFrame) -> tuple[list[float], list[float], list[str]]:
    """One conversation's curve the slow, obvious way: its points sorted by (tokens, config),
    points at equal tokens averaged in that order, the first label kept."""
    pts = points.sort_values(["tokens", "config"], kind="mergesort")
    grouped = pts.groupby("tokens", sort=True).agg(retention=("retention", "mean"), config=("config", "first"))
    return list(grouped.index.astype(float)), list(grouped["retention"]), [str(c) for c in grouped["config"]]


def test_every_conversations_curve_is_its_own_points_sorted_and_averaged() -> None:
    # rows of several conversations interleaved, ties at equal tokens (listed against the
    # config order, with sums whose float result depends on the order), and a conversation
    # with too few distinct token figures for a curve
    rows = []
    for i, (key, n) in enumerate((("c", 5), ("a", 4), ("b", 2), ("d", 6))):
        for j in range(n):
            for tie in range(1 + (j % 3)):
                rows.append({"config": f"t{9 - tie}-{j}", "key": key, "tokens": float(100 * (j + 1) + i),
                             "retention": 0.1 * (tie + 1) + 1e-16 * j + 0.3 * (tie == 2)})
    units = pd.DataFrame(rows).sample(frac=1.0, random_state=3)
    curves = gain._curves(units)
    assert sorted(curves) == ["a", "c", "d"]  # b: 2 token figures < MIN_CURVE_POINTS
    for key, curve in curves.items():
        xs, ys, labels = _one_curve(units[units["key"] == key])
        assert (list(curve[0]), list(curve[1]), curve[2]) == (xs, ys, labels), key  # exact floats
    d_tokens, _, d_labels = curves["d"]
    assert list(d_tokens[:3]) == [103.0, 203.0, 303.0] and d_labels[2] == "t7-2"
    assert gain._curves(units.iloc[:0]) == {}


def test_gain_weights_conversations_by_their_answerable_asks() -> None:
    units = pd.DataFrame([
        *({"config": f"t{t}", "key": c, "cluster": c, "tokens": t, "retention": 0.0, "weight": w}
          for c, w in (("a", 30), ("b", 10)) for t in (100, 200, 300)),
        {"config": "x", "key": "a", "cluster": "a", "tokens": 200, "retention": 1.0, "weight": 30},
        {"config": "x", "key": "b", "cluster": "b", "tokens": 200, "retention": 0.0, "weight": 10},
    ])
    by = _Table(gain.gains(units, ["t100", "t200", "t300"], n_resamples=N))
    assert by["gain", "x"] == pytest.approx(0.75)  # pooled over asks, not the mean of 1.0 and 0.0


def test_a_single_truncate_config_is_not_a_curve(tmp_path: Path) -> None:
    make_run(tmp_path / "r", {"dear": 0.8, "cheap": 0.5, "truncate": 0.1},
             tokens={"dear": 80_000, "cheap": 20_000, "truncate": 20_000})
    frame = config_table(load(tmp_path / "r"), n_resamples=N)
    assert frame["gain"].isna().all()
    assert _Table(frame.set_index("config"))["rank", "dear"] == 1  # no curve: ranked by retention, as before
    assert "no truncate curve in this run" in first_line(frame, pd.DataFrame())


def test_a_run_scored_without_answer_retention_says_so_not_low_coverage(tmp_path: Path) -> None:
    """Re-scored with rouge alone, no ask is marked answerable: the first line named that "0 %
    of non-adversarial asks are answerable" (a false statement about the data); it now says the
    scorer is missing and how to add it."""
    make_run(tmp_path / "r", {"dear": 0.8, "cheap": 0.5}, tokens={"dear": 80_000, "cheap": 20_000})
    frame = config_table(load(tmp_path / "r"), n_resamples=N)
    no_asks = pd.DataFrame({"config": ["dear"], "category": ["single-hop"], "answerable": [False],
                            "counted": [False], "adversarial": [False]})
    line = first_line(frame, no_asks, ["rouge", "health"])
    assert line.startswith("answer_retention was not scored in this run (scorers: rouge, health)")
    assert "Low coverage" not in line and "--scorers answer_retention" in line
    assert not first_line(frame, pd.DataFrame(), ["answer_retention", "health"]).startswith("answer_retention")


def test_a_run_re_scored_without_cost_says_so_not_no_truncate_curve(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`rollsum score RUN --scorers answer_retention,rouge` (the README's example, before it
    listed cost) leaves no main tokens: the report's first line said "at 0 main tokens" and
    "no truncate curve in this run" about a run that has one; it now names the missing scorer."""
    from rollsum_evals.cli import main

    from tests.evals.report.realrun import grid_run

    monkeypatch.delenv("ROLLSUM_TRUNCATE_CURVE")  # the run has its curve, as every real run does
    run = grid_run(tmp_path)
    assert main(["score", str(run), "--scorers", "answer_retention,rouge", "--no-progress"]) == 0
    assert main(["report", str(run), "--out", str(tmp_path / "rep"), "--resamples", "100"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    first, verdict = md.splitlines()[2], md.split("## Verdict\n\n", 1)[1].splitlines()[0]
    for line in (first, verdict):
        assert "no truncate curve" not in line and "at 0 main tokens" not in line
        assert "cost was not scored in this run (scorers: answer_retention, rouge, health)" in line
        assert "`rollsum score RUN --scorers answer_retention,rouge,cost`" in line


def test_budgets_of_a_run_asked_at_chosen_moments_are_labelled_in_its_token_figure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `ages` timing the budget is held to the tokens at the asks (`pick_sentence` says
    "within N main tokens at asks"), while the table's header said "main tokens / call"."""
    from rollsum_evals.cli import main

    from tests.evals.report.realrun import GRID_SPEC, grid_run

    monkeypatch.delenv("ROLLSUM_TRUNCATE_CURVE")  # budgets need the curve's gains
    run = grid_run(tmp_path, GRID_SPEC + "[report]\nbudgets = [400]\n")
    assert main(["report", str(run), "--out", str(tmp_path / "rep"), "--resamples", "100"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## At your budget" in md, md[:600]
    section = md.split("## At your budget")[1].split("## ")[0]
    assert "| budget (main tokens at asks) | pick |" in section and "within 400 main tokens at asks" in section
    assert "per call" not in section and "/ call" not in section
