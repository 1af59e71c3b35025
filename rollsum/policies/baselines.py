"""Baselines every sweep should include: what you keep without summarizing at all."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from rollsum.params import check_fields
from rollsum.policies.base import Decision, WindowState


@dataclass(frozen=True)
class FullContext:
    """Never summarizes, never drops: the upper bound on retention and on cost."""

    name: ClassVar[str] = "full-context"

    def quiet_for(self, state: WindowState) -> int:
        """Never asks for anything: no need to ask again (the `Policy` hook)."""
        return sys.maxsize

    def decide(self, state: WindowState) -> Decision | None:
        return None


@dataclass(frozen=True)
class Truncate:
    """Keeps only the newest `keep` messages (and, with `max_tokens`, only what fits): the
    cheapest thing a team can ship, and what a summary has to beat."""

    keep: int = 20
    max_tokens: int | None = None

    name: ClassVar[str] = "truncate"
    settles: ClassVar[bool] = True
    """After its drop, `count` is `keep` (or, with `max_tokens`, the rest fits or one message is
    left), so `decide` answers None until another message comes (`Policy.settles`)."""

    def __post_init__(self) -> None:
        check_fields(self)  # keep >= 1, max_tokens >= 1 or None (`rollsum.params.RANGES`)

    def decide(self, state: WindowState) -> Decision | None:
        n = max(0, state.count - self.keep)
        if self.max_tokens is not None:
            total = state.context_tokens
            for i in range(n):
                total -= state.tokens[i]
            while total > self.max_tokens and n < state.count - 1:
                total -= state.tokens[n]
                n += 1
        if n <= 0:
            return None
        return Decision.span("drop", 0, n, f"kept the newest {state.count - n} messages")


@dataclass(frozen=True)
class FitWindow:
    """Drops the oldest messages only when the context is over the window, never summarizing:
    the fallback of the `clear-tool-results` preset (clearing alone, what a team gets from the
    API's context editing without compaction). Whole tool groups are dropped together (the
    engine's rule), so what stays is never a result without its call."""

    windowed: ClassVar[bool] = True
    name: ClassVar[str] = "fit-window"
    settles: ClassVar[bool] = True
    """Its drop frees at least the excess, or leaves one message: asked again, it finds nothing
    over the window (or nothing it may drop) and answers None (`Policy.settles`)."""
    idle_within_window: ClassVar[bool] = True
    """Nothing is over while the context fits: `decide` answers None (`Policy.idle_within_window`;
    checked against `decide` in tests/rollsum/test_fit_window.py)."""

    def may_summarize(self, state: WindowState) -> bool:
        return False

    def decide(self, state: WindowState) -> Decision | None:
        over = state.context_tokens - state.context_window
        n = freed = 0
        while freed < over and n < state.count - 1:
            freed += state.tokens[n]
            n += 1
        if n <= 0:
            return None
        return Decision.span("drop", 0, n, f"context {state.context_tokens} > window {state.context_window}: "
                                            f"dropped the oldest {n} messages")
