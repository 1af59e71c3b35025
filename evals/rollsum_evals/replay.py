"""Replay one Unit: feed a conversation to the engine and record what the main model would see.

The trace is everything a scorer needs and nothing more: context tokens at each turn, every
summary event, the summary chain with the turn each record appeared, and, for every *ask* (a
probe asked at one turn), what the assembled context held at that turn. Probes are asked at
several ages (N turns after their evidence) as well as at the end, so the context that matters
is the one at the asking turn, not the final one. Observing it during the replay keeps the
trace small: whole contexts are only kept when a scorer needs them (``qa`` sends them to a
model), and each message is normalized once however many turns it is seen at.

The engine is a seam (`EngineFactory`): the default builds `rollsum.RollingSummarizer` from
the Unit's preset; tests inject a stand-in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.scoring.text import contains, normalize_text
from rollsum_evals.spec import OFFLINE_MODELS, ProbeTiming, Unit
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
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


class MeteredModel(ModelWrapper):
    """Wraps the summarizer model to count calls, cache hits and latency for the cost scorer.

    Usage of *paid* calls (cache misses) is kept apart: the budget stops on real spend, while
    the reported cost is the nominal cost of the configuration, identical on a cached re-run.
    """

    def __init__(self, inner: Model) -> None:
        super().__init__(inner)
        self.calls = 0
        self.cached_calls = 0
        self.latency_s = 0.0
        self.paid = Usage()
        self.nominal = Usage()

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


@dataclass(frozen=True, slots=True)
class Ask:
    """One probe asked at one turn: one row of ``probes.parquet``."""

    key: str
    """Unique within a Unit: the probe id when each probe is asked once, else ``id@turn``."""
    probe: Probe
    asked_turn: int
    evidence_turn: int
    """The probe's last evidence message, -1 when it has none."""

    @property
    def age_turns(self) -> int:
        return self.asked_turn - self.evidence_turn if self.evidence_turn >= 0 else 0


@dataclass(frozen=True, slots=True)
class Observation:
    """Where a probe's answer was at its asking turn (normalized, on word boundaries)."""

    in_context: bool
    in_summary: bool
    in_verbatim: bool
    in_prefix: bool
    """In the conversation so far: what `full-context` would have sent."""
    stale_in_context: bool
    """An out-of-date value of a superseded fact is in the context."""


@dataclass(frozen=True, slots=True)
class _NormalizedView:
    context: str
    summary: str
    verbatim: str
    prefix: str


def observe(probe: Probe, view: _NormalizedView) -> Observation:
    return Observation(
        in_context=contains(view.context, probe.answer),
        in_summary=contains(view.summary, probe.answer),
        in_verbatim=contains(view.verbatim, probe.answer),
        in_prefix=contains(view.prefix, probe.answer),
        stale_in_context=any(contains(view.context, a) for a in probe.stale_answers))


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
    """Whole contexts at asking turns: only when a scorer needs them (``qa``) or in tests."""
    asked_turn: dict[str, int] = field(default_factory=dict)
    """Probe id -> its last asking turn (kept for callers that ask each probe once)."""
    evidence_turn: dict[str, int] = field(default_factory=dict)
    asks: list[Ask] = field(default_factory=list)
    observations: dict[str, Observation] = field(default_factory=dict)
    """Ask key -> what the context held at the asking turn, recorded during the replay."""
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
        return self.snapshot_at(self.asked_turn.get(probe_id, -1))

    def snapshot_at(self, turn: int) -> Snapshot:
        return self.snapshots.get(turn) or Snapshot(turn=turn, context=(), summary_text="",
                                                     verbatim_text="")

    def asks_for(self, probes: Sequence[Probe]) -> list[Ask]:
        """The asks of this trace; for a hand-built trace without them, one per probe."""
        if self.asks:
            return self.asks
        last = len(self.messages) - 1
        return [Ask(p.id, p, self.asked_turn.get(p.id, last), self.evidence_turn.get(p.id, -1))
                for p in probes]

    def observation(self, ask: Ask) -> Observation:
        """Recorded during the replay, or computed from a stored snapshot."""
        found = self.observations.get(ask.key)
        if found is not None:
            return found
        snap = self.snapshot_at(ask.asked_turn)
        view = _NormalizedView(
            context=normalize_text(snap.context_text), summary=normalize_text(snap.summary_text),
            verbatim=normalize_text(snap.verbatim_text),
            prefix=normalize_text("\n".join(m.content for m in self.messages[: ask.asked_turn + 1])))
        return observe(ask.probe, view)


