"""`RollingSummarizer.to_anthropic` gives what `client.messages.create` takes, checked by the
real SDK building its request on an httpx2 MockTransport (no network)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rollsum
from rollsum import Message, RollingSummarizer
from rollsum.presets import names

MakeClient = Callable[..., anthropic.Anthropic]
Recorder = Any


def _conversation() -> list[Message]:
    out = [Message("system", "Pinned: the user is called Ada.")]
    for i in range(60):
        if i % 10 == 5:
            out.append(Message("assistant", "", meta={"tool_calls": [f"c{i}"]}))
            out.append(Message("tool", f"exit 0 (run {i})", name="bash", meta={"tool_call_id": f"c{i}"}))
        else:
            out.append(Message("user" if i % 2 == 0 else "assistant", f"message {i}: locker code 44{i:02d}. " * 8))
    return out


def _send(sdk_client: MakeClient, recorder: Recorder, msg: Callable[..., dict[str, Any]],
          system: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    import httpx2

    rec = recorder(httpx2.Response(200, json=msg("ok")))
    client = sdk_client(rec)
    reply = client.messages.create(model="claude-haiku-4-5", max_tokens=64, system=system, messages=messages)  # type: ignore[arg-type]
    assert reply.content[0].type == "text"
    body: dict[str, Any] = json.loads(rec.requests[0].content)
    return body


@pytest.mark.parametrize("preset", [p for p in names() if p != "full-context"])
def test_to_anthropic_is_what_messages_create_sends(preset: str, sdk_client: MakeClient, recorder: Recorder,
                                                    msg: Callable[..., dict[str, Any]]) -> None:
    rs = RollingSummarizer.from_preset(preset, context_window=1500)
    for m in _conversation():
        rs.add(m)
    system, messages = rs.to_anthropic(system="You are a helpful assistant.")
    body = _send(sdk_client, recorder, msg, system, messages)
    assert body["system"] == system and body["messages"] == messages
    assert system.startswith("You are a helpful assistant.\n\nPinned: the user is called Ada.")
    roles = [t["role"] for t in messages]
    assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    assert all(t["content"].strip() for t in messages)
    context = rs.context(system="You are a helpful assistant.")
    summary = [m for m in context if m.meta.get("rollsum") == "summary"]
    if summary and summary[0].role == "system":  # a system-role summary goes to `system`
        assert summary[0].content in system
        assert all(summary[0].content not in t["content"] for t in messages)
    # nothing of the context is lost on the way: every text is in system or in a turn
    sent = system + "\n".join(t["content"] for t in messages)
    assert all(m.content in sent for m in context if m.content.strip())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant", "tool"]), st.text(max_size=20)),
                max_size=12))
def test_any_history_becomes_alternating_turns_starting_with_user(items: list[tuple[str, str]]) -> None:
    from rollsum.models.anthropic_model import messages_api

    system, turns = messages_api("S", [Message(r, t, name="t" if r == "tool" else None) for r, t in items])  # type: ignore[arg-type]
    roles = [t["role"] for t in turns]
    assert roles and roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    assert all(t["content"].strip() for t in turns)
    assert system.startswith("S")


def test_stores_are_exported() -> None:
    assert rollsum.SQLiteStore.__name__ == "SQLiteStore" and rollsum.MemoryStore.__name__ == "MemoryStore"
    assert {"SQLiteStore", "MemoryStore"} <= set(rollsum.__all__)
