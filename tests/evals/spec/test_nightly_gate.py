"""The committed sweep specs parse with their probe timing; the nightly uses fixed committed data
and an offline model. The gate end to end on the nightly (injected bugs fail it, an unchanged
re-run passes): tests/evals/regress/test_gate_catches_breakage.py."""

from __future__ import annotations

from pathlib import Path

from rollsum_evals.spec.parse import load_spec

ROOT = Path(__file__).resolve().parents[3]
NIGHTLY = ROOT / "evals" / "sweeps" / "nightly.toml"


def test_committed_specs_parse_and_use_their_probe_timing() -> None:
    for name in ("quickstart", "thresholds", "prompts-ab"):
        spec = load_spec(ROOT / "evals" / "sweeps" / f"{name}.toml")
        assert spec.probes.key == "sampled:1+end", name
        assert "health" in spec.scorers, name
    assert load_spec(NIGHTLY).probes.ask == "ages" and load_spec(NIGHTLY).probes.ages
    nightly = load_spec(NIGHTLY)
    # fixed data: generator specs with a seed (the committed files' recorded specs,
    # tests/evals/cli/test_start.py), never LoCoMo, which may be absent
    assert all(d.source.startswith("synth:") and "seed=" in d.source for d in nightly.datasets)
    assert nightly.models == ("extractive",)
