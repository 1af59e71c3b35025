"""The memory seam: anything that is told each message and hands back the context.

`RollingSummarizer` is one implementation; LangChain's and LlamaIndex's summary buffers (through
the harness's adapters, `rollsum_evals.peers`) and a user's own class are others. The harness
replays and scores any `Memory` exactly like a preset, which is what makes "does my memory keep
more than rollsum's presets at the same budget?" a question one sweep answers.

The protocol is deliberately two methods: a memory decides for itself when and how to summarize,
trim or forget. Everything else is optional and discovered, never required (docs/plugins.md):

- ``close()``: called once when the replay is over (release files, connections).
- ``config() -> dict``: what to record in the run's manifest beside the import path and params.
- constructor parameters named ``model``, ``context_window``, ``counter``, ``on_event`` get the
  sweep's metered `rollsum.models.base.Model`, the window in tokens, the library's
  `rollsum.tokens.TokenCounter` and a callback for `rollsum.types.SummaryEvent` s (report a
  ``summary`` event with its `SummaryRecord` and the harness scores the summary chain too).
- a class attribute ``capabilities`` (`rollsum.capabilities.Capabilities`); without one the
  harness assumes the conservative reading (online, paid, not deterministic).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rollsum.types import Message


@runtime_checkable
class Memory(Protocol):
    """Keeps one conversation; `context()` is what the main model would be sent now.

    `add` is called once per message, oldest first (system messages included). `context` is
    called after every `add` and may do work (a memory that summarizes lazily, when asked, does
    it here); it returns rollsum `Message` s. A message the memory keeps verbatim should be
    returned as given (same id), so a trace can tell verbatim messages from what it wrote.
    """

    def add(self, message: Message) -> object: ...

    def context(self) -> list[Message]: ...
