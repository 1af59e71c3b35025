from __future__ import annotations

import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals.data.pinned import load_dataset
from rollsum_evals.run import run_sweep
from rollsum_evals.run.provenance import replay_fingerprint
from rollsum_evals.run.sweep import replay_cache_key
from rollsum_evals.rundir.journal import ReplayLines, ScoredLines
from rollsum_evals.rundir.unit_cache import UnitCache
from rollsum_evals.spec.expand import expand
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.spec.schema import SweepSpec
from rollsum_evals.units import Unit

from rollsum.models.base import Completion, CompletionRequest
from rollsum.models.fake import FakeModel

SPEC = """
name = "uc"
context_window = 3000
scorers = ["answer_retention", "fact_survival", "cost", "rouge"]
models = ["fake:mode=extractive"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=40&seed=5"

[[configs]]
preset = "full-context"

[[configs]]
preset = "since-last"
grid = { keep_last = [4, 8] }

[[configs]]
preset = "token-ratio"
"""


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(d))
    return d


_CLOCK_KEYS = {"created_at", "latency_s", "summarizer_latency_s", "wall_s"}


def _strip(obj: Any, keys: set[str]) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_strip(v, keys) for v in obj]
    return obj


def _assert_same_run(a: Path, b: Path, *, both_replayed: bool = False) -> None:
    """Cached vs replayed: identical except wall_s. Two replays also differ in clock readings
    (created_at, latencies), which are masked only for that comparison."""
    keys = _CLOCK_KEYS if both_replayed else {"wall_s"}
    ra, rb = rollsum_evals.load_run(a), rollsum_evals.load_run(b)
    cols = [c for c in ra.units.columns if c in keys]
    pd.testing.assert_frame_equal(ra.units.drop(columns=cols), rb.units.drop(columns=cols))
    pd.testing.assert_frame_equal(ra.probes, rb.probes)
    pd.testing.assert_frame_equal(ra.turns, rb.turns)
    for xs, ys in ((ra.summaries(), rb.summaries()), (ra.events(), rb.events())):
        assert xs
        assert sorted(map(repr, _strip(xs, keys))) == sorted(map(repr, _strip(ys, keys)))


def test_identical_rerun_is_copied_from_the_unit_cache_row_for_row(tmp_path: Path, cache_dir: Path) -> None:
    spec = parse_spec(SPEC, "uc.toml")
    first = run_sweep(spec, tmp_path / "a", jobs=2, progress=False)
    assert first.cached == 0 and first.ran == first.total == 8
    second = run_sweep(spec, tmp_path / "b", jobs=2, progress=False)
    assert second.cached == 8 and second.ran == 0 and second.done == 8
    _assert_same_run(tmp_path / "a", tmp_path / "b")
    m = rollsum_evals.load_run(tmp_path / "b").manifest
    assert m["unit_cache"]["enabled"] and m["unit_cache"]["hits"] == 8 and m["unit_cache"]["misses"] == 0
    assert rollsum_evals.load_run(tmp_path / "a").manifest["unit_cache"]["stored"] == 8
    assert (cache_dir / "units.sqlite").exists()


class _TimedModel(FakeModel):
    """Reports the latency it really took, like a real API model: two replays never agree."""

    def complete(self, request: CompletionRequest) -> Completion:
        start = time.perf_counter()
        time.sleep(0.0005)
        c = super().complete(request)
        return Completion(c.text, c.input_tokens, c.output_tokens, c.model, time.perf_counter() - start,
                          c.stop_reason)


def _timed(spec: str) -> FakeModel | None:
    return None if spec == "extractive" else _TimedModel("extractive")


def test_cached_run_matches_a_replayed_run_even_for_summarizer_latency(tmp_path: Path, cache_dir: Path) -> None:
    """Only wall_s may differ: the cached run copies even measured latency verbatim, while a
    forced replay of the same Units measures new latencies (so this test can fail)."""
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", jobs=1, progress=False, models=_timed, unit_cache=True)
    b_res = run_sweep(spec, tmp_path / "b", jobs=1, progress=False, models=_timed, unit_cache=True)
    c_res = run_sweep(spec, tmp_path / "c", jobs=1, progress=False, models=_timed, unit_cache=False)
    assert b_res.cached == 8 and c_res.ran == 8
    a, b, c = (rollsum_evals.load_run(tmp_path / x).units for x in "abc")
    assert (a["summarizer_latency_s"] > 0).any() and (b["n_summaries"] > 0).any()
    assert list(a["summarizer_latency_s"]) == list(b["summarizer_latency_s"])
    assert list(a["summarizer_latency_s"]) != list(c["summarizer_latency_s"])


