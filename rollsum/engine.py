"""The rolling summarizer: a window of verbatim messages plus a chain of summaries.

Flow for each added message: persist it, ask the policy, and if it asks for a summary, run
the summarizer (with retries, fallback and the fact ledger) on a *snapshot* of the span, then
commit the record and the covered messages' state change in one store transaction, and only
then change the in-memory window. A failure at any step before the commit changes nothing:
every message stays where it was. Once the message is stored, `add()` does not raise: any
exception from a model, summarizer or store on the way is a classified failure event.

Then the **window guard** (presets with a window): if the context is still over
``context_window − reserved_output_tokens``, whatever the order of triggers and failures, the
engine (1) compacts -- summarizes the oldest messages down to a low-water mark, when the
policy's own rate limit, the failure backoff, the attempt cap and the guard's token bound
allow a summarizer call; (2) moves the oldest
active messages to ``pending`` (out of the context, never lost, folded into the next
successful summary); (3) only when one message or the pinned system messages alone are larger
than the window, clips their content *in the context* with a visible marker (a ``clip``
event; the stored messages are never altered). So after `add()` returns,
``context_tokens() <= context_window − reserved_output_tokens``.

Cadence: the k-th summary attempt needs k × `min_messages_per_attempt` messages added, and
attempts, failures and backoff are kept with the conversation (`Store.save_cadence`), so an
engine rebuilt from its store for every message makes the attempts a long-lived one makes.

Planning, running and applying a summary are separate steps (`_plan`, `_run`, `_apply`) so
the same core serves the synchronous engine, a simulated lag (`lag_turns`, for replays) and
the asyncio variant in `rollsum.aio`, which runs `_run` in a worker thread.
"""

from __future__ import annotations

import bisect
import json
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from rollsum import clearing
from rollsum import ledger as fact_ledger
from rollsum.clearing import ClearSettings
from rollsum.context import (
    CLIP_MARKER,
    OMITTED_SUMMARY,
    ContextFormat,
    append_summary,
    budget_summary,
    clip_text,
    get_format,
)
from rollsum.errors import ConfigError, ErrorKind, SummarizeError, classify_exception, retry_wait
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.policies._util import units_holding
from rollsum.policies.base import Decision, Policy, WindowState, fold_allowed, may_summarize, policy_params
from rollsum.redact import redact, redacting_logger
from rollsum.store.base import Store
from rollsum.store.memory import MemoryStore
from rollsum.summarizers.base import Summarizer, SummaryDraft, SummaryRequest, rewrites_previous
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage, new_id

log = redacting_logger(__name__)

LedgerMode = Literal["auto", "pin", "retry", "off"]
DepthCapMerge = Literal["select", "cut"]
SELECTED_AT_CAP = "merged at the depth cap by selection: previous lines kept verbatim or dropped, none rewritten"
Launch = Callable[["_Job"], "SummaryEvent | None"]
"""Runs a planned job: returns its applied event, or None when it lands later (lag, asyncio)."""

MIN_WINDOW = 64
"""Smallest window the guard can keep: room for the newest message's clip marker and framing."""
MAX_KEY_POINTS = 30


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Job:
    """A summary to make: an immutable snapshot taken when the policy (or the guard) decided."""

    decision: Decision
    turn: int
    messages: tuple[Message, ...]
    """Everything the summary will cover (pending and active), oldest first."""
    span_ids: frozenset[str]
    """Ids of the covered messages that were active when planned (the rest were pending)."""
    previous: SummaryRecord | None
    depth: int
    tokens_before: int
    added_at: int
    """`total_added` when planned: messages added after it count toward the next summary."""
    due_turn: int = 0
    guard: bool = False
    skip_primary: bool = False
    """The primary summarizer is backing off after failing while the fallback answered: go
    straight to the fallback (a dead model is not called on every attempt)."""


@dataclass(slots=True)
class _Outcome:
    draft: SummaryDraft | None = None
    error: SummarizeError | None = None
    attempts: int = 0
    fallback: str | None = None
    primary_failed: bool = False
    facts: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


