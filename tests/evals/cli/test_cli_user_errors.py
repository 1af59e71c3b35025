"""A user mistake gets one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rollsum_evals.cli import main

BAD_PRESET = 'name = "x"\n[[configs]]\npreset = "since-lats"\n[[datasets]]\nname = "d"\nsource = "synth:chat"\n'


@pytest.mark.parametrize("argv, needle", [
    (["run", "{tmp}/missing.toml"], "sweep spec not found"),
    (["run", "{tmp}/bad.toml"], "bad.toml:3: field 'configs[0].preset'"),
    (["report", "{tmp}/not-a-run"], "not a run directory"),
    (["regress", "{tmp}", "--baseline", "{tmp}/none.json"], "is this a run directory?"),
    (["data", "stats", "{tmp}/prose.txt"], "prose.txt:1: not JSON"),
    (["data", "stats", "{tmp}/prose.txt", "--skip-bad-records"], "no readable conversation"),
    (["data", "validate", "{tmp}/missing.jsonl"], "file not found"),
    (["run", "{tmp}/bad.toml", "--model", "nonsense:model"], ""),
    (["compare", "{tmp}", "--a", "x", "--b", "y", "--seed", "-1"], "--seed: expected a non-negative integer"),
    (["data", "synth", "--messages", "99999999999999", "--out", "{tmp}/big.jsonl"],
     "expected at most 10,000,000 messages in all"),
    (["data", "synth", "--conversations", "3", "--messages", "10-4000000", "--out", "{tmp}/big.jsonl"],
     "got up to 12,000,000"),
    # a directory was "sweep spec not found (no such file ...)"; tune's non-UTF-8 spec was Python's
    # codec message without a line
    (["run", "{tmp}/adir"], "adir: a directory, not a sweep spec file, and no bundled spec of that name"),
    (["tune", "{tmp}/latin.toml", "--out", "{tmp}/t"], "latin.toml:2: invalid UTF-8 at byte 18 (expected a UTF-8 "
                                                       "TOML file)"),
    (["tune", "{tmp}/adir/", "--out", "{tmp}/t"], "adir/: a directory, not a sweep spec file"),
    # a directory was "no such file"; valid JSON that is not a chat was "not JSON"; a file where
    # the run directory should be was "OUT/run: Not a directory"
    (["run", "{tmp}/bad.toml", "--locomo", "{tmp}/adir"], "--locomo {tmp}/adir: a directory (expected the file"),
    (["tune", "{tmp}/bad.toml", "--out", "{tmp}/t", "--locomo", "{tmp}/adir"], "--locomo {tmp}/adir: a directory"),
    (["run", "{tmp}/bad.toml", "--locomo", "{tmp}/nothing.json"], "--locomo {tmp}/nothing.json: no such file"),
    (["data", "stats", "{tmp}/string.json"], "string.json:1: a bare JSON value, not a chat export"),
    (["demo", "--out", "{tmp}/prose.txt"], "{tmp}/prose.txt is a file, not a directory"),
])
def test_user_mistakes_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], needle: str) -> None:
    (tmp_path / "bad.toml").write_text(BAD_PRESET)
    (tmp_path / "prose.txt").write_text("just some prose, not a conversation\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "latin.toml").write_bytes(b'# tune\nname = "caf\xe9"\n')
    (tmp_path / "string.json").write_text('"just a string"\n')
    code = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert needle.format(tmp=tmp_path) in err
    assert not (tmp_path / "big.jsonl").exists()  # a refused synth set writes nothing


def test_a_resample_count_is_refused_outside_100_to_a_million() -> None:
    """--resamples of report, compare and regress: 99,999,999,999 asked numpy for 1.46 TiB
    (a traceback); the bound is checked before any resample is drawn."""
    from rollsum_evals.cli.reading import MAX_RESAMPLES, resamples

    from rollsum.errors import ConfigError

    assert resamples(100, "--resamples") == 100
    assert resamples(MAX_RESAMPLES, "--resamples") == MAX_RESAMPLES
    for bad in (99, MAX_RESAMPLES + 1, 99_999_999_999):
        with pytest.raises(ConfigError, match="expected 100 to 1,000,000 resamples"):
            resamples(bad, "--resamples")


def test_missing_api_key_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\n[[configs]]\npreset = "since-last"\n[[datasets]]\nname = "d"\n'
                    'source = "synth:chat?conversations=1&messages=40"\n')
    code = main(["run", str(spec), "--out", str(tmp_path / "run"), "--model", "anthropic:claude-haiku-4-5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert [line for line in err if "ANTHROPIC_API_KEY" in line] == err[-1:]


@pytest.mark.parametrize(("missing", "argv"), [
    ("pandas", ["report", "some-run"]),
    ("tqdm", ["run", "{spec}", "--out", "{tmp}/r"]),
    ("matplotlib", ["demo", "--out", "{tmp}/d"]),
])
def test_a_missing_harness_dependency_names_the_extra_in_one_line(tmp_path: Path, missing: str,
                                                                  argv: list[str]) -> None:
    """`pip install rollsum` (no extra) installs the command; using the harness says what to
    install instead of a traceback."""
    spec = tmp_path / "s.toml"
    spec.write_text('name = "x"\ncache = "off"\n[[configs]]\npreset = "truncate"\n[[datasets]]\nname = "d"\n'
                    'source = "synth:chat?conversations=1&messages=20"\n')
    args = [a.format(spec=spec, tmp=tmp_path) for a in argv]
    code = (f"import sys; sys.modules[{missing!r}] = None\n"
            f"from rollsum_evals.cli import main\nsys.exit(main({args!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"rollsum: error: `rollsum {argv[0]}` needs the harness extra (module {missing!r} is missing): "
        "pip install 'rollsum[harness]'"]
    assert not (tmp_path / "r").exists() and not (tmp_path / "d").exists()  # nothing half-written


@pytest.mark.parametrize("argv", [
    ["data", "validate", "{chat}", "--format", "bogus"],
    ["data", "stats", "{chat}", "--format", "bogus"],
    ["init", "{chat}", "--format", "bogus", "--out", "{tmp}/s.toml"],
    ["data", "convert", "--from", "bogus", "{chat}", "{tmp}/out.jsonl"],
])
def test_an_unknown_format_is_a_usage_error_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             argv: list[str]) -> None:
    """Not a record error ("1 record(s), 0 valid") nor a field named "format:" as if a file held it:
    the option is wrong, so argparse says which one, with the registered formats."""
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "hi"}\n')
    code = main([a.format(tmp=tmp_path, chat=chat) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    option = "--from" if "--from" in argv else "--format"
    assert f"argument {option}: expected one of jsonl, chat, locomo, hf, synth, got 'bogus'" in err
    assert not (tmp_path / "s.toml").exists() and not (tmp_path / "out.jsonl").exists()


def test_a_registered_format_is_accepted_by_the_option() -> None:
    """The option reads the loader registry, not a list of its own: a format a plugin registers is
    a valid ``--format``."""
    from rollsum_evals.cli.args import dataset_format
    from rollsum_evals.data.formats import LOADERS

    with LOADERS.registered("myformat", LOADERS["jsonl"]):
        assert dataset_format("myformat") == "myformat"
    with pytest.raises(Exception, match="got 'myformat'"):
        dataset_format("myformat")
