"""A small *replayed* run (a synthetic chat through the real sweep), for tests that need the
conversation behind the traces: the drill-down rebuilds contexts from the pinned dataset, which
`fakerun` does not have."""

from __future__ import annotations

from pathlib import Path

from rollsum_evals.cli import main

GRID_SPEC = """
name = "grid"
context_window = 1500
cache = "off"
scorers = ["answer_retention", "fact_survival", "cost"]
[probes]
ages = [5, 30]
end = true
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=90&seed=3"
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 10], messages_per_summary = [5, 20] }
[[configs]]
preset = "truncate"
[[configs]]
preset = "full-context"
"""


def grid_run(root: Path, spec_text: str = GRID_SPEC) -> Path:
    """Run `spec_text` into root/run (offline, deterministic) and return the run directory."""
    root.mkdir(parents=True, exist_ok=True)
    spec = root / "grid.toml"
    spec.write_text(spec_text)
    out = root / "run"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--no-progress", "--no-unit-cache"]) == 0
    return out
