"""The bundled vs-truncate spec and `compare --match-tokens` on a real replay."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.spec import components
from rollsum_evals.spec.parse import load_spec

from rollsum import presets

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "evals" / "sweeps" / "vs-truncate.toml"
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"


def test_the_spec_runs_every_summarizing_preset_against_a_dense_truncate_grid() -> None:
    spec = load_spec(SPEC)
    summarizing = {n for n in presets.names() if not components.is_baseline(n)}
    assert {c.preset for c in spec.configs} >= summarizing | {"truncate"}
    (grid,) = [c.grid["keep"] for c in spec.configs if c.preset == "truncate"]
    # adjacent keep values at most 10 % apart: any token level in range has one within 5 %
    assert all(b / a <= 1.1 for a, b in itertools.pairwise(grid))
    assert "locomo" not in {d.name for d in spec.datasets}
    with_locomo = load_spec(SPEC, locomo=str(LOCOMO))
    assert "locomo" in {d.name for d in with_locomo.datasets}


def test_match_tokens_on_a_real_run_pairs_each_conversation_within_5_percent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (grid,) = [c.grid["keep"] for c in load_spec(SPEC).configs if c.preset == "truncate"]
    spec = tmp_path / "small.toml"
    spec.write_text(f"""
name = "vs-truncate-small"
models = ["extractive"]
context_window = 8000
[[datasets]]
name = "synth-chat"
source = "synth:chat?conversations=5&messages=240&seed=41"
[[configs]]
preset = "since-last"
[[configs]]
preset = "truncate"
params = {{ max_tokens = 8000 }}
grid = {{ keep = {[k for k in grid if k <= 120]} }}
""")
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--executor", "thread", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(out), "--a", "since-last", "--b", "truncate", "--match-tokens",
                 "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("synth-chat/")]
    assert len(rows) == 5
    for line in rows:  # the grid is dense enough that every conversation matches within 5 %
        cells = re.split(r"\s{2,}", line.strip())
        assert cells[5] == "yes" and cells[2].startswith("truncate[keep="), printed
        gap = float(re.search(r"([+-]\d+\.\d)%", line).group(1))  # type: ignore[union-attr]
        assert abs(gap) <= 5.0
    assert "verdict (retention)" in printed
