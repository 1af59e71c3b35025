"""Replay one Unit: feed a conversation to the engine and record what the main model would see.

The trace is everything a scorer needs and nothing more: context tokens at each turn, every
summary event, the summary chain with the turn each record appeared, and a snapshot of the
assembled context at each turn where a probe is asked. Snapshots are taken during the replay,
because for probes asked "N turns after their evidence" the context that matters is the one at
that turn, not the final one.

The engine is a seam (`EngineFactory`): the default builds `rollsum.RollingSummarizer` from
the Unit's preset; tests inject a stand-in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evals.data.types import Conversation, Probe
from evals.spec import OFFLINE_MODELS, Unit
from rollsum.models.base import Completion, CompletionRequest, Model
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage


class Engine(Protocol):
    """The part of `rollsum.RollingSummarizer` a replay uses."""

    def add(self, message: Message) -> SummaryEvent | None: ...

    def context(self, system: str | None = None) -> list[Message]: ...

    def context_tokens(self) -> int: ...

    def summary_text(self) -> str: ...

    @property
    def summary(self) -> SummaryRecord | None: ...

    @property
    def history(self) -> Sequence[SummaryRecord]: ...

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def usage(self) -> Usage: ...

    def config(self) -> dict[str, Any]: ...


EngineFactory = Callable[[Unit, "Model | None", Callable[[SummaryEvent], None]], Engine]


def default_engine(unit: Unit, model: Model | None,
                   on_event: Callable[[SummaryEvent], None]) -> Engine:
    """`RollingSummarizer.from_preset` with the Unit's overrides (unknown ones: ConfigError)."""
    from rollsum import RollingSummarizer

    overrides: dict[str, Any] = dict(unit.params)
    overrides.setdefault("context_window", unit.context_window)
    if unit.prompt:
        overrides.setdefault("prompt", unit.prompt)
    spec: Model | str | None = model if model is not None else (
        None if unit.model in OFFLINE_MODELS else unit.model)
    engine: Engine = RollingSummarizer.from_preset(
        unit.preset, spec, conversation_id=unit.conversation_id, on_event=on_event, **overrides)
    return engine


class MeteredModel:
    """Wraps the summarizer model to count calls, cache hits and latency for the cost scorer.

    Usage of *paid* calls (cache misses) is kept apart: the budget stops on real spend, while
    the reported cost is the nominal cost of the configuration, identical on a cached re-run.
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.calls = 0
        self.cached_calls = 0
        self.latency_s = 0.0
        self.paid = Usage()
        self.nominal = Usage()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def complete(self, request: CompletionRequest) -> Completion:
        c = self.inner.complete(request)
        self.calls += 1
        self.latency_s += c.latency_s
        self.nominal = self.nominal + c.usage
        if c.cached:
            self.cached_calls += 1
        else:
            self.paid = self.paid + c.usage
        return c


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The assembled context at one turn, split into its summary and verbatim parts."""

    turn: int
    context: tuple[Message, ...]
    summary_text: str
    verbatim_text: str

    @property
    def context_text(self) -> str:
        return "\n".join(m.content for m in self.context)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    turn: int
    role: str
    context_tokens: int
    active_messages: int
    summary_tokens: int


@dataclass(slots=True)
class Trace:
    unit_id: str
    messages: tuple[Message, ...]
    """The conversation as replayed (ids filled in where the data had none)."""
    turns: list[TurnRecord] = field(default_factory=list)
    events: list[SummaryEvent] = field(default_factory=list)
    event_turns: list[int] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    summary_turns: list[int] = field(default_factory=list)
    snapshots: dict[int, Snapshot] = field(default_factory=dict)
    asked_turn: dict[str, int] = field(default_factory=dict)
    evidence_turn: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    cached_calls: int = 0
    latency_s: float = 0.0
    paid_usage: Usage = field(default_factory=Usage)
    engine_config: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def failures(self) -> int:
        return sum(1 for e in self.events if e.kind == "failure")

    def snapshot_for(self, probe_id: str) -> Snapshot:
        turn = self.asked_turn.get(probe_id, -1)
        return self.snapshots.get(turn) or Snapshot(turn=turn, context=(), summary_text="",
                                                     verbatim_text="")


def with_ids(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Evidence is matched by message id; data without ids get positional ones."""
    return tuple(m if m.id is not None else m.with_id(f"m{i}") for i, m in enumerate(messages))


def probe_schedule(probes: Sequence[Probe], messages: Sequence[Message],
                   after_turns: int | None) -> tuple[dict[str, int], dict[str, int]]:
    """(asked turn, evidence turn) per probe. Evidence turn = last evidence message, -1 if none."""
    last = len(messages) - 1
    index = {m.id: i for i, m in enumerate(messages)}
    asked: dict[str, int] = {}
    evidence: dict[str, int] = {}
    for p in probes:
        ev = max((index[e] for e in p.evidence if e in index), default=-1)
        evidence[p.id] = ev
        if after_turns is None or ev < 0:
            asked[p.id] = last
        else:
            asked[p.id] = min(ev + after_turns, last)
    return asked, evidence


def replay(unit: Unit, conversation: Conversation, *, engine_factory: EngineFactory = default_engine,
           model: Model | None = None, clock: Callable[[], float] = time.perf_counter) -> Trace:
    """Feed every message to a fresh engine and record the trace.

    Engine errors propagate: the runner records the Unit as ``error`` with a one-line message.
    """
    start = clock()
    messages = with_ids(conversation.messages)
    trace = Trace(unit_id=unit.unit_id, messages=messages)
    metered = MeteredModel(model) if model is not None else None
    current_turn = [0]

    def on_event(event: SummaryEvent) -> None:
        trace.events.append(event)
        trace.event_turns.append(current_turn[0])
        if event.kind == "summary" and event.record is not None:
            trace.summaries.append(event.record)
            trace.summary_turns.append(current_turn[0])

    engine = engine_factory(unit, metered, on_event)
    trace.asked_turn, trace.evidence_turn = probe_schedule(conversation.probes, messages,
                                                           unit.after_turns)
    snapshot_turns = set(trace.asked_turn.values())
    for i, msg in enumerate(messages):
        current_turn[0] = i
        engine.add(msg)
        summary = engine.summary
        trace.turns.append(TurnRecord(
            turn=i, role=msg.role, context_tokens=engine.context_tokens(),
            active_messages=len(engine.messages),
            summary_tokens=summary.tokens if summary is not None else 0))
        if i in snapshot_turns:
            trace.snapshots[i] = Snapshot(
                turn=i, context=tuple(engine.context()), summary_text=engine.summary_text(),
                verbatim_text="\n".join(m.content for m in engine.messages))
    # Records the engine made that were not announced through an event (defensive: the chain
    # is what fact_survival reads, so it must be complete).
    known = {r.id for r in trace.summaries}
    for r in engine.history:
        if r.id not in known:
            trace.summaries.append(r)
            trace.summary_turns.append(len(messages) - 1)
    order = sorted(range(len(trace.summaries)), key=lambda k: (trace.summaries[k].seq, k))
    trace.summaries = [trace.summaries[k] for k in order]
    trace.summary_turns = [trace.summary_turns[k] for k in order]
    trace.usage = engine.usage
    trace.engine_config = engine.config()
    if metered is not None:
        trace.model_calls = metered.calls
        trace.cached_calls = metered.cached_calls
        trace.latency_s = metered.latency_s
        trace.paid_usage = metered.paid
    trace.wall_s = clock() - start
    return trace
