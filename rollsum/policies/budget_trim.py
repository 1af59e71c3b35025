"""Seed 002: trim to the budget by priority, then summarize what was dropped."""

from __future__ import annotations

from collections.abc import Sequence
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
            if isinstance(code, int) and code != 0:
                return 3
            low = message.content[:2000].lower()
            for word in _ERROR_WORDS:  # (a loop, not any() over a generator: this runs per message per trim)
                if word in low:
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
        if end <= 0:
            return None
        picked, freed = self._pick(state.messages, state.tokens, end, need)
        action: Action = "summarize" if self.summarize_on_trim else "drop"
        return Decision(action, tuple(sorted(picked)),
                        f"context {state.context_tokens} > budget {budget}: trimmed {len(picked)} "
                        f"messages ({freed} tokens) by priority to {self.low_water:g} of the budget")

    def _pick(self, messages: Sequence[Message], tokens: Sequence[int], end: int, need: int) -> tuple[list[int], int]:
        """The tool units (`tool_units`) of ``messages[:end]``, cheapest priority first and oldest
        first within a priority, taken until they free `need` tokens (at least one): (their
        positions, the tokens they free).

        Why not ``sorted(units, key=(priority, start))``: this runs on every trim over the whole
        window (~2,000 units at the default 200k window, most of them a user's message), and a
        key tuple built through a generator per unit was most of the trim's cost. The units are
        met in window order, so one list per priority, filled in that order and read lowest
        priority first, is that sort; and a unit of one message (almost all) needs no `max`."""
        keep_errors = self.preserve_error_details
        by_priority: dict[int, list[tuple[int, int]]] = {}
        for start, stop in tool_units(messages, 0, end):
            prio = message_priority(messages[start], keep_errors)
            if stop - start > 1:  # a call and its results: as dear as its dearest message
                for i in range(start + 1, stop):
                    prio = max(prio, message_priority(messages[i], keep_errors))
            units = by_priority.get(prio)
            if units is None:
                units = by_priority[prio] = []
            units.append((start, stop))
        picked: list[int] = []
        freed = 0
        for prio in sorted(by_priority):
            for start, stop in by_priority[prio]:
                if stop - start == 1:
                    picked.append(start)
                    freed += tokens[start]
                else:
                    picked.extend(range(start, stop))
                    freed += sum(tokens[start:stop])
                if freed >= need:
                    return picked, freed
        return picked, freed
