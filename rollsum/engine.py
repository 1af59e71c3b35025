"""The rolling summarizer's state machine: a window of verbatim messages plus a chain of summaries.

Flow for each added message: persist it, ask the policy, and if it asks for a summary, run the
summarizer (retries, fallback, fact ledger: `rollsum.jobs`) on a *snapshot* of the span, commit
the record and the covered messages' state change in one store transaction, and only then
change the in-memory window. A failure before the commit changes nothing: every message stays
where it was. Once the message is stored, `add()` does not raise: any exception from a model,
summarizer or store on the way is a classified failure event.

Then the **window guard** (presets with a window) keeps ``context_tokens() <= context_window −
reserved_output_tokens`` whatever the order of triggers and failures: compact (summarize the
oldest messages to a low-water mark, when the rate limits, backoff and the guard's token bound
allow a call), else move the oldest active messages to ``pending`` (out of the context, never
lost, folded into the next summary), else clip what alone exceeds the window *in the context*
(`rollsum.guard`). Attempts, failures and backoff are kept with the conversation
(`rollsum.cadence`), so an engine rebuilt from its store per message acts as a long-lived one.

Planning, running and applying a summary are separate steps (`_plan`, `_run`, `_apply`), so one
core serves the synchronous engine, a simulated lag (`lag_turns`) and `rollsum.aio` (which runs
`_run` in a worker thread). The parts beside it take plain inputs and no engine state: settings,
jobs, guard, window, cadence, context, opening, events (docs/architecture.md, "The engine").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from rollsum import cadence, guard, jobs, opening
from rollsum import events as events_
from rollsum.cadence import Cadence
from rollsum.context import ContextFormat, get_format, shown_summary, summary_room, with_timestamps
from rollsum.errors import ConfigError, DuplicateMessageId, closed_engine, not_a_message
from rollsum.jobs import SELECTED_AT_CAP, Job, Launch, Outcome
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.policies.base import Decision, Policy, PolicyHooks, WindowState, may_summarize
from rollsum.redact import redacting_logger
from rollsum.settings import (
    MIN_WINDOW,
    SETTING_NAMES,
    WIRING_NAMES,
    DepthCapMerge,
    EngineSettings,
    LedgerMode,
    SettingAttributes,
    engine_config,
    wiring_problem,
    wiring_type_problem,
)
from rollsum.store import resolve
from rollsum.store.base import Store
from rollsum.summarizers.base import Summarizer
from rollsum.tokens import HeuristicCounter, TokenCounter, counter_key
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage, new_id
from rollsum.window import Window, policy_state

log = redacting_logger(__name__)

__all__ = ["MIN_WINDOW", "SELECTED_AT_CAP", "DepthCapMerge", "LedgerMode", "RollingSummarizer"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RollingSummarizer(SettingAttributes):
    """Keeps one conversation inside its budget. See the module docstring for the life cycle.

    Its settings are an `EngineSettings` (`self.settings`, documented field by field there;
    each also an attribute, ``rs.context_window``): give them as keywords of the same names, or
    build the engine from a settings value with `from_settings`. Besides them it is wired to:
    `policy` (when to compress), `summarizer` and `fallback` (used when the first fails for good;
    None: no summary this time, nothing archived), `counter`, `store` (a `Store` or a spec for
    `rollsum.store.open_store`, ``"sqlite:chat.db"``; an engine opened on a store that holds
    `conversation_id` resumes it), `takeover` (claim the conversation even if another live
    engine holds it), and `sleep` / `clock` / `on_event` (retry waits, timestamps, events).
    """

    def __init__(
        self, policy: Policy, summarizer: Summarizer, *,
        counter: TokenCounter | None = None, store: Store | str | None = None,
        context_format: ContextFormat | str = "earlier-heading", conversation_id: str | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW, enforce_window: bool | None = None,
        guard_low_water: float = 0.6, guard_min_tail: int = 2, reserved_output_tokens: int = 0,
        summary_share: float = 0.10, max_summary_tokens: int = 1024, min_summary_tokens: int = 50,
        max_request_tokens: int | None = None, fallback: Summarizer | None = None, retries: int = 1,
        backoff_s: float = 0.25, max_retry_after_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep, clock: Callable[[], datetime] = _utcnow,
        ledger: LedgerMode = "auto", ledger_share: float = 0.25, ledger_max_facts: int = 60,
        lag_turns: int = 0, max_passes: int = 4, failure_cooldown: int = 2, max_failure_backoff: int = 64,
        min_messages_per_attempt: int = 10, rebuild_from_raw: bool = False, depth_cap_merge: DepthCapMerge = "select",
        on_event: Callable[[SummaryEvent], None] | None = None, preset: str = "", takeover: bool = False,
        clear_tool_results: bool = False, clear_trigger: int | None = None, clear_keep: int = 3,
        clear_at_least: int = 0, clear_exclude_tools: Sequence[str] = (),
    ) -> None:
        """Every setting by keyword (`EngineSettings` documents them, and validates them)."""
        given = locals()  # the keywords just as given: the settings' and the wiring's, by name
        settings = EngineSettings(**{name: given[name] for name in SETTING_NAMES})
        self._setup(policy, summarizer, settings, preset=preset, **{name: given[name] for name in WIRING_NAMES})

    @classmethod
    def from_settings(cls, policy: Policy, summarizer: Summarizer, settings: EngineSettings, *,
                      counter: TokenCounter | None = None, store: Store | str | None = None,
                      conversation_id: str | None = None, fallback: Summarizer | None = None,
                      sleep: Callable[[float], None] = time.sleep, clock: Callable[[], datetime] = _utcnow,
                      on_event: Callable[[SummaryEvent], None] | None = None, preset: str = "",
                      takeover: bool = False) -> RollingSummarizer:
        """An engine from a settings value (validated when it was made) and its wiring: what a
        caller holding a typed configuration uses instead of spelling it out as keywords."""
        engine = cls.__new__(cls)
        engine._setup(policy, summarizer, settings, counter=counter, store=store, conversation_id=conversation_id,
                      fallback=fallback, sleep=sleep, clock=clock, on_event=on_event, preset=preset,
                      takeover=takeover)
        return engine

    @classmethod
    def from_preset(cls, name: str, model: Any = None, **overrides: Any) -> RollingSummarizer:
        """Build an engine from a named preset; see `rollsum.presets`."""
        from rollsum.presets import build

        return build(cls, name, model, **overrides)

    def _setup(self, policy: Policy, summarizer: Summarizer, settings: EngineSettings, *,
               counter: TokenCounter | None, store: Store | str | None, conversation_id: str | None,
               fallback: Summarizer | None, sleep: Callable[[float], None], clock: Callable[[], datetime],
               on_event: Callable[[SummaryEvent], None] | None, preset: str, takeover: bool) -> None:
        """What both constructors share: wire the components, claim the conversation, resume it."""
        if (found := wiring_problem(policy, summarizer, settings, conversation_id)
                or wiring_type_problem(counter, sleep, clock, on_event)) is not None:
            raise ConfigError(found)
        enforce = settings.enforce_window  # None: the policy's own (`windowed`)
        enforce = bool(getattr(policy, "windowed", False) if enforce is None else enforce)
        if enforce and (found := settings.problem(windowed=True)) is not None:  # the guard on: a window to keep
            raise ConfigError(found)
        self.settings, self.enforce_window, self.policy, self.summarizer = settings, enforce, policy, summarizer
        self.counter: TokenCounter = counter or HeuristicCounter()
        self.store: Store = resolve(store)  # a spec string ("sqlite:chat.db", "memory"): see open_store
        fmt = settings.context_format
        self.format = get_format(fmt) if isinstance(fmt, str) else fmt
        self.conversation_id = conversation_id or new_id("conv-")
        self.max_request_tokens = settings.request_tokens
        self.fallback, self.on_event, self.preset = fallback, on_event, preset
        self._sleep, self._clock = sleep, clock
        self.clearing = settings.clearing  # tool-result clearing (rollsum.clearing)
        self._limit, self._budget = settings.limit, settings.summary_budget
        self._window = Window()
        self._history: list[SummaryRecord] = []
        self._earlier = 0  # records before `_history`'s first, unread (an O(window) open: `_all_history`)
        self._token_key = counter_key(self.counter)
        self._add_counted = opening.counted_adder(self.store, self._token_key)  # the store keeps a token total
        self._summary_room = summary_room(self.format, self._budget, self.counter.count, self.counter.count_message)
        self._seq = self._added_tokens = self._dropped = 0  # messages stored, their tokens, dropped ones
        self._c = Cadence()  # the counts the rate limits and the backoff read (kept in the store)
        self._saved_key: tuple[int | None, ...] | None = None
        self._inflight: tuple[Job, Outcome] | None = None
        self._h = PolicyHooks(policy)  # its optional members (`_hooks`)
        self._as_decided = False  # the last decision applies unchanged (`Policy.settles`)
        self._quiet_until = -1  # that policy is not asked while total_added <= this
        self.usage = Usage()
        self.last_events: tuple[SummaryEvent, ...] = ()
        self._owner = new_id("engine-")
        self._closed = False
        self._finalizer = opening.claim_and_resume(self.store, self.conversation_id, self._owner, takeover, self,
                                                   self._resume_from_store)

    # ------------------------------------------------------------------ resume and cadence

    def _resume_from_store(self) -> None:
        """Rebuild the window from a store that already holds this conversation (restart),
        reading the least the store allows (`rollsum.opening`: O(window) when it keeps totals)."""
        o = opening.open_conversation(self.store, self.conversation_id, self.counter.count_message, self._token_key)
        if o is None:
            return
        self._window, self._c, self._history, self._earlier = o.window, o.cadence, o.history, o.earlier
        self._seq, self._added_tokens, self._dropped, self._saved_key = o.seq, o.added_tokens, o.dropped, o.saved_key
        self._refresh_summary()
        opening.reshow(self._window, self.settings, self._c.cleared_through, self.counter, self._limit,
                       self.enforce_window, self.conversation_id)

    def _all_history(self) -> list[SummaryRecord]:
        """The whole summary chain (the records an O(window) open left in the store read now)."""
        if self._earlier:
            self._history = opening.full_history(self.store, self.conversation_id, self._history, self._earlier)
            self._earlier = 0
        return self._history

    def _persist_cadence(self) -> None:
        """Save the cadence when it changed (an attempt, a failure, an eviction: not on every
        message; the key is compared here, on the per-message path, without a call)."""
        if (key := self._c.key()) != self._saved_key:
            self._saved_key = cadence.save(self.store, self.conversation_id, self._c, key)

    def close(self) -> None:
        """Release this engine's claim on the conversation (another engine may then open it).
        A closed engine refuses `add()` (a ConfigError, nothing stored) and lands no lagged
        summary: its writes would collide with the next owner's."""
        self._closed = True  # its claim is gone: it must not write behind the next owner's back
        if self._inflight is not None:
            events_.lag_dropped(self.conversation_id, self._inflight[0], self._seq, self.settings.lag_turns)
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
        """The summary chain, oldest first. After an O(window) open its earlier records are
        read from the store on first use (so read it while the store is open): a per-request
        engine that never asks does not pay for thousands of records."""
        return list(self._all_history())

    @property
    def messages(self) -> list[Message]:
        """The verbatim (active) messages as they appear in the context: a message the window
        guard had to clip carries its marker here too (the stored one is intact)."""
        return self._window.shown_active()

    @property
    def pending(self) -> list[Message]:
        return list(self._window.pending)

    @property
    def turn(self) -> int:
        return self._seq

    def add(self, message: Message) -> SummaryEvent | None:
        """Append a message; summarize if the policy says so; keep the window. Returns this
        turn's last event. Raises only if the message could not be stored (nothing changed)."""
        message = self._append(message)
        system = message.role == "system"
        events: list[SummaryEvent] = []
        landed = 0
        try:
            landing = self._inflight
            if landing is not None and not system and landing[0].due_turn < self._seq:
                self._inflight = None
                events.append(self._apply(*landing))
                landed = 1
            self._process(None, None, system, events)
        except Exception as err:  # stored already: a failure is an event, never an exception
            del events[landed:]  # a round that broke reports its failure, not what it did before
            events += [*self._refit(), self._internal_failure(err)]  # the failure last: what add() returns
        self.last_events = tuple(events) if events else ()  # most messages: no call
        if events and self.on_event is not None:  # the usual case has no callback: no call per message
            self._emit(events)
        return events[-1] if events else None

    def flush(self) -> SummaryEvent | None:
        """Land an in-flight (lagged) summary now, e.g. at the end of a replay."""
        if self._inflight is None or self._closed:  # a closed engine commits nothing more
            return None
        (job, outcome), self._inflight = self._inflight, None
        events: list[SummaryEvent] = []
        try:
            events.append(self._apply(job, outcome))
            events.extend(self._guard(lambda job: self._apply(job, self._run(job)), lambda: False))
            self._persist_cadence()
        except Exception as err:
            events.append(self._internal_failure(err))
        self._emit(events)
        return events[0]

    def context(self, system: str | None = None, *, timestamps: str = "none") -> list[Message]:
        """The messages to send to the main model, in this preset's format. `timestamps`
        (``message`` / ``session`` / ``none``, `rollsum.context.shown_times`) writes when each
        message was said before it, as a chat application shows it, within what the window
        has left (with a window enforced, stamps that would pass it are left out, oldest
        first); the stored messages are never altered."""
        pinned, active, summary = self._window.shown()
        shown = self.format.assemble(system=system, pinned=pinned, active=active, summary=summary, head=self._head())
        if timestamps == "none":
            return shown
        room = max(0, self._limit - self.context_tokens(system)) if self.enforce_window else None
        return with_timestamps(shown, timestamps, room=room, count_message=self.counter.count_message)

    def to_anthropic(self, system: str | None = None, *, timestamps: str = "none"
                     ) -> tuple[str, list[dict[str, str]]]:
        """The context as the Anthropic Messages API takes it, ``(system, messages)``: pass them as
        ``client.messages.create(system=system or anthropic.NOT_GIVEN, messages=messages, ...)``.
        ``system`` joins your system prompt, the pinned system messages and a system-role summary
        by blank lines; turns are shaped as the API wants them (`rollsum.models.anthropic_model.
        messages_api`: one role per turn, tool results as user turns, an assistant summary in place)."""
        from rollsum.models.anthropic_model import messages_api

        return messages_api(None, self.context(system=system, timestamps=timestamps))

    def context_tokens(self, system: str | None = None) -> int:
        extra = self.counter.count(system) + getattr(self.counter, "overhead", 0) if system else 0
        return self._window.context_tokens() + extra

    def summary_text(self) -> str:
        """The summary as it appears in the context (budgeted), or "" without one."""
        shown = self._window.shown_summary()
        return "" if shown is None else shown.content

    def config(self) -> dict[str, Any]:
        """Everything needed to re-create this engine, with every value resolved."""
        return engine_config(self.preset, self.policy, self.summarizer, self.fallback, self.settings,
                             context_format=self.format.name, enforce_window=self.enforce_window)

    @property
    def ledger_mode(self) -> LedgerMode:
        """The effective ledger mode ("auto" resolved against the current summarizer)."""
        return self.settings.ledger_for(self.summarizer)

    # ------------------------------------------------------------------ internals: the window

    def _head(self) -> int:
        """Active messages before the summary (seed 004's head), for formats that keep one."""
        return self._window.head(self.policy) if self.format.position == "after-head" else 0

    def _append(self, message: Message) -> Message:
        if self._closed:  # (before anything is stored: nothing changes)
            raise closed_engine(self.conversation_id)
        if not isinstance(message, Message):
            raise not_a_message(message)
        auto = message.id is None
        if auto:
            message = message.with_id(f"{self.conversation_id}/{self._seq}")
        n = self.counter.count_message(message)  # before storing: a counter that raises changes nothing
        try:
            if self._add_counted is not None:  # the store keeps the token total (O(window) opens)
                self._add_counted(self.conversation_id, self._seq, message, n, self._token_key)  # type: ignore[arg-type]
            else:
                self.store.add_message(self.conversation_id, self._seq, message)
        except DuplicateMessageId as taken:
            if not auto:
                raise
            message = opening.store_aside(self.store, self._add_counted, self.conversation_id, self._seq, message,
                                          n, self._token_key, taken)
        seq = self._seq
        self._seq += 1
        self._added_tokens += n
        if message.role == "system":
            self._window.pin(message, n)
            return message
        self._window.push(seq, message, n)
        c = self._c
        c.total_added += 1
        c.since_summary += 1
        if c.since_attempt is not None:
            c.since_attempt += 1
        return message

    def _state(self, passes: int) -> WindowState:
        """The policy's snapshot (`rollsum.window.policy_state`)."""
        return policy_state(self._window, self._c, self._history, self._dropped, self.settings.context_window,
                            passes, self._summary_room, self._earlier)

    # ------------------------------------------------------------------ internals: decisions

    def _may_attempt(self) -> bool:
        """Not backing off after failures, and `min_messages_per_attempt` allows one more."""
        return not self._c.in_backoff() and self._c.rate_allows(self.settings.min_messages_per_attempt)

    def _decide(self, passes: int) -> Decision | None:
        """Ask the policy, then make its answer safe: whole tool groups, something to do."""
        h = self._h if self._h.policy is self.policy else self._hooks()
        if h.idle and self._window.context_tokens() <= self.settings.context_window:
            self._quiet(passes)  # it would answer None (`Policy.idle_within_window`): not asked
            return None
        state = self._state(passes)
        decision = self.policy.decide(state)
        if decision is None:
            self._quiet(passes, state)
            return None
        indices = self._window.keep_tool_pairs(decision.indices)
        if not indices and not (decision.include_pending and self._window.pending):
            return None
        self._as_decided = indices == decision.indices  # the usual case: no copy of a frozen value per message
        return decision if self._as_decided else decision.with_indices(indices)

    def _quiet(self, passes: int, state: WindowState | None = None) -> None:
        """The policy answered None (or settled, `Policy.settles`): it is asked again when it
        may answer otherwise (`Policy.quiet_for`)."""
        hook = self._hooks().quiet_for
        self._quiet_until = -1 if hook is None else \
            self._c.total_added + hook(self._state(passes) if state is None else state)

    def _hooks(self) -> PolicyHooks:
        """The policy's optional members, looked up again only when a caller swapped the policy."""
        if self._h.policy is not self.policy:
            self._h = PolicyHooks(self.policy)
        return self._h

    def _summary_decisions(self, events: list[SummaryEvent], decision: Decision | None) -> Iterator[Decision]:
        """This turn's summarize decisions, from the first pass's `decision` (asked by the caller:
        most messages need none, and then make no generator); evictions and drops are applied on
        the way. `WindowState.passes` counts the summaries already made this turn (seed 003's
        second pass); `max_passes` (>= 1) bounds the whole loop so a policy cannot spin."""
        summaries = 0
        for n in range(self.settings.max_passes):
            if n:
                decision = self._decide(summaries)
            if decision is None:
                return
            action = decision.action  # evictions and drops need no model: applied at once
            cheap = self._evict(decision) if action == "evict" else self._drop(decision) if action == "drop" else None
            if cheap is not None:
                events.append(cheap)
                if self._as_decided and self._hooks().settles:  # applied as decided by a policy that settles:
                    self._quiet(summaries)  # asked again now it would answer None
                    return
                continue
            yield decision
            summaries += 1

    def _process(self, launch: Launch | None, busy: Callable[[], bool] | None, system: bool = False,
                 events: list[SummaryEvent] | None = None) -> list[SummaryEvent]:
        """One round after a message (or a background landing): policy, then window guard; its
        events go to `events` (`add`'s list). `launch`, `busy` None: `_launch`, a job in flight.

        While a summary is in flight (lag, asyncio) the policy is not asked (one summary at a
        time per conversation); the guard still keeps the window, without the model.
        """
        events, w = [] if events is None else events, self._window
        if w.clips or w.omitted or w.summary_hidden:
            w.unclip(self.counter.count_message)
        cleared = False
        if self.settings.clear_tool_results:  # old tool results to placeholders (`rollsum.clearing`)
            newest = w.clear_tool_results(self.clearing, self.context_tokens(), self.counter.count_message)
            if newest is not None and (self._c.cleared_through or -1) < newest:
                self._c.cleared_through = newest  # saved with the cadence: a resumed engine clears them again
                cleared = True
        # with clearing on, the policy is asked only while the cleared context is still over the
        # clearing trigger: clear first, summarize only if that was not enough
        quiet = system or (self._c.total_added <= self._quiet_until and self._h.policy is self.policy)
        first = None if quiet or (self._inflight is not None if busy is None else busy()) \
            or (self.settings.clear_tool_results and self.context_tokens() <= self.clearing.trigger) \
            else self._decide(0)
        if first is not None:
            launch = launch or self._launch
            for decision in self._summary_decisions(events, first):
                if not self._may_attempt():
                    break
                ev = launch(self._plan(decision))
                if ev is None:
                    break
                events.append(ev)
                if ev.kind != "summary":
                    break
        if self.enforce_window and w.context_tokens() > self._limit:  # else the guard has nothing to do
            events.extend(self._guard(launch or self._launch, busy or (lambda: self._inflight is not None)))
        if self._c.observed(w.context_tokens()) or events or cleared:  # else no count `Cadence.key` holds moved
            self._persist_cadence()
        return events

    def _launch(self, job: Job) -> SummaryEvent | None:
        outcome = self._run(job)
        if self.settings.lag_turns > 0:
            job.due_turn = job.turn + self.settings.lag_turns
            self._inflight = (job, outcome)
            return None
        return self._apply(job, outcome)

    def _evict(self, decision: Decision, *, guard: bool = False) -> SummaryEvent:
        w, before = self._window, self._window.context_tokens()
        ids = w.ids_at(decision.indices)
        self.store.set_state(self.conversation_id, ids, "pending", decision.reason)
        n = w.add_pending(w.remove(set(ids), at=decision.indices))
        self._c.evicted_since += n
        self._c.total_evicted += n
        return SummaryEvent.removal("evict", self._seq - 1, decision.reason, n, before, w.context_tokens(), guard)

    def _drop(self, decision: Decision) -> SummaryEvent:
        w, before, pending = self._window, self._window.context_tokens(), decision.include_pending
        ids = w.ids_at(decision.indices, pending)
        self.store.set_state(self.conversation_id, ids, "dropped", decision.reason)
        n = len(w.remove(set(ids), at=decision.indices))
        if pending:
            n += w.clear_pending()
            self._c.evicted_since = 0
        self._dropped += n
        return SummaryEvent.removal("drop", self._seq - 1, decision.reason, n, before, w.context_tokens())

    # ------------------------------------------------------------------ internals: window guard

    def _guard(self, launch: Launch, busy: Callable[[], bool]) -> list[SummaryEvent]:
        """Keep ``context_tokens() <= context_window − reserved_output_tokens``: compact, else
        evict to pending, else clip (`rollsum.guard` has the arithmetic)."""
        if not self.enforce_window or self._window.context_tokens() <= self._limit:
            return []
        events: list[SummaryEvent] = []
        if not busy() and self._guard_may_compact():
            decision = guard.compaction_decision(self._window, self.settings, self._head(), self._summary_room,
                                                 self.context_tokens(), self.policy, self.summary)
            if decision is not None and (ev := launch(self._plan(decision, guard=True))) is not None:
                events.append(ev)
        if self.context_tokens() > self._limit:  # oldest active messages to pending until it fits; never the newest
            decision = guard.eviction_decision(self._window, self.settings, self._head(), self.context_tokens())
            if decision is not None:
                events.append(self._evict(decision, guard=True))
        return events + self._refit()  # the last resort: clip in the context, never in the store

    def _guard_may_compact(self) -> bool:
        """A guard summary only when it is allowed (backoff, the guard's token bound, the
        policy's own rate limit) and can bring the context inside the window at all."""
        return self._may_attempt() and guard.may_compact(self._c.guard_at, self._added_tokens, self.settings,
                                                         self._limit, self._window.pinned_tokens + self._summary_room) \
            and may_summarize(self.policy, self._state(0))

    def _refit(self) -> list[SummaryEvent]:
        """The guard's last step, and all that is left after a round that broke before the guard
        was done (a store refused an eviction): clip in the context, which writes nothing."""
        if not self.enforce_window or self._window.context_tokens() <= self._limit:
            return []
        return [guard.clip_event(self._window, self.counter, self._limit, self.settings, self.conversation_id,
                                 self._seq - 1)]

    # ------------------------------------------------------------------ internals: summaries

    def _maker(self) -> jobs.Maker:
        """How summaries are made, from the engine's current components (a caller may swap the
        summarizer between messages); `rebuild_from_raw` reads the messages summaries covered."""
        store, cid = self.store, self.conversation_id
        return jobs.Maker(self.summarizer, self.fallback, self.settings, self.ledger_mode, self.counter, cid,
                          lambda: [r.message for r in store.messages(cid, "covered")], self._sleep)

    def _plan(self, decision: Decision, *, guard: bool = False) -> Job:
        """Snapshot the span; a request carries at most `max_request_tokens`, oldest first."""
        taken, span_ids = self._window.span(decision.indices, decision.include_pending, self.counter.count_message,
                                            self.max_request_tokens)
        previous = self.summary
        depth = jobs.depth(previous, decision.fold, self.settings.rebuild_from_raw)
        self._c.attempted()
        if guard:
            self._c.guard_at = self._added_tokens
        job = Job(decision, self._seq - 1, taken, span_ids, previous, depth,
                  self.context_tokens(), self._c.total_added, guard=guard,
                  skip_primary=self.fallback is not None and self._c.primary_blocked())
        self._persist_cadence()  # before the call: a process that dies in it still counted it
        return job

    def _run(self, job: Job) -> Outcome:
        """Make the summary for a job (`rollsum.jobs.run`). Touches no engine state: safe in a
        worker thread."""
        return jobs.run(job, self._maker())

    def _apply(self, job: Job, outcome: Outcome) -> SummaryEvent:
        """Commit a finished job. Before the store commit nothing changes; after it, the window."""
        try:
            return self._apply_outcome(job, outcome)
        finally:
            self._persist_cadence()

    def _apply_outcome(self, job: Job, outcome: Outcome) -> SummaryEvent:
        lag = (self._seq - 1) - job.turn
        self.usage = self.usage + outcome.usage
        self._c.primary_outcome(outcome.primary_failed, not job.skip_primary and outcome.draft is not None,
                                self.settings.failure_cooldown, self.settings.max_failure_backoff)
        if outcome.draft is None:
            self._c.failed(self.settings.failure_cooldown, self.settings.max_failure_backoff)
            return events_.summary_failed(job, outcome, lag=lag, tokens_after=self.context_tokens())
        record = jobs.record(job, outcome, outcome.draft, outcome.maker or self._maker(),
                             seq=self._earlier + len(self._history), preset=self.preset,
                             created_at=self._clock().isoformat())
        ids = record.covered_ids
        try:
            self.store.commit_summary(record, ids)
        except Exception as err:  # a refusing or broken store: nothing committed, nothing moves
            self._c.failed(self.settings.failure_cooldown, self.settings.max_failure_backoff)
            return events_.store_refused(job, outcome, record, err, lag=lag, tokens_after=self.context_tokens())
        # committed: now change the window
        done = set(ids)
        self._window.discard(done & job.span_ids, job.decision.indices)
        self._window.unpend(done)
        self._history.append(record)
        self._quiet_until = -1  # the policy's count since the last summary starts over
        self._c.summarized(job.added_at, len(self._window.pending))
        self._refresh_summary()
        return jobs.summary_event(job, outcome, record, lag=lag, tokens_after=self.context_tokens())

    def _refresh_summary(self) -> None:
        rec, w = self.summary, self._window
        w.summary, note = (None, None) if rec is None else shown_summary(
            rec, self.format, self._budget, min_tokens=self.settings.min_summary_tokens, count=self.counter.count)
        w.summary_tokens = 0 if w.summary is None else self.counter.count_message(w.summary)
        if note and rec is not None:
            log.info("summary %s: %s", rec.id, note)

    # ------------------------------------------------------------------ internals: events

    def _internal_failure(self, err: Exception) -> SummaryEvent:
        return events_.internal_failure(self._seq - 1, err)

    def _emit(self, events: Sequence[SummaryEvent]) -> None:
        if self.on_event is not None:  # the usual case has no callback: no call per message
            events_.emit(self.on_event, events)
