"""The committed synthetic sets are reproducible from the committed generator."""

import json
from pathlib import Path

import pytest
from rollsum_evals.data import dataset_hash, parse_synth_spec, validate, write_streamed
from rollsum_evals.data.synth import GENERATOR_VERSION

SYNTH_DIR = Path(__file__).resolve().parents[3] / "datasets" / "synthetic"
MANIFEST = json.loads((SYNTH_DIR / "manifest.json").read_text())


def test_datasets_is_data_only_never_a_package() -> None:
    assert not list(SYNTH_DIR.parent.rglob("__init__.py"))


@pytest.mark.parametrize("name", sorted(MANIFEST["files"]))
def test_committed_file_matches_its_manifest_hash(name: str) -> None:
    assert dataset_hash(SYNTH_DIR / name) == MANIFEST["files"][name]["sha256"]


@pytest.mark.parametrize("name", sorted(MANIFEST["files"]))
def test_regenerating_with_the_manifest_spec_reproduces_the_bytes(name: str, tmp_path: Path) -> None:
    entry = MANIFEST["files"][name]
    assert entry["generator_version"] == GENERATOR_VERSION
    out = tmp_path / name
    write_streamed(parse_synth_spec(entry["spec"]), out)
    assert dataset_hash(out) == entry["sha256"]


@pytest.mark.parametrize("name", sorted(MANIFEST["files"]))
def test_committed_sets_validate_cleanly(name: str) -> None:
    report = validate(SYNTH_DIR / name)
    assert report.ok and not report.warnings
