"""A scripted stand-in for the Model protocol, so summarizer tests never touch a network."""

from __future__ import annotations

from collections.abc import Sequence

from rollsum.errors import ModelError
from rollsum.models.base import Completion, CompletionRequest


class StubModel:
    """Answers from a script (strings, or ModelErrors to raise) and records every request."""

    def __init__(self, replies: Sequence[str | ModelError] = ("A summary.",), *,
                 context_window: int = 200_000, name: str = "stub:model") -> None:
        self._replies = list(replies)
        self._context_window = context_window
        self._name = name
        self.requests: list[CompletionRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def context_window(self) -> int:
        return self._context_window

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        reply = self._replies[min(len(self.requests), len(self._replies)) - 1]
        if isinstance(reply, ModelError):
            raise reply
        return Completion(text=reply, input_tokens=100, output_tokens=10, model=self._name)

    @property
    def prompts(self) -> list[str]:
        return [r.messages[0].content for r in self.requests]
