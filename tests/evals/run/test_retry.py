"""``--retry-errors`` after a QA model's outage, through the real SDK on a MockTransport."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import rollsum_evals
from rollsum_evals.cli import main

from tests.support.anthropic import message_json

SPEC = """
name = "asks"
models = ["extractive"]
context_window = 3000
cache = "run"
scorers = ["answer_retention", "qa"]
[qa]
model = "anthropic:claude-haiku-4-5"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=1&messages=60&seed=4"
[[configs]]
preset = "since-last"
"""


def test_asks_that_failed_against_a_real_api_are_asked_again(tmp_path: Path, served: Any) -> None:
    """An overloaded API failed every QA call (excluded and counted); ``--retry-errors`` kept
    those Units, since only failed summaries counted as failures worth retrying."""
    down = [True]

    def api(request: httpx2.Request) -> httpx2.Response:
        if down[0]:
            return httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                                         "message": "Overloaded"}})
        return httpx2.Response(200, json=message_json("Sweden"))

    served(api)
    spec = tmp_path / "asks.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    args = ["run", str(spec), "--out", str(out), "--no-progress", "--executor", "thread"]
    assert main(args) == 0
    assert rollsum_evals.load_run(out).units["qa_failures"].sum() > 0
    down[0] = False
    assert main([*args, "--retry-errors"]) == 0
    units = rollsum_evals.load_run(out).units
    assert units["qa_failures"].sum() == 0 and (units["status"] == "ok").all()
