"""Statuses, ranking and configs.csv on a run whose numbers are chosen: a configuration that is
broken, overflows, thrashes, fails too often or did not finish never ranks, whatever its
retention; a figure that cannot be computed says so instead of showing a number."""

import csv
from pathlib import Path

import pytest
from rollsum_evals.analysis import config_table, load, token_axis
from rollsum_evals.cli import main
from rollsum_evals.report import CSV_COLUMNS, write_report

from tests.evals.report.fakerun import make_run

CONFIGS = {"healthy": 0.5, "broken": 0.99, "overflow": 0.95, "thrash": 0.9, "flaky": 0.85,
           "full-context": 1.0, "unfinished": 0.97}
OVERRIDES: dict[str, dict[str, object]] = {
    "broken": {"summarizer_attempts": 4, "summarizer_failures": 4},
    "overflow": {"overflow_turns": 5, "max_context_ratio": 1.4},
    "thrash": {"summarizer_attempts": 50},  # 50 calls for 60 messages
    "flaky": {"summarizer_attempts": 10, "summarizer_failures": 3},
    "full-context": {"overflow_turns": 30, "max_context_ratio": 3.2, "summarizer_attempts": 0},
}
N = 200


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # healthy has the lowest retention and the most tokens: it must still be the only one ranked
    return make_run(tmp_path_factory.mktemp("v") / "verdicts", CONFIGS, unit_overrides=OVERRIDES,
                    tokens={"healthy": 30_000}, errors={"unfinished": 2},
                    excluded={0: "adversarial", 1: "uncheckable", 2: "unsupported"})


def _csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["config"]: r for r in csv.DictReader(fh)}


def test_only_the_healthy_feasible_configuration_is_ranked(run_dir: Path) -> None:
    table = config_table(load(run_dir), n_resamples=N).set_index("config")
    rank, status, pareto = table["rank"], table["status"].astype(str), table["pareto"].astype(bool)
    assert rank["healthy"] == 1 and pareto["healthy"]
    expected = {"broken": "broken", "overflow": "infeasible", "thrash": "degraded", "flaky": "degraded",
                "full-context": "reference", "unfinished": "error"}
    for cfg, want in expected.items():
        assert status[cfg] == want, cfg
        assert rank.isna()[cfg] and not pareto[cfg], cfg
    assert "thrashing" in str(table["flags"]["thrash"]).split(";")
    assert "30 % of summarizer calls failed (24 of 80; limit 10 %)" in str(table["reason"]["flaky"])


