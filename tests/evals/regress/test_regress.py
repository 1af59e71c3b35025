"""The gate on runs whose numbers are chosen (fakerun): paired per ask for deterministic
configurations, interval-based for the others, status and cost checks, and what it writes."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.analysis import load
from rollsum_evals.cli import main
from rollsum_evals.regress import Tolerance, regress

from tests.evals.report.fakerun import make_run

CONFIGS = {"since-last[keep_last=10]": 0.8, "truncate[n=10]": 0.3}
SL = "since-last[keep_last=10]"
N = 300


def _clock() -> datetime:
    return datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baselines" / "nightly.json"
    code, text = regress(make_run(tmp_path / "night0", CONFIGS), path, promote=True, n_resamples=N, now=_clock)
    assert code == 0 and "promoted" in text
    return path


def _asks(run_dir: Path, config: str, retained: bool, n: int) -> dict[tuple[int, int], bool]:
    """n asks of `config` that are retained (or lost) in this run, as fakerun (conversation,
    probe) indices, flipped."""
    p = load(run_dir).probes
    rows = p[(p["config"] == config) & (p["retained"] == retained)].head(n)
    out = {}
    for pid in rows["probe_id"]:
        conv, probe = pid.removeprefix("conv-").split("-p")
        out[(int(conv), int(probe))] = not retained
    assert len(out) == n
    return out


def test_promote_writes_a_baseline_with_every_asks_verdict(baseline: Path, tmp_path: Path) -> None:
    data = json.loads(baseline.read_text())
    assert data["format"] == 2
    assert data["dataset_sha256"] == {"synthetic": "d" * 64}
    assert data["library_version"] == "0.1.0" and data["scorer_versions"] == {"answer_retention": "1"}
    cfg = data["configs"][SL]
    assert cfg["status"] == "ok" and cfg["deterministic"] is True
    band = cfg["retention"]
    assert band["low"] <= band["estimate"] <= band["high"]
    # one character per ask, in the order of `asks`, matching the run's probe rows
    run = load(tmp_path / "night0").probes
    row = run[(run["config"] == SL) & (run["conversation_id"] == "conv-3")]
    keys = data["asks"]["synthetic/conv-3/0"]
    marks = dict(zip(keys, cfg["verdicts"]["synthetic/conv-3/0"]))
    assert len(keys) == 12
    for r in row.to_dict("records"):
        assert marks[f"{r['probe_id']}@{r['asked_turn']}"] == ("1" if r["retained"] else "0")
    assert not [p for p in baseline.parent.iterdir() if p.name != "nightly.json"]  # no history, no temp files


def test_promote_counts_the_truncation_curve_apart_from_configurations(tmp_path: Path) -> None:
    # the curve the harness adds to every sweep is the yardstick, not a configuration: counted
    # apart, in `rollsum init`'s words, so the count matches the report's and init's
    curve = {f"truncate-curve[keep={k}]": 0.1 * k for k in (2, 4, 8)}
    code, text = regress(make_run(tmp_path / "r", {**CONFIGS, **curve}), tmp_path / "b.json", promote=True,
                         n_resamples=N)
    assert code == 0
    assert text.splitlines()[-1].endswith("now holds 2 configurations + 3 truncation-curve points from run r")


def test_unchanged_rerun_passes_and_writes_nothing(baseline: Path, tmp_path: Path) -> None:
    before = baseline.read_bytes()
    code, text = regress(make_run(tmp_path / "night1", CONFIGS), baseline, n_resamples=N, now=_clock)
    assert code == 0, text
    assert "gate: PASS" in text and "lost 0, gained 0 (net +0)" in text
    assert baseline.read_bytes() == before
    assert sorted(p.name for p in baseline.parent.iterdir()) == ["nightly.json"]


def test_record_history_appends_one_line_per_gate_run(baseline: Path, tmp_path: Path) -> None:
    run = make_run(tmp_path / "night1", CONFIGS)
    regress(run, baseline, n_resamples=N, now=_clock, record_history=True)
    regress(run, baseline, n_resamples=N, now=_clock, record_history=True)
    history = [json.loads(line) for line in (baseline.parent / "nightly.history.jsonl").read_text().splitlines()]
    assert [h["status"] for h in history] == ["pass", "pass"]
    assert history[0]["configs"][SL]["status"] == "ok"


def test_one_lost_ask_of_a_deterministic_replay_fails_and_one_gained_is_improved(
        baseline: Path, tmp_path: Path) -> None:
    base = tmp_path / "night0"
    lost = make_run(tmp_path / "lost", CONFIGS, retained_of={SL: _asks(base, SL, True, 1)})
    code, text = regress(lost, baseline, n_resamples=N)
    assert code == 1, text
    line = next(t for t in text.splitlines() if t.startswith(SL) and "paired" in t)
    assert "lost 1, gained 0 (net -1)" in line and "REGRESSION" in line and "net loss ≤ 0" in line
    gained = make_run(tmp_path / "gained", CONFIGS, retained_of={SL: _asks(base, SL, False, 1)})
    code, text = regress(gained, baseline, n_resamples=N)
    assert code == 0 and "improved" in next(t for t in text.splitlines() if t.startswith(SL) and "paired" in t)


def test_the_ask_tolerance_is_a_share_of_answerable_asks(baseline: Path, tmp_path: Path) -> None:
    base = tmp_path / "night0"
    four = make_run(tmp_path / "four", CONFIGS, retained_of={SL: _asks(base, SL, True, 4)})
    five = make_run(tmp_path / "five", CONFIGS, retained_of={SL: _asks(base, SL, True, 5)})
    loose = Tolerance(asks=0.05)  # 5 % of 96 answerable asks: a net loss of 4 is allowed
    assert regress(four, baseline, n_resamples=N, tolerance=loose)[0] == 0
    assert regress(five, baseline, n_resamples=N, tolerance=loose)[0] == 1


def test_churn_that_nets_to_zero_passes_but_is_shown(baseline: Path, tmp_path: Path) -> None:
    base = tmp_path / "night0"
    churn = make_run(tmp_path / "churn", CONFIGS,
                     retained_of={SL: {**_asks(base, SL, True, 3), **_asks(base, SL, False, 3)}})
    code, text = regress(churn, baseline, n_resamples=N)
    assert code == 0 and "lost 3, gained 3 (net +0)" in text


def test_a_status_change_from_ok_fails_even_with_the_same_asks(baseline: Path, tmp_path: Path) -> None:
    run = make_run(tmp_path / "over", CONFIGS, unit_overrides={SL: {"overflow_turns": 2, "max_context_ratio": 1.2}})
    code, text = regress(run, baseline, n_resamples=N)
    assert code == 1
    line = next(t for t in text.splitlines() if t.startswith(SL) and " status " in t)
    assert "infeasible: context over the 8,000-token window on 16 turn(s)" in line and "REGRESSION" in line


def test_cost_rise_beyond_tolerance_fails_but_small_drift_passes(baseline: Path, tmp_path: Path) -> None:
    small = make_run(tmp_path / "small", CONFIGS, tokens={SL: 20_400})
    assert regress(small, baseline, n_resamples=N)[0] == 0
    big = make_run(tmp_path / "big", CONFIGS, tokens={SL: 26_000})
    code, text = regress(big, baseline, n_resamples=N)
    assert code == 1
    assert any(t.startswith(SL) and "cost_usd" in t and "REGRESSION" in t for t in text.splitlines())
    assert regress(big, baseline, n_resamples=N, tolerance=Tolerance(cost=0.5))[0] == 0


def test_changed_asks_cannot_be_paired_and_fail(baseline: Path, tmp_path: Path) -> None:
    fewer = make_run(tmp_path / "fewer", CONFIGS, n_probes=10)  # 2 of 12 probes gone per conversation
    code, text = regress(fewer, baseline, n_resamples=N)
    assert code == 1
    assert any("asks paired" in t and "16 not in the run" in t for t in text.splitlines())


def test_a_non_deterministic_model_is_gated_by_the_interval(tmp_path: Path) -> None:
    real = {"since-last[model=haiku]": 0.8}
    models = {"since-last[model=haiku]": "anthropic:claude-haiku-4-5"}
    path = tmp_path / "b.json"
    regress(make_run(tmp_path / "r0", real, models=models), path, promote=True, n_resamples=N)
    # a different draw of the same quality passes: the interval is the tolerance
    code, text = regress(make_run(tmp_path / "r1", real, models=models, seed=5), path, n_resamples=N)
    assert code == 0, text
    assert "retention (interval)" in text and "paired" not in text
    worse = make_run(tmp_path / "r2", {"since-last[model=haiku]": 0.4}, models=models)
    assert regress(worse, path, n_resamples=N)[0] == 1


def test_a_non_deterministic_gate_on_too_few_conversations_fails_rather_than_guess(tmp_path: Path) -> None:
    real = {"x": 0.8}
    models = {"x": "anthropic:claude-haiku-4-5"}
    path = tmp_path / "b.json"
    regress(make_run(tmp_path / "r0", real, models=models, n_conversations=3), path, promote=True, n_resamples=N)
    code, text = regress(make_run(tmp_path / "r1", real, models=models, n_conversations=3), path, n_resamples=N)
    assert code == 1 and "not enough conversations (3) to gate a non-deterministic model" in text


def test_missing_configuration_fails(baseline: Path, tmp_path: Path) -> None:
    code, text = regress(make_run(tmp_path / "n3", {"truncate[n=10]": 0.3}), baseline, n_resamples=N)
    assert code == 1 and "MISSING from run" in text


def test_new_configuration_is_a_warning_not_a_failure(baseline: Path, tmp_path: Path) -> None:
    code, text = regress(make_run(tmp_path / "n4", {**CONFIGS, "extra": 0.5}), baseline, n_resamples=N)
    assert code == 0 and "'extra' is not in the baseline" in text


def test_dataset_hash_mismatch_warns_unless_strict(baseline: Path, tmp_path: Path) -> None:
    run = make_run(tmp_path / "n5", CONFIGS, dataset_sha="e" * 64)
    code, text = regress(run, baseline, n_resamples=N)
    assert code == 0 and "hash differs" in text
    code, text = regress(run, baseline, n_resamples=N, strict=True)
    assert code == 1 and "FAILED: dataset" in text


def test_cli_exit_codes(baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = make_run(tmp_path / "ok", CONFIGS)
    assert main(["regress", str(ok), "--baseline", str(baseline), "--resamples", "200"]) == 0
    bad = make_run(tmp_path / "bad", {SL: 0.35, "truncate[n=10]": 0.3})
    assert main(["regress", str(bad), "--baseline", str(baseline), "--resamples", "200"]) == 1
    assert "REGRESSION" in capsys.readouterr().out
    assert not (baseline.parent / "nightly.history.jsonl").exists()
    assert main(["regress", str(ok), "--baseline", str(baseline), "--record-history"]) == 0
    assert (baseline.parent / "nightly.history.jsonl").read_text().count("\n") == 1
    assert main(["regress", str(ok), "--baseline", str(tmp_path / "none.json")]) == 2
    assert "create it with --promote" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 2, "asks": {}, "configs": {"x": {"retention": 1}}}')
    assert main(["regress", str(ok), "--baseline", str(broken)]) == 2
    assert "configs.x.retention" in capsys.readouterr().err


def _other_datasets(run: Path) -> Path:
    """The same run as if its spec had read another dataset (what the manifest says it read)."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["datasets"] = {"mine": manifest["datasets"].pop("synthetic")}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.mark.parametrize("what, make", [
    ("no configuration in common", lambda d: make_run(d, {"since-last[keep_last=4]": 0.8, "truncate[n=4]": 0.3}
                                                      | {"truncate-curve[keep=4]": 0.2})),
    ("no dataset in common", lambda d: _other_datasets(make_run(d, CONFIGS))),
])
def test_a_baseline_of_another_spec_is_refused_in_one_line_not_failed(
        baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, make: Any) -> None:
    # the wrong --baseline is a user mistake (exit 2), not a regression (exit 1): nothing in
    # common to gate, so every check would "fail"
    run = make(tmp_path / "other")
    if what == "no configuration in common":  # a shared truncate curve is the yardstick, not a configuration
        regress(make_run(tmp_path / "night0c", {**CONFIGS, "truncate-curve[keep=4]": 0.2}), baseline,
                promote=True, n_resamples=N)
    before = baseline.read_bytes()
    assert main(["regress", str(run), "--baseline", str(baseline), "--record-history"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"{baseline}: made from another spec, {what}: the baseline is (datasets synthetic; 2 configurations: " \
           f"{SL}, truncate[n=10])" in err and "--promote to replace" in err
    assert baseline.read_bytes() == before and not (baseline.parent / "nightly.history.jsonl").exists()
    # promoting over it is how it is replaced: said, not refused
    assert main(["regress", str(run), "--baseline", str(baseline), "--promote"]) == 0
    assert "the old baseline is not comparable (made from another spec" in capsys.readouterr().out


def test_an_old_format_baseline_is_refused_but_can_be_re_promoted(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "configs": {}}))
    ok = make_run(tmp_path / "ok", CONFIGS)
    assert main(["regress", str(ok), "--baseline", str(old)]) == 2
    assert "re-promote" in capsys.readouterr().err
    assert main(["regress", str(ok), "--baseline", str(old), "--promote"]) == 0
    assert json.loads(old.read_text())["format"] == 2
    assert main(["regress", str(ok), "--baseline", str(old)]) == 0


