"""Record/replay cassettes: exact offline replays, and misses that say what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollsum.errors import ConfigError
from rollsum.models import CompletionRequest, FakeModel, RecordingModel, ReplayMissError, ReplayModel, from_spec
from rollsum.types import Message


def _req(text: str, *, system: str = "Summarize.", prompt_id: str = "narrative@1") -> CompletionRequest:
    return CompletionRequest(system=system, messages=[Message("user", text)], max_tokens=50,
                             prompt_id=prompt_id, metadata={"purpose": "summary"})


def test_record_then_replay_returns_identical_completions(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    recorder = ReplayModel.record(FakeModel("extractive"), cassette)
    texts = ["Alice likes tea. Bob likes coffee.", "The deploy is on Friday. Nobody objected."]
    recorded = [recorder.complete(_req(t)) for t in texts]
    replay = ReplayModel(cassette)
    replayed = [replay.complete(_req(t)) for t in texts]
    assert [r.text for r in replayed] == [r.text for r in recorded]
    assert [(r.input_tokens, r.output_tokens) for r in replayed] == [
        (r.input_tokens, r.output_tokens) for r in recorded]
    assert all(r.cached for r in replayed)
    assert replay.recorded_models == ("fake:mode=extractive",) or replay.recorded_models == ("fake",)


def test_cassette_lines_hold_hash_readable_request_response_and_usage(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    ReplayModel.record(FakeModel("echo"), cassette).complete(_req("hello there"))
    entry = json.loads(cassette.read_text().splitlines()[0])
    assert len(entry["key"]) == 64
    assert "hello there" in entry["summary"]
    assert entry["request"]["messages"] == [{"role": "user", "content": "hello there"}]
    assert entry["response"]["text"] == "hello there"
    assert entry["usage"]["calls"] == 1


def test_miss_names_the_request_and_the_closest_recording(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    rec = ReplayModel.record(FakeModel("echo"), cassette)
    rec.complete(_req("Alice likes tea."))
    rec.complete(_req("Completely different text about rockets."))
    with pytest.raises(ReplayMissError) as info:
        ReplayModel(cassette).complete(_req("Alice likes tea.", prompt_id="narrative@2"))
    msg = str(info.value)
    assert "narrative@2" in msg and "closest recorded" in msg
    assert "prompt_id" in msg and "Alice likes tea" in msg
    assert not info.value.retryable


def test_repeated_request_replays_in_recorded_order(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    rec = ReplayModel.record(FakeModel("scripted", script=["first", "second"]), cassette)
    rec.complete(_req("same"))
    rec.complete(_req("same"))
    replay = ReplayModel(cassette)
    assert [replay.complete(_req("same")).text for _ in range(3)] == ["first", "second", "second"]


def test_missing_or_corrupt_cassette_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        ReplayModel(tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a", "response": {"text": "x"}}\nnot json\n')
    with pytest.raises(ConfigError, match="line 2"):
        ReplayModel(bad)


def test_specs_build_recorder_and_replayer(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = from_spec(f"record:{cassette}:fake:mode=echo")
    assert isinstance(recorder, RecordingModel)
    recorder.complete(_req("x"))
    replay = from_spec(f"replay:{cassette}")
    assert replay.complete(_req("x")).text == "x"
    assert replay.name == f"replay:{cassette}"
