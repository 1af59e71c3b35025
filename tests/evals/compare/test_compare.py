from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.analysis import load
from rollsum_evals.cli import main
from rollsum_evals.compare import (
    A_BETTER,
    B_BETTER,
    NO_DIFFERENCE,
    compare_configs,
    compare_matched,
    compare_runs,
    unit_metrics,
    verdict_text,
    write_compare,
)

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
    assert by_metric[unit_metrics(load(run_dir))[0]].verdict == B_BETTER


def test_weak_evidence_is_not_called_a_win(tmp_path: Path) -> None:
    run = load(make_run(tmp_path / "weak", {"a": 0.50, "b": 0.53}, n_conversations=6,
                        tokens={"a": 20_000, "b": 20_000}))
    assert compare_configs(run, "b", "a", n_resamples=N).verdict == NO_DIFFERENCE


def test_fewer_than_five_conversations_give_no_verdict_and_no_p_value(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # a huge effect on one conversation is still one conversation
    run_dir = make_run(tmp_path / "one", {"a": 0.05, "b": 0.95}, n_conversations=1, n_probes=40)
    result = compare_configs(load(run_dir), "b", "a", n_resamples=N)
    assert result.verdict == "not enough conversations (1)"
    assert {r.verdict for r in result.results} == {"not enough conversations (1)"}
    assert main(["compare", str(run_dir), "--a", "b", "--b", "a", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("b vs a")]
    assert len(rows) == 3
    for row in rows:  # no interval, no CI level, no Holm p: only the estimate and the reason
        assert "[" not in row and row.count("–") >= 2 and row.rstrip().endswith("not enough conversations (1)")
    four = compare_configs(load(make_run(tmp_path / "four", {"a": 0.05, "b": 0.95}, n_conversations=4)),
                           "b", "a", n_resamples=N)
    assert four.verdict == "not enough conversations (4)"
    five = compare_configs(load(make_run(tmp_path / "five", {"a": 0.05, "b": 0.95}, n_conversations=5)),
                           "b", "a", n_resamples=N)
    assert five.verdict == A_BETTER


def test_labels_match_whatever_the_spacing_and_parameter_order(run_dir: Path, tmp_path: Path) -> None:
    run = make_run(tmp_path / "grid", {"since-last[keep_last=2,messages_per_summary=20]": 0.3,
                                       "since-last[keep_last=20,messages_per_summary=20]": 0.8})
    result = compare_configs(load(run), "since-last[ messages_per_summary=20, keep_last=2 ]",
                             "since-last[messages_per_summary=20,keep_last=20]", n_resamples=N)
    assert result.label_a == "since-last[keep_last=2,messages_per_summary=20]"
    assert result.label_b == "since-last[keep_last=20,messages_per_summary=20]"


def test_a_label_miss_suggests_the_nearest(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(run_dir), "--a", "since-lst[keep_last=20]", "--b", LONG]) == 2
    err = capsys.readouterr().err
    assert f"did you mean '{LONG}'" in err and len(err.strip().splitlines()) == 1


def test_prompts_on_a_prompt_blind_model_get_no_verdict(tmp_path: Path) -> None:
    configs = {"since-last[prompt=a]": 0.2, "since-last[prompt=b]": 0.9, "real[prompt=a]": 0.2,
               "real[prompt=b]": 0.9}
    run = load(make_run(tmp_path / "blind", configs,
                        models={"since-last[prompt=a]": "fake:mode=extractive",
                                "since-last[prompt=b]": "fake:mode=extractive",
                                "real[prompt=a]": "anthropic:claude-haiku-4-5",
                                "real[prompt=b]": "anthropic:claude-haiku-4-5"},
                        prompts={c: c[-2] for c in configs}))
    blind = compare_configs(run, "since-last[prompt=b]", "since-last[prompt=a]", n_resamples=N)
    assert blind.verdict.startswith("no verdict: prompts 'b' and 'a' on a prompt-blind summarizer")
    assert all(r.verdict.startswith("no verdict") for r in blind.results)
    assert "A better" not in verdict_text(blind)
    # the same numbers on a model that follows prompts do give a verdict
    assert compare_configs(run, "real[prompt=b]", "real[prompt=a]", n_resamples=N).verdict == A_BETTER


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


def test_negative_money_puts_the_sign_before_the_dollar(run_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # SHORT is cheaper than LONG: A − B's cost is negative, printed and written as -$0.0030
    assert main(["compare", str(run_dir), "--a", SHORT, "--b", LONG, "--out", str(tmp_path),
                 "--resamples", str(N)]) == 0
    cost = next(line for line in capsys.readouterr().out.splitlines() if "cost_usd" in line)
    assert "-$0.0" in cost and "$-" not in cost
    md = (tmp_path / "compare.md").read_text()
    assert "-$0.0" in md and "$-" not in md


def test_fmt_usd_signs_before_the_currency_and_never_signs_zero() -> None:
    from rollsum_evals.formatting import fmt_usd

    assert [fmt_usd(v) for v in (-0.0126, 0.0126, -0.00001, 0.0, float("nan"), "n/a")] == [
        "-$0.0126", "$0.0126", "$0.0000", "$0.0000", "–", "n/a"]


@pytest.mark.parametrize("args, message", [
    (["--a", "nope", "--b", LONG], "no configuration 'nope'"),
    ([], "needs --a CONFIG_A and --b CONFIG_B"),
])
def test_cli_compare_user_mistakes_exit_2(run_dir: Path, args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(run_dir), *args]) == 2
    assert message in capsys.readouterr().err


A_TOK = [20_000] * 8
GRID = {"truncate[keep=10]": [19_500, 19_000, 19_000, 23_000, 30_000, 19_600, 19_800, 20_100],
        "truncate[keep=11]": [25_000, 20_300, 20_300, 21_500, 31_000, 25_000, 24_000, 24_000],
        # a perfect match on every conversation, but its summarizer calls failed: never used
        "truncate[keep=12]": [20_000] * 8,
        # a perfect match too, but it overflowed on every conversation except conv-7
        "truncate[keep=13]": [20_030] * 8}


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("m") / "grid",
                    {"since-last": 0.8, "truncate[keep=10]": 0.3, "truncate[keep=11]": 0.5,
                     "truncate[keep=12]": 0.9, "truncate[keep=13]": 0.9},
                    tokens={"since-last": A_TOK, **GRID}, n_conversations=8,
                    unit_overrides={"truncate[keep=12]": {"summarizer_attempts": 10, "summarizer_failures": 5},
                                    "truncate[keep=13]": {"overflow_turns": 3, "max_context_ratio": 1.1}},
                    conversation_overrides={("truncate[keep=13]", 7): {"overflow_turns": 0,
                                                                       "max_context_ratio": 0.9}})


