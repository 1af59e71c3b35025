"""The rolling summarizer: a window of verbatim messages plus a chain of summaries.

Flow for each added message: persist it, ask the policy, and if it asks for a summary, run
the summarizer (with retries, fallback and the fact ledger) on a *snapshot* of the span, then
commit the record and the covered messages' state change in one store transaction, and only
then change the in-memory window. A failure at any step before the commit changes nothing:
every message stays where it was.

Planning, running and applying a summary are separate steps (`_plan`, `_run`, `_apply`) so
the same core serves the synchronous engine, a simulated lag (`lag_turns`, for replays) and
the asyncio variant in `rollsum.aio`, which runs `_run` in a worker thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from rollsum import ledger as fact_ledger
from rollsum.context import ContextFormat, budget_summary, get_format
from rollsum.errors import ConfigError, ErrorKind, RollsumError, SummarizeError
from rollsum.policies._util import tool_units
from rollsum.policies.base import Decision, Policy, WindowState, policy_params
from rollsum.redact import redact
from rollsum.store.base import Store
from rollsum.store.memory import MemoryStore
from rollsum.summarizers.base import Summarizer, SummaryDraft, SummaryRequest
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage, new_id

log = logging.getLogger(__name__)

LedgerMode = Literal["auto", "pin", "retry", "off"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Job:
    """A summary to make: an immutable snapshot taken when the policy decided."""

    decision: Decision
    turn: int
    span: tuple[Message, ...]
    """Active messages chosen by the decision, in window order."""
    pending: tuple[Message, ...]
    previous: SummaryRecord | None
    depth: int
    tokens_before: int
    added_at: int
    """`total_added` when planned: messages added after it count toward the next summary."""
    due_turn: int = 0


@dataclass(slots=True)
class _Outcome:
    draft: SummaryDraft | None = None
    error: SummarizeError | None = None
    attempts: int = 0
    fallback: str | None = None
    facts: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


class RollingSummarizer:
    """Keeps one conversation inside its budget. See module docstring for the life cycle.

    Parameters that matter most:
    - `context_window`: the main model's window in tokens; ratios and budgets are taken on it.
    - `summary_share` / `max_summary_tokens` / `min_summary_tokens`: the summary never takes
      more than ``min(max_summary_tokens, summary_share × context_window)`` tokens of context;
      with less than `min_summary_tokens` of room it is omitted with a marker.
    - `fallback`: a second summarizer used when the first fails for good (e.g. extractive);
      None means "no summary this time, nothing archived".
    - `retries` / `backoff_s`: transport failures are retried with backoff_s × 2**n; validation
      failures are not retried.
    - `ledger`: "pin" keeps facts the summary dropped in a Facts section, "retry" asks the
      summarizer once more naming them (then pins), "off" skips the ledger. "auto" (default)
      pins for model-backed summarizers and is off for the extractive one, which already
      selects fact-bearing sentences from the same span; with it on, an offline replay runs at
      about half the speed (docs/ledger.md, benchmarks/bench_replay.py).
    - `lag_turns`: simulate an asynchronous summarizer that lands N turns after the trigger.
    - `rebuild_from_raw`: summarize all covered raw messages again instead of folding the
      previous summary (no drift, more tokens).
    """

    def __init__(
        self,
        policy: Policy,
        summarizer: Summarizer,
        *,
        counter: TokenCounter | None = None,
        store: Store | None = None,
        context_format: ContextFormat | str = "earlier-heading",
        conversation_id: str | None = None,
        context_window: int = 200_000,
        summary_share: float = 0.10,
        max_summary_tokens: int = 1024,
        min_summary_tokens: int = 50,
        fallback: Summarizer | None = None,
        retries: int = 1,
        backoff_s: float = 0.25,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = _utcnow,
        ledger: LedgerMode = "auto",
        ledger_share: float = 0.25,
        ledger_max_facts: int = 60,
        lag_turns: int = 0,
        max_passes: int = 4,
        failure_cooldown: int = 2,
        rebuild_from_raw: bool = False,
        on_event: Callable[[SummaryEvent], None] | None = None,
        preset: str = "",
    ) -> None:
        if context_window <= 0:
            raise ConfigError("context_window must be a positive number of tokens")
        if not 0 < summary_share <= 1:
            raise ConfigError("summary_share must be in (0, 1]")
        if ledger not in ("auto", "pin", "retry", "off"):
            raise ConfigError("ledger must be 'auto', 'pin', 'retry' or 'off'")
        if lag_turns < 0 or retries < 0:
            raise ConfigError("lag_turns and retries must be >= 0")
        self.policy = policy
        self.summarizer = summarizer
        self.counter: TokenCounter = counter or HeuristicCounter()
        self.store: Store = store if store is not None else MemoryStore()
        self.format = get_format(context_format) if isinstance(context_format, str) else context_format
        self.conversation_id = conversation_id or new_id("conv-")
        self.context_window = context_window
        self.summary_share = summary_share
        self.max_summary_tokens = max_summary_tokens
        self.min_summary_tokens = min_summary_tokens
        self.fallback = fallback
        self.retries = retries
        self.backoff_s = backoff_s
        self._sleep = sleep
        self._clock = clock
        self.ledger: LedgerMode = ledger
        self.ledger_share = ledger_share
        self.ledger_max_facts = ledger_max_facts
        self.lag_turns = lag_turns
        self.max_passes = max_passes
        self.failure_cooldown = failure_cooldown
        self.rebuild_from_raw = rebuild_from_raw
        self.on_event = on_event
        self.preset = preset

        self._pinned: list[Message] = []
        self._pinned_tokens = 0
        self._active: list[Message] = []
        self._tokens: list[int] = []
        self._active_tokens = 0
        self._pending: list[Message] = []
        self._history: list[SummaryRecord] = []
        self._summary_msg: Message | None = None
        self._summary_tokens = 0
        self._summary_note: str | None = None
        self._seq = 0
        self._total_added = 0
        self._since_summary = 0
        self._evicted_since = 0
        self._dropped = 0
        self._min_tokens_since: int | None = None
        self._failed_turn = -(10**9)
        self._inflight: tuple[_Job, _Outcome] | None = None
        self.usage = Usage()
        self.last_events: tuple[SummaryEvent, ...] = ()
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
            if m.role == "system" and row.state == "active":
                self._pinned.append(m)
                self._pinned_tokens += self.counter.count_message(m)
                continue
            self._total_added += 1
            if row.state == "active":
                n = self.counter.count_message(m)
                self._active.append(m)
                self._tokens.append(n)
                self._active_tokens += n
            elif row.state == "pending":
                self._pending.append(m)
            elif row.state == "dropped":
                self._dropped += 1
        covered_seq = max((r.seq for r in rows if r.state == "covered"), default=-1)
        self._since_summary = sum(1 for r in rows if r.seq > covered_seq and r.message.role != "system")
        self._evicted_since = len(self._pending)
        self._refresh_summary()

    # ------------------------------------------------------------------ public API

    @property
    def summary(self) -> SummaryRecord | None:
        return self._history[-1] if self._history else None

    @property
    def history(self) -> list[SummaryRecord]:
        return list(self._history)

    @property
    def messages(self) -> list[Message]:
        return list(self._active)

    @property
    def pending(self) -> list[Message]:
        return list(self._pending)

    @property
    def turn(self) -> int:
        return self._seq

    def add(self, message: Message) -> SummaryEvent | None:
        """Append a message; summarize if the policy says so. Returns this turn's last event."""
        events: list[SummaryEvent] = []
        message = self._append(message)
        if message.role != "system":
            if self._inflight is not None and self._inflight[0].due_turn <= self._seq - 1:
                job, outcome = self._inflight
                self._inflight = None
                events.append(self._apply(job, outcome))
            if self._inflight is None:
                events.extend(self._step())
            self._observe()
        self.last_events = tuple(events)
        for ev in events:
            if self.on_event is not None:
                self.on_event(ev)
        return events[-1] if events else None

    def flush(self) -> SummaryEvent | None:
        """Land an in-flight (lagged) summary now, e.g. at the end of a replay."""
        if self._inflight is None:
            return None
        job, outcome = self._inflight
        self._inflight = None
        ev = self._apply(job, outcome)
        if self.on_event is not None:
            self.on_event(ev)
        return ev

    def context(self, system: str | None = None) -> list[Message]:
        """The messages to send to the main model, in this preset's format."""
        return self.format.assemble(system=system, pinned=self._pinned, active=self._active,
                                    summary=self._summary_msg, head=self._head())

    def context_tokens(self, system: str | None = None) -> int:
        extra = self.counter.count(system) + getattr(self.counter, "overhead", 0) if system else 0
        return self._pinned_tokens + self._summary_tokens + self._active_tokens + extra

    def summary_text(self) -> str:
        """The summary as it appears in the context (budgeted), or "" without one."""
        return self._summary_msg.content if self._summary_msg is not None else ""

    def config(self) -> dict[str, Any]:
        """Everything needed to re-create this engine: for manifests and logs."""
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
            "summary_share": self.summary_share,
            "max_summary_tokens": self.max_summary_tokens,
            "min_summary_tokens": self.min_summary_tokens,
            "ledger": self.ledger_mode,
            "ledger_setting": self.ledger,
            "lag_turns": self.lag_turns,
            "retries": self.retries,
            "rebuild_from_raw": self.rebuild_from_raw,
        }

    # ------------------------------------------------------------------ internals: window

    @property
    def ledger_mode(self) -> LedgerMode:
        """The effective ledger mode ("auto" resolved against the current summarizer)."""
        if self.ledger != "auto":
            return self.ledger
        return "off" if getattr(self.summarizer, "name", "") == "extractive" else "pin"

    def _head(self) -> int:
        return int(getattr(self.policy, "head", 0)) if self.format.position == "after-head" else 0

    def _append(self, message: Message) -> Message:
        if message.id is None:
            message = message.with_id(f"{self.conversation_id}/{self._seq}")
        self.store.add_message(self.conversation_id, self._seq, message)
        self._seq += 1
        n = self.counter.count_message(message)
        if message.role == "system":
            self._pinned.append(message)
            self._pinned_tokens += n
            return message
        self._active.append(message)
        self._tokens.append(n)
        self._active_tokens += n
        self._total_added += 1
        self._since_summary += 1
        return message

    def _observe(self) -> None:
        t = self.context_tokens()
        if self._min_tokens_since is None or t < self._min_tokens_since:
            self._min_tokens_since = t

    def _state(self, passes: int, last_failed: bool) -> WindowState:
        return WindowState(
            messages=self._active,
            tokens=self._tokens,
            active_tokens=self._active_tokens,
            pinned_tokens=self._pinned_tokens,
            summary_tokens=self._summary_tokens,
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
            last_failed=last_failed,
        )

    def _remove(self, ids: set[str]) -> list[Message]:
        """Take messages out of the active window by id (they may not be contiguous)."""
        kept: list[Message] = []
        kept_tokens: list[int] = []
        removed: list[Message] = []
        for m, n in zip(self._active, self._tokens):
            if m.id in ids:
                removed.append(m)
            else:
                kept.append(m)
                kept_tokens.append(n)
        self._active, self._tokens = kept, kept_tokens
        self._active_tokens = sum(kept_tokens)
        return removed

    def _keep_tool_pairs(self, indices: Sequence[int]) -> tuple[int, ...]:
        """Never split a tool call from its results across the summary boundary.

        Partial call/result groups are left out of the decision (the window keeps them whole);
        if that empties the decision, the groups are taken whole instead.
        """
        if not indices:
            return ()
        chosen = set(indices)
        groups = [range(a, b) for a, b in tool_units(self._active, 0, len(self._active))]
        shrunk: list[int] = []
        grown: list[int] = []
        for g in groups:
            inside = [k for k in g if k in chosen]
            if not inside:
                continue
            grown.extend(g)
            if len(inside) == len(g):
                shrunk.extend(g)
        return tuple(shrunk) if shrunk else tuple(grown)

    # ------------------------------------------------------------------ internals: decisions

    def _recently_failed(self) -> bool:
        return self._seq - 1 - self._failed_turn < self.failure_cooldown

    def _decide(self, passes: int, last_failed: bool) -> Decision | None:
        """Ask the policy, then make its answer safe: whole tool groups, something to do."""
        decision = self.policy.decide(self._state(passes, last_failed))
        if decision is None:
            return None
        indices = self._keep_tool_pairs(decision.indices)
        if not indices and not (decision.include_pending and self._pending):
            return None
        return Decision(decision.action, indices, decision.reason, decision.include_pending)

    def _apply_cheap(self, decision: Decision) -> SummaryEvent | None:
        """Evictions and drops need no model: apply them at once. None for a summary."""
        if decision.action == "evict":
            return self._evict(decision)
        if decision.action == "drop":
            return self._drop(decision)
        return None

    def _summary_decisions(self, events: list[SummaryEvent], last_failed: bool) -> Iterator[Decision]:
        """This turn's summarize decisions; evictions and drops are applied on the way.

        `WindowState.passes` counts the summaries already made this turn (seed 003's second
        pass); `max_passes` bounds the whole loop so a policy cannot spin.
        """
        summaries = 0
        for _ in range(self.max_passes):
            decision = self._decide(summaries, last_failed)
            if decision is None:
                return
            cheap = self._apply_cheap(decision)
            if cheap is not None:
                events.append(cheap)
                continue
            yield decision
            summaries += 1

    def _step(self) -> list[SummaryEvent]:
        events: list[SummaryEvent] = []
        last_failed = self._recently_failed()
        for decision in self._summary_decisions(events, last_failed):
            if last_failed:
                break
            job = self._plan(decision)
            outcome = self._run(job)
            if self.lag_turns > 0:
                job.due_turn = job.turn + self.lag_turns
                self._inflight = (job, outcome)
                break
            ev = self._apply(job, outcome)
            events.append(ev)
            if ev.kind != "summary":
                break
        return events

    def _evict(self, decision: Decision) -> SummaryEvent:
        before = self.context_tokens()
        ids = {self._active[i].id for i in decision.indices if self._active[i].id is not None}
        removed = self._remove(ids)  # type: ignore[arg-type]
        self.store.set_state(self.conversation_id, [m.id for m in removed if m.id], "pending", decision.reason)
        self._pending.extend(removed)
        self._evicted_since += len(removed)
        return SummaryEvent("evict", self._seq - 1, decision.reason, messages=len(removed),
                            tokens_before=before, tokens_after=self.context_tokens())

    def _drop(self, decision: Decision) -> SummaryEvent:
        before = self.context_tokens()
        ids = {self._active[i].id for i in decision.indices if self._active[i].id is not None}
        removed = self._remove(ids)  # type: ignore[arg-type]
        if decision.include_pending:
            removed.extend(self._pending)
            self._pending = []
            self._evicted_since = 0
        self.store.set_state(self.conversation_id, [m.id for m in removed if m.id], "dropped", decision.reason)
        self._dropped += len(removed)
        return SummaryEvent("drop", self._seq - 1, decision.reason, messages=len(removed),
                            tokens_before=before, tokens_after=self.context_tokens())

    # ------------------------------------------------------------------ internals: summaries

    def _budget(self) -> int:
        return min(self.max_summary_tokens, int(self.summary_share * self.context_window))

    def _plan(self, decision: Decision) -> _Job:
        span = tuple(self._active[i] for i in decision.indices)
        pending = tuple(self._pending) if decision.include_pending else ()
        previous = self.summary
        depth = previous.depth + 1 if previous is not None and not self.rebuild_from_raw else 0
        return _Job(decision, self._seq - 1, span, pending, previous, depth, self.context_tokens(),
                    self._total_added)

    def _request_messages(self, job: _Job) -> tuple[list[Message], SummaryRecord | None]:
        # pending messages were evicted earlier than anything still active: they come first
        msgs = list(job.pending) + list(job.span)
        if self.rebuild_from_raw and job.previous is not None:
            raw = [r.message for r in self.store.messages(self.conversation_id, "covered")]
            return raw + msgs, None
        return msgs, job.previous

    def _run(self, job: _Job) -> _Outcome:
        """Make the summary for a job. Touches no engine state: safe in a worker thread."""
        msgs, previous = self._request_messages(job)
        mode = self.ledger_mode
        budget = self._budget()
        text_budget = budget if mode == "off" else max(1, int(budget * (1 - self.ledger_share)))
        tracked: list[str] = []
        if mode != "off":
            prev_facts = list(job.previous.facts) if job.previous is not None else []
            new_facts = [f.text for f in fact_ledger.extract_facts(msgs)]
            tracked = list(dict.fromkeys(prev_facts + new_facts))[-self.ledger_max_facts:]
        request = SummaryRequest(
            conversation_id=self.conversation_id, messages=msgs, previous=previous, depth=job.depth,
            max_tokens=text_budget, must_keep=tuple(tracked),
            total_messages=self._total_added, total_tokens=job.tokens_before,
        )
        out = _Outcome()
        draft = self._attempt(self.summarizer, request, out)
        if draft is None and self.fallback is not None:
            log.warning("summarizer %s failed (%s); using fallback %s", getattr(self.summarizer, "name", "?"),
                        redact(str(out.error)), getattr(self.fallback, "name", "?"))
            draft = self._attempt(self.fallback, request, out, retries=0)
            if draft is not None:
                out.fallback = getattr(self.fallback, "name", "fallback")
        if draft is None:
            return out
        lost = self._missing(tracked, draft)
        if lost and mode == "retry":
            retry_req = SummaryRequest(**{**_fields(request), "must_keep": tuple(lost)})
            again = self._attempt(self.summarizer, retry_req, out, retries=0)
            if again is not None:
                draft = again
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
        out.draft = draft
        out.error = None
        out.facts = tuple(tracked)
        out.pinned = tuple(pinned)
        out.counts = {"found": len(tracked), "kept": len(tracked) - len(lost), "pinned": len(pinned),
                      "lost": len(lost) - len(pinned)}
        return out

    def _attempt(self, summarizer: Summarizer, request: SummaryRequest, out: _Outcome,
                 retries: int | None = None) -> SummaryDraft | None:
        tries = (self.retries if retries is None else retries) + 1
        for n in range(tries):
            out.attempts += 1
            try:
                draft = summarizer.summarize(request)
            except SummarizeError as err:
                out.error = err
                if err.transport and n + 1 < tries:
                    self._sleep(self.backoff_s * (2 ** n))
                    continue
                return None
            except RollsumError as err:  # a misbehaving summarizer must not take messages down
                out.error = SummarizeError(str(err), transport=False, kind=ErrorKind.OTHER)
                return None
            if not draft.text.strip():
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

    def _apply(self, job: _Job, outcome: _Outcome) -> SummaryEvent:
        """Commit a finished job. Before the store commit nothing changes; after it, the window."""
        lag = (self._seq - 1) - job.turn
        covered = list(job.pending) + list(job.span)
        self.usage = self.usage + outcome.usage
        if outcome.draft is None:
            self._failed_turn = self._seq - 1
            err = outcome.error
            reason = redact(str(err)) if err else "unknown"
            log.warning("summary failed at turn %d after %d attempt(s): %s; all %d messages kept",
                        job.turn, outcome.attempts, reason, len(covered))
            return SummaryEvent("failure", job.turn, job.decision.reason, depth=job.depth, messages=0,
                                tokens_before=job.tokens_before, tokens_after=self.context_tokens(),
                                lag_turns=lag, error=reason,
                                error_kind=err.kind.value if err else None, attempts=outcome.attempts,
                                usage=outcome.usage)
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
            meta={"reason": job.decision.reason, "turn": job.turn, "preset": self.preset},
        )
        record = _with_tokens(record, self.counter.count(record.render()))
        try:
            self.store.commit_summary(record, ids)
        except RollsumError as err:
            self._failed_turn = self._seq - 1
            log.error("store refused summary %s: %s; all messages kept", record.id, redact(str(err)))
            return SummaryEvent("failure", job.turn, job.decision.reason, depth=job.depth,
                                tokens_before=job.tokens_before, tokens_after=self.context_tokens(),
                                lag_turns=lag, error=redact(f"store: {err}"), error_kind="store",
                                attempts=outcome.attempts, usage=outcome.usage)
        # committed: now change the window
        self._remove(set(m.id for m in job.span if m.id is not None))
        if job.pending:
            done = set(ids)
            self._pending = [m for m in self._pending if m.id not in done]
        self._history.append(record)
        self._since_summary = self._total_added - job.added_at
        self._evicted_since = len(self._pending)
        self._min_tokens_since = None
        self._refresh_summary()
        c = outcome.counts
        return SummaryEvent("summary", job.turn, job.decision.reason, record=record, depth=job.depth,
                            messages=len(ids), tokens_before=job.tokens_before,
                            tokens_after=self.context_tokens(), lag_turns=lag, attempts=outcome.attempts,
                            facts_found=c.get("found", 0), facts_kept=c.get("kept", 0),
                            facts_pinned=c.get("pinned", 0), facts_lost=c.get("lost", 0),
                            usage=outcome.usage, fallback=record.fallback)

    def _refresh_summary(self) -> None:
        rec = self.summary
        if rec is None:
            self._summary_msg, self._summary_tokens, self._summary_note = None, 0, None
            return
        text, note = budget_summary(rec.render(), self._budget(), min_tokens=self.min_summary_tokens,
                                    count=self.counter.count)
        if note:
            log.info("summary %s: %s", rec.id, note)
        self._summary_note = note
        self._summary_msg = self.format.summary_message(text, rec)
        self._summary_tokens = self.counter.count_message(self._summary_msg)


def _render(draft: SummaryDraft) -> str:
    parts = [draft.text]
    parts.extend(draft.key_points)
    return "\n".join(parts)


def _with_tokens(record: SummaryRecord, tokens: int) -> SummaryRecord:
    from dataclasses import replace

    return replace(record, tokens=tokens)


def _fields(request: SummaryRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in request.__dataclass_fields__}