@pytest.mark.parametrize("status", ["running", "interrupted", "stopped: budget"])
def test_a_run_that_did_not_finish_is_not_promoted(baseline: Path, tmp_path: Path, status: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A nightly killed part-way (or stopped by its budget) promoted as it stood replaced the
    baseline with what happened to finish, exit 0: the configurations it never reached were not
    gated again. Now one line, exit 2, the baseline untouched; gating it still works and warns."""
    before = baseline.read_bytes()
    partial = make_run(tmp_path / "partial", CONFIGS)
    manifest = json.loads((partial / "manifest.json").read_text())
    manifest["status"] = status
    (partial / "manifest.json").write_text(json.dumps(manifest))
    assert main(["regress", str(partial), "--baseline", str(baseline), "--promote", "--resamples", "200"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not promoted" in err[0] and f"status {status}" in err[0] and "--resume" in err[0]
    assert baseline.read_bytes() == before
    assert main(["regress", str(partial), "--baseline", str(baseline), "--resamples", "200"]) == 0
    assert "the numbers below are partial" in capsys.readouterr().err


def test_a_run_scored_again_without_cost_is_refused_by_name_not_gated_as_zeros(baseline: Path,
                                                                              tmp_path: Path) -> None:
    """`rollsum score RUN --scorers answer_retention,rouge` drops the cost scorer: its figures are
    then zeros and blanks, which the gate read as "improved" costs and regressed tokens. A
    baseline scored with cost now fails such a run with one line that names the missing scorer
    and the command, and checks no cost figure."""
    data = json.loads(baseline.read_text())
    data["scorer_versions"] = {**data["scorer_versions"], "cost": "2"}
    baseline.write_text(json.dumps(data))
    run = make_run(tmp_path / "again", CONFIGS)  # its manifest names answer_retention only
    code, text = regress(run, baseline, n_resamples=N)
    assert code == 1
    assert ("FAILED: cost was not scored in this run (the baseline was): cost_usd, main_tokens, main_input_tokens "
            "cannot be gated; score the run again with it (rollsum score RUN --scorers answer_retention,cost)") in text
    assert not any(" cost_usd " in t or " main_tokens " in t for t in text.splitlines() if t.startswith(SL))
    assert any(t.startswith(SL) and "ok" in t for t in text.splitlines())  # retention is still gated
