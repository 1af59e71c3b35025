"""Run the real `rollsum` CLI on a bad input and check how it refuses it (issue #11).

The contract every malformed-input case checks: exit code 2, exactly one line on stderr (naming
the file, line or field, what was expected and what was found), no ``Traceback``, and nothing
written that should not be (no run directory, nothing outside the case's own directory).

`run_cli` runs ``rollsum_evals.cli.main`` in this process (fast: the corpus has a hundred
cases) with its own stdout/stderr, working directory, ``HOME`` and cache directory, and with
logging set up exactly as the command does it (the test runner's log capture is taken off the
root logger for the call, so a WARNING reaches stderr as it would in a terminal). An exception
that escapes `main` is what a user would see as a traceback: it is formatted into `stderr` and
the code is 1, like the interpreter's. ``subprocess=True`` runs ``python -m rollsum_evals``
instead, for the cases where a real process matters.

Usage::

    from tests.evals.cli.malformed import refused

    def test_spec_not_utf8(tmp_path):
        (tmp_path / "s.toml").write_bytes(b"name = '\\xff'")
        refused(["run", "s.toml"], tmp_path, needle="s.toml")
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import logging
import os
import subprocess as sp
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

EXIT_USAGE = 2
HOME, CACHE = ".home", ".cache"
"""Under the case's directory: ``HOME`` and ``ROLLSUM_CACHE_DIR`` for the call."""


@dataclass(frozen=True, slots=True)
class Outcome:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    written: tuple[str, ...] = ()
    """Paths (relative to the watched root, ``/`` separated, directories end in ``/``) that the
    call created."""

    @property
    def lines(self) -> list[str]:
        """The non-blank lines of stderr."""
        return [ln for ln in self.stderr.splitlines() if ln.strip()]

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    def describe(self) -> str:
        return (f"rollsum {' '.join(self.argv)}\n-> exit {self.code}\n--- stderr ---\n{self.stderr}"
                f"--- stdout ---\n{self.stdout[-2000:]}\n--- written ---\n{list(self.written)}")


def snapshot(root: Path) -> set[str]:
    """Every file and directory under `root` (relative, ``/``-separated; directories end in ``/``)."""
    out: set[str] = set()
    if not root.exists():
        return out
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        out.update(prefix + d + "/" for d in dirs)
        out.update(prefix + f for f in files)
    return out


@contextlib.contextmanager
def _isolated(cwd: Path, env: Mapping[str, str]) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """The process state `main` touches: cwd, environment, stdout/stderr, the root logger."""
    old_cwd, old_env = os.getcwd(), dict(os.environ)
    root = logging.getLogger()
    old_handlers, old_level = root.handlers[:], root.level
    out, err = io.StringIO(), io.StringIO()
    os.chdir(cwd)
    os.environ.update(env)
    root.handlers = []  # so the command's logging.basicConfig writes to this call's stderr
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        for h in root.handlers:
            if h not in old_handlers:
                h.close()
        root.handlers = old_handlers
        root.setLevel(old_level)
        os.environ.clear()
        os.environ.update(old_env)
        os.chdir(old_cwd)


def _case_env(root: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    base = {"HOME": str(root / HOME), "ROLLSUM_CACHE_DIR": str(root / CACHE), "COLUMNS": "200"}
    return {**base, **(env or {})}


def run_cli(argv: Sequence[str], cwd: Path, *, env: Mapping[str, str] | None = None,
            subprocess: bool = False, stdin: str | None = None, timeout: float = 300,
            watch: Path | None = None) -> Outcome:
    """Run ``rollsum ARGV`` in `cwd` and record what it wrote under `watch` (default `cwd`)."""
    from rollsum_evals.cli import main

    watch = watch or cwd
    before = snapshot(watch)
    case_env = _case_env(cwd, env)
    if subprocess:
        proc = sp.run([sys.executable, "-m", "rollsum_evals", *argv], cwd=cwd, capture_output=True, text=True,
                      env={**os.environ, **case_env, "PYTHONSAFEPATH": "1"}, input=stdin, timeout=timeout,
                      check=False)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    else:
        with _isolated(cwd, case_env) as (out, err), contextlib.ExitStack() as stack:
            if stdin is not None:
                stack.enter_context(_stdin(stdin))
            try:
                code = int(main(list(argv)) or 0)
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # what the user would see: a traceback and exit 1
                err.write(traceback.format_exc())
                code = 1
        stdout, stderr = out.getvalue(), err.getvalue()
    written = tuple(sorted(snapshot(watch) - before))
    return Outcome(tuple(argv), code, stdout, stderr, written)


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    old = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = old


def check_refused(outcome: Outcome, *, needle: str | Sequence[str] = (), may_write: Sequence[str] = ()) -> None:
    """Assert the refusal contract: exit 2, one line on stderr (holding every `needle`), no
    traceback, and nothing written except paths matching a `may_write` glob."""
    info = outcome.describe()
    assert not outcome.traceback, info
    assert outcome.code == EXIT_USAGE, info
    assert len(outcome.lines) == 1, info
    for n in [needle] if isinstance(needle, str) else needle:
        assert n in outcome.lines[0], f"{n!r} not in the error line\n{info}"
    unexpected = [p for p in outcome.written if not any(fnmatch.fnmatch(p, g) for g in may_write)
                  and not p.startswith((HOME + "/", CACHE + "/")) and p not in (HOME + "/", CACHE + "/")
                  and not lock_file(p)]
    assert not unexpected, f"written although refused: {unexpected}\n{info}"


def lock_file(path: str) -> bool:
    """An existing run directory's lock file (`rundir.lock`): a command that writes a run takes
    the lock before it reads anything, and the file stays (removing it would race the next
    writer). Its run directory must already exist: a new ``DIR/`` is still caught."""
    return path.endswith("/run.lock") or path == "run.lock"


def refused(argv: Sequence[str], cwd: Path, *, needle: str | Sequence[str] = (), may_write: Sequence[str] = (),
            env: Mapping[str, str] | None = None, subprocess: bool = False, stdin: str | None = None,
            watch: Path | None = None) -> Outcome:
    """`run_cli` + `check_refused`: the one call a malformed-input case makes."""
    outcome = run_cli(argv, cwd, env=env, subprocess=subprocess, stdin=stdin, watch=watch)
    check_refused(outcome, needle=needle, may_write=may_write)
    return outcome
