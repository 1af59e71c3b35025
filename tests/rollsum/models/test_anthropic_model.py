"""AnthropicModel driven through the real SDK on a MockTransport: no network, real code paths."""

from __future__ import annotations

import itertools
import json
import socket
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest

from rollsum import RollingSummarizer
from rollsum.errors import ConfigError, ErrorKind, MissingCredentials, ModelError
from rollsum.models import CompletionRequest, from_spec
from rollsum.models.anthropic_model import (
    MISSING_KEY_MESSAGE,
    AnthropicModel,
    resolve_model_name,
    to_messages_api,
)
from rollsum.types import Message

MakeClient = Callable[..., anthropic.Anthropic]
TEST_KEY = "sk-ant-test-SECRET"
Recorder = Any
Msg = Callable[..., dict[str, Any]]


def _request(**kw: object) -> CompletionRequest:
    base: dict[str, object] = {"system": "Summarize.", "messages": [Message("user", "Alice met Bob.")],
                               "max_tokens": 64}
    base.update(kw)
    return CompletionRequest(**base)  # type: ignore[arg-type]


def _body(rec: Recorder, i: int = 0) -> dict[str, object]:
    body: dict[str, object] = json.loads(rec.requests[i].content)
    return body


def test_success_returns_text_usage_and_stop_reason(
        sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(200, json=msg("A summary.", input_tokens=120, output_tokens=9,
                                                          cache_read=30, cache_write=5)))
    model = AnthropicModel(sdk_client(rec), "claude-haiku-4-5")
    out = model.complete(_request(stop=("END",), temperature=0.0))
    assert out.text == "A summary."
    assert (out.input_tokens, out.output_tokens, out.cache_read_tokens, out.cache_write_tokens) == (120, 9, 30, 5)
    assert out.stop_reason == "end_turn"
    assert out.model == "claude-haiku-4-5-20251001"
    assert out.latency_s >= 0 and not out.cached
    body = _body(rec)
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == "Summarize."
    assert body["max_tokens"] == 64
    assert body["stop_sequences"] == ["END"]
    assert body["temperature"] == 0.0
    assert rec.requests[0].url.path == "/v1/messages"
    headers = rec.requests[0].headers
    assert TEST_KEY in headers.get("x-api-key", "") + headers.get("authorization", "")


def test_temperature_left_out_for_models_that_reject_sampling_params(
        sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(200, json=msg()))
    AnthropicModel(sdk_client(rec), "claude-sonnet-5").complete(_request(temperature=0.0))
    assert "temperature" not in _body(rec)


def test_conversion_merges_roles_and_lifts_system_messages() -> None:
    req = _request(system="Base.", messages=[
        Message("assistant", "Hi, how can I help?"),
        Message("system", "Be brief."),
        Message("user", "one"),
        Message("user", "two"),
        Message("tool", "exit 0", name="bash"),
        Message("assistant", ""),
    ])
    system, turns = to_messages_api(req)
    assert system == "Base.\n\nBe brief."
    roles = [t["role"] for t in turns]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert turns[2]["content"].startswith("one\n\ntwo\n\n[tool result: bash]")
    assert turns[-1]["content"].strip()  # the API rejects empty text blocks


def test_429_carries_retry_after_and_is_retryable(sdk_client: MakeClient, recorder: Recorder) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    rec = recorder(httpx2.Response(429, headers={"retry-after": "7"}, json=error))
    model = AnthropicModel(sdk_client(rec, max_retries=0))
    with pytest.raises(ModelError) as info:
        model.complete(_request())
    err = info.value
    assert err.kind is ErrorKind.RATE_LIMIT and err.retryable
    assert err.retry_after == 7.0 and err.status == 429
    assert "slow down" in str(err)


def test_sdk_retries_429_then_succeeds_when_asked_to(sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(429, headers={"retry-after-ms": "1"},
                                   json={"type": "error", "error": {"type": "rate_limit_error", "message": "x"}}),
                   httpx2.Response(200, json=msg("ok")))
    out = AnthropicModel(sdk_client(rec), max_retries=2).complete(_request())
    assert out.text == "ok" and len(rec.requests) == 2


