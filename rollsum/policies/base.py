"""The trigger seam: a policy looks at the window and says whether, and what, to compress.

Policies are pure: `decide` reads a `WindowState` snapshot and returns a `Decision` or None.
Everything a seed's trigger needs (counts since the last summary, token sums, chain depth, the
lowest usage seen since the last summary for hysteresis) is computed by the engine and handed
in, so a policy has no hidden state and can be tested with a hand-built state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.types import Message, SummaryRecord, quick_init

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
    context_window: int = DEFAULT_CONTEXT_WINDOW
    """The main model's context window in tokens (what ratios are taken against)."""
    passes: int = 0
    """How many summaries were already made in response to this same message (second pass)."""
    last_failed: bool = False
    """The last attempt failed and the engine is backing off: policies must not ask again."""
    since_attempt: int | None = None
    """Messages added since the last summary *attempt*, successful or not (None: no attempt
    yet). Rate limits count attempts, so a failing model is not called more often than a
    working one."""
    attempts: int = 0
    """Summary attempts so far (successful or not, the window guard's included)."""
    total_evicted: int = 0
    """Messages ever moved to pending (by the policy or the window guard)."""
    summary_budget: int = 0
    """Tokens the rendered summary may take in the context at most (its share of the window,
    with its framing): what a policy must leave room for before a summary lands."""

    @property
    def context_tokens(self) -> int:
        return self.pinned_tokens + self.summary_tokens + self.active_tokens

    @property
    def count(self) -> int:
        return len(self.messages)


@quick_init
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
    fold: bool = True
    """Fold the previous summary into the new one (the summarizer rewrites the whole story).
    False (seed 003's depth cap) forbids rewriting it: a summary of the span alone is appended
    to the previous text, cutting the oldest content with a marker to stay in budget, or, for a
    summarizer that never rewrites, the old lines compete with the span's as before (the
    engine's `depth_cap_merge`; docs/seeds.md)."""

    @classmethod
    def span(cls, action: Action, start: int, end: int, reason: str, **kw: Any) -> Decision:
        return cls(action, tuple(range(start, end)), reason, **kw)

    def with_indices(self, indices: tuple[int, ...]) -> Decision:
        """``replace(self, indices=indices)`` spelled out: the engine narrows a decision to whole
        tool groups on ~60 % of clear-tool-results' drops, and `dataclasses.replace` looks every
        field up by name (a field added to the class must be added here: test_types checks)."""
        return type(self)(self.action, indices, self.reason, self.include_pending, self.fold)

    @property
    def size(self) -> int:
        return len(self.indices)


@runtime_checkable
class Policy(Protocol):
    """Decides when to compress and which span. One class per seed design.

    Optional members the engine uses when present (a policy without them gets the defaults):

    - ``windowed: bool`` (default False): the preset promises to stay inside
      `WindowState.context_window`, so the engine's window guard is on by default.
    - ``may_summarize(state) -> bool`` (default True): whether the window guard may ask the
      summarizer now, i.e. the policy's own rate limit and mode allow a summary. When it says
      no, the guard keeps the window without a model call (evicting to pending).
    - ``fold_allowed(depth) -> bool`` (default True): whether a summary at `depth` may fold the
      previous one (seed 003's depth cap); otherwise the guard appends (`Decision.fold`).
    - ``quiet_for(state) -> int`` (default 0): after `decide` answered None for `state`, for
      how many more messages it is sure to answer None while no summary lands. That is, for
      every state the engine can reach from `state` by adding k <= that many messages: the same
      summary chain, `total_added` and `since_summary` each k more, `attempts` not fewer, and
      any other field anything at all. The engine neither builds a snapshot nor asks until
      then (`quiet_hook`); a policy whose answer may change sooner returns 0.
    - ``settles: bool`` (default False): once one of its ``drop`` or ``evict`` decisions is
      applied exactly as decided (no tool group cut it down), asked again in the same turn it
      answers None. The engine then does not ask (`settles`): a policy that drops on almost
      every message in the steady state (truncate, fit-window) was asked twice per message,
      and the second answer, always None, was ~10 % of clear-tool-results' steady state
      (issue #20, item 2).
    - ``idle_within_window: bool`` (default False): `decide` answers None whenever
      `WindowState.context_tokens` <= `WindowState.context_window`. The engine then neither
      builds a snapshot nor asks while the context fits (`idle_within_window`): fit-window was
      asked on every message of clear-tool-results' steady state, and answered None on ~half.
    """

    name: str

    def decide(self, state: WindowState) -> Decision | None: ...


def may_summarize(policy: object, state: WindowState) -> bool:
    hook = getattr(policy, "may_summarize", None)
    return bool(hook(state)) if callable(hook) else True


def quiet_hook(policy: object) -> Callable[[WindowState], int] | None:
    """The policy's ``quiet_for`` hook, None without one: how many messages to come it answers
    None for. The engine looks it up once per policy (a missing attribute costs ~2k
    instructions to look for) and asks the policy again only when that many have come.

    Why: a policy that counts messages (since-last: a summary every 20) is asked after every
    message and answers None 19 times out of 20; the snapshot it reads and the call were ~14 %
    of since-last's engine (issue #20, item 1)."""
    hook = getattr(policy, "quiet_for", None)
    return hook if callable(hook) else None


def settles(policy: object) -> bool:
    """The policy's optional ``settles`` promise (`Policy`), False without one."""
    return getattr(policy, "settles", False) is True


def idle_within_window(policy: object) -> bool:
    """The policy's optional ``idle_within_window`` promise (`Policy`), False without one."""
    return getattr(policy, "idle_within_window", False) is True


class PolicyHooks:
    """A policy's optional members the engine reads on almost every message (`quiet_for`,
    `settles`, `idle_within_window`: `Policy`), looked up once per policy: a missing attribute
    costs ~2k instructions to look for (a getattr per decide cost other presets ~2k per message)."""

    __slots__ = ("idle", "policy", "quiet_for", "settles")

    def __init__(self, policy: object) -> None:
        self.policy = policy
        self.quiet_for = quiet_hook(policy)
        self.settles = settles(policy)
        self.idle = idle_within_window(policy)


def fold_allowed(policy: object, depth: int) -> bool:
    hook = getattr(policy, "fold_allowed", None)
    return bool(hook(depth)) if callable(hook) else True


def attempts_allowed(attempts: int, earned: int, every: int) -> bool:
    """A rate limit on attempts: the k-th attempt needs at least k × `every` items (messages
    added, messages evicted) so far. Cumulative, so a failing model is called no more often
    than a working one, and a burst that arrived while a summary ran (asyncio, lag) may be
    caught up at once by back-to-back summaries without ever exceeding the rate."""
    return (attempts + 1) * every <= earned


def policy_params(policy: object) -> dict[str, Any]:
    """Constructor parameters of a dataclass policy, for manifests and re-creation."""
    if dataclasses.is_dataclass(policy) and not isinstance(policy, type):
        return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.init}
    return {}
