"""A real sweep through `rollsum run` + `rollsum report`: a configuration whose summarizer fails on
every call, one that overflows the window, one that thrashes and one healthy configuration. The
healthy one must rank first, whatever the others' retention, and configs.csv must say what is
wrong with each of the others.

Every condition comes from real preset parameters, no injection: the failing summarizer is the
fake model with ``fail_rate=1.0``; since-last with ``messages_per_summary=1, keep_last=0``
and the engine's attempt cap off (``min_messages_per_attempt=0``) calls the summarizer on
every message; count-and-tokens whose trigger never fires in the window, with its window guard
turned off (``enforce_window=false``), overflows (after the library's fixes no preset overflows
with its guard on); full context in the same small window overflows too, and as a baseline it
is a reference, not a candidate.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rollsum_evals import scoring
from rollsum_evals.cli import main

pytestmark = pytest.mark.skipif("health" not in scoring.names(),
                                reason="needs the health scorer (issue #9, scoring half)")

SPEC = """
name = "verdicts"
models = ["extractive"]
context_window = 4000

[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=200&seed=3"

[[configs]]
preset = "since-last"
label = "healthy"

[[configs]]
preset = "since-last"
label = "always-fails"
models = ["fake:mode=extractive,fail_rate=1.0"]

[[configs]]
preset = "since-last"
label = "thrashes"
params = { messages_per_summary = 1, keep_last = 0, min_messages_per_attempt = 0 }  # the engine cap off

[[configs]]
preset = "count-and-tokens"
label = "overflows"
params = { token_threshold = 100000, enforce_window = false }

[[configs]]
preset = "full-context"
label = "full-context"
"""


def test_the_healthy_configuration_ranks_first_and_the_others_carry_their_status(tmp_path: Path) -> None:
    spec = tmp_path / "verdicts.toml"
    spec.write_text(SPEC)
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--jobs", "2", "--no-progress"]) == 0
    assert main(["report", str(run), "--out", str(tmp_path / "report"), "--resamples", "200"]) == 0
    with (tmp_path / "report" / "configs.csv").open(newline="") as fh:
        # labels carry the model where configurations differ in it: healthy[model=extractive]
        rows = {r["config"].split("[")[0]: r for r in csv.DictReader(fh)}
    assert next(iter(rows)) == "healthy"
    assert (rows["healthy"]["rank"], rows["healthy"]["status"], rows["healthy"]["pareto"]) == ("1", "ok", "True")
    expected = {"always-fails": ("broken", "broken"), "thrashes": ("degraded", "thrashing"),
                "overflows": ("infeasible", "overflow"), "full-context": ("reference", "overflow")}
    for cfg, (status, flag) in expected.items():
        row = rows[cfg]
        assert (row["rank"], row["status"], row["pareto"]) == ("", status, "False"), (cfg, row)
        assert flag in row["flags"].split(";"), (cfg, row["flags"])
    assert float(rows["thrashes"]["summarizer_calls_per_message"]) > 0.5
    assert rows["always-fails"]["failures"] == rows["always-fails"]["summarizer_attempts"] != "0"
    assert int(rows["overflows"]["overflow_turns"]) > 0 and float(rows["overflows"]["max_context_ratio"]) > 1
    html = (tmp_path / "report" / "report.html").read_text()
    for title in ("Degraded", "Broken", "Infeasible", "References"):
        assert f'<h2 class="warn">{title}' in html