def test_500_then_success_when_asked_to(sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(500, headers={"retry-after-ms": "1"},
                                   json={"type": "error", "error": {"type": "api_error", "message": "boom"}}),
                   httpx2.Response(200, json=msg("recovered")))
    out = AnthropicModel(sdk_client(rec), max_retries=1).complete(_request())
    assert out.text == "recovered" and len(rec.requests) == 2


def test_the_sdk_does_not_retry_by_default_even_on_an_injected_client(
        sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    """The engine owns retries: an injected client built with SDK retries is re-optioned."""
    boom = httpx2.Response(500, headers={"retry-after-ms": "1"},
                           json={"type": "error", "error": {"type": "api_error", "message": "boom"}})
    rec = recorder(boom)
    model = AnthropicModel(sdk_client(rec, max_retries=3))
    assert model.client.max_retries == 0
    with pytest.raises(ModelError):
        model.complete(_request())
    assert len(rec.requests) == 1


@pytest.mark.parametrize("status", [500, 503, 529])
def test_server_errors_are_retryable_when_retries_run_out(
        sdk_client: MakeClient, status: int, recorder: Recorder) -> None:
    rec = recorder(httpx2.Response(status, json={"type": "error", "error": {"type": "overloaded_error",
                                                                           "message": "busy"}}))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec, max_retries=0)).complete(_request())
    assert info.value.kind is ErrorKind.SERVER and info.value.retryable and info.value.status == status


def test_timeout_is_retryable(sdk_client: MakeClient) -> None:
    def hang(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(hang)).complete(_request())
    assert info.value.kind is ErrorKind.TIMEOUT and info.value.retryable


def test_connection_error_is_retryable(sdk_client: MakeClient) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(refuse)).complete(_request())
    assert info.value.kind is ErrorKind.CONNECTION and info.value.retryable


@pytest.mark.parametrize(("status", "message", "kind"), [
    (400, "messages: field required", ErrorKind.CLIENT),
    (400, "prompt is too long: 250000 tokens > 200000 maximum", ErrorKind.OVERFLOW),
    (401, "invalid x-api-key", ErrorKind.AUTH),
    (403, "your key has no access to this model", ErrorKind.AUTH),
    (404, "model not found", ErrorKind.CLIENT),
])
def test_client_errors_are_not_retryable(sdk_client: MakeClient, status: int, message: str,
                                         kind: ErrorKind, recorder: Recorder) -> None:
    rec = recorder(httpx2.Response(status, json={"type": "error", "error": {"type": "x", "message": message}}))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec)).complete(_request())
    assert info.value.kind is kind and not info.value.retryable
    assert len(rec.requests) == 1
    assert "SECRET" not in str(info.value)


def test_malformed_json_is_a_validation_error(sdk_client: MakeClient, recorder: Recorder) -> None:
    rec = recorder(httpx2.Response(200, content=b'{"id": "msg", "content": [',
                                   headers={"content-type": "application/json"}))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec)).complete(_request())
    assert info.value.kind is ErrorKind.MALFORMED and not info.value.retryable


def test_empty_content_is_an_empty_error(sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(200, json=msg(content=[])))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec)).complete(_request())
    assert info.value.kind is ErrorKind.EMPTY and not info.value.retryable


@pytest.mark.parametrize("content", [[], [{"type": "text", "text": "I can't help with that."}]])
def test_a_refusal_is_a_failed_call_not_an_answer(
        sdk_client: MakeClient, recorder: Recorder, msg: Msg, content: list[dict[str, Any]]) -> None:
    """A refusal with text was returned as a Completion: the engine kept "I can't help with that."
    as the summary of the span it archived, and the QA scorer scored it F1 0 as an answer."""
    rec = recorder(httpx2.Response(200, json=msg(stop_reason="refusal", content=content)))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec)).complete(_request())
    assert info.value.kind is ErrorKind.REFUSAL and not info.value.retryable
    assert len(rec.requests) == 1


def test_max_tokens_stop_is_reported_not_hidden(sdk_client: MakeClient, recorder: Recorder, msg: Msg) -> None:
    rec = recorder(httpx2.Response(200, json=msg("cut off mid", stop_reason="max_tokens")))
    out = AnthropicModel(sdk_client(rec)).complete(_request(max_tokens=3))
    assert out.stop_reason == "max_tokens" and out.text == "cut off mid"


