"""Seed 001: a new summary every N messages since the last one, outside the verbatim window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from rollsum.params import check_fields
from rollsum.policies.base import Decision, WindowState, attempts_allowed


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

    Cadence: whatever the reading, the summarizer is asked at most once per
    `messages_per_summary` messages added: the k-th attempt (successful or not, the window
    guard's included) needs k × `messages_per_summary` messages, and `messages_per_summary`
    new ones since the previous attempt -- unless it drains a backlog of pending messages (what
    the window guard moved out during a burst or an outage), which may then be summarized back
    to back in bounded chunks. The "covered" count includes the verbatim window, so with
    `keep_last >= messages_per_summary - 1` it alone would fire again on the very next message
    (one message per call; seed 001's own database code does this with its 20-message window);
    counting attempts makes every combination of the two parameters safe, so none is refused
    (docs/seeds.md).
    """

    messages_per_summary: int = 20
    keep_last: int = 10
    count_since: Literal["covered", "event"] = "covered"

    name: ClassVar[str] = "since-last"

    def __post_init__(self) -> None:
        check_fields(self)  # types and `rollsum.params.RANGES`: keep_last >= 0, messages_per_summary >= 1

    def messages_since(self, state: WindowState) -> int:
        if self.count_since == "event":
            return state.since_summary
        return state.total_added - state.messages_covered

    def may_summarize(self, state: WindowState) -> bool:
        if not attempts_allowed(state.attempts, state.total_added, self.messages_per_summary):
            return False
        fresh = state.since_attempt is None or state.since_attempt >= self.messages_per_summary
        return fresh or state.pending > 0

    def quiet_for(self, state: WindowState) -> int:
        """`decide` answers None, whatever else the state says, while fewer than
        `messages_per_summary` messages came since the last summary (each message adds one;
        only a summary resets the count), and while the rate limit holds the next attempt back
        (each message adds one to `total_added`; attempts only make it stricter): the `Policy` hook."""
        every = self.messages_per_summary
        return max(0, every - 1 - self.messages_since(state), (state.attempts + 1) * every - 1 - state.total_added)

    def decide(self, state: WindowState) -> Decision | None:
        since = self.messages_since(state)
        if since < self.messages_per_summary or not self.may_summarize(state):
            return None
        why = f"{since} messages since the last summary >= {self.messages_per_summary}"
        outside = state.count - self.keep_last
        if outside <= 0:
            # the window guard moved older messages out: fold them in when the count says so
            return Decision("summarize", (), why + f"; {state.pending} pending") if state.pending else None
        return Decision.span("summarize", 0, outside, why)
