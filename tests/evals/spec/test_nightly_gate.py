"""The nightly gate end to end on a small real sweep: the committed nightly's probe ages must
make a shrunken verbatim tail a regression, and an unchanged re-run must pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
NIGHTLY = ROOT / "evals" / "sweeps" / "nightly.toml"


def _small_nightly(tmp: Path) -> Path:
    """The committed nightly's probe timing and since-last config on 4 committed conversations."""
    ages = load_spec(NIGHTLY).raw["probes"]["ages"]
    spec = tmp / "nightly-small.toml"
    spec.write_text(f"""
name = "nightly-small"
context_window = 8000
cache = "off"

[probes]
ages = {ages}
end = false

[[datasets]]
name = "agent-small"
source = "{ROOT / 'datasets' / 'synthetic' / 'agent-small.jsonl'}"
limit = 4

[[configs]]
preset = "since-last"
label = "since-last"
params = {{ keep_last = 10 }}

[[configs]]
preset = "full-context"
label = "full-context"
""")
    return spec


def _run(spec: Path, out: Path, *extra: str) -> None:
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--no-progress", *extra]) == 0


def test_gate_passes_an_unchanged_rerun_and_fails_a_shrunken_tail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _small_nightly(tmp_path)
    baseline = tmp_path / "baselines" / "nightly.json"
    _run(spec, tmp_path / "base")
    assert main(["regress", str(tmp_path / "base"), "--baseline", str(baseline), "--promote"]) == 0
    _run(spec, tmp_path / "again")
    assert main(["regress", str(tmp_path / "again"), "--baseline", str(baseline)]) == 0
    _run(spec, tmp_path / "kl2", "--set", "since-last.keep_last=2")
    capsys.readouterr()
    assert main(["regress", str(tmp_path / "kl2"), "--baseline", str(baseline)]) == 1
    gate = capsys.readouterr().out
    assert any(line.startswith("since-last") and "retention" in line and "REGRESSION" in line
               for line in gate.splitlines()), gate
    assert (tmp_path / "baselines" / "nightly.history.jsonl").read_text().count("\n") == 3


def test_committed_specs_parse_and_use_their_probe_timing() -> None:
    for name in ("quickstart", "thresholds", "prompts-ab"):
        spec = load_spec(ROOT / "evals" / "sweeps" / f"{name}.toml")
        assert spec.probes.key == "sampled:1+end", name
        assert "health" in spec.scorers, name
    assert load_spec(NIGHTLY).probes.ask == "ages" and load_spec(NIGHTLY).probes.ages
    nightly = load_spec(NIGHTLY)
    assert all(not d.source.startswith(("synth:", "@")) for d in nightly.datasets)
    assert nightly.models == ("extractive",)
