"""Seed 003: token-ratio trigger with hysteresis, cooldown, depth guard and emergency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rollsum.policies._util import ratio
from rollsum.policies.base import Decision, WindowState


@dataclass(frozen=True)
class TokenRatio:
    """Fires when the summarizable part of the context (summary + verbatim messages) fills
    `trigger_ratio` of the room the window leaves after the pinned system messages, and
    compresses everything but the newest `preserve_recent` messages (the previous summary is
    folded in). Measuring against the room rather than the whole window means a large system
    prompt cannot keep the ratio above the trigger on every turn; with a small one the two
    readings coincide (docs/seeds.md).

    Guards, as in the seed:
    - cooldown: at least `cooldown_messages` new messages since the last summary;
    - hysteresis: after a summary, re-arm only once usage has dropped below `reset_ratio`, or
      `rearm_messages` new messages have arrived (the seed says "enough new messages" without a
      number; 12, its min_messages, is ours);
    - depth guard: no summary deeper than `max_depth` − 1 (depth 0 is the first), so at most
      `max_depth` folds; `max_depth=None` removes the cap;
    - emergency: at `emergency_ratio` (≥ 1.0) cooldown, hysteresis and `min_messages` are
      ignored (the seed orders min_messages first; an oversized single message would then
      overflow forever, so emergency wins here — see docs/seeds.md);
    - second pass: if a summary leaves usage still at or above the trigger, compress again in
      the same turn with the preserved tail halved each pass, never below `min_preserve`.
    """

    trigger_ratio: float = 0.8
    reset_ratio: float = 0.7
    min_messages: int = 12
    preserve_recent: int = 6
    min_preserve: int = 2
    max_depth: int | None = 3
    cooldown_messages: int = 4
    emergency_ratio: float = 1.0
    rearm_messages: int = 12
    context_window: int | None = None
    enabled: bool = True

    name: ClassVar[str] = "token-ratio"

    def __post_init__(self) -> None:
        if not 0 < self.reset_ratio < self.trigger_ratio <= self.emergency_ratio:
            raise ValueError("need 0 < reset_ratio < trigger_ratio <= emergency_ratio")
        if self.min_preserve < 0 or self.preserve_recent < self.min_preserve:
            raise ValueError("need 0 <= min_preserve <= preserve_recent")

    def window(self, state: WindowState) -> int:
        return self.context_window if self.context_window is not None else state.context_window

    def decide(self, state: WindowState) -> Decision | None:
        if not self.enabled or state.last_failed:
            return None
        next_depth = state.summary.depth + 1 if state.summary is not None else 0
        if self.max_depth is not None and next_depth >= self.max_depth:
            return None
        window = self.window(state)
        room = max(1, window - state.pinned_tokens)
        r = ratio(state.summary_tokens + state.active_tokens, room)
        if r < self.trigger_ratio:
            return None
        emergency = r >= self.emergency_ratio
        second_pass = state.passes > 0
        if not (emergency or second_pass):
            if state.count < self.min_messages:
                return None
            if state.summary is not None:
                if state.since_summary < self.cooldown_messages:
                    return None
                low = state.min_tokens_since_summary
                rearmed = (low is not None and ratio(low - state.pinned_tokens, room) < self.reset_ratio) or \
                    state.since_summary >= self.rearm_messages
                if not rearmed:
                    return None
        keep = self.preserve_recent
        for _ in range(state.passes):
            keep = max(self.min_preserve, keep // 2)
        end = state.count - min(keep, state.count)
        if end <= 0:
            return None
        why = "emergency" if emergency else ("second pass" if second_pass else "trigger")
        return Decision.span("summarize", 0, end,
                             f"{why}: {state.summary_tokens + state.active_tokens}/{room} tokens of room = {r:.2f} >= "
                             f"{self.emergency_ratio if emergency else self.trigger_ratio}")
