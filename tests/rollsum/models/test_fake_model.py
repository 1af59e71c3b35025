"""FakeModel: the deterministic stand-in reliability tests and benchmarks rely on."""

from __future__ import annotations

import json
import threading

import pytest

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models import CompletionRequest, FakeModel, from_spec
from rollsum.models.fake import MALFORMED_JSON
from rollsum.types import Message

TRANSCRIPT = ("Alice: We decided to ship the Falcon release on Friday. Bob: I need to update the "
              "Postgres schema first. Carol: Who owns the rollback plan? Alice: Let's meet in Berlin.")


def _req(text: str = TRANSCRIPT, max_tokens: int = 100) -> CompletionRequest:
    return CompletionRequest(system="Summarize.", messages=[Message("user", text)], max_tokens=max_tokens)


def test_echo_returns_last_user_message_and_counts_calls() -> None:
    model = FakeModel("echo")
    req = CompletionRequest(system="", messages=[Message("user", "first"), Message("assistant", "x"),
                                                 Message("user", "second")])
    out = model.complete(req)
    assert out.text == "second" and model.calls == 1
    assert out.input_tokens > 0 and out.output_tokens > 0


def test_scripted_cycles_and_raises_scripted_exceptions() -> None:
    boom = ModelError("scripted", ErrorKind.SERVER)
    model = FakeModel("scripted", script=["a", boom, "c"])
    assert model.complete(_req()).text == "a"
    with pytest.raises(ModelError):
        model.complete(_req())
    assert model.complete(_req()).text == "c"
    assert model.complete(_req()).text == "a"


def test_extractive_is_deterministic_first_sentences_within_budget() -> None:
    model = FakeModel("extractive")
    out = model.complete(_req(max_tokens=20))
    assert out.text == FakeModel("extractive").complete(_req(max_tokens=20)).text
    assert len(out.text) <= 80
    assert out.text.startswith("Alice: We decided to ship the Falcon release on Friday.")


def test_json_mode_returns_the_structured_schema() -> None:
    data = json.loads(FakeModel("json").complete(_req()).text)
    assert set(data) == {"summary", "key_points", "participants", "decisions", "action_items",
                         "unresolved", "entities"}
    assert all(isinstance(data[k], list) for k in data if k != "summary")
    assert {"Alice", "Bob", "Carol"} <= set(data["participants"])
    assert "Falcon" in data["entities"] and "Berlin" in data["entities"]
    assert any("decided" in d for d in data["decisions"])
    assert any(u.endswith("?") for u in data["unresolved"])


def test_malformed_failure_in_json_mode_returns_broken_json() -> None:
    model = FakeModel("json", fail_rate=1.0, fail_kind="malformed")
    out = model.complete(_req())
    assert out.text == MALFORMED_JSON
    with pytest.raises(json.JSONDecodeError):
        json.loads(out.text)


@pytest.mark.parametrize(("kind", "expected", "status"), [
    ("429", ErrorKind.RATE_LIMIT, 429), ("500", ErrorKind.SERVER, 500),
    ("timeout", ErrorKind.TIMEOUT, None), ("malformed", ErrorKind.MALFORMED, None),
])
def test_failure_kinds_map_to_error_kinds(kind: str, expected: ErrorKind, status: int | None) -> None:
    with pytest.raises(ModelError) as info:
        FakeModel("echo", fail_rate=1.0, fail_kind=kind).complete(_req())
    assert info.value.kind is expected and info.value.status == status


def test_failure_rate_is_seeded_and_roughly_right() -> None:
    def pattern(seed: int) -> list[bool]:
        model = FakeModel("echo", fail_rate=0.3, seed=seed)
        out = []
        for _ in range(400):
            try:
                model.complete(_req())
                out.append(False)
            except ModelError:
                out.append(True)
        return out

    a, b = pattern(7), pattern(7)
    assert a == b
    assert 0.2 < sum(a) / len(a) < 0.4
    assert pattern(8) != a


def test_fail_first_then_succeed() -> None:
    model = FakeModel("echo", fail_first=2, fail_kind="429")
    for _ in range(2):
        with pytest.raises(ModelError):
            model.complete(_req())
    assert model.complete(_req()).text == TRANSCRIPT


def test_latency_goes_through_injected_sleep_with_seeded_jitter() -> None:
    slept: list[float] = []
    model = FakeModel("echo", latency_ms=50, jitter_ms=10, seed=3, sleep=slept.append)
    outs = [model.complete(_req()) for _ in range(20)]
    assert len(slept) == 20 and all(0.04 <= s <= 0.06 for s in slept)
    assert [o.latency_s for o in outs] == slept
    again: list[float] = []
    model2 = FakeModel("echo", latency_ms=50, jitter_ms=10, seed=3, sleep=again.append)
    for _ in range(20):
        model2.complete(_req())
    assert again == slept


def test_thread_safe_call_counting() -> None:
    model = FakeModel("echo")
    threads = [threading.Thread(target=lambda: [model.complete(_req()) for _ in range(50)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert model.calls == 400


def test_spec_options_parse_and_name_round_trips() -> None:
    model = from_spec("fake:mode=extractive,latency_ms=50,fail_rate=0.1,fail_kind=500,seed=1",
                      sleep=lambda s: None)
    assert isinstance(model, FakeModel)
    assert (model.mode, model.latency_ms, model.fail_rate, model.fail_kind, model.seed) == (
        "extractive", 50.0, 0.1, "500", 1)
    assert model.name == "fake:mode=extractive,latency_ms=50,fail_rate=0.1,fail_kind=500,seed=1"
    assert from_spec("fake").name == "fake"
    assert from_spec("fake:script=one|two").complete(_req()).text == "one"


@pytest.mark.parametrize("spec", ["fake:mode=poetry", "fake:fail_kind=418", "fake:latency_ms=fast",
                                  "fake:colour=blue", "fake:mode"])
def test_bad_fake_options_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        from_spec(spec)
