"""Developer and CI entry points. `nox -s tests` is the one test command (README and CI)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True


WHAT = {
    "dev": "the harness (pandas, pyarrow, numpy, datasets, matplotlib, ...) plus pytest, hypothesis, ruff, mypy",
    "harness": "the harness (pandas, pyarrow, numpy, datasets, matplotlib, nltk, rouge-score, tqdm); "
               "no test or lint tools",
    "dev,local": "the dev toolchain plus llama-cpp-python (compiled: about 4 minutes)",
    "dev,browser": "the dev toolchain plus playwright (drives headless Chromium)",
    "dev,ray": "the dev toolchain plus ray (the Ray executor's tests start a 2-node cluster on loopback)",
}
BROWSER_TESTS = ("tests/evals/report/test_report_browser.py", "tests/evals/report/test_drilldown_browser.py")


def _install(session: nox.Session, extras: str) -> None:
    """Each session installs only what it runs: `dev` for tests and lint, `harness` for the
    sessions that run the `rollsum` command. Said before pip starts: on a fresh virtualenv the
    install is the slow part (a minute or two, several hundred MB), and a silent wait looks hung."""
    session.log(f"installing rollsum[{extras}]: {WHAT.get(extras, extras)} (first run in this "
                "virtualenv: 1-2 minutes; reused after)")
    session.install("-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, offline. Extra pytest arguments pass through: `nox -s tests -- -k seeds`.
    With the ray extra, so the Ray executor's cluster tests run too (``loadgroup``: they share
    one cluster on one xdist worker instead of starting one on each)."""
    _install(session, "dev,ray")
    workers = "2" if (os.cpu_count() or 1) > 1 else "0"
    session.run("pytest", "-n", workers, "--dist", "loadgroup", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy over the library, the harness, the tests and the benchmarks (mypy's file
    list is in pyproject.toml)."""
    _install(session, "dev")
    session.run("ruff", "check", "rollsum", "evals", "tests", "benchmarks", "noxfile.py")
    session.run("mypy")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: the offline quickstart sweep and its report; prints the report's path."""
    _install(session, "harness")
    session.run("rollsum", "demo", *session.posargs)


@nox.session
def sweep(session: nox.Session) -> None:
    """Run a sweep spec and report it: `nox -s sweep -- evals/sweeps/thresholds.toml`."""
    _install(session, "harness")
    if not session.posargs:
        session.error("usage: nox -s sweep -- SPEC [rollsum run options]")
    out = os.environ.get("ROLLSUM_OUT", "runs/sweep")
    session.run("rollsum", "run", *session.posargs, "--out", out, "--resume")
    session.run("rollsum", "report", out)


@nox.session
def ab(session: nox.Session) -> None:
    """A/B two configurations of one sweep: `nox -s ab -- SPEC CONFIG_A CONFIG_B`."""
    _install(session, "harness")
    if len(session.posargs) != 3:
        session.error("usage: nox -s ab -- SPEC CONFIG_A CONFIG_B")
    spec, a, b = session.posargs
    out = os.environ.get("ROLLSUM_OUT", "runs/ab")
    session.run("rollsum", "run", spec, "--out", out, "--resume")
    session.run("rollsum", "compare", out, "--a", a, "--b", b)


@nox.session
def nightly(session: nox.Session) -> None:
    """Nightly sweep, report, and the regression gate against the committed baseline.

    Every night replays into a fresh directory (`runs/nightly-<UTC time>`, or ROLLSUM_OUT) and
    never resumes: a gate that re-read yesterday's run, or one replayed by older code, would
    pass on stale numbers (issue #9). `rollsum run` refuses a directory that already holds a run
    without --resume, so a reused ROLLSUM_OUT stops the session instead of gating it. The Unit
    cache is off too: the gate measures this code, not a cached replay of other code.
    """
    _install(session, "harness")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = os.environ.get("ROLLSUM_OUT") or f"runs/nightly-{stamp}"
    session.run("rollsum", "run", "evals/sweeps/nightly.toml", "--out", out, "--no-unit-cache")
    session.run("rollsum", "report", out)
    session.run("rollsum", "regress", out, "--baseline", "reports/baselines/nightly.json")


@nox.session
def browser(session: nox.Session) -> None:
    """The report rendered and clicked through in headless Chromium. Uses the machine's
    Chromium when there is one; otherwise installs Playwright's own build (a download)."""
    import shutil

    _install(session, "dev,browser")
    if not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")):
        session.log("no Chromium on PATH: installing Playwright's Chromium (about 150 MB download)")
        session.run("python", "-m", "playwright", "install", "chromium")
    session.run("pytest", "-m", "slow", *BROWSER_TESTS, *session.posargs)


@nox.session
def local(session: nox.Session) -> None:
    """Installs the local-model extra (builds llama-cpp-python, ~4 min) and runs its tests."""
    _install(session, "dev,local")
    session.run("pytest", "-m", "local", "tests/rollsum/models", *session.posargs)


@nox.session
def peers(session: nox.Session) -> None:
    """Installs the peers extra (LangChain, LlamaIndex), runs their tests, and the peers sweep
    (the five presets beside both peer memories, offline) and its report."""
    _install(session, "harness,dev,peers")
    session.run("pytest", "tests/evals/peers", *session.posargs)
    out = os.environ.get("ROLLSUM_OUT", "runs/peers")
    session.run("rollsum", "run", "evals/sweeps/peers.toml", "--out", out, "--resume")
    session.run("rollsum", "report", out)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks; each prints a table (they need the harness, not the test tools)."""
    _install(session, "harness")
    for script in ("bench_replay.py", "bench_ledger.py", "bench_models.py", "bench_sweep.py"):
        session.run("python", f"benchmarks/{script}", *session.posargs)
