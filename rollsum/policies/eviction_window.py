"""Seed 004: a head/tail window that evicts the middle; evictions are summarized in batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rollsum.params import check_fields
from rollsum.policies._util import calls_tools
from rollsum.policies.base import Action, Decision, WindowState, attempts_allowed
from rollsum.types import Message


def has_meaningful_text(messages: tuple[Message, ...] | list[Message]) -> bool:
    """Seed 004 skips summarizing spans that are only tool output: nothing said, nothing decided."""
    return any(m.role in ("user", "assistant") and m.content.strip() for m in messages)


@dataclass(frozen=True)
class EvictionWindow:
    """Keeps the first `head` messages (the task statement; with the results of a tool call it
    ends in, `head_end`) and the newest messages; when the
    context exceeds `max_tokens` (default: the main model's window) the oldest middle messages
    are evicted, never the newest `tail`. Evicted messages wait as *pending*; once at least
    `min_evicted` have accumulated since the last summary they are summarized together into one
    "[Conversation Summary]" message between head and tail (the seed's rate limit). A pending
    batch with no user or assistant text is dropped unsummarized, as the seed says. With
    `summarize_on_trim=False` it is a plain sliding window.

    The window is head + summary + tail, so the summary's room (`WindowState.summary_budget`)
    is kept free from the first eviction on: a summary landing never pushes the context over.
    The rate limit counts attempts: the k-th summary attempt (successful or not) needs k ×
    `min_evicted` evictions so far, so a failing model is not asked more often than a working
    one, and each try carries a bounded slice of the backlog, oldest first (the engine caps a
    request; the rest waits for the next attempt).
    """

    max_tokens: int | None = None
    head: int = 2
    tail: int = 10
    min_evicted: int = 10
    summarize_on_trim: bool = True
    max_summary_tokens: int = 1024

    name: ClassVar[str] = "evict-window"
    windowed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)  # head, tail >= 0, min_evicted >= 1 (`rollsum.params.RANGES`)

    def budget(self, state: WindowState) -> int:
        return self.max_tokens if self.max_tokens is not None else state.context_window

    def head_end(self, messages: Sequence[Message]) -> int:
        """Where the kept head ends: the first `head` messages, and, when the head ends in a
        tool call (a user task, then an assistant message that calls a tool: agent traffic),
        that call's results too. A call is never kept without its results, so a head cut
        after the call would otherwise be evicted with them (docs/seeds.md)."""
        end = min(self.head, len(messages))
        k = end - 1
        while k >= 0 and messages[k].role == "tool":
            k -= 1
        if k >= 0 and calls_tools(messages[k]):
            while end < len(messages) and messages[end].role == "tool":
                end += 1
        return end

    def may_summarize(self, state: WindowState) -> bool:
        return self.summarize_on_trim and attempts_allowed(state.attempts, state.total_evicted, self.min_evicted)

    def decide(self, state: WindowState) -> Decision | None:
        budget = self.budget(state)
        summary_room = max(state.summary_tokens, state.summary_budget) if self.summarize_on_trim else \
            state.summary_tokens
        used = state.pinned_tokens + summary_room + state.active_tokens
        over = used - budget
        if over > 0:
            start = self.head_end(state.messages)
            end = max(start, state.count - self.tail)
            picked: list[int] = []
            freed = 0
            for i in range(start, end):
                picked.append(i)
                freed += state.tokens[i]
                if freed >= over:
                    break
            if picked:
                action: Action = "evict" if self.summarize_on_trim else "drop"
                return Decision(action, tuple(picked),
                                f"context {used} > {budget}: evicted {len(picked)} middle messages",
                                include_pending=False)
        if self.summarize_on_trim and state.pending >= self.min_evicted and self.may_summarize(state):
            if not has_meaningful_text(list(state.pending_messages)):
                return Decision("drop", (), f"{state.pending} evicted messages hold only tool output")
            return Decision("summarize", (), f"{state.pending} messages evicted since the last summary "
                            f">= {self.min_evicted}")
        return None
