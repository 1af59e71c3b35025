"""Start-up cost (issue #20 item 3): `rollsum --help` imports none of the heavy harness
dependencies, and the module every command imports for its SIGTERM handling
(`rollsum_evals.run.interrupt`) does not drag the sweep loop in with it (`rollsum report` paid
~1 s for that). Checked in a fresh interpreter: this one has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "pyarrow", "rollsum_evals.run.sweep", "rollsum_evals.scoring", "nltk")

PROBE = """
import contextlib, io, json, sys
from rollsum_evals.cli import main
import rollsum_evals.run.interrupt
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["--help"])
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_help_and_the_interrupt_module_import_no_heavy_dependency() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_sweep_entry_points_still_import_from_rollsum_evals_run() -> None:
    from rollsum_evals.run import RunResult, run_sweep
    from rollsum_evals.run.sweep import RunResult as Result
    from rollsum_evals.run.sweep import run_sweep as sweep

    assert run_sweep is sweep and RunResult is Result


def test_the_report_and_the_scorer_registry_do_not_import_nltk() -> None:
    """The report (and compare, regress: anything reading the scorer registry's columns) never
    stems; the scorers' stemmed word sets are built on first use, not at import (perf20b:
    ~0.5 s of every `rollsum report` was nltk's import)."""
    probe = ("import json, sys\nimport rollsum_evals.report, rollsum_evals.scoring\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'nltk')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_lazily_stemmed_word_sets_are_the_stems() -> None:
    from rollsum_evals.scoring import copies, support

    assert support.address_words() == frozenset(support.stem(w) for w in support.ADDRESS)
    assert "congratul" in support.address_words()  # stemmed, not the raw words
    assert copies._weak() == frozenset(support.stem(w) for w in support.WEAK)
