"""Any `rollsum.memory.Memory` as the `Engine` a replay drives.

A memory only promises ``add(message)`` and ``context()``; a replay records more (tokens per
turn, the summary chain, usage, the config). The adapter fills those in the same way for every
memory, so a user's class and LangChain's buffer are measured with the presets' ruler:

- context tokens: the library's counter (`rollsum.tokens.HeuristicCounter`, the one the presets
  budget with) over the messages `context()` returned, whatever the memory counts internally;
- summaries and events: the ones the memory reports through ``on_event`` (none otherwise);
- usage: what went through the sweep's metered model (every call, cached or not);
- active messages: context items that are conversation messages verbatim.

`context()` is called once per added message (a chat application asks for the context every
turn, and a memory that summarizes lazily does it there); the replay reads the cached result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.memory import Memory
from rollsum.models.base import Model
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage
from rollsum_evals.spec import components
from rollsum_evals.units import Unit


class MemoryAdapter:
    """Adapts a `Memory` to `rollsum_evals.replay.Engine`."""

    def __init__(self, memory: Memory, *, path: str, params: dict[str, Any], context_window: int,
                 counter: TokenCounter, model: Model | None, capabilities: dict[str, Any]) -> None:
        self.memory = memory
        self.path = path
        self.params = params
        self.context_window = context_window
        self.counter = counter
        self.model = model
        self.capabilities = capabilities
        self._history: list[SummaryRecord] = []
        self._context: list[Message] = []
        self._tokens = 0
        self._verbatim: list[Message] = []
        self._added: dict[str, Message] = {}

    def record(self, event: SummaryEvent) -> None:
        """What the memory reports through ``on_event``: its summaries become the chain."""
        if event.kind == "summary" and event.record is not None:
            self._history.append(event.record)

    def add(self, message: Message) -> SummaryEvent | None:
        if message.id is not None:
            self._added[message.id] = message
        self.memory.add(message)
        context = self.memory.context()
        if not isinstance(context, list | tuple) or not all(isinstance(m, Message) for m in context):
            bad = next((m for m in context if not isinstance(m, Message)), context) \
                if isinstance(context, list | tuple) else context
            raise ConfigError(f"memory {self.path}: context() must return a list of rollsum Message, "
                              f"got {type(bad).__name__}")
        self._context = list(context)
        self._tokens = sum(self.counter.count_message(m) for m in self._context)
        self._verbatim = [m for m in self._context if self._is_verbatim(m)]
        return None

    def _is_verbatim(self, m: Message) -> bool:
        orig = self._added.get(m.id) if m.id is not None else None
        return orig is not None and (orig.role, orig.name, orig.content) == (m.role, m.name, m.content)

    def context(self, system: str | None = None) -> list[Message]:
        return list(self._context)

    def context_tokens(self) -> int:
        return self._tokens

    @property
    def summary(self) -> SummaryRecord | None:
        return self._history[-1] if self._history else None

    @property
    def history(self) -> Sequence[SummaryRecord]:
        return list(self._history)

    @property
    def messages(self) -> Sequence[Message]:
        """The verbatim conversation messages in the context (the trace's active count)."""
        return list(self._verbatim)

    @property
    def usage(self) -> Usage:
        nominal = getattr(self.model, "nominal", None)
        return nominal if isinstance(nominal, Usage) else Usage()

    def config(self) -> dict[str, Any]:
        own = getattr(self.memory, "config", None)
        extra = own() if callable(own) else {}
        return {"memory": self.path, "params": dict(self.params), "context_window": self.context_window,
                "counter": repr(self.counter), "capabilities": self.capabilities,
                **(extra if isinstance(extra, dict) else {})}

    def close(self) -> None:
        close = getattr(self.memory, "close", None)
        if callable(close):
            close()


def adapt_memory(unit: Unit, model: Model | None, on_event: Callable[[SummaryEvent], None]) -> MemoryAdapter:
    """Build the memory a Unit names (its `preset` is the import path; its params go to the
    constructor with the conventions of `rollsum.plugins`)."""
    factory = plugins.load(unit.preset)
    counter = HeuristicCounter()
    engine: MemoryAdapter | None = None

    def report(event: SummaryEvent) -> None:
        if engine is not None:
            engine.record(event)
        on_event(event)

    memory = plugins.construct(factory, unit.params, {
        "model": model, "context_window": unit.context_window, "counter": counter, "on_event": report,
    }, what=f"memory {unit.preset}")
    if not isinstance(memory, Memory):
        raise ConfigError(f"memory {unit.preset}: {type(memory).__name__} is not a rollsum Memory "
                          "(expected add(message) and context() -> list[Message])")
    caps = asdict(components.of_config(unit.preset, unit.model, unit.params, imports=True))
    engine = MemoryAdapter(memory, path=unit.preset, params=unit.params, context_window=unit.context_window,
                          counter=counter, model=model, capabilities=caps)
    return engine
