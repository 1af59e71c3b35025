"""Seed 001: a new summary every N messages since the last one, outside the verbatim window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from rollsum.policies.base import Decision, WindowState


@dataclass(frozen=True)
class SinceLast:
    """Fires when at least `messages_per_summary` messages arrived since the last summary and
    some messages lie outside the last `keep_last` (kept verbatim); compresses all of those.

    The seed contradicts itself on two counts, so both readings are parameters (see
    docs/seeds.md). Defaults follow its user stories (19 → 20th message triggers; 25 messages
    with a summary covering 20 do not; 45 do):
    - `keep_last=10` messages (the context code's `slice(-10)`); the seed's database code keeps
      "10 exchanges" = 20 messages: `keep_last=20`.
    - `count_since="covered"`: messages since the last summary = total − `messages_covered`,
      the stories' arithmetic. `"event"` counts messages added since the last summary was
      made, the verification checklist's reading (15 / 25 / 35 / 50).
    """

    messages_per_summary: int = 20
    keep_last: int = 10
    count_since: Literal["covered", "event"] = "covered"

    name: ClassVar[str] = "since-last"

    def __post_init__(self) -> None:
        if self.messages_per_summary < 1 or self.keep_last < 0:
            raise ValueError("messages_per_summary must be >= 1 and keep_last >= 0")
        if self.count_since not in ("covered", "event"):
            raise ValueError("count_since must be 'covered' or 'event'")

    def messages_since(self, state: WindowState) -> int:
        if self.count_since == "event":
            return state.since_summary
        return state.total_added - state.messages_covered

    def decide(self, state: WindowState) -> Decision | None:
        outside = state.count - self.keep_last
        if outside <= 0:
            return None
        since = self.messages_since(state)
        if since < self.messages_per_summary:
            return None
        return Decision.span("summarize", 0, outside,
                             f"{since} messages since the last summary >= {self.messages_per_summary}")
