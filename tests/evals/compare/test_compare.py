from pathlib import Path

import pytest
from rollsum_evals.analysis import load
from rollsum_evals.cli import main
from rollsum_evals.compare import A_BETTER, B_BETTER, NO_DIFFERENCE, compare_configs, compare_runs, write_compare

from tests.evals.report.fakerun import make_run

SHORT, LONG = "since-last[keep_last=2]", "since-last[keep_last=20]"
N = 400  # resamples: enough for stable verdicts on the fixture, fast enough for CI


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # `twin` has the same keep rate and tokens as LONG: identical outcomes probe by probe.
    return make_run(tmp_path_factory.mktemp("c") / "ab", {SHORT: 0.35, LONG: 0.85, "twin": 0.85},
                    tokens={LONG: 21_000, "twin": 21_000, SHORT: 20_000})


def test_identical_configurations_show_no_detectable_difference(run_dir: Path) -> None:
    result = compare_configs(load(run_dir), "twin", LONG, n_resamples=N)
    assert result.verdict == NO_DIFFERENCE
    assert {r.verdict for r in result.results} == {NO_DIFFERENCE}


def test_a_clearly_better_configuration_is_named_whichever_side_it_is_on(run_dir: Path) -> None:
    run = load(run_dir)
    assert compare_configs(run, SHORT, LONG, n_resamples=N).verdict == B_BETTER
    flipped = compare_configs(run, LONG, SHORT, n_resamples=N)
    assert flipped.verdict == A_BETTER
    by_metric = {r.metric: r for r in flipped.results}
    assert by_metric["retention"].diff.low > 0.3
    # fewer tokens is better: SHORT (B) wins on tokens
    assert by_metric["main_input_tokens"].verdict == B_BETTER


def test_weak_evidence_is_not_called_a_win(tmp_path: Path) -> None:
    run = load(make_run(tmp_path / "weak", {"a": 0.50, "b": 0.53}, n_conversations=4,
                        tokens={"a": 20_000, "b": 20_000}))
    assert compare_configs(run, "b", "a", n_resamples=N).verdict == NO_DIFFERENCE


def test_several_metrics_are_held_to_holm_levels(run_dir: Path) -> None:
    result = compare_configs(load(run_dir), SHORT, LONG, n_resamples=N)
    levels = sorted(r.diff.alpha for r in result.results)
    assert levels[0] == pytest.approx(0.05 / 3) and levels[-1] == pytest.approx(0.05)


def test_two_runs_of_the_same_units_are_paired_by_configuration(run_dir: Path, tmp_path: Path) -> None:
    same = compare_runs(load(run_dir), load(run_dir), n_resamples=N)
    assert same.verdict == NO_DIFFERENCE and len(same.results) == 9
    degraded = make_run(tmp_path / "after", {SHORT: 0.35, LONG: 0.35, "twin": 0.85},
                        tokens={LONG: 21_000, "twin": 21_000, SHORT: 20_000})
    one = compare_runs(load(run_dir), load(degraded), LONG, n_resamples=N)
    assert one.verdict == A_BETTER


def test_compare_md_has_the_table_and_a_unified_diff_of_summaries(run_dir: Path, tmp_path: Path) -> None:
    path = write_compare(compare_configs(load(run_dir), SHORT, LONG, n_resamples=N), tmp_path)
    md = path.read_text()
    assert "B better" in md and "```diff" in md
    assert f"--- A: {SHORT}" in md and f"+++ B: {LONG}" in md


def test_cli_compare_prints_the_verdict(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(run_dir), "--a", SHORT, "--b", LONG, "--out", str(tmp_path),
                 "--resamples", str(N)])
    assert code == 0
    out = capsys.readouterr().out
    assert "verdict (retention): B better" in out and (tmp_path / "compare.md").exists()


@pytest.mark.parametrize("args, message", [
    (["--a", "nope", "--b", LONG], "no configuration 'nope'"),
    ([], "needs --a CONFIG_A and --b CONFIG_B"),
])
def test_cli_compare_user_mistakes_exit_2(run_dir: Path, args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(run_dir), *args]) == 2
    assert message in capsys.readouterr().err
