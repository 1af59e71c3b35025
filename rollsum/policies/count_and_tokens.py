"""Seed 000: summarize the oldest batch once the session is both long and heavy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rollsum.params import check_fields
from rollsum.policies.base import Decision, WindowState


@dataclass(frozen=True)
class CountAndTokens:
    """Fires when there are MORE than `message_count_threshold` messages AND the oldest
    `messages_to_summarize` of them (never touching the newest `recent_messages_to_keep`) weigh
    MORE than `token_threshold` tokens. Both comparisons are strict, as the seed demands: a
    session exactly at a threshold is left alone.

    The token condition stops the policy from summarizing many short messages that cost
    little; on chat data with ~100-token messages the default 15,000 never fires, which is
    exactly the kind of finding a threshold sweep is for (given a `context_window`, the
    engine's window guard keeps the context inside it meanwhile).

    Cadence: a summary always takes a full batch of `messages_to_summarize`. At the seed's
    defaults that is what the two thresholds give anyway (more than 30 messages, keep 10:
    at least 21 candidates); with `recent_messages_to_keep + messages_to_summarize >
    message_count_threshold + 1` the seed's formula would summarize a few messages on every
    turn, so the policy waits for the full batch instead (docs/seeds.md).
    """

    message_count_threshold: int = 30
    messages_to_summarize: int = 20
    recent_messages_to_keep: int = 10
    token_threshold: int = 15_000
    max_summary_tokens: int = 1024

    name: ClassVar[str] = "count-and-tokens"

    def __post_init__(self) -> None:
        check_fields(self)  # thresholds >= 0, messages_to_summarize >= 1 (`rollsum.params.RANGES`)

    def should_summarize(self, total_message_count: int, oldest_messages_token_count: int) -> bool:
        return (total_message_count > self.message_count_threshold
                and oldest_messages_token_count > self.token_threshold)

    def decide(self, state: WindowState) -> Decision | None:
        total = state.count
        candidates = total - min(self.recent_messages_to_keep, total)
        n = self.messages_to_summarize
        if candidates < n:
            return None
        oldest = sum(state.tokens[:n])
        if not self.should_summarize(total, oldest):
            return None
        return Decision.span(
            "summarize", 0, n,
            f"count {total} > {self.message_count_threshold} and oldest {n} messages "
            f"= {oldest} tokens > {self.token_threshold}",
        )
