from __future__ import annotations

from pathlib import Path

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