def test_match_tokens_pairs_each_conversation_with_the_nearest_grid_point(grid_run: Path) -> None:
    result = compare_matched(load(grid_run), "since-last", "truncate", n_resamples=N)
    used = {m.conversation.split("/")[1]: m.b_config for m in result.matches if m.matched}
    # keep=13 fits only on conv-7, and is the nearest there; keep=12 is degraded: never used
    assert used == {"conv-0": "truncate[keep=10]", "conv-1": "truncate[keep=11]", "conv-2": "truncate[keep=11]",
                    "conv-5": "truncate[keep=10]", "conv-6": "truncate[keep=10]", "conv-7": "truncate[keep=13]"}
    unmatched = {m.conversation.split("/")[1]: m.gap for m in result.matches if not m.matched}
    assert set(unmatched) == {"conv-3", "conv-4"}  # nearest +7.5 % and +50 %: left out, counted
    assert unmatched["conv-3"] == pytest.approx(21_530 / 20_030 - 1)
    assert any("2 of 8 conversation(s)" in w for w in result.warnings)
    assert any("truncate[keep=12] (degraded)" in w for w in result.warnings)
    assert any("1 configuration(s) overflow the window on some conversations" in w for w in result.warnings)
    by = {r.metric: r for r in result.results}
    assert by["retention"].diff.clusters == 6 and result.verdict == A_BETTER
    tokens = unit_metrics(load(grid_run))[0]
    assert abs(by[tokens].diff.estimate) < 0.05 * by[tokens].mean_a
    # retention is paired per ask with the matched unit: A 0.8 vs a mix of 0.3 and 0.5 keep rates
    run = load(grid_run)
    p = run.probes[run.probes["excluded"] == ""]
    a = p[(p["config"] == "since-last") & p["conversation_id"].isin(used)]["retained"].mean()
    b = pd.concat([p[(p["config"] == cfg) & (p["conversation_id"] == conv)] for conv, cfg in used.items()])
    assert by["retention"].mean_a == pytest.approx(a)
    assert by["retention"].mean_b == pytest.approx(b["retained"].mean())
    conv1 = next(m for m in result.matches if m.conversation.endswith("/conv-1/0"))
    b1 = p[(p["config"] == "truncate[keep=11]") & (p["conversation_id"] == "conv-1")]["retained"].mean()
    assert conv1.b_retention == pytest.approx(b1) and conv1.a_retention > conv1.b_retention


def test_match_tokens_through_the_cli_names_the_matched_configurations(
        grid_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(grid_run), "--a", "since-last", "--b", "truncate", "--match-tokens",
                 "--out", str(tmp_path), "--resamples", str(N)]) == 0
    out = capsys.readouterr().out
    assert "B = truncate (matched tokens)" in out
    assert any(line.startswith("synthetic/conv-3/0") and "no: too far" in line for line in out.splitlines())
    assert any(line.startswith("synthetic/conv-1/0") and "truncate[keep=11]" in line and "yes" in line
               for line in out.splitlines())
    assert "## Matched units" in (tmp_path / "compare.md").read_text()


def test_match_tokens_with_nothing_near_is_a_user_error(grid_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(grid_run), "--a", "since-last", "--b", "truncate[keep=11]", "--match-tokens",
                 "--match-tolerance", "0.001"]) == 2
    assert "add grid points" in capsys.readouterr().err


