"""Seed 003: token-ratio trigger with hysteresis, cooldown, depth guard and emergency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rollsum.params import ParamError, check_fields
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
    - cooldown: at least `cooldown_messages` new messages since the last summary *attempt*
      (a failed one included: the rate limit counts attempts);
    - hysteresis: after a summary, re-arm only once usage has dropped below `reset_ratio`, or
      `rearm_messages` new messages have arrived (the seed says "enough new messages" without a
      number; 12, its min_messages, is ours);
    - depth guard: no summary *folds* deeper than `max_depth` − 1 (depth 0 is the first).
      Seed 003's first goal is "avoid hard stops", so at the cap summarizing does not stop:
      the previous summary is no longer rewritten (`Decision.fold=False`; the depth stays
      put because no summary is re-summarized): a model's summary of the span alone is
      appended to the previous text, whose oldest content is cut with a marker to stay in
      budget; a summarizer that never rewrites (extractive selection) still lets the old
      lines compete with the span's (the engine's `depth_cap_merge`). `max_depth=None`
      removes the cap;
    - emergency: at `emergency_ratio` (≥ 1.0) cooldown, hysteresis and `min_messages` are
      ignored (the seed orders min_messages first; an oversized single message would then
      overflow forever, so emergency wins here — see docs/seeds.md);
    - second pass: if a summary leaves usage still at or above the trigger, compress again in
      the same turn with the preserved tail halved each pass, never below `min_preserve` —
      but only when that tail is small enough for another pass to help (one huge newest
      message is the engine's window guard's case, not a reason to burn passes).
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
    windowed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)  # each value alone: its type and `rollsum.params.RANGES`
        if not self.reset_ratio < self.trigger_ratio <= self.emergency_ratio:  # the rules tying them
            raise ParamError("need 0 < reset_ratio < trigger_ratio <= emergency_ratio")
        if self.preserve_recent < self.min_preserve:
            raise ParamError("need 0 <= min_preserve <= preserve_recent")

    def window(self, state: WindowState) -> int:
        return self.context_window if self.context_window is not None else state.context_window

    def fold_allowed(self, depth: int) -> bool:
        return self.max_depth is None or depth < self.max_depth

    def may_summarize(self, state: WindowState) -> bool:
        return self.enabled

    def decide(self, state: WindowState) -> Decision | None:
        if not self.enabled or state.last_failed:
            return None
        window = self.window(state)
        room = max(1, window - state.pinned_tokens)
        used = state.summary_tokens + state.active_tokens
        r = ratio(used, room)
        if r < self.trigger_ratio:
            return None
        emergency = r >= self.emergency_ratio
        second_pass = state.passes > 0
        if not (emergency or second_pass):
            if state.count < self.min_messages:
                return None
            since = state.since_summary if state.since_attempt is None else min(state.since_summary,
                                                                                 state.since_attempt)
            attempted = state.summary is not None or state.since_attempt is not None
            if attempted and since < self.cooldown_messages:
                return None
            if state.summary is not None:
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
        if second_pass:
            tail = sum(state.tokens[end:])
            if tail + max(state.summary_tokens, state.summary_budget) >= self.trigger_ratio * room:
                return None  # the tail alone keeps usage up: another pass cannot help
        next_depth = state.summary.depth + 1 if state.summary is not None else 0
        fold = self.fold_allowed(next_depth)
        why = "emergency" if emergency else ("second pass" if second_pass else "trigger")
        cap = "" if fold else f"; depth cap {self.max_depth}: the previous summary is not rewritten"
        return Decision("summarize", tuple(range(end)),
                        f"{why}: {used}/{room} tokens of room = {r:.2f} >= "
                        f"{self.emergency_ratio if emergency else self.trigger_ratio}{cap}", fold=fold)
