"""The committed nightly gate against bugs injected into the library, end to end through the CLI.

The spec is the committed `evals/sweeps/nightly.toml` (every configuration, label and probe
timing unchanged) on its first two conversations per dataset; the baseline is promoted from an
unchanged run. Each bug is injected in-process (monkeypatching the library, threads executor)
or through `--set`, and the run is gated with the default tolerances:

- the summary never reaches the context,
- the summarizer forgets earlier summaries (each summary sees only its own span),
- since-last's verbatim tail shrinks from 10 to 8 messages,

must each fail the gate, on the configurations they touch and not on the others; an unchanged
re-run passes. The per-ask pairing is what makes this possible: issue #9 measured that the old
interval-based gate passed the first bug and called the second an improvement.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.cli import main
from rollsum_evals.spec import components
from rollsum_evals.spec.parse import load_spec

from rollsum.engine import RollingSummarizer
from rollsum.summarizers.extractive import ExtractiveSummarizer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
NIGHTLY = ROOT / "evals" / "sweeps" / "nightly.toml"


def _small_nightly(tmp: Path) -> Path:
    # the nightly's own generated datasets, only the first two conversations of each
    text, n = re.subn(r'(source = "synth:[^"]+")', lambda m: f"{m.group(1)}\nlimit = 2", NIGHTLY.read_text())
    assert n == len(load_spec(NIGHTLY).datasets)
    spec = tmp / "nightly-small.toml"
    spec.write_text(text)
    return spec


class Gate:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.spec = _small_nightly(root)
        self.baseline = root / "baselines" / "nightly.json"
        self.summarizing = sorted(c.label or c.preset for c in load_spec(self.spec).configs
                                  if not components.is_baseline(c.preset))

    def run(self, name: str, *extra: str) -> Path:
        out = self.root / name
        assert main(["run", str(self.spec), "--out", str(out), "--executor", "thread", "--jobs", "1",
                     "--no-progress", *extra]) == 0
        return out

    def regress(self, run: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, set[str]]:
        capsys.readouterr()
        code = main(["regress", str(run), "--baseline", str(self.baseline), "--resamples", "200", *extra])
        out = capsys.readouterr().out
        regressed = {line.split()[0] for line in out.splitlines()
                     if "paired" in line and line.rstrip().endswith("REGRESSION")}
        return code, regressed


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    g = Gate(tmp_path_factory.mktemp("gate"))
    base = g.run("base")
    assert main(["regress", str(base), "--baseline", str(g.baseline), "--promote"]) == 0
    yield g


def test_an_unchanged_rerun_passes(gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    code, regressed = gate.regress(gate.run("again"), capsys)
    assert (code, regressed) == (0, set())


def test_removing_summaries_from_the_context_fails_every_summarizing_config(
        gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    context = RollingSummarizer.context

    def without_summary(self: RollingSummarizer, system: str | None = None) -> list[Any]:
        hidden = self._window.summary_hidden
        self._window.summary_hidden = True
        try:
            return context(self, system)
        finally:
            self._window.summary_hidden = hidden

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RollingSummarizer, "context", without_summary)
        run = gate.run("no-summary")
    code, regressed = gate.regress(run, capsys)
    assert code == 1
    assert regressed == set(gate.summarizing)  # the baselines never had a summary to lose


def test_a_summarizer_that_forgets_earlier_summaries_fails(gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    summarize = ExtractiveSummarizer.summarize

    def forgetful(self: ExtractiveSummarizer, request: Any) -> Any:
        return summarize(self, dataclasses.replace(request, previous=None))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ExtractiveSummarizer, "summarize", forgetful)
        run = gate.run("forgetful")
    code, regressed = gate.regress(run, capsys)
    assert code == 1
    assert "since-last" in regressed and regressed <= set(gate.summarizing)


def test_a_shorter_verbatim_tail_fails_only_the_config_it_changes(gate: Gate,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, regressed = gate.regress(gate.run("keep-last-8", "--set", "since-last.keep_last=8"), capsys)
    assert (code, regressed) == (1, {"since-last"})