def test_no_unit_cache_replays_everything_and_records_it(tmp_path: Path, cache_dir: Path) -> None:
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    r = run_sweep(spec, tmp_path / "b", progress=False, unit_cache=False)
    assert r.cached == 0 and r.ran == 8
    m = rollsum_evals.load_run(tmp_path / "b").manifest
    assert m["unit_cache"] == {"enabled": False, "path": None, "hits": 0, "replay_hits": 0, "misses": 0,
                              "stored": 0, "scores_stored": 0}
    _assert_same_run(tmp_path / "a", tmp_path / "b", both_replayed=True)


@pytest.mark.parametrize("mode", ["off", "run"])
def test_spec_cache_off_or_run_local_disables_the_unit_cache(tmp_path: Path, cache_dir: Path, mode: str) -> None:
    spec = parse_spec(SPEC.replace('name = "uc"', f'name = "uc"\ncache = "{mode}"'), "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    r = run_sweep(spec, tmp_path / "b", progress=False)
    assert r.cached == 0 and r.ran == 8
    assert not (cache_dir / "units.sqlite").exists()


def test_a_changed_unit_or_code_fingerprint_is_a_miss(tmp_path: Path, cache_dir: Path) -> None:
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    other = parse_spec(SPEC.replace("keep_last = [4, 8]", "keep_last = [4, 9]"), "uc.toml")
    r = run_sweep(other, tmp_path / "b", progress=False)
    assert r.cached == 6 and r.ran == 2  # only the new grid point replays (2 conversations)
    unit = next(iter(_units(spec)))
    assert replay_cache_key(unit, replay_fingerprint()) != replay_cache_key(unit, "0" * 64)


def test_resume_never_reads_the_unit_cache(tmp_path: Path, cache_dir: Path) -> None:
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    out = tmp_path / "b"
    run_sweep(spec, out, progress=False, unit_cache=False)
    for name in ("units.jsonl", "traces.jsonl"):
        lines = (out / name).read_text().splitlines(keepends=True)
        (out / name).write_text("".join(lines[:3]))
    r = run_sweep(spec, out, resume=True, progress=False)
    assert r.cached == 0 and r.ran == 5 and r.done == 8
    _assert_same_run(tmp_path / "a", out, both_replayed=True)


def test_injected_models_bypass_the_unit_cache(tmp_path: Path, cache_dir: Path) -> None:
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    r = run_sweep(spec, tmp_path / "b", progress=False, models=lambda s: FakeModel("extractive"))
    assert r.cached == 0 and r.ran == 8


def test_a_secret_in_the_environment_is_never_copied_from_the_cache(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry stored before a key was set could hold that key's text: it is replayed (and
    redacted), never copied."""
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    # some text that is certainly in the cached rows becomes "secret"
    probe_q = rollsum_evals.load_run(tmp_path / "a").probes["question"].iloc[0]
    monkeypatch.setenv("SOME_SERVICE_TOKEN", probe_q)
    r = run_sweep(spec, tmp_path / "b", progress=False)
    assert r.cached < 8
    assert probe_q.encode() not in (tmp_path / "b" / "probes.jsonl").read_bytes()


def test_cache_never_stores_a_secret(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-api03-VERYSECRET-abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    run_sweep(parse_spec(SPEC, "uc.toml"), tmp_path / "a", progress=False)
    con = sqlite3.connect(cache_dir / "units.sqlite")
    blobs = [zlib.decompress(b) for (b,) in con.execute("SELECT payload FROM unit_results")]
    con.close()
    assert blobs and all(b"VERYSECRET" not in b for b in blobs)


def test_unreadable_cache_file_is_a_warning_not_a_failed_sweep(tmp_path: Path, cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True)
    (cache_dir / "units.sqlite").write_bytes(b"this is not a database" * 100)
    r = run_sweep(parse_spec(SPEC, "uc.toml"), tmp_path / "a", progress=False)
    assert r.done == 8 and r.cached == 0


def test_unit_cache_round_trips_exact_journal_text(tmp_path: Path) -> None:
    cache = UnitCache(tmp_path / "u.sqlite")
    replay = ReplayLines(texts={"t1": '{"id": "t1", "content": "é"}\n'}, summaries="", events="",
                         traces='{"unit_id": "u1", "x": NaN}\n')
    scored = ScoredLines(probes='{"unit_id": "u1", "probe_id": "p"}\n', units='{"unit_id": "u1"}\n')
    assert cache.put("k1", "u1", replay) and cache.put("s1", "u1", scored)
    assert cache.get_replays({"u1": "k1", "u2": "k2"}) == {"u1": replay}
    assert cache.get_scores({"u1": "s1"}) == {"u1": scored}
    # a key stored for another unit id is never handed out under this one
    assert cache.get_replays({"u9": "k1"}) == {} and cache.get_scores({"u9": "s1"}) == {}
    cache.close()


def _units(spec: SweepSpec) -> list[Unit]:
    ds = {d.name: load_dataset(d) for d in spec.datasets}
    return expand(spec, {n: (d.sha256, [c.id for c in d.conversations]) for n, d in ds.items()})


def test_adding_a_scorer_reuses_the_replays_and_changing_a_timing_too(tmp_path: Path, cache_dir: Path) -> None:
    """Scoring is not part of the replay: a spec with another scorer or probe timing replays
    nothing, scores every cached replay, and gives the tables a cold run would."""
    spec = parse_spec(SPEC, "uc.toml")
    run_sweep(spec, tmp_path / "a", progress=False)
    more = (SPEC.replace('"cost", "rouge"]', '"cost", "rouge", "qa"]')
            + '\n[qa]\nmodel = "fake:mode=echo"\n\n[probes]\nages = [4, 9]\n')
    spec2 = parse_spec(more, "uc.toml")
    r = run_sweep(spec2, tmp_path / "b", progress=False)
    assert (r.ran, r.cached, r.scored) == (0, 0, 8)
    cold = run_sweep(spec2, tmp_path / "c", progress=False, unit_cache=False)
    assert cold.ran == 8
    _assert_same_run(tmp_path / "b", tmp_path / "c", both_replayed=True)
    again = run_sweep(spec2, tmp_path / "d", progress=False)
    assert (again.ran, again.cached, again.scored) == (0, 8, 0)


def test_payload_slices_back_exact_texts_and_a_cut_or_padded_entry_is_refused() -> None:
    """Entries are stored as an index of lengths plus the texts back to back (no JSON escaping of
    journal lines): every field comes back character for character — quotes, backslashes,
    newlines, non-ASCII, empty fields, no texts — a first-format entry (one JSON object) still
    reads, and an entry whose lengths do not add up is a ValueError (a miss), never a cut line."""
    import json

    from rollsum_evals.rundir.unit_cache import PAYLOAD_MAGIC, decode_payload, encode_payload

    replay = ReplayLines(texts={"t1": '{"content": "a \\"q\\" \\\\ é 🙂\\nb"}\n', "t2": "", "t3": "x\n"},
                         summaries="", events='{"unit_id": "u1"}\n{"unit_id": "u1", "k": 2}\n',
                         traces='{"unit_id": "u1", "x": NaN}\n')
    scored = ScoredLines(probes="", units='{"unit_id": "u1"}\n')
    empty = ReplayLines(texts={}, summaries="", events="", traces='{"unit_id": "u2"}\n')
    for lines in (replay, scored, empty):
        text = encode_payload(lines.to_json())
        assert text.startswith(PAYLOAD_MAGIC)
        assert decode_payload(text) == lines.to_json()
        assert type(lines).from_json(decode_payload(text)) == lines
        assert decode_payload(json.dumps(lines.to_json(), ensure_ascii=False)) == lines.to_json()
        for bad in (text[:-1], text + "x"):
            with pytest.raises(ValueError):
                decode_payload(bad)


def test_a_damaged_entry_is_a_miss_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An entry whose text was cut (same compression, wrong length) is never handed out."""
    cache = UnitCache(tmp_path / "u.sqlite")
    replay = ReplayLines(texts={}, summaries="", events="", traces='{"unit_id": "u1"}\n')
    assert cache.put("k1", "u1", replay)
    cache.close()
    with sqlite3.connect(tmp_path / "u.sqlite") as conn:
        (blob,) = conn.execute("SELECT payload FROM unit_results WHERE key = 'k1'").fetchone()
        cut = zlib.compress(zlib.decompress(blob)[:-2], 1)
        conn.execute("UPDATE unit_results SET payload = ? WHERE key = 'k1'", (cut,))
    cache = UnitCache(tmp_path / "u.sqlite")
    assert cache.get_replays({"u1": "k1"}) == {}
    assert "unreadable" in caplog.text
    cache.close()


def test_lookups_hand_back_each_hits_decoded_commit_line(tmp_path: Path) -> None:
    """`commit_rows` receives the trace line of a replay hit and the units line of a scores hit
    (what the sweep needs of a copied Unit, decoded once), and nothing for a miss."""
    cache = UnitCache(tmp_path / "u.sqlite")
    replay = ReplayLines(texts={}, summaries="", events="", traces='{"unit_id": "u1", "unit": {"a": 1}}\n')
    scored = ScoredLines(probes='{"unit_id": "u1", "p": 1}\n', units='{"unit_id": "u1", "status": "ok"}\n')
    assert cache.put("k1", "u1", replay) and cache.put("s1", "u1", scored)
    traces: dict[str, dict[str, Any]] = {}
    rows: dict[str, dict[str, Any]] = {}
    assert cache.get_replays({"u1": "k1", "u2": "k2"}, commit_rows=traces) == {"u1": replay}
    assert cache.get_scores({"u1": "s1"}, commit_rows=rows) == {"u1": scored}
    assert traces == {"u1": {"unit_id": "u1", "unit": {"a": 1}}}
    assert rows == {"u1": {"unit_id": "u1", "status": "ok"}}
    cache.close()
