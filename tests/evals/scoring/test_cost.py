"""The cost scorer's prices for the model specs a sweep names, through a real run on the SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import rollsum_evals
from rollsum_evals.cli import main
from rollsum_evals.scoring.cost import price

from rollsum.types import Usage
from tests.support.anthropic import message_json

SPEC = """
name = "recording"
models = ["record:{cassette}:anthropic:claude-haiku-4-5"]
context_window = 3000
cache = "off"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=80&seed=1"
[[configs]]
preset = "since-last"
"""


def test_a_recording_sweep_costs_what_its_model_billed(tmp_path: Path, served: Any) -> None:
    """``record:PATH:anthropic:X`` was priced as a model named "PATH:anthropic:X": unknown, $0.
    The run's summarizer cost and its spend (so --max-cost-usd) counted nothing of real calls."""
    calls = served(lambda request: httpx2.Response(
        200, json=message_json("A summary of the earlier talk.", input_tokens=1000, output_tokens=100)))
    spec = tmp_path / "recording.toml"
    spec.write_text(SPEC.format(cassette=tmp_path / "cassette.jsonl"))
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--no-progress", "--executor", "thread"]) == 0
    assert calls
    paid = len(calls) * 0.0015  # 1,000 in + 100 out at $1 / $5 per MTok
    units = rollsum_evals.load_run(out).units
    assert units["cost_summarizer_usd"].sum() == pytest.approx(paid)
    assert json.loads((out / "manifest.json").read_text())["spent_usd"] == pytest.approx(paid)


@pytest.mark.parametrize(("spec", "usd"), [
    ("anthropic:claude-haiku-4-5", 0.0015), ("record:c.jsonl:anthropic:claude-haiku-4-5", 0.0015),
    ("claude-haiku-4-5", 0.0015), ("replay:c.jsonl", 0.0), ("extractive", 0.0), ("fake:mode=echo", 0.0)])
def test_price_of_each_spec_form(spec: str, usd: float) -> None:
    assert price(spec, Usage(1000, 100, calls=1)) == pytest.approx(usd)
