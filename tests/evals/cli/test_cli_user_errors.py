"""A user mistake gets one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollsum_evals.cli import main

BAD_PRESET = 'name = "x"\n[[configs]]\npreset = "since-lats"\n[[datasets]]\nname = "d"\nsource = "synth:chat"\n'


@pytest.mark.parametrize("argv, needle", [
    (["run", "{tmp}/missing.toml"], "sweep spec not found"),
    (["run", "{tmp}/bad.toml"], "bad.toml:3: field 'configs[0].preset'"),
    (["report", "{tmp}/not-a-run"], "not a run directory"),
    (["regress", "{tmp}", "--baseline", "{tmp}/none.json"], "is this a run directory?"),
    (["data", "stats", "{tmp}/prose.txt"], "no readable conversation"),
    (["data", "validate", "{tmp}/missing.jsonl"], "file not found"),
    (["run", "{tmp}/bad.toml", "--model", "nonsense:model"], ""),
])
def test_user_mistakes_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], needle: str) -> None:
    (tmp_path / "bad.toml").write_text(BAD_PRESET)
    (tmp_path / "prose.txt").write_text("just some prose, not a conversation\n")
    code = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert needle in err


def test_missing_api_key_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\n[[configs]]\npreset = "since-last"\n[[datasets]]\nname = "d"\n'
                    'source = "synth:chat?conversations=1&messages=40"\n')
    code = main(["run", str(spec), "--out", str(tmp_path / "run"), "--model", "anthropic:claude-haiku-4-5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert [line for line in err if "ANTHROPIC_API_KEY" in line] == err[-1:]
