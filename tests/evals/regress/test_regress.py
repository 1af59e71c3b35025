import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.regress import Tolerance, regress

from tests.evals.report.fakerun import make_run

CONFIGS = {"since-last[keep_last=10]": 0.8, "truncate[n=10]": 0.3}
N = 300


def _clock() -> datetime:
    return datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baselines" / "nightly.json"
    code, text = regress(make_run(tmp_path / "night0", CONFIGS), path, promote=True, n_resamples=N, now=_clock)
    assert code == 0 and "promoted" in text
    return path


def test_promote_writes_a_baseline_pinning_data_versions_and_intervals(baseline: Path) -> None:
    data = json.loads(baseline.read_text())
    assert data["dataset_sha256"] == {"synthetic": "d" * 64}
    assert data["library_version"] == "0.1.0" and data["scorer_versions"] == {"answer_retention": "1"}
    band = data["configs"]["since-last[keep_last=10]"]["retention"]
    assert band["low"] <= band["estimate"] <= band["high"]
    assert not [p for p in baseline.parent.iterdir() if p.name.startswith(".")]  # no temp files left


def test_unchanged_rerun_passes_and_is_logged(baseline: Path, tmp_path: Path) -> None:
    before = baseline.read_bytes()
    code, text = regress(make_run(tmp_path / "night1", CONFIGS), baseline, n_resamples=N, now=_clock)
    assert code == 0, text
    assert "gate: PASS" in text
    assert baseline.read_bytes() == before  # only --promote rewrites the baseline
    history = [json.loads(line) for line in (baseline.parent / "nightly.history.jsonl").read_text().splitlines()]
    assert [h["status"] for h in history] == ["new", "pass"]
    assert history[1]["configs"]["truncate[n=10]"]["retention"] == pytest.approx(
        history[0]["configs"]["truncate[n=10]"]["retention"])


def test_degraded_preset_fails_with_a_readable_table(baseline: Path, tmp_path: Path) -> None:
    degraded = make_run(tmp_path / "night2", {"since-last[keep_last=10]": 0.35, "truncate[n=10]": 0.3})
    code, text = regress(degraded, baseline, n_resamples=N)
    assert code == 1
    line = next(t for t in text.splitlines() if t.startswith("since-last[keep_last=10]") and "retention" in t)
    assert "REGRESSION" in line and "≥" in line
    assert "gate: FAIL" in text
    history = (baseline.parent / "nightly.history.jsonl").read_text().splitlines()
    assert json.loads(history[-1])["status"] == "fail"


def test_cost_rise_beyond_tolerance_fails_but_small_drift_passes(baseline: Path, tmp_path: Path) -> None:
    small = make_run(tmp_path / "small", CONFIGS, tokens={"since-last[keep_last=10]": 20_400})
    assert regress(small, baseline, n_resamples=N)[0] == 0
    big = make_run(tmp_path / "big", CONFIGS, tokens={"since-last[keep_last=10]": 26_000})
    code, text = regress(big, baseline, n_resamples=N)
    assert code == 1
    assert any("cost_usd" in t and "REGRESSION" in t for t in text.splitlines())
    assert regress(big, baseline, n_resamples=N, tolerance=Tolerance(cost=0.5))[0] == 0


def test_missing_configuration_fails(baseline: Path, tmp_path: Path) -> None:
    code, text = regress(make_run(tmp_path / "n3", {"truncate[n=10]": 0.3}), baseline, n_resamples=N)
    assert code == 1 and "MISSING from run" in text


def test_new_configuration_is_a_warning_not_a_failure(baseline: Path, tmp_path: Path) -> None:
    code, text = regress(make_run(tmp_path / "n4", {**CONFIGS, "extra": 0.5}), baseline, n_resamples=N)
    assert code == 0 and "'extra' is not in the baseline" in text


def test_dataset_hash_mismatch_warns_unless_strict(baseline: Path, tmp_path: Path) -> None:
    run = make_run(tmp_path / "n5", CONFIGS, dataset_sha="e" * 64)
    code, text = regress(run, baseline, n_resamples=N)
    assert code == 0 and "warning: dataset 'synthetic' hash differs" in text
    code, text = regress(run, baseline, n_resamples=N, strict=True)
    assert code == 1 and "FAILED: dataset 'synthetic' hash differs" in text


def test_cli_exit_codes(baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = make_run(tmp_path / "ok", CONFIGS)
    assert main(["regress", str(ok), "--baseline", str(baseline), "--resamples", "200"]) == 0
    bad = make_run(tmp_path / "bad", {"since-last[keep_last=10]": 0.35, "truncate[n=10]": 0.3})
    assert main(["regress", str(bad), "--baseline", str(baseline), "--resamples", "200"]) == 1
    assert "REGRESSION" in capsys.readouterr().out
    assert main(["regress", str(ok), "--baseline", str(tmp_path / "none.json")]) == 2
    assert "create it with --promote" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"configs": {"x": {"retention": 1}}}')
    assert main(["regress", str(ok), "--baseline", str(broken)]) == 2
    assert "configs.x.retention" in capsys.readouterr().err