def test_configs_csv_has_every_column_and_leaves_unranked_ranks_empty(run_dir: Path, tmp_path: Path) -> None:
    write_report(run_dir, tmp_path, n_resamples=N)
    with (tmp_path / "configs.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    # then one coverage column per category of the run (issue #18), after every fixed column
    assert header == [*CSV_COLUMNS, "coverage_date", "coverage_fact", "coverage_identifier", "coverage_number"]
    rows = _csv(tmp_path / "configs.csv")
    assert next(iter(rows)) == "healthy"
    assert rows["healthy"]["rank"] == "1" and rows["healthy"]["status"] == "ok"
    assert {r["rank"] for c, r in rows.items() if c != "healthy"} == {""}
    assert rows["overflow"]["overflow_turns"] == "40" and rows["overflow"]["max_context_ratio"] == "1.4"
    assert float(rows["thrash"]["summarizer_calls_per_message"]) == pytest.approx(50 / 60)
    assert rows["broken"]["failures"] == "32" and rows["broken"]["summarizer_attempts"] == "32"
    # 3 of 12 probes excluded, one per reason, in each of 8 conversations
    assert (rows["healthy"]["n_asks"], rows["healthy"]["n_probes"]) == ("96", "72")
    assert [rows["healthy"][f"n_excluded_{r}"] for r in ("adversarial", "uncheckable", "unsupported")] == ["8"] * 3


def test_retention_counts_answerable_asks_only(run_dir: Path) -> None:
    run = load(run_dir)
    table = config_table(run, n_resamples=N).set_index("config")
    p = run.probes[run.probes["config"] == "healthy"]
    answerable = p[p["excluded"] == ""]
    assert table.loc["healthy", "retention"] == pytest.approx(answerable["retained"].mean())
    assert table.loc["healthy", "retention"] != pytest.approx(p["retained"].mean())


def test_report_lists_each_unranked_configuration_under_its_reason(run_dir: Path, tmp_path: Path) -> None:
    page = write_report(run_dir, tmp_path, n_resamples=N)
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Ranked configurations") < md.index("| 1 | healthy |") < md.index("## Degraded")
    for title, cfg in (("## Degraded", "thrash"), ("## Broken", "broken"), ("## Infeasible", "overflow"),
                       ("## References", "full-context"), ("## Errors", "unfinished")):
        section = md[md.index(title):]
        section = section[: section.index("\n## ", 1)]
        assert f"| {cfg} |" in section, title
    assert "Best: healthy" in md
    assert "**1 unit(s) did not finish and are left out of every figure;" in md  # unfinished's conv-2
    assert "| healthy | 96 | 72 | 8 | 8 | 8 |" in md and "| unfinished | 84 | 63 | 7 | 7 | 7 |" in md
    html = page.read_text()
    assert html.count('class="unranked flagged"') == 5


def test_no_answerable_asks_shows_na_not_a_number(tmp_path: Path) -> None:
    run = make_run(tmp_path / "none", {"a": 0.5, "b": 0.6}, n_probes=3,
                   excluded={0: "adversarial", 1: "uncheckable", 2: "unsupported"})
    table = config_table(load(run), n_resamples=N)
    assert table["retention"].isna().all() and table["rank"].isna().all()
    write_report(run, tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "No configuration is both feasible and healthy" not in md  # they are; nothing to rank by
    section = md[md.index("## Not ranked: nothing to rank by"):]
    assert "| a | ok | no answerable asks: retention is n/a | n/a |" in section
    assert "0.000" not in section.split("\n## ")[0] and "1.000" not in section.split("\n## ")[0]
    assert _csv(tmp_path / "out" / "configs.csv")["a"]["retention"] == ""


def test_few_conversations_give_no_interval_anywhere(tmp_path: Path) -> None:
    run = make_run(tmp_path / "few", {"a": 0.5, "b": 0.8}, n_conversations=3)
    write_report(run, tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "(not enough conversations (3))" in md
    row = _csv(tmp_path / "out" / "configs.csv")["b"]
    assert row["retention"] != "" and row["retention_low"] == row["retention_high"] == ""
    assert "few-conversations" in row["flags"]


def test_cli_report_max_failure_rate_moves_the_threshold(run_dir: Path, tmp_path: Path) -> None:
    assert main(["report", str(run_dir), "--out", str(tmp_path), "--resamples", str(N),
                 "--max-failure-rate", "0.5"]) == 0
    assert _csv(tmp_path / "configs.csv")["flaky"]["status"] == "ok"
    assert main(["report", str(run_dir), "--out", str(tmp_path), "--max-failure-rate", "2"]) == 2


def test_tokens_are_paired_with_retention_by_the_probe_timing(run_dir: Path) -> None:
    """Sampled asks: tokens per call; asks at chosen moments: the context at the asking turns
    (docs/scoring.md, "Cost and retention at the same moments"). The axis says which."""
    run = load(run_dir)
    units = run.units[(run.units["config"] == "healthy")]
    run.manifest["probe_timing"] = "ages:5,20+end"
    chosen = config_table(run, n_resamples=N).set_index("config")
    assert chosen["main_tokens"]["healthy"] == pytest.approx(units["main_tokens_at_asks"].mean())
    assert token_axis(chosen).header == "main tokens at asks"
    run.manifest["probe_timing"] = "sampled:1+end"
    sampled = config_table(run, n_resamples=N).set_index("config")
    assert sampled["main_tokens"]["healthy"] == pytest.approx(units["main_tokens_per_turn"].mean())
    assert token_axis(sampled).header == "main tokens / call"
