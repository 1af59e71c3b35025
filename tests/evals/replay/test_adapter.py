"""Any Memory replays like a preset: the adapter measures it with the library's counter, takes
its summaries from the events it reports, its usage from the metered model, and closes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rollsum_evals.data.formats import parse_synth_spec
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay import replay
from rollsum_evals.replay.adapter import MemoryAdapter, adapt_memory
from rollsum_evals.units import Unit

from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum.tokens import HeuristicCounter
from rollsum.types import SummaryEvent
from tests.support.helpers import fake

MARK = "tests.support.plugin_components:MarkMemory"


def conversation(messages: int = 80) -> Conversation:
    conv: Conversation = next(iter(parse_synth_spec(f"synth:chat?conversations=1&messages={messages}&seed=7"))) \
        .conversation()
    return conv


def unit(preset: str = MARK, params: str = "{}", window: int = 1200) -> Unit:
    return Unit(unit_id="u1", dataset="d", conversation_id="c", dataset_hash="h", config="cfg", preset=preset,
                params_json=params, prompt="", model="fake:mode=extractive", seed=0, context_window=window)


def capture(into: list[MemoryAdapter]) -> Callable[[Unit, Model | None, Callable[[SummaryEvent], None]], Any]:
    def factory(u: Unit, model: Model | None, on_event: Callable[[SummaryEvent], None]) -> MemoryAdapter:
        engine = adapt_memory(u, model, on_event)
        into.append(engine)
        return engine
    return factory


def test_a_memory_is_measured_with_the_librarys_counter_and_closed() -> None:
    engines: list[MemoryAdapter] = []
    conv = conversation()
    model = fake("extractive")
    trace = replay(unit(params='{"mark": "Q"}'), conv, engine_factory=capture(engines), model=model)
    engine = engines[0]
    assert engine.memory.closed  # type: ignore[attr-defined]
    counter = HeuristicCounter()
    for t in trace.turns:
        context = trace.context_at(t.turn)
        assert t.context_tokens == sum(counter.count(i.text) + counter.overhead for i in context)
        assert t.active_messages == sum(1 for i in context if i.verbatim)
    # the chain is what the memory reported; summary_tokens follows the latest record
    assert trace.summaries and all(r.text.startswith("[Q] ") for r in trace.summaries)
    assert trace.turns[-1].summary_tokens == trace.summaries[-1].tokens
    # usage: every call through the metered model
    assert trace.usage.calls == trace.model_calls == len(model.requests) > 0
    assert trace.engine_config["params"] == {"mark": "Q"} and trace.engine_config["context_window"] == 1200


def test_a_memory_that_returns_something_else_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import plugin_components

    monkeypatch.setattr(plugin_components.MarkMemory, "context", lambda self: [{"role": "user", "content": "x"}])
    with pytest.raises(ConfigError, match=f"memory {MARK}: context\\(\\) must return a list of rollsum Message, "
                                          "got dict"):
        replay(unit(), conversation(10), model=fake("extractive"))


def test_constructor_errors_name_the_memory() -> None:
    with pytest.raises(ConfigError, match=f"^memory {MARK}: ValueError: context_window too small: 50$"):
        replay(unit(window=50), conversation(10), model=fake("extractive"))