class RollingSummarizer:
    """Keeps one conversation inside its budget. See module docstring for the life cycle.

    Parameters that matter most:
    - `context_window`: the main model's window in tokens; ratios and budgets are taken on it.
    - `enforce_window`: keep ``context_tokens() <= context_window − reserved_output_tokens``
      after every `add()` (the
      window guard). Default: on for presets that have a window (token-ratio,
      budget-rule-based, evict-window; since-last and count-and-tokens when `from_preset` is
      given a `context_window`), off for the baselines.
    - `guard_low_water` / `guard_min_tail`: a guard compaction summarizes the oldest messages
      until the context is projected at ``guard_low_water × context_window`` (summary at its
      full share), keeping at least the newest `guard_min_tail`. Bound: at most one guard
      summarizer call per ``(1 − guard_low_water) × context_window`` tokens added.
    - `reserved_output_tokens`: room kept for the main model's answer (seed 002); the summary's
      share is taken on the window minus it.
    - `summary_share` / `max_summary_tokens` / `min_summary_tokens`: the summary never takes
      more than ``min(max_summary_tokens, summary_share × (context_window −
      reserved_output_tokens))`` tokens of context; with less than `min_summary_tokens` of room
      it is omitted with a marker.
    - `max_request_tokens`: one summary request carries at most this many tokens of messages
      (default: one window), oldest first; a larger backlog is summarized in several requests.
    - `fallback`: a second summarizer used when the first fails for good (e.g. extractive);
      None means "no summary this time, nothing archived".
    - `retries` / `backoff_s`: retryable failures (transport, timeouts, a locked cache) are
      retried with backoff_s × 2**n (or the server's retry-after, up to `max_retry_after_s`);
      others are not. The engine owns retries: `AnthropicModel` sets its SDK client's own
      retries to 0, so a persistent 500 costs exactly ``retries + 1`` HTTP calls.
    - `failure_cooldown` / `max_failure_backoff`: after k failed attempts in a row no new
      attempt for ``min(failure_cooldown × 2**(k−1), max_failure_backoff)`` messages. A
      primary summarizer that failed while the `fallback` answered backs off the same way:
      meanwhile attempts go straight to the fallback. Attempts, failures and backoff are kept
      with the conversation in the store (`Store.save_cadence`), so an engine rebuilt for
      every message keeps the cadence of a long-lived one.
    - `min_messages_per_attempt`: a cap under every policy and the window guard: the k-th
      summary attempt (successful or not) needs k × this many messages added (default 10:
      at most 10 attempts per 100 messages on any stream). A policy that asks more often is
      told no; the window guard keeps the window meanwhile without a model (messages move
      to pending and are folded into the next summary). 0 turns the cap off.
    - `ledger`: "pin" keeps facts the summary dropped in a Facts section, "retry" asks the
      summarizer once more naming them (then pins), "off" skips the ledger. "auto" (default)
      pins for model-backed summarizers and is off for the extractive one, which already
      selects fact-bearing sentences from the same span; with it on, an offline replay runs at
      about half the speed (docs/ledger.md, benchmarks/bench_replay.py).
    - `lag_turns`: simulate an asynchronous summarizer that lands N turns after the trigger.
    - `rebuild_from_raw`: summarize all covered raw messages again instead of folding the
      previous summary (no drift, more tokens).
    - `depth_cap_merge`: what a summary past seed 003's depth cap (`Decision.fold` False) does
      with the previous one. The cap exists because a summary of a summary drifts; "select"
      (default) therefore caps only summarizers that rewrite the previous text (a model): one
      that keeps previous lines verbatim or drops them (`rewrites_previous` False: the
      extractive one) is still given the previous summary, so its old lines compete with the
      span's under the whole budget, the depth stays at the cap, and the record says so.
      "cut" gives every summarizer the span alone, appended to the previous text with the
      oldest content cut (`rollsum.context.append_summary`): the other reading, and what a
      model summarizer always gets past the cap (docs/seeds.md).
    - `store`: a `Store`, or a spec string for `rollsum.store.open_store` (``"sqlite:chat.db"``,
      ``"memory"``); default: a fresh in-memory store.
    - `takeover`: claim the conversation in the store even if another live engine holds it
      (only when you know that engine is gone; a dead process's claim is taken over anyway).
    """

    def __init__(
        self,
        policy: Policy,
        summarizer: Summarizer,
        *,
        counter: TokenCounter | None = None,
        store: Store | str | None = None,
        context_format: ContextFormat | str = "earlier-heading",
        conversation_id: str | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        enforce_window: bool | None = None,
        guard_low_water: float = 0.6,
        guard_min_tail: int = 2,
        reserved_output_tokens: int = 0,
        summary_share: float = 0.10,
        max_summary_tokens: int = 1024,
        min_summary_tokens: int = 50,
        max_request_tokens: int | None = None,
        fallback: Summarizer | None = None,
        retries: int = 1,
        backoff_s: float = 0.25,
        max_retry_after_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = _utcnow,
        ledger: LedgerMode = "auto",
        ledger_share: float = 0.25,
        ledger_max_facts: int = 60,
        lag_turns: int = 0,
        max_passes: int = 4,
        failure_cooldown: int = 2,
        max_failure_backoff: int = 64,
        min_messages_per_attempt: int = 10,
        rebuild_from_raw: bool = False,
        depth_cap_merge: DepthCapMerge = "select",
        on_event: Callable[[SummaryEvent], None] | None = None,
        preset: str = "",
        takeover: bool = False,
        clear_tool_results: bool = False,
        clear_trigger: int | None = None,
        clear_keep: int = 3,
        clear_at_least: int = 0,
        clear_exclude_tools: Sequence[str] = (),
    ) -> None:
        if context_window <= 0:
            raise ConfigError("context_window must be a positive number of tokens")
        if not 0 < summary_share <= 1:
            raise ConfigError("summary_share must be in (0, 1]")
        if ledger not in ("auto", "pin", "retry", "off"):
            raise ConfigError("ledger must be 'auto', 'pin', 'retry' or 'off'")
        if depth_cap_merge not in ("select", "cut"):
            raise ConfigError(f"depth_cap_merge must be 'select' or 'cut', got {depth_cap_merge!r}")
        if lag_turns < 0 or retries < 0:
            raise ConfigError("lag_turns and retries must be >= 0")
        if not 0 < guard_low_water < 1:
            raise ConfigError(f"guard_low_water must be in (0, 1), got {guard_low_water}")
        if guard_min_tail < 1:
            raise ConfigError(f"guard_min_tail must be >= 1, got {guard_min_tail}")
        if not 0 <= reserved_output_tokens < context_window:
            raise ConfigError(f"reserved_output_tokens ({reserved_output_tokens}) must be >= 0 and below "
                              f"context_window ({context_window})")
        if max_request_tokens is not None and max_request_tokens < 1:
            raise ConfigError(f"max_request_tokens must be >= 1 or None, got {max_request_tokens}")
        if failure_cooldown < 0 or max_failure_backoff < 0 or min_messages_per_attempt < 0:
            raise ConfigError("failure_cooldown, max_failure_backoff and min_messages_per_attempt must be >= 0")
        self.policy = policy
        self.summarizer = summarizer
        self.counter: TokenCounter = counter or HeuristicCounter()
        if isinstance(store, str):  # a spec string ("sqlite:chat.db", "memory"): see open_store
            from rollsum.store import open_store

            store = open_store(store)
        self.store: Store = store if store is not None else MemoryStore()
        self.format = get_format(context_format) if isinstance(context_format, str) else context_format
        self.conversation_id = conversation_id or new_id("conv-")
        self.context_window = context_window
        self.enforce_window = bool(getattr(policy, "windowed", False)) if enforce_window is None \
            else bool(enforce_window)
        if self.enforce_window and context_window - reserved_output_tokens < MIN_WINDOW:
            raise ConfigError(f"context_window minus reserved_output_tokens must be at least {MIN_WINDOW} "
                              f"tokens to be kept, got {context_window} − {reserved_output_tokens}")
        self.guard_low_water = guard_low_water
        self.guard_min_tail = guard_min_tail
        self.reserved_output_tokens = reserved_output_tokens
        self.summary_share = summary_share
        self.max_summary_tokens = max_summary_tokens
        self.min_summary_tokens = min_summary_tokens
        self.max_request_tokens = max_request_tokens if max_request_tokens is not None else context_window
        self.fallback = fallback
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self._clock = clock
        self.ledger: LedgerMode = ledger
        self.depth_cap_merge: DepthCapMerge = depth_cap_merge
        self.ledger_share = ledger_share
        self.ledger_max_facts = ledger_max_facts
        self.lag_turns = lag_turns
        self.max_passes = max_passes
        self.failure_cooldown = failure_cooldown
        self.max_failure_backoff = max_failure_backoff
        self.min_messages_per_attempt = min_messages_per_attempt
        self.rebuild_from_raw = rebuild_from_raw
        self.on_event = on_event
        self.preset = preset
        # tool-result clearing (rollsum.clearing): display versions of cleared results, by id
        self.clear_tool_results = bool(clear_tool_results)
        self.clearing = ClearSettings.make(context_window, clear_trigger, clear_keep, clear_at_least,
                                           clear_exclude_tools)
        self._cleared: dict[str, Message] = {}

        # the window: pinned system messages, active messages, pending (evicted) messages;
        # token lists hold what each message takes *in the context* (clipped or not)
        self._pinned: list[Message] = []
        self._pinned_n: list[int] = []
        self._pinned_tokens = 0
        self._active: list[Message] = []
        self._active_seq: list[int] = []
        self._tokens: list[int] = []
        self._active_tokens = 0
        self._pending: list[Message] = []
        self._pending_seq: list[int] = []
        self._history: list[SummaryRecord] = []
        self._summary_msg: Message | None = None
        self._summary_tokens = 0
        self._summary_room = self._room_for_summary()
        # the guard's last resort: display versions of clipped messages, omitted pinned ids
        self._clips: dict[str, Message] = {}
        self._omitted: set[str] = set()
        self._summary_hidden = False
        # counters
        self._seq = 0
        self._total_added = 0
        self._added_tokens = 0
        self._since_summary = 0
        self._evicted_since = 0
        self._since_attempt: int | None = None
        self._attempts = 0
        self._total_evicted = 0
        self._guard_at: int | None = None
        self._failures = 0
        self._retry_at = 0
        self._model_failures = 0
        self._model_retry_at = 0
        self._saved_cadence: dict[str, Any] | None = None
        self._dropped = 0
        self._min_tokens_since: int | None = None
        self._inflight: tuple[_Job, _Outcome] | None = None
        self.usage = Usage()
        self.last_events: tuple[SummaryEvent, ...] = ()
        self._owner = new_id("engine-")
        claim = getattr(self.store, "claim", None)
        if callable(claim):
            claim(self.conversation_id, self._owner, takeover=takeover)
            release = self.store.release
            self._finalizer: Any = weakref.finalize(self, release, self.conversation_id, self._owner)
        else:
            self._finalizer = None
        self._resume_from_store()

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def from_preset(cls, name: str, model: Any = None, **overrides: Any) -> RollingSummarizer:
        """Build an engine from a named preset; see `rollsum.presets`."""
        from rollsum.presets import build

        return build(cls, name, model, **overrides)

    def _resume_from_store(self) -> None:
        """Rebuild the window from a store that already holds this conversation (restart)."""
        rows = self.store.messages(self.conversation_id)
        if not rows:
            return
        self._history = self.store.summaries(self.conversation_id)
        for row in rows:
            m = row.message
            self._seq = max(self._seq, row.seq + 1)
            n = self.counter.count_message(m)
            self._added_tokens += n
            if m.role == "system" and row.state == "active":
                self._pinned.append(m)
                self._pinned_n.append(n)
                self._pinned_tokens += n
                continue
            self._total_added += 1
            if row.state == "active":
                self._active.append(m)
                self._active_seq.append(row.seq)
                self._tokens.append(n)
                self._active_tokens += n
            elif row.state == "pending":
                self._pending.append(m)
                self._pending_seq.append(row.seq)
            elif row.state == "dropped":
                self._dropped += 1
        # without a saved cadence (a store written before it was kept, or one that cannot keep
        # it), rate limits resume from the successful summaries and everything that left the window
        self._attempts = len(self._history)
        self._total_evicted = len(self._pending) + sum(1 for r in rows if r.state == "covered")
        covered_seq = max((r.seq for r in rows if r.state == "covered"), default=-1)
        self._since_summary = sum(1 for r in rows if r.seq > covered_seq and r.message.role != "system")
        self._evicted_since = len(self._pending)
        self._restore_cadence()
        self._refresh_summary()

    def _cadence(self) -> dict[str, Any]:
        """What the rate limits and the failure backoff need across a restart (`Store.save_cadence`).
        Message counts are absolute (`total_added` at an event), so they stay true however
        many messages arrive before the next engine reads them."""
        return {
            "version": 1,
            "attempts": self._attempts,
            "last_attempt_at": None if self._since_attempt is None else self._total_added - self._since_attempt,
            "failures": self._failures, "retry_at": self._retry_at,
            "model_failures": self._model_failures, "model_retry_at": self._model_retry_at,
            "guard_at": self._guard_at,
            "total_evicted": self._total_evicted, "evicted_since": self._evicted_since,
            "summary_at": self._total_added - self._since_summary,
            "min_tokens_since": self._min_tokens_since,
        }

    def _persist_cadence(self) -> None:
        """Save the cadence when it changed (at an attempt, a failure, an eviction: not on every
        message). A store without `save_cadence` (a third-party one) just does not keep it."""
        now = self._cadence()
        if now == self._saved_cadence:
            return
        save = getattr(self.store, "save_cadence", None)
        if callable(save):
            save(self.conversation_id, now)
        self._saved_cadence = now

    def _restore_cadence(self) -> None:
        load = getattr(self.store, "cadence", None)
        saved = load(self.conversation_id) if callable(load) else None
        if not saved:
            return

        def num(key: str, optional: bool = False) -> int | None:
            value = saved.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{key}: expected a count, got {value!r}")
            return value

        try:  # read everything first: a damaged row changes nothing
            attempts, failures, retry_at = num("attempts"), num("failures"), num("retry_at")
            model_failures, model_retry_at = num("model_failures"), num("model_retry_at")
            last, guard_at, low = num("last_attempt_at", True), num("guard_at", True), num("min_tokens_since", True)
            total_evicted, evicted_since, summary_at = num("total_evicted"), num("evicted_since"), num("summary_at")
        except ValueError as err:
            log.warning("conversation %s: saved cadence unreadable (%s); rate limits resume from the "
                        "stored summaries", self.conversation_id, err)
            return
        self._attempts = max(self._attempts, attempts or 0)
        self._since_attempt = None if last is None else max(0, self._total_added - last)
        self._failures, self._retry_at = failures or 0, retry_at or 0
        self._model_failures, self._model_retry_at = model_failures or 0, model_retry_at or 0
        self._guard_at = guard_at
        self._total_evicted, self._evicted_since = total_evicted or 0, evicted_since or 0
        self._since_summary = max(0, self._total_added - (summary_at or 0))
        self._min_tokens_since = low
        self._saved_cadence = self._cadence()

    def close(self) -> None:
        """Release this engine's claim on the conversation (another engine may then open it)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> RollingSummarizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public API

    @property
    def summary(self) -> SummaryRecord | None:
        return self._history[-1] if self._history else None

    @property
    def history(self) -> list[SummaryRecord]:
        return list(self._history)

    @property
    def messages(self) -> list[Message]:
        """The verbatim (active) messages as they appear in the context: a message the window
        guard had to clip carries its marker here too (the stored one is intact)."""
        if not (self._clips or self._cleared):
            return list(self._active)
        return [self._display(m) for m in self._active]

    @property
    def pending(self) -> list[Message]:
        return list(self._pending)

    @property
    def turn(self) -> int:
        return self._seq

    def add(self, message: Message) -> SummaryEvent | None:
        """Append a message; summarize if the policy says so; keep the window. Returns this
        turn's last event. Raises only if the message could not be stored (nothing changed)."""
        message = self._append(message)
        events: list[SummaryEvent] = []
        try:
            if message.role != "system" and self._inflight is not None \
                    and self._inflight[0].due_turn <= self._seq - 1:
                job, outcome = self._inflight
                self._inflight = None
                events.append(self._apply(job, outcome))
            events.extend(self._process(self._launch, self._lagging, system=message.role == "system"))
        except Exception as err:  # stored already: a failure is an event, never an exception
            events.append(self._internal_failure(err))
        self.last_events = tuple(events)
        self._emit(events)
        return events[-1] if events else None

    def flush(self) -> SummaryEvent | None:
        """Land an in-flight (lagged) summary now, e.g. at the end of a replay."""
        if self._inflight is None:
            return None
        job, outcome = self._inflight
        self._inflight = None
        events: list[SummaryEvent] = []
        try:
            events.append(self._apply(job, outcome))
            events.extend(self._guard(self._run_now, lambda: False))
            self._persist_cadence()
        except Exception as err:
            events.append(self._internal_failure(err))
        self._emit(events)
        return events[0]

    def context(self, system: str | None = None, *, timestamps: str = "none") -> list[Message]:
        """The messages to send to the main model, in this preset's format. `timestamps`
        (``message`` / ``session`` / ``none``, `rollsum.context.shown_times`) writes when each
        message was said before it, as a chat application shows it; the stored messages are
        never altered."""
        if timestamps != "none":
            from rollsum.context import with_timestamps

            return with_timestamps(self.context(system=system), timestamps)
        pinned: Sequence[Message] = self._pinned
        active: Sequence[Message] = self._active
        if self._clips or self._omitted or self._cleared:
            pinned = [self._display(m) for m in self._pinned if m.id not in self._omitted]
            active = [self._display(m) for m in self._active]
        summary = None if self._summary_hidden else self._summary_msg
        return self.format.assemble(system=system, pinned=pinned, active=active, summary=summary,
                                    head=self._head())

    def to_anthropic(self, system: str | None = None, *, timestamps: str = "none"
                     ) -> tuple[str, list[dict[str, str]]]:
        """The context as the Anthropic Messages API takes it: ``(system, messages)``::

            system, messages = rs.to_anthropic(system="You are a helpful assistant.")
            client.messages.create(model="claude-haiku-4-5", max_tokens=1024, system=system,
                                   messages=messages)

        ``system`` is your system prompt, then the pinned system messages, then a system-role
        summary (presets whose summary is a system message), joined by blank lines; "" when
        there is none (pass ``system or anthropic.NOT_GIVEN`` to leave it out). The API wants
        turns that alternate user/assistant and start with the user, so consecutive turns of
        one role are merged (blank line between), tool results become user turns headed
        ``[tool result: NAME]``, an empty text becomes ``(empty message)``, and when the kept
        history starts with the assistant (often, after a summary) the short user turn
        ``(The conversation so far follows.)`` goes first. An assistant-role summary (seeds
        000 and 004) stays an assistant turn, in place. ``timestamps="session"`` shows when
        messages were said (see `context`).
        """
        from rollsum.models.anthropic_model import messages_api

        return messages_api(None, self.context(system=system, timestamps=timestamps))

    def context_tokens(self, system: str | None = None) -> int:
        extra = self.counter.count(system) + getattr(self.counter, "overhead", 0) if system else 0
        summary = 0 if self._summary_hidden else self._summary_tokens
        return self._pinned_tokens + summary + self._active_tokens + extra

    def summary_text(self) -> str:
        """The summary as it appears in the context (budgeted), or "" without one."""
        if self._summary_msg is None or self._summary_hidden:
            return ""
        return self._summary_msg.content

    def config(self) -> dict[str, Any]:
        """Everything needed to re-create this engine, with every value resolved."""
        summ_params = getattr(self.summarizer, "params", None)
        fb = self.fallback
        return {
            "preset": self.preset,
            "policy": {"name": self.policy.name, "params": policy_params(self.policy)},
            "summarizer": {"name": getattr(self.summarizer, "name", type(self.summarizer).__name__),
                           "params": summ_params() if callable(summ_params) else {}},
            "fallback": getattr(fb, "name", None) if fb is not None else None,
            "context_format": self.format.name,
            "context_window": self.context_window,
            "enforce_window": self.enforce_window,
            "guard_low_water": self.guard_low_water,
            "guard_min_tail": self.guard_min_tail,
            "reserved_output_tokens": self.reserved_output_tokens,
            "summary_share": self.summary_share,
            "max_summary_tokens": self.max_summary_tokens,
            "min_summary_tokens": self.min_summary_tokens,
            "summary_budget": self._budget(),
            "max_request_tokens": self.max_request_tokens,
            "ledger": self.ledger_mode,
            "ledger_setting": self.ledger,
            "lag_turns": self.lag_turns,
            "retries": self.retries,
            "failure_cooldown": self.failure_cooldown,
            "max_failure_backoff": self.max_failure_backoff,
            "min_messages_per_attempt": self.min_messages_per_attempt,
            "rebuild_from_raw": self.rebuild_from_raw,
            "depth_cap_merge": self.depth_cap_merge,
            **({"clear_tool_results": True, "clear_trigger": self.clearing.trigger, "clear_keep": self.clearing.keep,
                "clear_at_least": self.clearing.clear_at_least,
                "clear_exclude_tools": sorted(self.clearing.exclude_tools)} if self.clear_tool_results else {}),
        }

    # ------------------------------------------------------------------ internals: window

    @property
    def ledger_mode(self) -> LedgerMode:
        """The effective ledger mode ("auto" resolved against the current summarizer)."""
        if self.ledger != "auto":
            return self.ledger
        return "off" if getattr(self.summarizer, "name", "") == "extractive" else "pin"

    def _head(self) -> int:
        """Active messages before the summary (seed 004's head; `head_end` when the policy has it:
        a head that ends in a tool call keeps the call's results)."""
        if self.format.position != "after-head":
            return 0
        end = getattr(self.policy, "head_end", None)
        return int(end(self._active)) if callable(end) else int(getattr(self.policy, "head", 0))

    def _display(self, m: Message) -> Message:
        if m.id is None:
            return m
        return self._clips.get(m.id) or self._cleared.get(m.id, m)

    def _append(self, message: Message) -> Message:
        if message.id is None:
            message = message.with_id(f"{self.conversation_id}/{self._seq}")
        self.store.add_message(self.conversation_id, self._seq, message)
        seq = self._seq
        self._seq += 1
        n = self.counter.count_message(message)
        self._added_tokens += n
        if message.role == "system":
            self._pinned.append(message)
            self._pinned_n.append(n)
            self._pinned_tokens += n
            return message
        self._active.append(message)
        self._active_seq.append(seq)
        self._tokens.append(n)
        self._active_tokens += n
        self._total_added += 1
        self._since_summary += 1
        if self._since_attempt is not None:
            self._since_attempt += 1
        return message

    def _observe(self) -> None:
        t = self.context_tokens()
        if self._min_tokens_since is None or t < self._min_tokens_since:
            self._min_tokens_since = t

    def _state(self, passes: int) -> WindowState:
        return WindowState(
            messages=self._active,
            tokens=self._tokens,
            active_tokens=self._active_tokens,
            pinned_tokens=self._pinned_tokens,
            summary_tokens=0 if self._summary_hidden else self._summary_tokens,
            summary=self.summary,
            chain_length=len(self._history),
            messages_covered=self.summary.messages_covered if self.summary else 0,
            total_added=self._total_added,
            since_summary=self._since_summary,
            pending=len(self._pending),
            pending_messages=self._pending,
            evicted_since_summary=self._evicted_since,
            dropped=self._dropped,
            min_tokens_since_summary=self._min_tokens_since,
            context_window=self.context_window,
            passes=passes,
            last_failed=self._in_backoff(),
            since_attempt=self._since_attempt,
            attempts=self._attempts,
            total_evicted=self._total_evicted,
            summary_budget=self._summary_room,
        )

    def _remove(self, ids: set[str], at: Sequence[int] | None = None) -> list[tuple[int, Message]]:
        """Take messages out of the active window by id (they may not be contiguous).

        `at`, when the caller knows them, are the active positions of exactly those messages:
        they are cut out in runs, so an eviction costs what it removes, not the window's length
        (at a 200k window a rebuild per eviction made replay quadratic)."""
        if not ids:
            return []
        if at is not None:
            return self._remove_at(sorted(set(at)))
        kept: list[Message] = []
        kept_seq: list[int] = []
        kept_tokens: list[int] = []
        removed: list[tuple[int, Message]] = []
        for m, s, n in zip(self._active, self._active_seq, self._tokens):
            if m.id in ids:
                removed.append((s, m))
                self._clips.pop(m.id, None)
                self._cleared.pop(m.id, None)
            else:
                kept.append(m)
                kept_seq.append(s)
                kept_tokens.append(n)
        self._active, self._active_seq, self._tokens = kept, kept_seq, kept_tokens
        self._active_tokens = sum(kept_tokens)
        return removed

    def _remove_at(self, positions: Sequence[int]) -> list[tuple[int, Message]]:
        """`_remove` by ascending active positions: runs deleted from the back, in place."""
        active, seqs, tokens = self._active, self._active_seq, self._tokens
        removed = [(seqs[i], active[i]) for i in positions]
        for _, m in removed:
            if m.id is not None:
                self._clips.pop(m.id, None)
                self._cleared.pop(m.id, None)
        freed = 0
        k = len(positions)
        while k > 0:
            stop = positions[k - 1] + 1
            k -= 1
            while k > 0 and positions[k - 1] == positions[k] - 1:
                k -= 1
            start = positions[k]
            freed += sum(tokens[start:stop])
            del active[start:stop], seqs[start:stop], tokens[start:stop]
        self._active_tokens -= freed
        return removed

    def _add_pending(self, removed: Sequence[tuple[int, Message]]) -> None:
        """Pending stays in conversation order whatever order evictions come in."""
        for s, m in removed:
            k = bisect.bisect(self._pending_seq, s)
            self._pending_seq.insert(k, s)
            self._pending.insert(k, m)

    def _keep_tool_pairs(self, indices: Sequence[int]) -> tuple[int, ...]:
        """Never split a tool call from its results across the summary boundary.

        Partial call/result groups are left out of the decision (the window keeps them whole);
        if that empties the decision, the groups are taken whole instead. Only the groups that
        hold a decided index are looked at (`units_holding`): the cost does not grow with the
        window.
        """
        if not indices:
            return ()
        chosen = set(indices)
        shrunk: list[int] = []
        grown: list[int] = []
        for a, b in units_holding(self._active, chosen):
            g = range(a, b)
            grown.extend(g)
            if all(k in chosen for k in g):
                shrunk.extend(g)
        return tuple(shrunk) if shrunk else tuple(grown)

    # ------------------------------------------------------------------ internals: decisions

    def _in_backoff(self) -> bool:
        return self._failures > 0 and self._total_added < self._retry_at

    def _rate_allows(self) -> bool:
        """`min_messages_per_attempt`: the k-th attempt needs k × that many messages added."""
        every = self.min_messages_per_attempt
        return every == 0 or (self._attempts + 1) * every <= self._total_added

    def _primary_blocked(self) -> bool:
        """The primary summarizer failed (the fallback answered) and is backing off."""
        return self._model_failures > 0 and self._total_added < self._model_retry_at

    def _lagging(self) -> bool:
        return self._inflight is not None

    def _decide(self, passes: int) -> Decision | None:
        """Ask the policy, then make its answer safe: whole tool groups, something to do."""
        decision = self.policy.decide(self._state(passes))
        if decision is None:
            return None
        indices = self._keep_tool_pairs(decision.indices)
        if not indices and not (decision.include_pending and self._pending):
            return None
        return replace(decision, indices=indices)

    def _apply_cheap(self, decision: Decision) -> SummaryEvent | None:
        """Evictions and drops need no model: apply them at once. None for a summary."""
        if decision.action == "evict":
            return self._evict(decision)
        if decision.action == "drop":
            return self._drop(decision)
        return None

    def _summary_decisions(self, events: list[SummaryEvent]) -> Iterator[Decision]:
        """This turn's summarize decisions; evictions and drops are applied on the way.

        `WindowState.passes` counts the summaries already made this turn (seed 003's second
        pass); `max_passes` bounds the whole loop so a policy cannot spin.
        """
        summaries = 0
        for _ in range(self.max_passes):
            decision = self._decide(summaries)
            if decision is None:
                return
            cheap = self._apply_cheap(decision)
            if cheap is not None:
                events.append(cheap)
                continue
            yield decision
            summaries += 1

    def _process(self, launch: Launch, busy: Callable[[], bool], *, system: bool = False) -> list[SummaryEvent]:
        """One round after a message (or a background landing): policy, then window guard.

        While a summary is in flight (lag, asyncio) the policy is not asked (one summary at a
        time per conversation); the guard still keeps the window, without the model.
        """
        events: list[SummaryEvent] = []
        self._unclip()
        if self.clear_tool_results:
            self._clear()
        if not system and not busy() and self._summary_due():
            for decision in self._summary_decisions(events):
                if self._in_backoff() or not self._rate_allows():
                    break
                ev = launch(self._plan(decision))
                if ev is None:
                    break
                events.append(ev)
                if ev.kind != "summary":
                    break
        events.extend(self._guard(launch, busy))
        self._observe()
        self._persist_cadence()
        return events

    def _clear(self) -> None:
        """Replace old tool results by placeholders in the context (`rollsum.clearing`)."""
        found = clearing.plan(self._active, self._tokens, self._cleared, self.context_tokens(), self.clearing,
                              self.counter.count_message)
        for i, shown in found.items():
            self._cleared[shown.id] = shown  # type: ignore[index]
            n = self.counter.count_message(shown)
            self._active_tokens += n - self._tokens[i]
            self._tokens[i] = n

    def _summary_due(self) -> bool:
        """With clearing on, the policy is asked only while the cleared context is still over
        the clearing trigger: clear first, summarize only if that was not enough."""
        return not self.clear_tool_results or self.context_tokens() > self.clearing.trigger

    def _launch(self, job: _Job) -> SummaryEvent | None:
        outcome = self._run(job)
        if self.lag_turns > 0:
            job.due_turn = job.turn + self.lag_turns
            self._inflight = (job, outcome)
            return None
        return self._apply(job, outcome)

    def _run_now(self, job: _Job) -> SummaryEvent:
        return self._apply(job, self._run(job))

    def _evict(self, decision: Decision, *, guard: bool = False) -> SummaryEvent:
        before = self.context_tokens()
        ids = [self._active[i].id for i in decision.indices if self._active[i].id is not None]
        self.store.set_state(self.conversation_id, ids, "pending", decision.reason)  # type: ignore[arg-type]
        removed = self._remove(set(ids), at=decision.indices)  # type: ignore[arg-type]
        self._add_pending(removed)
        self._evicted_since += len(removed)
        self._total_evicted += len(removed)
        return SummaryEvent("evict", self._seq - 1, decision.reason, messages=len(removed),
                            tokens_before=before, tokens_after=self.context_tokens(), guard=guard)

    def _drop(self, decision: Decision) -> SummaryEvent:
        before = self.context_tokens()
        ids = [self._active[i].id for i in decision.indices if self._active[i].id is not None]
        if decision.include_pending:
            ids.extend(m.id for m in self._pending if m.id is not None)
        self.store.set_state(self.conversation_id, ids, "dropped", decision.reason)  # type: ignore[arg-type]
        removed = self._remove(set(ids), at=decision.indices)  # type: ignore[arg-type]
        n = len(removed)
        if decision.include_pending:
            n += len(self._pending)
            self._pending, self._pending_seq = [], []
            self._evicted_since = 0
        self._dropped += n
        return SummaryEvent("drop", self._seq - 1, decision.reason, messages=n,
                            tokens_before=before, tokens_after=self.context_tokens())

    # ------------------------------------------------------------------ internals: window guard

    def _limit(self) -> int:
        """What the guard keeps the context within: the window minus the main model's reserved
        answer room (seed 002's budget; the whole window when nothing is reserved)."""
        return self.context_window - self.reserved_output_tokens

    def _guard(self, launch: Launch, busy: Callable[[], bool]) -> list[SummaryEvent]:
        """Keep ``context_tokens() <= context_window − reserved_output_tokens``: compact, else
        evict to pending, else clip."""
        window = self._limit()
        if not self.enforce_window or self.context_tokens() <= window:
            return []
        events: list[SummaryEvent] = []
        if not busy() and self._guard_may_compact():
            decision = self._guard_decision()
            if decision is not None:
                ev = launch(self._plan(decision, guard=True))
                if ev is not None:
                    events.append(ev)
        if self.context_tokens() > window:
            ev = self._guard_evict()
            if ev is not None:
                events.append(ev)
        if self.context_tokens() > window:
            events.append(self._clip())
        return events

    def _guard_gap(self) -> int:
        return max(1, int((1 - self.guard_low_water) * self._limit()))

    def _limit_name(self) -> str:
        if self.reserved_output_tokens:
            return (f"budget {self._limit()} (window {self.context_window} − "
                    f"{self.reserved_output_tokens} reserved)")
        return f"window {self.context_window}"

    def _guard_may_compact(self) -> bool:
        """A guard summary only when it is allowed (backoff, the policy's own rate limit, the
        guard's token bound) and can bring the context inside the window at all."""
        if self._in_backoff() or not self._rate_allows():
            return False
        if self._guard_at is not None and self._added_tokens - self._guard_at < self._guard_gap():
            return False
        if self._pinned_tokens + self._summary_room >= self._limit():
            return False
        return may_summarize(self.policy, self._state(0))

    def _guard_order(self, limit: int) -> list[int]:
        """Active indices below `limit` in the order the guard takes them: oldest first, a
        preserved head (seed 004's task statement) last."""
        head = min(self._head(), limit)
        return list(range(head, limit)) + list(range(head))

    def _guard_decision(self) -> Decision | None:
        n = len(self._active)
        limit = n - min(self.guard_min_tail, n)
        target = int(self.guard_low_water * self._limit()) - self._pinned_tokens - self._summary_room
        remaining = self._active_tokens
        picked: list[int] = []
        for i in self._guard_order(limit):
            if remaining <= target:
                break
            picked.append(i)
            remaining -= self._tokens[i]
        indices = tuple(i for i in self._keep_tool_pairs(sorted(picked)) if i < n - 1)
        if not indices and not self._pending:
            return None
        depth = self.summary.depth + 1 if self.summary is not None else 0
        fold = fold_allowed(self.policy, depth)
        return Decision("summarize", indices,
                        f"window guard: context {self.context_tokens()} > {self._limit_name()}; "
                        f"compacting to {self.guard_low_water:g} of it" + ("" if fold else " (depth cap: not folded)"),
                        fold=fold)

    def _guard_evict(self) -> SummaryEvent | None:
        """Oldest active messages to pending until the context fits; never the newest."""
        over = self.context_tokens() - self._limit()
        picked: list[int] = []
        freed = 0
        for i in self._guard_order(len(self._active) - 1):
            if freed >= over:
                break
            picked.append(i)
            freed += self._tokens[i]
        if not picked:
            return None
        reason = (f"window guard: context {self.context_tokens()} > {self._limit_name()}; "
                  f"moved {len(picked)} oldest messages out of the context until the next summary")
        return self._evict(Decision("evict", tuple(sorted(picked)), reason, include_pending=False), guard=True)

    def _clip(self) -> SummaryEvent:
        """The impossible case: what must stay (the newest message, pinned system messages) is
        larger than the window on its own. Clip it in the context, never in the store.

        Water-filling: every item above a common cap is cut to it, so small messages are left
        whole and the largest give up the most. If even markers cannot fit, the summary is left
        out of the context, then the oldest pinned messages.
        """
        before = self.context_tokens()
        window = self._limit()
        items: list[tuple[str, Message, int]] = []  # (where, message, original tokens)
        for m, n in zip(self._pinned, self._pinned_n):
            items.append(("pinned", m, n))
        for m, n in zip(self._active, self._tokens):
            items.append(("active", self._cleared.get(m.id, m) if m.id is not None else m, n))
        floor = {m.id: self._clip_floor(m) for _, m, _ in items}
        omitted: list[str] = []

        def level(avail: int) -> float:
            """The common cap: every item above it is cut to it, the rest fit whole."""
            sizes = sorted(n for _, m, n in items if m.id not in omitted)
            left = avail
            for k, s in enumerate(sizes):
                share = left / (len(sizes) - k)
                if s > share:
                    return share
                left -= s
            return float("inf")

        def feasible(c: float) -> bool:
            return all(n <= c or c >= floor[m.id] for _, m, n in items if m.id not in omitted)

        summary = self._summary_tokens
        cap = level(window - summary)
        if not feasible(cap) and summary:
            self._summary_hidden, summary = True, 0
            cap = level(window)
        for where, m, _ in items:
            if feasible(cap) or where != "pinned":
                break
            omitted.append(m.id)  # type: ignore[arg-type]
            cap = level(window - summary)
        clipped = 0
        for _, m, n in items:
            if m.id in omitted:
                continue
            if n > cap:
                shown = self._clip_message(m, int(cap))
                self._clips[m.id] = shown  # type: ignore[index]
                clipped += 1
        self._omitted = set(omitted)
        self._recount()
        if self.context_tokens() > window and not self._summary_hidden:
            self._summary_hidden = True
        if self.context_tokens() > window:
            log.error("window guard could not fit %s into %d tokens", self.conversation_id, window)
        what = [f"{clipped} message(s) clipped in the context"]
        if omitted:
            what.append(f"{len(omitted)} pinned system message(s) left out")
        if self._summary_hidden:
            what.append("the summary left out")
        reason = (f"window guard: what must stay is larger than the {self._limit_name()} on its own: "
                  + ", ".join(what) + "; stored messages unchanged")
        log.warning("%s (conversation %s)", reason, self.conversation_id)
        return SummaryEvent("clip", self._seq - 1, reason, messages=clipped + len(omitted),
                            tokens_before=before, tokens_after=self.context_tokens(), guard=True)

    def _clip_floor(self, m: Message) -> int:
        return self.counter.count_message(Message(m.role, CLIP_MARKER.format(n=len(m.content)), id=f"{m.id}#f"))

    def _clip_message(self, m: Message, max_tokens: int) -> Message:
        overhead = self.counter.count_message(Message(m.role, "", id=f"{m.id}#o"))
        room = max(0, max_tokens - overhead)
        while True:
            text = clip_text(m.content, room, self.counter.count)
            shown = replace(m, content=text, meta={**m.meta, "clipped_chars": len(m.content) - len(text)})
            if room <= 0 or self.counter.count_message(shown) <= max_tokens:
                return shown
            room -= 1  # a counter whose message framing is not constant: tighten and retry

    def _recount(self) -> None:
        """Token lists from the display versions (after clipping or unclipping)."""
        count = self.counter.count_message
        self._pinned_n = [0 if m.id in self._omitted else count(self._display(m)) for m in self._pinned]
        self._pinned_tokens = sum(self._pinned_n)
        self._tokens = [count(self._display(m)) for m in self._active]
        self._active_tokens = sum(self._tokens)

    def _unclip(self) -> None:
        """Back to the full messages before deciding again: clipping is redone only if needed."""
        if not (self._clips or self._omitted or self._summary_hidden):
            return
        self._clips.clear()
        self._omitted.clear()
        self._summary_hidden = False
        self._recount()

    # ------------------------------------------------------------------ internals: summaries

    def _budget(self) -> int:
        available = self.context_window - self.reserved_output_tokens
        return max(0, min(self.max_summary_tokens, int(self.summary_share * available)))

    def _room_for_summary(self) -> int:
        """Tokens the summary message can take in the context at most, framing included."""
        framing = self.counter.count_message(self.format.summary_message("", None))
        return framing + max(self._budget(), self.counter.count(OMITTED_SUMMARY)) + 2

    def _plan(self, decision: Decision, *, guard: bool = False) -> _Job:
        """Snapshot the span; a request carries at most `max_request_tokens`, oldest first."""
        chosen = [(self._active_seq[i], self._active[i], self._tokens[i]) for i in decision.indices]
        if decision.include_pending:
            chosen += [(s, m, self.counter.count_message(m)) for s, m in zip(self._pending_seq, self._pending)]
        chosen.sort(key=lambda t: t[0])
        taken: list[Message] = []
        used = 0
        for _, m, n in chosen:
            if taken and used + n > self.max_request_tokens:
                break
            taken.append(m)
            used += n
        span_ids = frozenset(self._active[i].id for i in decision.indices) & {m.id for m in taken}
        previous = self.summary
        if self.rebuild_from_raw or previous is None:
            depth = 0
        else:
            depth = previous.depth + 1 if decision.fold else previous.depth
        self._since_attempt = 0
        self._attempts += 1
        if guard:
            self._guard_at = self._added_tokens
        job = _Job(decision, self._seq - 1, tuple(taken), span_ids, previous, depth,  # type: ignore[arg-type]
                   self.context_tokens(), self._total_added, guard=guard,
                   skip_primary=self.fallback is not None and self._primary_blocked())
        self._persist_cadence()  # before the call: a process that dies in it still counted it
        return job

    def _request_messages(self, job: _Job) -> tuple[list[Message], SummaryRecord | None]:
        msgs = list(job.messages)
        if self.rebuild_from_raw and job.previous is not None:
            raw = [r.message for r in self.store.messages(self.conversation_id, "covered")]
            return raw + msgs, None
        if self._cap_merge(job) == "append":
            return msgs, None  # past the depth cap: the span alone, appended in `_make`
        return msgs, job.previous

    def _cap_merge(self, job: _Job) -> Literal["fold", "select", "append"]:
        """How the job's summary takes in the previous one. "fold": below the depth cap, or
        nothing to merge (no previous summary, or `rebuild_from_raw` starts from the raw
        messages). Past the cap (`depth_cap_merge`): "select" gives the previous summary to a
        summarizer that never rewrites it (its lines compete with the span's), "append" adds
        the span's summary after the previous text."""
        if job.decision.fold or job.previous is None or self.rebuild_from_raw:
            return "fold"
        if self.depth_cap_merge == "select" and \
                not any(rewrites_previous(s) for s in (self.summarizer, self.fallback) if s is not None):
            return "select"
        return "append"

    def _run(self, job: _Job) -> _Outcome:
        """Make the summary for a job. Touches no engine state: safe in a worker thread."""
        out = _Outcome()
        try:
            self._make(job, out)
        except Exception as err:  # the ledger, a merge: whatever breaks is this job's failure
            out.draft = None
            out.error = classify_exception(err)
        return out

    def _make(self, job: _Job, out: _Outcome) -> None:
        msgs, previous = self._request_messages(job)
        mode = self.ledger_mode
        budget = self._budget()
        text_budget = budget if mode == "off" else max(1, int(budget * (1 - self.ledger_share)))
        merge = self._cap_merge(job)
        selecting, appending = merge == "select", merge == "append"
        tracked: list[str] = []
        if mode != "off":
            prev_facts = list(job.previous.facts) if job.previous is not None else []
            new_facts = [f.text for f in fact_ledger.extract_facts(msgs)]
            tracked = list(dict.fromkeys(prev_facts + new_facts))[-self.ledger_max_facts:]
        request = SummaryRequest(
            conversation_id=self.conversation_id, messages=msgs, previous=previous, depth=job.depth,
            max_tokens=max(1, text_budget // 2) if appending else text_budget, must_keep=tuple(tracked),
            total_messages=self._total_added, total_tokens=job.tokens_before,
        )
        draft = None if job.skip_primary else self._attempt(self.summarizer, request, out)
        if draft is None and self.fallback is not None:
            if job.skip_primary:
                log.info("summarizer %s is backing off; using fallback %s", getattr(self.summarizer, "name", "?"),
                         getattr(self.fallback, "name", "?"))
            else:
                out.primary_failed = True
                log.warning("summarizer %s failed (%s); using fallback %s", getattr(self.summarizer, "name", "?"),
                            redact(str(out.error)), getattr(self.fallback, "name", "?"))
            draft = self._attempt(self.fallback, request, out, retries=0)
            if draft is not None:
                out.fallback = getattr(self.fallback, "name", "fallback")
        if draft is None:
            return
        if appending:
            draft = self._appended(job.previous, draft, text_budget)  # type: ignore[arg-type]
        lost = self._missing(tracked, draft)
        if lost and mode == "retry" and out.fallback is None:
            retry_req = replace(request, must_keep=tuple(lost))
            again = self._attempt(self.summarizer, retry_req, out, retries=0)
            if again is not None:
                draft = self._appended(job.previous, again, text_budget) if appending else again  # type: ignore[arg-type]
                lost = self._missing(tracked, draft)
        pinned: list[str] = []
        if lost and mode != "off":
            room = budget - self.counter.count(_render(draft))
            for fact in lost:
                cost = self.counter.count(fact) + 2
                if cost > room:
                    break
                pinned.append(fact)
                room -= cost
        out.draft = replace(draft, notes=(*draft.notes, SELECTED_AT_CAP)) if selecting else draft
        out.error = None
        out.facts = tuple(tracked)
        out.pinned = tuple(pinned)
        out.counts = {"found": len(tracked), "kept": len(tracked) - len(lost), "pinned": len(pinned),
                      "lost": len(lost) - len(pinned)}

    def _cap_meta(self, job: _Job) -> dict[str, bool]:
        """What the record says about the depth cap: nothing when it did not apply, else how it merged."""
        merge = self._cap_merge(job)
        return {} if merge == "fold" else {"selected_at_cap": True} if merge == "select" else {"appended": True}

    def _appended(self, previous: SummaryRecord, draft: SummaryDraft, budget: int) -> SummaryDraft:
        """Past the depth cap: the span's summary after the previous text, oldest cut first."""
        text, note = append_summary(previous.text, draft.text, budget, self.counter.count)
        points = tuple(dict.fromkeys(tuple(draft.key_points) + tuple(previous.key_points)))[:MAX_KEY_POINTS]
        facets = {k: tuple(dict.fromkeys(tuple(draft.facets.get(k, ())) + tuple(previous.facets.get(k, ()))))
                  for k in set(draft.facets) | set(previous.facets)}
        notes = tuple(draft.notes) + ("appended at the depth cap",) + ((note,) if note else ())
        return replace(draft, text=text, key_points=points, facets=facets, notes=notes)

    def _attempt(self, summarizer: Summarizer, request: SummaryRequest, out: _Outcome,
                 retries: int | None = None) -> SummaryDraft | None:
        tries = (self.retries if retries is None else retries) + 1
        for n in range(tries):
            out.attempts += 1
            try:
                draft = summarizer.summarize(request)
            except Exception as exc:  # a misbehaving model or summarizer must not take messages down
                err = classify_exception(exc)
                out.error = err
                if err.transport and n + 1 < tries:
                    self._sleep(retry_wait(n, self.backoff_s, err.retry_after, self.max_retry_after_s))
                    continue
                return None
            if not isinstance(draft, SummaryDraft) or not draft.text.strip():
                out.error = SummarizeError("summarizer returned an empty summary", transport=False,
                                           kind=ErrorKind.EMPTY)
                return None
            out.usage = out.usage + draft.usage
            return draft
        return None

    def _missing(self, facts: Sequence[str], draft: SummaryDraft) -> list[str]:
        if not facts:
            return []
        return [f.text for f in fact_ledger.missing([fact_ledger.Fact(t, "identifier", None) for t in facts],
                                                    _render(draft))]

    def _backoff(self, failures: int) -> int:
        """Messages to wait after `failures` failures in a row: cooldown × 2**(k−1), capped."""
        return min(self.failure_cooldown * 2 ** min(failures - 1, 30),
                   max(self.max_failure_backoff, self.failure_cooldown))

    def _failed(self) -> None:
        """Back off: the k-th failure in a row blocks attempts for cooldown × 2**(k−1) messages."""
        self._failures += 1
        self._retry_at = self._total_added + self._backoff(self._failures)

    def _primary_outcome(self, job: _Job, outcome: _Outcome) -> None:
        """The primary summarizer's own backoff: a failure the fallback covered counts like any
        failure (the fallback is then used alone until the backoff ends); an answer resets it."""
        if outcome.primary_failed:
            self._model_failures += 1
            self._model_retry_at = self._total_added + self._backoff(self._model_failures)
        elif not job.skip_primary and outcome.draft is not None:
            self._model_failures = 0

    def _apply(self, job: _Job, outcome: _Outcome) -> SummaryEvent:
        """Commit a finished job. Before the store commit nothing changes; after it, the window."""
        try:
            return self._apply_outcome(job, outcome)
        finally:
            self._persist_cadence()

    def _apply_outcome(self, job: _Job, outcome: _Outcome) -> SummaryEvent:
        lag = (self._seq - 1) - job.turn
        covered = job.messages
        self.usage = self.usage + outcome.usage
        self._primary_outcome(job, outcome)
        if outcome.draft is None:
            self._failed()
            err = outcome.error
            reason = redact(str(err)) if err else "unknown"
            log.warning("summary failed at turn %d after %d attempt(s): %s; all %d messages kept",
                        job.turn, outcome.attempts, reason, len(covered))
            return SummaryEvent("failure", job.turn, job.decision.reason, depth=job.depth, messages=0,
                                tokens_before=job.tokens_before, tokens_after=self.context_tokens(),
                                lag_turns=lag, error=reason,
                                error_kind=err.kind.value if err else None, attempts=outcome.attempts,
                                usage=outcome.usage, guard=job.guard)
        draft = outcome.draft
        prev = job.previous
        seq = len(self._history)
        ids = tuple(m.id for m in covered if m.id is not None)
        record = SummaryRecord(
            id=f"{self.conversation_id}/summary/{seq}",
            conversation_id=self.conversation_id,
            text=draft.text.strip(),
            depth=job.depth,
            parent_id=prev.id if prev is not None else None,
            key_points=draft.key_points,
            facets=draft.facets,
            pinned_facts=outcome.pinned,
            covered_ids=ids,
            start_id=ids[0] if ids else None,
            end_id=ids[-1] if ids else None,
            messages_covered=(prev.messages_covered if prev is not None else 0) + len(ids),
            tokens=0,
            model=draft.model,
            prompt_id=draft.prompt_id,
            prompt_hash=draft.prompt_hash,
            usage=outcome.usage,
            created_at=self._clock().isoformat(),
            seq=seq,
            fallback=outcome.fallback or draft.fallback,
            notes=draft.notes,
            facts=outcome.facts,
            ledger=outcome.counts,
            meta={**_plain(draft.meta), "reason": job.decision.reason, "turn": job.turn, "preset": self.preset,
                  **({"guard": True} if job.guard else {}), **self._cap_meta(job)},
        )
        record = replace(record, tokens=self.counter.count(record.render()))
        try:
            self.store.commit_summary(record, ids)
        except Exception as err:  # a refusing or broken store: nothing committed, nothing moves
            self._failed()
            log.error("store refused summary %s: %s; all messages kept", record.id, redact(str(err)))
            return SummaryEvent("failure", job.turn, job.decision.reason, depth=job.depth,
                                tokens_before=job.tokens_before, tokens_after=self.context_tokens(),
                                lag_turns=lag, error=redact(f"store: {err}"), error_kind="store",
                                attempts=outcome.attempts, usage=outcome.usage, guard=job.guard)
        # committed: now change the window
        done = set(ids)
        self._remove(done & job.span_ids)
        if self._pending:
            keep = [(s, m) for s, m in zip(self._pending_seq, self._pending) if m.id not in done]
            self._pending_seq = [s for s, _ in keep]
            self._pending = [m for _, m in keep]
        self._history.append(record)
        self._since_summary = self._total_added - job.added_at
        self._evicted_since = len(self._pending)
        self._failures = 0
        self._min_tokens_since = None
        self._refresh_summary()
        c = outcome.counts
        return SummaryEvent("summary", job.turn, job.decision.reason, record=record, depth=job.depth,
                            messages=len(ids), tokens_before=job.tokens_before,
                            tokens_after=self.context_tokens(), lag_turns=lag, attempts=outcome.attempts,
                            facts_found=c.get("found", 0), facts_kept=c.get("kept", 0),
                            facts_pinned=c.get("pinned", 0), facts_lost=c.get("lost", 0),
                            usage=outcome.usage, fallback=record.fallback, guard=job.guard)

    def _refresh_summary(self) -> None:
        rec = self.summary
        if rec is None:
            self._summary_msg, self._summary_tokens = None, 0
            return
        text, note = budget_summary(rec.render(), self._budget(), min_tokens=self.min_summary_tokens,
                                    count=self.counter.count)
        if note:
            log.info("summary %s: %s", rec.id, note)
        self._summary_msg = self.format.summary_message(text, rec)
        self._summary_tokens = self.counter.count_message(self._summary_msg)

    # ------------------------------------------------------------------ internals: events

    def _internal_failure(self, err: Exception) -> SummaryEvent:
        log.exception("rollsum: unexpected error after storing a message; the message is kept")
        return SummaryEvent("failure", self._seq - 1, "internal error", error=redact(f"{type(err).__name__}: {err}"),
                            error_kind="internal")

    def _emit(self, events: Sequence[SummaryEvent]) -> None:
        if self.on_event is None:
            return
        for ev in events:
            try:
                self.on_event(ev)
            except Exception:  # the caller's callback must not turn a stored message into an error
                log.exception("rollsum: on_event callback raised; event %s dropped from it", ev.kind)


def _plain(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A summarizer's meta as the store will give it back (JSON types): a record read after a
    restart must equal the one made before it."""
    plain: dict[str, Any] = json.loads(json.dumps(dict(meta), default=str))
    return plain


def _render(draft: SummaryDraft) -> str:
    parts = [draft.text]
    parts.extend(draft.key_points)
    return "\n".join(parts)
