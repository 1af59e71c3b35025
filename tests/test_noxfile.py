"""The nightly nox session gates fresh results: a new run directory every time, never --resume."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


class FakeSession:
    """Records what a nox session would run (nox's Session needs a real virtualenv)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, ...]] = []
        self.posargs: list[str] = []

    def install(self, *args: str) -> None:
        pass

    def run(self, *args: str, **kwargs: Any) -> None:
        self.runs.append(args)

    def error(self, message: str) -> None:
        raise AssertionError(message)


def _nightly() -> Any:
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.nightly.func if hasattr(module.nightly, "func") else module.nightly


def test_nightly_never_resumes_and_gates_the_directory_it_just_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROLLSUM_OUT", raising=False)
    session = FakeSession()
    _nightly()(session)
    run, report, regress = session.runs
    assert run[:3] == ("rollsum", "run", "evals/sweeps/nightly.toml")
    assert "--resume" not in run and "--no-unit-cache" in run
    out = run[run.index("--out") + 1]
    assert out.startswith("runs/nightly-") and not (ROOT / out).exists()
    assert report == ("rollsum", "report", out)
    assert regress[:3] == ("rollsum", "regress", out) and "--promote" not in regress
    assert "--record-history" not in regress  # the baseline directory is tracked
