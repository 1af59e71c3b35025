"""The trigger seam: a policy looks at the window and says whether, and what, to compress.

Policies are pure: `decide` reads a `WindowState` snapshot and returns a `Decision` or None.
Everything a seed's trigger needs (counts since the last summary, token sums, chain depth, the
lowest usage seen since the last summary for hysteresis) is computed by the engine and handed
in, so a policy has no hidden state and can be tested with a hand-built state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from rollsum.types import Message, SummaryRecord

Action = Literal["summarize", "evict", "drop"]


@dataclass(frozen=True, slots=True)
class WindowState:
    """A read-only snapshot of one conversation's window, taken after a message was added.

    `messages` and `tokens` are the *summarizable* active messages in order (pinned system
    messages are excluded and counted in `pinned_tokens`), so a large system prompt can never
    make a token trigger fire on every turn.
    """

    messages: Sequence[Message]
    tokens: Sequence[int]
    active_tokens: int
    pinned_tokens: int = 0
    summary_tokens: int = 0
    """Tokens the rendered summary takes in the assembled context (0 without a summary)."""
    summary: SummaryRecord | None = None
    chain_length: int = 0
    messages_covered: int = 0
    """Cumulative messages replaced by summaries (seed 001's `messages_covered`)."""
    total_added: int = 0
    """Messages ever added to this conversation, pinned ones excluded."""
    since_summary: int = 0
    """Messages added since the last summary event (or since the start)."""
    pending: int = 0
    """Messages evicted from the window and waiting to be summarized."""
    pending_messages: Sequence[Message] = ()
    evicted_since_summary: int = 0
    dropped: int = 0
    min_tokens_since_summary: int | None = None
    """Lowest `context_tokens` observed at any turn since the last summary: hysteresis input."""
    context_window: int = 200_000
    """The main model's context window in tokens (what ratios are taken against)."""
    passes: int = 0
    """How many summaries were already made in response to this same message (second pass)."""
    last_failed: bool = False
    """The previous attempt at this turn failed: policies must not ask for it again."""

    @property
    def context_tokens(self) -> int:
        return self.pinned_tokens + self.summary_tokens + self.active_tokens

    @property
    def count(self) -> int:
        return len(self.messages)


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do: which active messages (indices into `WindowState.messages`) and how.

    - ``summarize``: replace them (plus any pending evicted messages) by a new summary record.
    - ``evict``: take them out of the window now; they become ``pending`` and are summarized
      together later, when the policy asks for it.
    - ``drop``: take them out with no summary (baselines only).
    """

    action: Action
    indices: tuple[int, ...]
    reason: str
    include_pending: bool = True

    @classmethod
    def span(cls, action: Action, start: int, end: int, reason: str, **kw: Any) -> Decision:
        return cls(action, tuple(range(start, end)), reason, **kw)

    @property
    def size(self) -> int:
        return len(self.indices)


@runtime_checkable
class Policy(Protocol):
    """Decides when to compress and which span. One class per seed design."""

    name: str

    def decide(self, state: WindowState) -> Decision | None: ...


def policy_params(policy: object) -> dict[str, Any]:
    """Constructor parameters of a dataclass policy, for manifests and re-creation."""
    if dataclasses.is_dataclass(policy) and not isinstance(policy, type):
        return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.init}
    return {}
