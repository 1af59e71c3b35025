"""The Anthropic context-management peers, driven through the real `anthropic` SDK on an
httpx2 MockTransport: the request bodies and headers are the documented beta API's, and what
the API answers (a cleared-tool count, a compaction block) shapes the context and the next
request. No network: the suite's socket guard stays on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from rollsum_evals.peers.anthropic_api import (
    CLEARED,
    COMPACTION_BETA,
    CONTEXT_EDITING_BETA,
    CompactionMemory,
    ContextEditingMemory,
)

from rollsum.errors import ConfigError
from rollsum.models.anthropic_model import AnthropicModel
from rollsum.models.base import Completion, CompletionRequest
from rollsum.models.cache import CachedModel, CacheFile
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryEvent
from tests.support.helpers import fake

Handler = Callable[[httpx2.Request], httpx2.Response]


class Api:
    """A MockTransport handler: answers each request with the next body, keeps the requests."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]
        return httpx2.Response(200, json=body)

    def body(self, i: int) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.requests[i].content)
        return out


def reply(content: list[dict[str, Any]] | None = None, *, stop_reason: str = "end_turn",
          context_management: dict[str, Any] | None = None, iterations: list[dict[str, Any]] | None = None,
          input_tokens: int = 100, output_tokens: int = 3) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if iterations is not None:
        usage["iterations"] = iterations
    body: dict[str, Any] = {
        "id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "ok"}] if content is None else content,
        "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}
    if context_management is not None:
        body["context_management"] = context_management
    return body


@pytest.fixture
def model_on() -> Iterator[Callable[[Handler], AnthropicModel]]:
    made: list[httpx2.Client] = []

    def make(handler: Handler) -> AnthropicModel:
        http = httpx2.Client(transport=httpx2.MockTransport(handler))
        made.append(http)
        client = anthropic.Anthropic(api_key="sk-ant-test-SECRET", http_client=http, max_retries=0)
        return AnthropicModel(client, "claude-sonnet-4-6")

    yield make
    for http in made:
        http.close()


def agent_turns() -> list[Message]:
    return [Message("system", "You are a coding agent."), Message("user", "Fix the failing test."),
            Message("assistant", "Reading the test."), Message("tool", "def test_a(): ...", name="read_file"),
            Message("tool", "FAILED test_a: KeyError 'id'", name="bash"),
            Message("tool", "src/a.py:12: payload['id']", name="grep"),
            Message("tool", "def build(): return {}", name="read_file"),
            Message("user", "What failed?")]


def blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for turn in body["messages"] for b in turn["content"] if b["type"] == kind]


def test_context_editing_sends_the_documented_edit_and_clears_what_the_api_cleared(
        model_on: Callable[[Handler], AnthropicModel]) -> None:
    applied = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2,
                                  "cleared_input_tokens": 40}]}
    api = Api(reply(context_management=applied))
    memory = ContextEditingMemory(model=model_on(api), context_window=8000, counter=HeuristicCounter(),
                                  trigger=3000, keep=1, clear_at_least=500, exclude_tools=["bash"])
    messages = [m.with_id(f"m{i}") for i, m in enumerate(agent_turns())]
    for m in messages:
        memory.add(m)
        context = memory.context()
    # one call: after each user message or tool result; none for the assistant message
    assert len(api.requests) == 6
    request = api.requests[-1]
    assert request.url.path == "/v1/messages"
    assert CONTEXT_EDITING_BETA in request.headers["anthropic-beta"].split(",")
    body = api.body(-1)
    assert body["context_management"] == {"edits": [{
        "type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 3000},
        "keep": {"type": "tool_uses", "value": 1}, "clear_at_least": {"type": "input_tokens", "value": 500},
        "exclude_tools": ["bash"]}]}
    assert body["model"] == "claude-sonnet-4-6" and body["system"] == "You are a coding agent."
    # every tool message is a tool_use / tool_result pair with one id, the tools are declared
    uses, results = blocks(body, "tool_use"), blocks(body, "tool_result")
    assert [u["name"] for u in uses] == ["read_file", "bash", "grep", "read_file"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert len({r["tool_use_id"] for r in results}) == 4
    assert {t["name"] for t in body["tools"]} == {"read_file", "bash", "grep"}
    roles = [t["role"] for t in body["messages"]]
    assert roles == ["user", "assistant"] * 4 + ["user"]  # alternating, a call answered by its result
    assert body["messages"][-1]["content"][-1] == {"type": "text", "text": "What failed?"}
    # the API cleared 2: the two oldest results not excluded (read_file, grep); bash is kept
    assert [m.content for m in context if m.role == "tool"] == [
        CLEARED, "FAILED test_a: KeyError 'id'", CLEARED, "def build(): return {}"]
    assert [m for m in context if m.content != CLEARED] == [m for m in messages if m.content not in (
        "def test_a(): ...", "src/a.py:12: payload['id']")]
    assert memory.config()["cleared_input_tokens"] == 40


def test_context_editing_sends_the_full_history_again_after_a_clearing(
        model_on: Callable[[Handler], AnthropicModel]) -> None:
    """The API edits server-side: the client keeps and sends the unedited history (the docs'
    contract), so a placeholder must never reach the next request."""
    applied = {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3,
                                  "cleared_input_tokens": 90}]}
    api = Api(reply(context_management=applied))
    memory = ContextEditingMemory(model=model_on(api), context_window=8000, counter=HeuristicCounter())
    for m in agent_turns():
        memory.add(m)
        memory.context()
    assert sum(m.content == CLEARED for m in memory.context()) == 3
    memory.add(Message("user", "And now?"))
    memory.context()
    sent = [r["content"] for r in blocks(api.body(-1), "tool_result")]
    assert sent == ["def test_a(): ...", "FAILED test_a: KeyError 'id'", "src/a.py:12: payload['id']",
                    "def build(): return {}"]
    assert api.body(-1)["context_management"]["edits"][0]["trigger"] == {"type": "input_tokens", "value": 8000}


