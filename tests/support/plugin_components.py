"""A user's own summarizer, memory, policy and model backend, the first two referenced by import
path from sweep specs in the tests (``tests.support.plugin_components:MarkSummarizer``). Each
leaves a mark where it acts, so a test can tell that it, and not a built-in, made the summaries
and contexts that were scored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rollsum.capabilities import OFFLINE_SCRIPTED, Capabilities
from rollsum.models.base import Completion, CompletionRequest, Model
from rollsum.models.spec import Backend
from rollsum.policies.base import Decision, WindowState
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.tokens import TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord

OFFLINE = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)


@dataclass(frozen=True)
class EveryFive:
    """A policy no registry knows until a test registers it: summarizes everything but the
    newest `keep` messages every five messages."""

    keep: int = 2
    name: ClassVar[str] = "every-five"

    def decide(self, state: WindowState) -> Decision | None:
        if state.count <= self.keep or state.total_added % 5:
            return None
        return Decision.span("summarize", 0, state.count - self.keep, "every five")


class MarkSummarizer:
    """Keeps every sentence of the span, cut to the request's budget, behind a mark."""

    name = "mark"
    capabilities = OFFLINE

    def __init__(self, mark: str = "MARK", *, context_window: int | None = None) -> None:
        self.mark = mark
        self.context_window = context_window

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        previous = request.previous.text if request.previous is not None else ""
        body = " ".join([previous.removeprefix(f"[{self.mark}] "), *(m.content for m in request.messages)])
        room = max(40, request.max_tokens * 3)  # ~3 characters a token: stays inside the budget
        return SummaryDraft(text=f"[{self.mark}] {body[-room:]}")


class MarkMemory:
    """Keeps the newest messages that fit half the window; what falls out is summarized by the
    sweep's model into one marked system message (reported as a summary event)."""

    capabilities = OFFLINE

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None], mark: str = "MEMO") -> None:
        if context_window < 100:
            raise ValueError(f"context_window too small: {context_window}")
        self.model = model
        self.budget = context_window // 2
        self.counter = counter
        self.on_event = on_event
        self.mark = mark
        self.recent: list[Message] = []
        self.summary = ""
        self.seq = 0
        self.closed = False

    def add(self, message: Message) -> None:
        self.recent.append(message)
        evicted: list[Message] = []
        while len(self.recent) > 1 and sum(self.counter.count_message(m) for m in self.recent) > self.budget:
            evicted.append(self.recent.pop(0))
        if evicted:
            text = "\n".join(f"{m.role}: {m.content}" for m in evicted)
            answer = self.model.complete(CompletionRequest(
                system="Summarize.", messages=[Message("user", text)], max_tokens=self.budget // 4,
                prompt_id="test-mark-memory/v1"))
            self.summary = f"[{self.mark}] {answer.text}"
            record = SummaryRecord(id=f"{self.mark}-{self.seq}", conversation_id="c", text=self.summary, seq=self.seq,
                                   covered_ids=tuple(m.id for m in evicted if m.id is not None),
                                   tokens=self.counter.count(self.summary))
            self.seq += 1
            self.on_event(SummaryEvent(kind="summary", turn=self.seq, reason="evicted", record=record,
                                       messages=len(evicted)))

    def context(self) -> list[Message]:
        head = [Message("system", self.summary)] if self.summary else []
        return head + list(self.recent)

    def close(self) -> None:
        self.closed = True


class NotAMemory:
    """Has no context(): a spec naming it is a mistake."""

    def add(self, message: Message) -> None:
        return None


def broken_memory(*, context_window: int) -> MarkMemory:
    raise RuntimeError("cannot open the vector store")


class Parrot:
    """A model no backend knows until a test registers `PARROT`: answers with the last
    message's first sentence behind ``PARROT <name>:``, so a test can tell it made a summary."""

    def __init__(self, rest: str) -> None:
        self.rest = rest

    @property
    def name(self) -> str:
        return f"parrot:{self.rest}"

    @property
    def context_window(self) -> int:
        return 100_000

    def complete(self, request: CompletionRequest) -> Completion:
        text = request.messages[-1].content.split(".")[0]
        return Completion(text=f"PARROT {self.rest}: {text}", input_tokens=10, output_tokens=5)


PARROT = Backend("parrot", "parrot:NAME (a test model that repeats)", Parrot, OFFLINE_SCRIPTED)
"""The one registration that makes ``parrot:NAME`` a model spec: ``BACKENDS.registered(PARROT.prefix, PARROT)``."""
