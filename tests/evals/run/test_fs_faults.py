"""File-system faults end a command with one line, never a traceback (issue #11): a disk that
fills up mid-sweep leaves a manifest that says ``interrupted`` and why (written in place when no
new file fits) and a run that ``--resume`` finishes exactly; a read-only output directory is
one line and nothing run; a cache that cannot be opened is a warning and a miss.

The faults are injected where the harness meets the disk (`journal.append_text`, the temporary
file of `fileio.atomic_writer`, `os.mkdir`), with the errno the kernel gives, so the test runs
as root and on any file system.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from rollsum_evals import fileio
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS, journal

from tests.evals.cli.malformed import run_cli

SPEC = """
name = "faults"
context_window = 1500
models = ["fake:mode=extractive"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=3&messages=40&seed=5"

[[configs]]
preset = "since-last"
params = { messages_per_summary = 6, keep_last = 2 }
"""
RUN = ("run", "s.toml", "--out", "out", "--no-progress", "--jobs", "1")


def _full(path: object) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", str(path))


def _table(path: Path, name: str) -> pd.DataFrame:
    df = pd.read_parquet(path / f"{name}.parquet")
    return df.drop(columns=[c for c in NON_DETERMINISTIC_UNIT_COLUMNS if c in df.columns]).reset_index(drop=True)


def test_a_full_disk_mid_sweep_is_one_line_and_the_manifest_says_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.toml").write_text(SPEC)
    real_append, real_mkstemp = journal.append_text, tempfile.mkstemp
    appended: list[str] = []

    def append(path: Path, text: str) -> None:
        if text and path.name == "units.jsonl" and appended:
            disk["full"] = True
        if disk["full"] and text:
            raise _full(path)
        real_append(path, text)
        if text and path.name == "units.jsonl":
            appended.append(text)

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        if disk["full"]:  # no room for a new file: the manifest must be rewritten in place
            raise _full(kwargs.get("dir", "?"))
        return real_mkstemp(*args, **kwargs)

    disk = {"full": False}
    monkeypatch.setattr(journal, "append_text", append)
    monkeypatch.setattr(fileio.tempfile, "mkstemp", mkstemp)
    out = run_cli(RUN, tmp_path)
    assert out.code == 2 and len(out.lines) == 1 and not out.traceback, out.describe()
    assert "disk full" in out.lines[0] and "units.jsonl" in out.lines[0] and "--resume" in out.lines[0], out.lines
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted", manifest["status"]
    assert "disk full" in manifest["reason"] and "units.jsonl" in manifest["reason"]

    # space freed: --resume finishes it, and the tables are those of a run that never failed
    monkeypatch.setattr(journal, "append_text", real_append)
    monkeypatch.setattr(fileio.tempfile, "mkstemp", real_mkstemp)
    done = run_cli((*RUN, "--resume"), tmp_path)
    assert done.code == 0, done.describe()
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["status"] == "complete"
    ref = run_cli(("run", "s.toml", "--out", "ref", "--no-progress", "--jobs", "1"), tmp_path)
    assert ref.code == 0, ref.describe()
    for name in ("units", "probes"):
        pd.testing.assert_frame_equal(_table(tmp_path / "out", name), _table(tmp_path / "ref", name))


def test_a_read_only_output_directory_is_one_line_and_nothing_runs(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "ro").mkdir()
    real_mkdir = os.mkdir

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path).resolve().is_relative_to((tmp_path / "ro").resolve()):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    out = run_cli(("run", "s.toml", "--out", "ro/run", "--no-progress", "--jobs", "1"), tmp_path)
    assert out.code == 2 and len(out.lines) == 1 and not out.traceback, out.describe()
    assert "read-only file system" in out.lines[0] and "ro/run" in out.lines[0], out.lines
    assert not list((tmp_path / "ro").iterdir())


def test_a_cache_that_cannot_be_opened_is_a_warning_and_a_miss(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "cachefile").write_text("a file where the cache directory should be\n")
    out = run_cli(RUN, tmp_path, env={"ROLLSUM_CACHE_DIR": str(tmp_path / "cachefile")})
    assert out.code == 0, out.describe()
    assert "3/3 units" in out.stdout and not out.traceback
    warnings = [ln for ln in out.lines if ln.startswith("WARNING")]
    assert len(warnings) == 2 and all("cache" in ln for ln in warnings), out.describe()
    assert any("unit cache" in ln for ln in warnings) and any("model cache" in ln for ln in warnings)
    assert _table(tmp_path / "out", "units")["status"].eq("ok").all()
