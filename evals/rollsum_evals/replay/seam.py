"""The seam between the harness and whatever keeps the conversation: an `Engine`.

The default builds `rollsum.RollingSummarizer` from the Unit's preset, or, when the Unit names
a memory by import path, adapts that `rollsum.memory.Memory` (`rollsum_evals.replay.adapter`);
tests inject stand-ins.
A replay only needs to add messages and read the context back, plus a few numbers the trace
records; `pending` and `summary` are optional (an engine without them records 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from rollsum.errors import ErrorKind, ModelError
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.models.cassette import ReplayMissError
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage
from rollsum_evals.spec import components
from rollsum_evals.units import Unit


class Engine(Protocol):
    """The part of `rollsum.RollingSummarizer` a replay uses."""

    def add(self, message: Message) -> SummaryEvent | None: ...

    def context(self, system: str | None = None) -> list[Message]: ...

    def context_tokens(self) -> int: ...

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
    """A `RollingSummarizer` made from the Unit's typed configuration (`Unit.preset_config`:
    checked and routed once, when the spec was expanded; not checked or re-parsed here), or the
    Unit's memory."""
    from rollsum import RollingSummarizer, plugins, presets

    if plugins.is_import_path(unit.preset):
        from rollsum_evals.replay.adapter import adapt_memory

        return adapt_memory(unit, model, on_event)

    spec: Model | str | None = model if model is not None else (
        None if components.is_builtin(unit.model) else unit.model)
    engine: Engine = presets.make(RollingSummarizer, unit.preset_config(), spec,
                                  conversation_id=unit.conversation_id, on_event=on_event)
    return engine


class BudgetRefused(ModelError):
    """A call refused because it could pass the run's ``--max-cost-usd`` (raised by the run's
    budget wrapper before anything is sent). A `ModelError`, so the library treats it as a failed,
    non-retryable call; the replay then stops the Unit (`BudgetStopped`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorKind.OTHER)


class BudgetStopped(Exception):
    """A Unit ended because a model call was refused by the budget: its row is ``stopped:
    budget``, never scored as if the refused calls were a result."""


class MeteredModel(ModelWrapper):
    """Counts calls, cache hits, cassette misses, budget refusals and latency of a model
    (summarizer or scorer).

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
        self.cassette_misses = 0
        self.refused = 0

    def complete(self, request: CompletionRequest) -> Completion:
        try:
            c = self.inner.complete(request)
        except ReplayMissError:
            self.cassette_misses += 1
            raise
        except BudgetRefused:
            self.refused += 1
            raise
        self.calls += 1
        self.latency_s += c.latency_s
        self.nominal = self.nominal + c.usage
        if c.cached:
            self.cached_calls += 1
        else:
            self.paid = self.paid + c.usage
        return c
