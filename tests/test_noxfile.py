"""Nox sessions install only what they run and say so before pip starts."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


class FakeSession:
    def __init__(self, posargs: list[str]) -> None:
        self.posargs = posargs
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def log(self, *args: Any) -> None:
        self.calls.append(("log", args))

    def install(self, *args: Any) -> None:
        self.calls.append(("install", args))

    def run(self, *args: Any, **kw: Any) -> None:
        self.calls.append(("run", args))

    def error(self, *args: Any) -> None:
        raise AssertionError(args)


@functools.cache
def _noxfile() -> Any:
    pytest.importorskip("nox")
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "posargs", "extras"), [
    ("tests", [], ".[dev,ray]"), ("lint", [], ".[dev]"), ("demo", [], ".[harness]"),
    ("sweep", ["spec.toml"], ".[harness]"), ("ab", ["s", "a", "b"], ".[harness]"),
    ("nightly", [], ".[harness]"), ("bench", [], ".[harness]"), ("browser", [], ".[dev,browser]"),
])
def test_each_session_installs_only_what_it_runs_and_says_so_first(name: str, posargs: list[str], extras: str) -> None:
    session = FakeSession(posargs)
    func = getattr(_noxfile(), name)
    getattr(func, "func", func)(session)
    kinds = [k for k, _ in session.calls]
    installs = [args for k, args in session.calls if k == "install"]
    assert installs == [("-e", extras)]
    assert kinds.index("log") < kinds.index("install")
    said = " ".join(str(a) for k, args in session.calls if k == "log" for a in args)
    assert extras.strip(".[]") in said and ("ruff" in said) == (extras == ".[dev]")


def test_nightly_never_resumes_and_gates_the_directory_it_just_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh run directory every time, never --resume, no Unit cache: the gate never passes on
    yesterday's (or older code's) results (issue #9)."""
    monkeypatch.delenv("ROLLSUM_OUT", raising=False)
    session = FakeSession([])
    func = _noxfile().nightly
    getattr(func, "func", func)(session)
    run, report, regress = [args for k, args in session.calls if k == "run"]
    assert run[:3] == ("rollsum", "run", "evals/sweeps/nightly.toml")
    assert "--resume" not in run and "--no-unit-cache" in run
    out = run[run.index("--out") + 1]
    assert out.startswith("runs/nightly-") and not (ROOT / out).exists()
    assert report == ("rollsum", "report", out)
    assert regress[:3] == ("rollsum", "regress", out) and "--promote" not in regress
    assert "--record-history" not in regress  # the baseline directory is tracked