def with_ids(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Evidence is matched by message id; data without ids get positional ones."""
    return tuple(m if m.id is not None else m.with_id(f"m{i}") for i, m in enumerate(messages))


def schedule_asks(probes: Sequence[Probe], messages: Sequence[Message],
                  timing: ProbeTiming) -> list[Ask]:
    """Every (probe, asking turn) of a Unit, in probe order then turn order.

    An age the conversation is too short for is skipped rather than clipped to the end, so an
    ``age_turns`` value always means the same thing. A probe without evidence has no age: it
    is asked once, at the end. Two timings landing on the same turn give one ask.
    """
    last = len(messages) - 1
    index = {m.id: i for i, m in enumerate(messages)}
    asks: list[Ask] = []
    for p in probes:
        ev = max((index[e] for e in p.evidence if e in index), default=-1)
        if timing.ask == "end" or ev < 0:
            turns = [last]
        elif timing.ask == "after":
            turns = [min(ev + timing.after_turns, last)]
        else:
            turns = [ev + a for a in timing.ages if ev + a <= last]
            if timing.end and last not in turns:
                turns.append(last)
        many = timing.ask == "ages"
        asks += [Ask(f"{p.id}@{t}" if many else p.id, p, t, ev) for t in turns]
    return asks


def probe_schedule(probes: Sequence[Probe], messages: Sequence[Message],
                   after_turns: int | None) -> tuple[dict[str, int], dict[str, int]]:
    """(asked turn, evidence turn) per probe, for one-ask-per-probe timings."""
    timing = ProbeTiming() if after_turns is None else ProbeTiming("after", after_turns)
    asks = schedule_asks(probes, messages, timing)
    return {a.probe.id: a.asked_turn for a in asks}, {a.probe.id: a.evidence_turn for a in asks}


class _Normalizer:
    """Normalized text per message content, computed once per replay: a long conversation
    probed at many turns would otherwise re-normalize the same messages at every one."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        out = self._cache.get(text)
        if out is None:
            out = self._cache[text] = normalize_text(text)
        return out

    def join(self, texts: Sequence[str]) -> str:
        # normalize_text("a\nb") == normalize(a) + " " + normalize(b): it only maps characters,
        # drops whole words and collapses whitespace, so per-message results can be joined.
        return " ".join(n for n in map(self, texts) if n)


def replay(unit: Unit, conversation: Conversation, *, engine_factory: EngineFactory = default_engine,
           model: Model | None = None, clock: Callable[[], float] = time.perf_counter,
           keep_contexts: bool | None = None) -> Trace:
    """Feed every message to a fresh engine and record the trace.

    `keep_contexts` keeps the whole context of each asking turn in ``trace.snapshots``
    (default: only when the Unit is scored by ``qa``).

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
    trace.asks = schedule_asks(conversation.probes, messages, unit.timing)
    for a in trace.asks:
        trace.asked_turn[a.probe.id] = max(a.asked_turn, trace.asked_turn.get(a.probe.id, -1))
        trace.evidence_turn[a.probe.id] = a.evidence_turn
    by_turn: dict[int, list[Ask]] = {}
    for a in trace.asks:
        by_turn.setdefault(a.asked_turn, []).append(a)
    keep = ("qa" in unit.scorers) if keep_contexts is None else keep_contexts
    norm = _Normalizer()
    prefix: list[str] = []
    for i, msg in enumerate(messages):
        current_turn[0] = i
        engine.add(msg)
        prefix.append(norm(msg.content))
        summary = engine.summary
        trace.turns.append(TurnRecord(
            turn=i, role=msg.role, context_tokens=engine.context_tokens(),
            active_messages=len(engine.messages),
            summary_tokens=summary.tokens if summary is not None else 0))
        asked_now = by_turn.get(i)
        if asked_now is None:
            continue
        context = tuple(engine.context())
        summary_text = engine.summary_text()
        verbatim = [m.content for m in engine.messages]
        view = _NormalizedView(context=norm.join([m.content for m in context]),
                               summary=norm(summary_text), verbatim=norm.join(verbatim),
                               prefix=" ".join(n for n in prefix if n))
        for a in asked_now:
            trace.observations[a.key] = observe(a.probe, view)
        if keep:
            trace.snapshots[i] = Snapshot(turn=i, context=context, summary_text=summary_text,
                                          verbatim_text="\n".join(verbatim))
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
