from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals.run import run_sweep
from rollsum_evals.rundir import FORMAT_VERSION, NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.spec.parse import parse_spec

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models.fake import FakeModel

SPEC = """
name = "t"
context_window = 3000
scorers = ["answer_retention", "fact_survival", "cost", "rouge"]
cache = "run"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=3&messages=50&seed=4"

[[configs]]
preset = "full-context"

[[configs]]
preset = "truncate"

[[configs]]
preset = "since-last"
grid = { keep_last = [4, 10] }

[[configs]]
preset = "token-ratio"
"""


def _tables(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    run = rollsum_evals.load_run(path)
    return run.units.drop(columns=list(NON_DETERMINISTIC_UNIT_COLUMNS)), run.probes, run.turns


def _assert_same(a: Path, b: Path) -> None:
    for x, y in zip(_tables(a), _tables(b)):
        pd.testing.assert_frame_equal(x, y)


def test_jobs_1_and_jobs_8_give_identical_tables(tmp_path: Path) -> None:
    spec = parse_spec(SPEC, "t.toml")
    r1 = run_sweep(spec, tmp_path / "j1", jobs=1, progress=False)
    r8 = run_sweep(spec, tmp_path / "j8", jobs=8, progress=False)
    assert r1.done == r8.done == 15 and r1.errors == 0
    _assert_same(tmp_path / "j1", tmp_path / "j8")
    run = rollsum_evals.load_run(tmp_path / "j1")
    assert list(run.units["unit_id"]) == sorted(run.units["unit_id"])
    assert set(run.units["preset"]) == {"full-context", "truncate", "since-last", "token-ratio"}
    assert len(run.probes) == run.units["n_asks"].sum() > 0 and len(run.turns) == 15 * 50
    full = run.units[run.units.preset == "full-context"]
    assert (full["relative_retention"] == 1.0).all()
    assert (run.units[run.units.preset == "truncate"]["n_summaries"] == 0).all()
    assert run.summaries() and run.events()
    m = run.manifest
    assert m["status"] == "complete" and m["units_done"] == 15 and m["spec_sha256"] == spec.sha256()
    assert "pandas" in m["versions"] and m["datasets"]["chat"]["conversations"] == 3
    assert m["format_version"] == FORMAT_VERSION and len(m["replay_fingerprint"]) == 64
    # the resolved engine config of every configuration label (RollingSummarizer.config())
    assert set(m["configs"]) == set(run.units["config"])
    sl = m["configs"]["since-last[keep_last=4]"]
    assert sl["preset"] == "since-last" and sl["params"] == {"keep_last": 4}
    assert sl["engine"]["policy"]["name"] and sl["engine"]["context_window"] == 3000


def test_resume_after_a_crash_runs_only_the_missing_units(tmp_path: Path) -> None:
    spec = parse_spec(SPEC, "t.toml")
    run_sweep(spec, tmp_path / "full", jobs=2, progress=False)
    crashed = tmp_path / "crashed"
    run_sweep(spec, crashed, jobs=2, progress=False)
    # simulate a SIGKILL: 6 units committed, 2 more replayed but not scored (trace, no unit
    # line), a 9th half-written (details but no trace line), and torn last lines
    lines = (crashed / "units.jsonl").read_text().splitlines(keepends=True)
    (crashed / "units.jsonl").write_text("".join(lines[:6]) + lines[6][:40])
    committed = {json.loads(x)["unit_id"] for x in lines[:6]}
    traces = (crashed / "traces.jsonl").read_text().splitlines(keepends=True)
    kept = [t for t in traces if json.loads(t)["unit_id"] in committed]
    kept += [t for t in traces if json.loads(t)["unit_id"] not in committed][:2]
    (crashed / "traces.jsonl").write_text("".join(kept) + traces[-1][:50])
    with (crashed / "probes.jsonl").open("a") as f:
        f.write('{"unit_id": "zzz-orphan", "probe_id": "p"')
    for name in ("units.parquet", "probes.parquet", "turns.parquet"):
        (crashed / name).unlink()
    # and the manifest as a killed run leaves it: running, not sealed
    manifest = json.loads((crashed / "manifest.json").read_text())
    manifest.pop("files")
    (crashed / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    with pytest.raises(ConfigError, match="--resume"):
        run_sweep(spec, crashed, jobs=2, progress=False)
    r = run_sweep(spec, crashed, jobs=2, resume=True, progress=False)
    assert r.ran == 7 and r.scored == 2 and r.done == 15  # the two replayed Units are only scored
    _assert_same(tmp_path / "full", crashed)
    ids = [json.loads(x)["unit_id"] for x in (crashed / "units.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 15


def test_resume_refuses_a_different_spec(tmp_path: Path) -> None:
    run_sweep(parse_spec(SPEC, "t.toml"), tmp_path / "r", progress=False)
    other = parse_spec(SPEC.replace("context_window = 3000", "context_window = 4000"), "t.toml")
    # the refusal names what changed: a resume without the run's --limit or --set said only "sha256"
    with pytest.raises(ConfigError, match=r"different spec .*; it differs in context_window \(3000, now 4000\)\)"):
        run_sweep(other, tmp_path / "r", resume=True, progress=False)
    limited = parse_spec(SPEC, "t.toml", limit=1)
    with pytest.raises(ConfigError, match=r"it differs in datasets\[0\]\.limit \(unset, now 1\)"):
        run_sweep(limited, tmp_path / "r", resume=True, progress=False)


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("replay_fingerprint", "0" * 64, "replayed by other code"),
    ("format_version", 1, "run format 1"),
    ("scoring", {"scorers": ["rouge"], "probe_timing": "end"}, "was re-scored"),
    # a manifest's dataset entry always records its source (the manifest check requires it)
    ("datasets", {"chat": {"source": "synth:chat", "sha256": "e" * 64}},
     r"dataset 'chat' \(synth:chat[^)]*\) changed since the run started"),
])
def test_resume_refuses_other_code_format_scoring_or_data_in_one_line(
        tmp_path: Path, key: str, value: object, needle: str) -> None:
    spec = parse_spec(SPEC, "t.toml")
    run_sweep(spec, tmp_path / "r", progress=False)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    manifest[key] = value
    (tmp_path / "r" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=needle) as err:
        run_sweep(spec, tmp_path / "r", resume=True, progress=False)
    assert "\n" not in str(err.value)


def test_unknown_override_fails_before_any_unit_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"t\.toml:\d+: field 'configs\[\d\]\.grid\.keep_lats'"):
        parse_spec(SPEC.replace("keep_last = [4, 10]", "keep_lats = [4, 10]"), "t.toml")
    spec = parse_spec(SPEC, "t.toml")  # a spec built in code, past the parser's checks
    spec = dataclasses.replace(spec, configs=tuple(
        dataclasses.replace(c, grid={("keep_lats" if k == "keep_last" else k): v for k, v in c.grid.items()})
        for c in spec.configs))
    with pytest.raises(ConfigError, match="keep_lats"):
        run_sweep(spec, tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()


PAID = SPEC.replace("[[configs]]\npreset = \"full-context\"\n", "").replace(
    'cache = "run"', 'cache = "run"\nmodels = ["anthropic:claude-haiku-4-5"]')


def _fake_builder(spec: str) -> FakeModel | None:
    return None if spec == "extractive" else FakeModel("extractive", model="claude-haiku-4-5")


def test_budget_stops_before_it_is_passed_and_resume_finishes(tmp_path: Path) -> None:
    spec = parse_spec(PAID, "t.toml")
    r = run_sweep(spec, tmp_path / "b", jobs=2, max_cost_usd=0.05, models=_fake_builder, progress=False)
    assert r.stopped_for_budget and r.exit_code == 1
    assert 0 < r.spent_usd <= 0.05
    assert 0 < r.done < r.total
    assert rollsum_evals.load_run(tmp_path / "b").manifest["status"] == "stopped: budget"
    r2 = run_sweep(spec, tmp_path / "b", jobs=2, resume=True, models=_fake_builder, progress=False)
    assert r2.done == r2.total and not r2.stopped_for_budget


def test_no_secret_reaches_the_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-test-SECRET"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)

    class Leaky(FakeModel):
        def complete(self, request):  # type: ignore[no-untyped-def]
            raise ModelError(f"401 invalid x-api-key: {secret}", ErrorKind.CLIENT)

    spec = parse_spec(PAID, "t.toml")
    r = run_sweep(spec, tmp_path / "s", jobs=2, models=lambda s: Leaky("extractive"), progress=False)
    assert r.done == r.total
    for f in (tmp_path / "s").rglob("*"):
        if f.is_file():
            assert b"SECRET" not in f.read_bytes(), f
