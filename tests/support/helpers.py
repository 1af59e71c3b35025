"""Shared helpers for the seed acceptance tests.

`Recording` wraps any `Model` to keep the requests it saw: the tests assert on what was asked
(prompt contents, max_tokens), not only on what came back. It implements our own Model
protocol; the Anthropic SDK itself is exercised in tests/rollsum/models through its transport.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.models.fake import FakeModel
from rollsum.types import Message, Role


class Recording(ModelWrapper):
    def __init__(self, inner: Model) -> None:
        super().__init__(inner)
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return self.inner.complete(request)

    def prompt_text(self, i: int = -1) -> str:
        r = self.requests[i]
        return r.system + "\n" + "\n".join(m.content for m in r.messages)


def fake(mode: str = "extractive", **kw: Any) -> Recording:
    kw.setdefault("sleep", lambda s: None)
    return Recording(FakeModel(mode, **kw))


def chat(n: int, *, words: int = 30, start: int = 0, prefix: str = "message") -> Iterator[Message]:
    """n alternating user/assistant messages of about `words` words each."""
    filler = " ".join(["lorem"] * words)
    for i in range(start, start + n):
        role: Role = "user" if i % 2 == 0 else "assistant"
        yield Message(role, f"{prefix} {i}: {filler}.")


def agent(n: int, *, words: int = 40, start: int = 0) -> Iterator[Message]:
    """n messages of agent traffic: assistant messages that call a tool, each followed by its
    result (linked by ``tool_calls`` / ``tool_call_id``), with a user message every ~7."""
    filler = " ".join(["lorem"] * words)
    i = start
    made = 0
    while made < n:
        if i % 7 == 6:
            yield Message("user", f"user {i}: also check the logs. {filler}.")
            made += 1
        else:
            call = f"call_{i}"
            yield Message("assistant", f"step {i}: reading file_{i}.py. {filler}.", meta={"tool_calls": [call]})
            made += 1
            if made < n:
                yield Message("tool", f"result {i}: def f_{i}(): return {i}\n{filler}", name="read_file",
                              meta={"tool_call_id": call})
                made += 1
        i += 1
