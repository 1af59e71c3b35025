"""evals/sweeps/agents.toml (issue #23): clearing, clear+since-last and every summarizing preset
against a truncate grid dense enough to match tokens, on synthetic agent sessions."""

from __future__ import annotations

import itertools
from pathlib import Path

from rollsum_evals.spec import components
from rollsum_evals.spec.parse import load_spec

from rollsum import presets

SPEC = Path(__file__).resolve().parents[3] / "evals" / "sweeps" / "agents.toml"


def test_the_agents_spec_compares_clearing_with_every_preset_and_a_dense_truncate_grid() -> None:
    spec = load_spec(SPEC)
    names = {c.preset for c in spec.configs}
    summarizing = {n for n in presets.names() if not components.is_baseline(n)}
    assert names >= summarizing | {"truncate", "clear-tool-results", "clear+since-last", "full-context"}
    (grid,) = [c.grid["keep"] for c in spec.configs if c.preset == "truncate" and c.grid]
    assert all(b / a <= 1.1 for a, b in itertools.pairwise(grid))
    assert {d.source.split("?")[0] for d in spec.datasets} == {"synth:agent"}
    # a window where clearing matters: well below a session's full context
    assert spec.context_windows == (8000,)
