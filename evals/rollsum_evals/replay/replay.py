"""Replay one Unit: feed a conversation to an engine and record the trace of every turn.

Nothing is scored here (see `rollsum_evals.scoring`): the replay only records what the main
model would have been sent, turn by turn (`rollsum_evals.replay.trace`). That costs one
`engine.context()` per turn, linear in the context's length, which for every windowed preset is
bounded by the window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rollsum.context import TIMESTAMPS
from rollsum.models.base import Model
from rollsum.types import Message, SummaryEvent
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay.seam import BudgetStopped, Engine, EngineFactory, MeteredModel, default_engine
from rollsum_evals.replay.trace import DEFAULT_TIMESTAMPS, ContextEncoder, Trace, TurnRecord, with_ids
from rollsum_evals.units import Unit


def replay(unit: Unit, conversation: Conversation, *, engine_factory: EngineFactory = default_engine,
           model: Model | None = None, clock: Callable[[], float] = time.perf_counter) -> Trace:
    """Feed every message to a fresh engine and record the trace.

    Engine errors propagate: the caller records the Unit as ``error`` with a one-line message.
    A model call refused by the budget (`BudgetRefused`, which the engine records as a failed
    attempt) ends the replay with `BudgetStopped` after that turn: the rest would be a replay of
    a configuration whose summaries were not allowed to happen.
    """
    start = clock()
    messages = with_ids(conversation.messages)
    trace = Trace(unit_id=unit.unit_id, messages=messages, context_window=unit.context_window,
                  timestamps=timestamps_of(unit))
    metered = MeteredModel(model) if model is not None else None
    current_turn = [0]
    made: dict[str, int] = {}

    def on_event(event: SummaryEvent) -> None:
        d = event.to_dict()
        d["engine_turn"] = d.pop("turn")
        trace.events.append({"turn": current_turn[0], **d})
        if event.kind == "summary" and event.record is not None:
            trace.summaries.append(event.record)
            trace.summary_turns.append(current_turn[0])
            made[event.record.id] = current_turn[0]

    engine = engine_factory(unit, metered, on_event)
    try:
        _feed(engine, messages, trace, current_turn, metered)
        history, usage, config = list(engine.history), engine.usage, engine.config()
    finally:
        close = getattr(engine, "close", None)  # a memory may hold files or connections
        if callable(close):
            close()
    # Records the engine made without announcing them through an event (defensive: the chain
    # is what fact_survival reads, so it must be complete).
    for r in history:
        if r.id not in made:
            trace.summaries.append(r)
            trace.summary_turns.append(len(messages) - 1)
    order = sorted(range(len(trace.summaries)), key=lambda k: (trace.summaries[k].seq, k))
    trace.summaries = [trace.summaries[k] for k in order]
    trace.summary_turns = [trace.summary_turns[k] for k in order]
    trace.usage = usage
    trace.engine_config = config
    if metered is not None:
        trace.model_calls = metered.calls
        trace.cached_calls = metered.cached_calls
        trace.cassette_misses = metered.cassette_misses
        trace.latency_s = metered.latency_s
        trace.paid_usage = metered.paid
    trace.wall_s = clock() - start
    return trace


def timestamps_of(unit: Unit) -> str:
    """The Unit's ``timestamps`` param (how the context shows when messages were said), else the
    harness default; an unknown mode is a ConfigError naming it."""
    from rollsum.errors import ConfigError

    mode = str(unit.params.get("timestamps", DEFAULT_TIMESTAMPS))
    if mode not in TIMESTAMPS:
        raise ConfigError(f"config {unit.config}: timestamps = {mode!r}: expected one of {', '.join(TIMESTAMPS)}")
    return mode


def _feed(engine: Engine, messages: Sequence[Message], trace: Trace, current_turn: list[int],
          metered: MeteredModel | None) -> None:
    """Every message, and the context after each (the trace's turns and texts)."""
    encoder = ContextEncoder(messages)
    for i, msg in enumerate(messages):
        current_turn[0] = i
        engine.add(msg)
        if metered is not None and metered.refused:
            raise BudgetStopped(f"stopped at message {i}: a model call would pass --max-cost-usd")
        summary = getattr(engine, "summary", None)
        pending = getattr(engine, "pending", None)
        context = engine.context()
        trace.turns.append(TurnRecord(
            turn=i, role=msg.role,
            context_tokens=engine.context_tokens(),  # the stored messages: stamps are not counted
            summary_tokens=summary.tokens if summary is not None else 0,
            active_messages=len(engine.messages), pending_messages=len(pending) if pending is not None else 0,
            composition=encoder.encode(context, i)))
    trace.texts = encoder.texts
