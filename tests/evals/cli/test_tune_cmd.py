"""`rollsum tune` from the command line: the path of tune.md last, user mistakes one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rollsum_evals.cli import main

SPEC = """
name = "cli-tune"
context_window = 3000
scorers = ["answer_retention", "health"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=60&seed=4"

[tune]
trials = 2
min_conversations = 1

[tune.params.since-last]
keep_last = { low = 2, high = 8, step = 2 }
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))


def test_tune_prints_what_it_found_and_the_path_of_tune_md_last(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "t.toml"
    spec.write_text(SPEC)
    out = tmp_path / "tune"
    assert main(["tune", str(spec), "--out", str(out), "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[-1] == str((out / "tune.md").resolve())
    assert "2 trials" in lines[-2] and "units evaluated" in lines[-2]
    assert captured.err.count("trial ") == 2 and "Traceback" not in captured.err
    assert json.loads((out / "tune.json").read_text())["trials"]
    # again without --resume: refused in one line
    assert main(["tune", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--resume" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("text", "needle"), [
    (SPEC.replace("[tune]\n", "[tuning]\n"), "tuning"),
    (SPEC.replace("trials = 2", "trials = 'many'"), "trials"),
    (SPEC.replace("keep_last = { low = 2, high = 8, step = 2 }", "keep_last = { low = 8, high = 2 }"), "low < high"),
    (SPEC.replace("[tune.params.since-last]", "[tune.params.sincelast]"), "summarizing presets"),
    (SPEC.split("[tune]")[0], "no [tune] table"),
])
def test_tune_mistakes_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, needle: str) -> None:
    spec = tmp_path / "t.toml"
    spec.write_text(text)
    assert main(["tune", str(spec), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_tune_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--resume" in out and "gain over truncation" in out
