"""Seed 002: trim to the budget by priority, then summarize what was dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rollsum.policies._util import tool_units
from rollsum.policies.base import Action, Decision, WindowState
from rollsum.types import Message

_ERROR_WORDS = ("error", "failed", "exception", "traceback")


def message_priority(message: Message, preserve_error_details: bool) -> int:
    """Lower is dropped first. Tool output is cheapest to lose (it can be re-run); what the
    user said is dearest; error output is kept longer when `preserve_error_details`."""
    if message.role == "tool":
        if preserve_error_details:
            code = message.meta.get("exit_code")
            low = message.content[:2000].lower()
            if (isinstance(code, int) and code != 0) or any(w in low for w in _ERROR_WORDS):
                return 3
        return 1
    if message.role == "assistant":
        return 1 if message.meta.get("tool_calls") else 2
    return 3  # user (system messages are pinned and never reach a policy)


@dataclass(frozen=True)
class BudgetTrim:
    """Keeps the context within `max_context_tokens − reserved_output_tokens` (default: the
    main model's window). When over, it picks messages to drop, cheapest priority first and
    oldest first within a priority, never the newest `min_keep`, never a tool call without its
    results; with `summarize_on_trim` the dropped messages become the rolling summary (the
    rule-based extractive summarizer by default), otherwise they are simply dropped.
    """

    max_context_tokens: int | None = None
    reserved_output_tokens: int = 1024
    min_keep: int = 4
    preserve_error_details: bool = True
    summarize_on_trim: bool = True
    max_summary_tokens: int = 500

    name: ClassVar[str] = "budget-rule-based"

    def budget(self, state: WindowState) -> int:
        window = self.max_context_tokens if self.max_context_tokens is not None else state.context_window
        return max(0, window - self.reserved_output_tokens)

    def decide(self, state: WindowState) -> Decision | None:
        budget = self.budget(state)
        over = state.context_tokens - budget
        if over <= 0:
            return None
        end = max(0, state.count - self.min_keep)
        units = tool_units(state.messages, 0, end)
        if not units:
            return None

        def unit_key(u: tuple[int, int]) -> tuple[int, int]:
            prio = max(message_priority(state.messages[i], self.preserve_error_details) for i in range(*u))
            return (prio, u[0])

        picked: list[int] = []
        freed = 0
        for u in sorted(units, key=unit_key):
            picked.extend(range(*u))
            freed += sum(state.tokens[u[0]:u[1]])
            if freed >= over:
                break
        action: Action = "summarize" if self.summarize_on_trim else "drop"
        return Decision(action, tuple(sorted(picked)),
                        f"context {state.context_tokens} > budget {budget}: trimmed {len(picked)} "
                        f"messages ({freed} tokens) by priority")
