"""The generated-dataset cache (issue #20 item 3): a cached re-run and a report read a ``synth:``
set from disk instead of generating it again, and get exactly the generated set; any change of
the generator (version, code) or of the set's parameters generates it again; a damaged file is
generated again and replaced, never trusted."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from rollsum_evals.data import synth, synth_cache
from rollsum_evals.data.canonical import canonical_jsonl
from rollsum_evals.data.formats import load
from rollsum_evals.data.pinned import DatasetSpec, Loaded, conversations_hash, default_loader, load_dataset
from rollsum_evals.data.synth_cache import SynthCache, caching_loader
from rollsum_evals.data.types import Conversation

from tests.evals.synth_count import count_generations

SOURCE = "synth:agent?conversations=2&messages=60&seed=4"


class Counting:
    """`generate` for the cache, counting its calls."""

    def __init__(self, source: str) -> None:
        self.source, self.calls = source, 0

    def __call__(self) -> list[Conversation]:
        self.calls += 1
        return list(load(self.source))


def test_a_stored_set_is_read_back_identical_without_generating(tmp_path: Path) -> None:
    cache = SynthCache(tmp_path)
    gen = Counting(SOURCE)
    first = cache.conversations(SOURCE, gen)
    again = SynthCache(tmp_path).conversations(SOURCE, gen)
    assert gen.calls == 1
    fresh = list(load(SOURCE))
    assert again == first == fresh
    assert conversations_hash(again) == conversations_hash(fresh)
    assert [c.to_dict() for c in again] == [c.to_dict() for c in fresh]  # meta key order too


def test_other_parameters_or_another_generator_generate_the_set_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = SynthCache(tmp_path)
    cache.conversations(SOURCE, Counting(SOURCE))
    other = SOURCE.replace("seed=4", "seed=5")
    gen = Counting(other)
    assert cache.conversations(other, gen) == list(load(other)) and gen.calls == 1
    # changed generator code (its fingerprint) and a bumped GENERATOR_VERSION each miss
    gen = Counting(SOURCE)
    SynthCache(tmp_path, fingerprint="edited generator").conversations(SOURCE, gen)
    assert gen.calls == 1
    monkeypatch.setattr(synth, "GENERATOR_VERSION", synth.GENERATOR_VERSION + "-next")
    synth_cache.generator_fingerprint.cache_clear()
    try:
        gen = Counting(SOURCE)
        SynthCache(tmp_path).conversations(SOURCE, gen)
        assert gen.calls == 1
    finally:
        monkeypatch.undo()
        synth_cache.generator_fingerprint.cache_clear()


def _forge(path: Path, convs: list[Conversation]) -> None:
    """Keep the file's header (its key and checksum) but put other conversations in its body."""
    head = path.read_bytes().partition(b"\n")[0]
    body = zlib.compress(canonical_jsonl(convs), 1)
    path.write_bytes(head + b"\n" + body)


@pytest.mark.parametrize("damage", ["forged", "cut", "garbage", "empty"])
def test_a_damaged_file_is_generated_again_and_replaced(tmp_path: Path, damage: str) -> None:
    cache = SynthCache(tmp_path)
    good = cache.conversations(SOURCE, Counting(SOURCE))
    path = cache.path(SOURCE)
    data = path.read_bytes()
    if damage == "forged":
        changed = [Conversation.from_dict({**good[0].to_dict(), "id": "someone-else"}), *good[1:]]
        _forge(path, changed)
    elif damage == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"{not json\n" + data)
    else:
        path.write_bytes(b"")
    gen = Counting(SOURCE)
    assert cache.conversations(SOURCE, gen) == good and gen.calls == 1
    assert path.read_bytes() == data  # replaced by a whole file
    gen = Counting(SOURCE)
    assert cache.conversations(SOURCE, gen) == good and gen.calls == 0


def test_a_reader_stores_nothing_and_other_datasets_pass_through(tmp_path: Path) -> None:
    reader = SynthCache(tmp_path / "ro", write=False)
    gen = Counting(SOURCE)
    reader.conversations(SOURCE, gen)
    assert gen.calls == 1 and not (tmp_path / "ro").exists()
    seen: list[str] = []

    def inner(ds: DatasetSpec) -> Loaded:
        seen.append(ds.source)
        return default_loader(ds)

    loader = caching_loader(inner, SynthCache(tmp_path / "rw"))
    a = load_dataset(DatasetSpec("a", SOURCE), loader)
    b = load_dataset(DatasetSpec("a", SOURCE), loader)
    with_questions = DatasetSpec("q", SOURCE, questions=str(tmp_path / "q.jsonl"))
    with pytest.raises(Exception):  # noqa: B017 (the sidecar does not exist: the inner loader says so)
        loader(with_questions)
    assert seen == [SOURCE, SOURCE]  # generated once; the sidecar dataset went to the inner loader
    assert a.sha256 == b.sha256 == load_dataset(DatasetSpec("a", SOURCE)).sha256


def test_a_cached_rerun_reads_its_synthetic_sets_from_the_cache_and_makes_the_same_units(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum_evals.run import run_sweep
    from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS, load_run
    from rollsum_evals.spec.parse import parse_spec

    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    spec = parse_spec(f"""
name = "c"
context_window = 1500
models = ["extractive"]
scorers = ["answer_retention", "cost"]
cache = "user"

[[datasets]]
name = "chat"
source = "{SOURCE}"

[[configs]]
preset = "since-last"
params = {{ messages_per_summary = 6, keep_last = 4 }}
""", "c.toml")
    run_sweep(spec, tmp_path / "a")
    stored = list((tmp_path / "cache" / "datasets").glob("*.synth"))
    assert len(stored) == 1
    calls = count_generations(monkeypatch)
    res = run_sweep(spec, tmp_path / "b")
    assert calls == [] and res.cached == res.total
    a, b = load_run(tmp_path / "a"), load_run(tmp_path / "b")
    drop = list(NON_DETERMINISTIC_UNIT_COLUMNS)
    assert a.units.drop(columns=drop).equals(b.units.drop(columns=drop))
    assert a.manifest["datasets"] == b.manifest["datasets"]
    # a report's traces come from the stored set too, and match the run's dataset hash
    b.load_trace(str(b.units["unit_id"].iloc[0]))
    assert calls == []