COMPACTION = {"type": "compaction", "content": "SUMMARY: test_a fails on a KeyError in src/a.py.",
              "signature": "sig-abc", "encrypted_content": "opaque-xyz"}


def test_compaction_sends_the_documented_edit_and_replays_the_block_it_got(
        model_on: Callable[[Handler], AnthropicModel]) -> None:
    first = reply([COMPACTION], stop_reason="compaction", iterations=[
        {"type": "compaction", "input_tokens": 900, "output_tokens": 60, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}])
    api = Api(reply(), reply(), reply(), first, reply())
    events: list[SummaryEvent] = []
    memory = CompactionMemory(model=model_on(api), context_window=8000, counter=HeuristicCounter(),
                              on_event=events.append, instructions="Keep file names and failures.")
    messages = [m.with_id(f"m{i}") for i, m in enumerate(agent_turns()[:6])]
    for m in messages:
        memory.add(m)
        context = memory.context()
    assert len(api.requests) == 4  # the 4th answered with the compaction block
    request = api.requests[0]
    assert request.url.path == "/v1/messages" and COMPACTION_BETA in request.headers["anthropic-beta"].split(",")
    assert api.body(0)["context_management"] == {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 8000},
        "pause_after_compaction": True, "instructions": "Keep file names and failures."}]}
    # the context is the API's summary, then what came after the block (nothing yet)
    assert context == [Message("assistant", COMPACTION["content"])]
    assert len(events) == 1 and events[0].record is not None
    assert events[0].record.text == COMPACTION["content"]
    assert events[0].record.covered_ids == tuple(m.id for m in messages)
    later = [Message("assistant", "Patching src/a.py.", id="m6"), Message("user", "Go on.", id="m7")]
    for m in later:
        memory.add(m)
        context = memory.context()
    assert context == [Message("assistant", COMPACTION["content"]), *later]
    # the next request carries the block exactly as returned, as the assistant turn after the
    # message it followed, with the assistant's next text after it in the same turn
    body = api.body(-1)
    turns = body["messages"]
    i = next(k for k, t in enumerate(turns) if any(b["type"] == "compaction" for b in t["content"]))
    assert turns[i]["role"] == "assistant" and turns[i]["content"][0] == COMPACTION
    assert turns[i]["content"][1] == {"type": "text", "text": "Patching src/a.py."}
    assert any(b.get("tool_use_id") for b in turns[i - 1]["content"])  # after the last tool result
    assert turns[i + 1] == {"role": "user", "content": [{"type": "text", "text": "Go on."}]}
    assert len(blocks(body, "compaction")) == 1


def test_a_compaction_pass_is_billed_with_the_call(model_on: Callable[[Handler], AnthropicModel]) -> None:
    """The compaction pass is reported apart from the top-level usage: it must be counted."""
    api = Api(reply([COMPACTION], stop_reason="compaction", input_tokens=50, output_tokens=5, iterations=[
        {"type": "compaction", "input_tokens": 900, "output_tokens": 60, "cache_read_input_tokens": 7,
         "cache_creation_input_tokens": 0},
        {"type": "message", "input_tokens": 50, "output_tokens": 5, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}]))
    out = model_on(api).complete(CompletionRequest(system="", messages=(), max_tokens=16, native={
        "messages": [{"role": "user", "content": "hi"}], "betas": [COMPACTION_BETA]}))
    assert (out.input_tokens, out.output_tokens, out.cache_read_tokens) == (950, 65, 7)
    assert out.native is not None and out.native["content"][0]["signature"] == "sig-abc"
    assert out.stop_reason == "compaction" and out.text == ""


def test_native_answers_are_cached_whole_and_plain_requests_keep_their_keys(
        model_on: Callable[[Handler], AnthropicModel], tmp_path: Any) -> None:
    plain = CompletionRequest(system="s", messages=[Message("user", "x")])
    assert "native" not in plain.key_payload()  # every existing cache key stays the same
    api = Api(reply([COMPACTION], stop_reason="compaction"))
    cached = CachedModel(model_on(api), CacheFile(tmp_path / "c.sqlite", "on"))
    request = CompletionRequest(system="", messages=(), native={"messages": [{"role": "user", "content": "hi"}],
                                                                 "betas": [COMPACTION_BETA]})
    first = cached.complete(request)
    again = cached.complete(request)
    assert len(api.requests) == 1 and again.cached and again.native == first.native
    other = CompletionRequest(system="", messages=(), native={"messages": [{"role": "user", "content": "ho"}],
                                                               "betas": [COMPACTION_BETA]})
    assert other.hash() != request.hash()
    assert Completion.from_dict(first.to_dict()).native == first.native


def test_an_api_peer_on_a_model_without_the_messages_api_says_so() -> None:
    memory = ContextEditingMemory(model=fake("extractive"), context_window=8000, counter=HeuristicCounter())
    memory.add(Message("user", "hello"))
    with pytest.raises(ConfigError, match="needs an anthropic: model"):
        memory.context()