def test_dataset_restricts_the_comparison(grid_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(grid_run), "--a", "since-last", "--b", "truncate[keep=10]",
                 "--dataset", "synthetic", "--resamples", str(N), "--out", str(grid_run.parent / "x")]) == 0
    capsys.readouterr()
    assert main(["compare", str(grid_run), "--a", "since-last", "--b", "truncate[keep=10]",
                 "--dataset", "locomo"]) == 2
    assert "no dataset 'locomo' in this run (datasets: synthetic)" in capsys.readouterr().err


def test_a_p_value_no_resample_reached_is_shown_as_a_bound_not_zero(run_dir: Path) -> None:
    text = verdict_text(compare_configs(load(run_dir), SHORT, LONG, n_resamples=N))
    row = next(line for line in text.splitlines() if line.startswith(f"{SHORT} vs {LONG}") and "retention" in line)
    assert "< 0.0025" in row and "  0  " not in row


def test_a_side_that_is_not_ok_is_named_with_its_status_and_reason(tmp_path: Path) -> None:
    """Its numbers are not what the configuration delivers: every comparison says so, for the
    side (and the run) it is, and says nothing about an ok side."""
    broken = {"broken": {"summarizer_attempts": 4, "summarizer_failures": 4}}
    run_a = load(make_run(tmp_path / "a", {"ok": 0.5, "broken": 0.9}, unit_overrides=broken))
    run_b = load(make_run(tmp_path / "b", {"ok": 0.5, "broken": 0.9}, name="b"))
    said = compare_configs(run_a, "ok", "broken", n_resamples=N).warnings
    assert [w for w in said if " is " in w] == ["B (broken) is broken: every summarizer call failed (32 of 32)"]
    said = compare_runs(run_a, run_b, n_resamples=N).warnings
    assert [w for w in said if " is " in w] == [
        "run A's (broken) is broken: every summarizer call failed (32 of 32)"]
    said = compare_runs(run_b, run_a, n_resamples=N).warnings
    assert [w for w in said if " is " in w] == [
        "run B's (broken) is broken: every summarizer call failed (32 of 32)"]


def test_two_runs_whose_configurations_ran_another_setup_are_warned_once_per_difference(tmp_path: Path) -> None:
    """`compare RUN_A RUN_B` is a before/after of a change only where each label ran alike: a
    label whose Units used another model (or window, parameters) or other conversations is
    named, one line per difference; runs of the same setup get no such line."""
    run_a = load(make_run(tmp_path / "a", {"x": 0.5, "y": 0.6}))
    same = compare_runs(run_a, load(make_run(tmp_path / "b", {"x": 0.5, "y": 0.6}, name="b")), n_resamples=N)
    assert not [w for w in same.warnings if "differ in" in w]
    other = load(make_run(tmp_path / "c", {"x": 0.5, "y": 0.6}, name="c", n_conversations=6,
                          models={"x": "fake:json", "y": "fake:json"}))
    said = [w for w in compare_runs(run_a, other, n_resamples=N).warnings if "differ in" in w]
    assert said == [
        "run A and run B differ in model (extractive vs fake:json) for x, y: a difference there is the "
        "setup's, not only the change's",
        "run A and run B differ in the conversations replayed (8 vs 6, 6 in both) for x, y: a difference "
        "there is the setup's, not only the change's"]


def test_a_presets_name_for_a_label_says_which_configurations_it_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "--a since-last" on a grid run suggested "did you mean 'truncate'?" (the nearest string)
    run = make_run(tmp_path / "grid", {"since-last[keep_last=2,messages_per_summary=20]": 0.3,
                                       "since-last[keep_last=20,messages_per_summary=20]": 0.8, "truncate": 0.1})
    assert main(["compare", str(run), "--a", "since-last", "--b", "truncate"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did you mean" not in err
    assert ("'since-last' names 2 configurations of this run, not one ('since-last[keep_last=2,"
            "messages_per_summary=20]', 'since-last[keep_last=20,messages_per_summary=20]')") in err


def test_two_runs_scored_with_other_scorers_are_warned(tmp_path: Path) -> None:
    # a run re-scored without cost compared with one scored with it: cost_usd $0.0000 on one side
    # and a "difference" in cost, with no word
    import json

    run_a = load(make_run(tmp_path / "a", {"x": 0.5, "y": 0.6}))
    b = make_run(tmp_path / "b", {"x": 0.5, "y": 0.6}, name="b")
    assert not [w for w in compare_runs(run_a, load(b), n_resamples=N).warnings if "other scorers" in w]
    for path, scorers in ((tmp_path / "a", ["answer_retention", "cost"]), (b, ["answer_retention", "rouge"])):
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["scoring"]["scorers"] = scorers  # what `rollsum score --scorers` records
        (path / "manifest.json").write_text(json.dumps(manifest))
    said = [w for w in compare_runs(load(tmp_path / "a"), load(b), n_resamples=N).warnings if "other scorers" in w]
    assert said == ["run A and run B were scored with other scorers (cost only in run A, rouge only in run B): a "
                    "metric a run did not score reads 0 or – there (cost_usd and main tokens need cost); "
                    "`rollsum score RUN --scorers ...` aligns them"]
