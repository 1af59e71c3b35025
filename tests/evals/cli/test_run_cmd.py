from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.cli import main

SPEC = """
name = "cli"
context_window = 2000
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=1&messages=40&seed=2"

[[configs]]
preset = "since-last"

[[configs]]
preset = "full-context"
"""


def test_run_writes_a_run_directory_and_prints_it_last(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == str(out.resolve())
    assert (out / "units.parquet").exists() and (out / "manifest.json").exists()
    # the same command again is refused without --resume, and is a no-op with it
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["run", str(spec), "--out", str(out), "--resume", "--no-progress"]) == 0
    assert "0 run now" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "needle"), [
    (SPEC.replace('preset = "since-last"', 'preset = "since-last"\nparams = { keep_lats = 2 }'), "keep_lats"),
    (SPEC.replace('preset = "full-context"', 'preset = "nope"'), "s.toml:14: field 'configs[1].preset'"),
    (SPEC.replace("context_window = 2000", "context_window = 'big'"), "s.toml:3: field 'context_window'"),
])
def test_user_mistakes_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               text: str, needle: str) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_missing_spec_file_is_a_user_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.toml"), "--no-progress"]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_runs_offline_and_prints_the_report_path_last(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["demo", "--out", "demo", "--jobs", "2", "--no-progress"]) == 0
    last = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert last.is_absolute() and last.exists()
    assert last.is_relative_to(tmp_path / "demo" / "report")  # under --out, not ./reports
    assert (tmp_path / "demo" / "run" / "units.parquet").exists() and not (tmp_path / "reports").exists()
    # the demo recommends a configuration that fits the window and whose summarizer works
    with (last.parent / "configs.csv").open(newline="") as fh:
        best = next(csv.DictReader(fh))
    assert (best["rank"], best["status"], best["flags"]) == ("1", "ok", "")
    assert float(best["max_context_ratio"]) <= 1.0 and int(best["overflow_turns"]) == 0
    assert float(best["summarizer_calls_per_message"]) <= 0.5 and best["failures"] == "0"


# -- --fail-on-error -------------------------------------------------------------------------------

ERRORS_SPEC = """
name = "errors"
context_window = 2000
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=4&messages=30&seed=2"

[[configs]]
preset = "since-last"

[[configs]]
preset = "truncate"
"""


def _broken_since_last(unit: Any, model: Any, on_event: Any) -> Any:
    """since-last Units fail while replaying (4 of the 8 Units); the others are untouched."""
    from rollsum_evals.replay import default_engine

    engine = default_engine(unit, model, on_event)
    if unit.preset == "since-last" and unit.conversation_id.endswith(("-0", "-1", "-2", "-3")):
        def add(message: Any) -> Any:
            raise RuntimeError("engine exploded")
        engine.add = add  # type: ignore[method-assign]
    return engine


@pytest.mark.parametrize(("argv", "code"), [
    ([], 1),                                   # default: any error fails
    (["--fail-on-error", "0"], 1),             # the same, said explicitly
    (["--fail-on-error", "0.5"], 0),           # 4 of 8 = 0.5 is not above a share of 0.5
    (["--fail-on-error", "0.4"], 1),
    (["--fail-on-error", "4"], 0),             # a count: 4 errors are allowed
    (["--fail-on-error", "3"], 1),
    (["--no-fail-on-error"], 0),
])
def test_units_that_error_make_run_exit_1_beyond_the_threshold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        argv: list[str], code: int) -> None:
    import rollsum_evals.run as run_pkg

    real = run_pkg.run_sweep
    monkeypatch.setattr(run_pkg, "run_sweep", lambda *a, **kw: real(*a, **kw, engine_factory=_broken_since_last))
    spec = tmp_path / "s.toml"
    spec.write_text(ERRORS_SPEC)
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress", *argv]) == code
    out, err = capsys.readouterr()
    assert "8/8 units" in out and "4 errors" in out
    if code:
        assert err.strip().splitlines()[-1].startswith("4 of 8 units errored (--fail-on-error")
    else:
        assert "errored" not in err


@pytest.mark.parametrize("bad", ["nan", "-0.5"])
def test_a_bad_fail_on_error_is_a_user_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(ERRORS_SPEC)
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress", "--fail-on-error", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "--fail-on-error" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_a_resume_still_fails_on_the_errors_of_its_first_part(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import rollsum_evals.run as run_pkg

    real = run_pkg.run_sweep
    monkeypatch.setattr(run_pkg, "run_sweep", lambda *a, **kw: real(*a, **kw, engine_factory=_broken_since_last))
    spec = tmp_path / "s.toml"
    spec.write_text(ERRORS_SPEC)
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    # nothing left to run: the errored Units are still in the run, so the run still fails
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--no-progress", "--resume"]) == 1
    assert "4 of 8 units errored" in capsys.readouterr().err