def test_missing_key_fails_at_construction_with_one_clear_line() -> None:
    with pytest.raises(MissingCredentials) as info:
        AnthropicModel(model="claude-haiku-4-5")
    assert str(info.value) == MISSING_KEY_MESSAGE
    with pytest.raises(MissingCredentials):
        from_spec("anthropic:claude-haiku-4-5")


def test_key_from_environment_builds_a_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    model = from_spec("anthropic:claude-haiku-4-5", max_retries=0, timeout=5.0)
    assert model.name == "anthropic:claude-haiku-4-5"
    assert "SECRET" not in repr(model)


def test_model_names_are_validated_against_the_sdk() -> None:
    assert resolve_model_name("claude-haiku-4-5-latest") == "claude-haiku-4-5"
    assert resolve_model_name("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5-20250929"
    with pytest.raises(ConfigError, match="claude-haiku-4-5"):
        resolve_model_name("claude-haiku-9")
    assert resolve_model_name("claude-haiku-9", allow_unknown=True) == "claude-haiku-9"


def test_count_tokens_uses_the_api(sdk_client: MakeClient, recorder: Recorder) -> None:
    rec = recorder(httpx2.Response(200, json={"input_tokens": 42}))
    assert AnthropicModel(sdk_client(rec)).count_tokens(_request()) == 42
    assert rec.requests[0].url.path == "/v1/messages/count_tokens"


def test_network_guard_blocks_real_connections() -> None:
    with pytest.raises(RuntimeError, match="real network connection"):
        socket.create_connection(("192.0.2.1", 443))
    client = anthropic.Anthropic(api_key=TEST_KEY, base_url="http://192.0.2.1", max_retries=0)
    with pytest.raises((ModelError, RuntimeError)):
        AnthropicModel(client).complete(_request())


@pytest.mark.parametrize("engine_retries", [0, 1, 3])
def test_a_persistent_500_costs_exactly_the_engines_retries(
        sdk_client: MakeClient, recorder: Recorder, engine_retries: int) -> None:
    """One retry policy end to end (issue #14): the SDK's retries (here a client built with 2)
    never multiply the engine's, so one trigger costs `retries + 1` HTTP calls, no more."""
    from rollsum import RollingSummarizer
    from tests.support.helpers import chat

    rec = recorder(httpx2.Response(500, headers={"retry-after-ms": "1"},
                                   json={"type": "error", "error": {"type": "api_error", "message": "boom"}}))
    model = AnthropicModel(sdk_client(rec, max_retries=2))
    rs = RollingSummarizer.from_preset("since-last", model, retries=engine_retries, sleep=lambda s: None)
    for m in chat(20):
        rs.add(m)
    assert rs.last_events[-1].kind == "failure" and rs.last_events[-1].error_kind == "server"
    assert len(rec.requests) == engine_retries + 1


@pytest.mark.parametrize("usage", [None, {"input_tokens": "many", "output_tokens": 2}])
def test_a_response_without_readable_usage_is_a_malformed_error(
        sdk_client: MakeClient, recorder: Recorder, msg: Msg, usage: dict[str, Any] | None) -> None:
    """It was an AttributeError (or ValueError) out of `complete`: not a `ModelError`, so the QA
    scorer's failure accounting missed it and the Unit's whole scoring ended as an error."""
    body = msg("an answer")
    if usage is None:
        del body["usage"]
    else:
        body["usage"] = usage
    rec = recorder(httpx2.Response(200, json=body))
    with pytest.raises(ModelError) as info:
        AnthropicModel(sdk_client(rec)).complete(_request())
    assert info.value.kind is ErrorKind.MALFORMED and not info.value.retryable


def test_a_refused_summary_archives_nothing(sdk_client: MakeClient, msg: Msg) -> None:
    """Through the engine: every summary call is refused with text, so no summary is made and
    every message stays in the context (before, the refusal became the summary of the archived span)."""
    def refuse(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=msg("I can't help with that.", stop_reason="refusal"))

    rs = RollingSummarizer.from_preset("since-last", model=AnthropicModel(sdk_client(refuse)), sleep=lambda s: None)
    for i in range(25):
        rs.add(Message("user" if i % 2 == 0 else "assistant", f"message {i} about the plan"))
    assert rs.summary is None
    assert "I can't help" not in "".join(m.content for m in rs.context())
    assert sum(1 for m in rs.context() if m.content.startswith("message ")) == 25
