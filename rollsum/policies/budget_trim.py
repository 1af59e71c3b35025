"""Seed 002: trim to the budget by priority, then summarize what was dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rollsum.params import check_fields
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

    Hysteresis: a trim frees enough to bring the context down to `low_water` of the budget
    (counting the summary at its full share, since the new summary replaces the old one), not
    just under it, so the next trim is many messages away rather than on the next message --
    LangChain's summary buffer in spirit, and a handful of summaries per 100 messages instead
    of one on most messages.
    """

    max_context_tokens: int | None = None
    reserved_output_tokens: int = 1024
    min_keep: int = 4
    preserve_error_details: bool = True
    summarize_on_trim: bool = True
    max_summary_tokens: int = 500
    low_water: float = 0.5

    name: ClassVar[str] = "budget-rule-based"
    windowed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)  # low_water in (0, 1], the counts >= 0 (`rollsum.params.RANGES`)

    def budget(self, state: WindowState) -> int:
        window = self.max_context_tokens if self.max_context_tokens is not None else state.context_window
        return max(0, window - self.reserved_output_tokens)

    def may_summarize(self, state: WindowState) -> bool:
        return self.summarize_on_trim

    def decide(self, state: WindowState) -> Decision | None:
        budget = self.budget(state)
        if state.context_tokens - budget <= 0:
            return None
        summary_after = max(state.summary_tokens, state.summary_budget) if self.summarize_on_trim else 0
        projected = state.pinned_tokens + summary_after + state.active_tokens
        need = projected - int(self.low_water * budget)
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
            if freed >= need:
                break
        action: Action = "summarize" if self.summarize_on_trim else "drop"
        return Decision(action, tuple(sorted(picked)),
                        f"context {state.context_tokens} > budget {budget}: trimmed {len(picked)} "
                        f"messages ({freed} tokens) by priority to {self.low_water:g} of the budget")
