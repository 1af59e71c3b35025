"""The asynchronous rolling summarizer: adding a message never waits for a summary.

Seed 001's requirements: the response returns before the summary completes; a failure does
not disturb message handling; a burst of messages starts at most one summarization per
conversation. The summarizer runs in a worker thread (`asyncio.to_thread`) on an immutable
snapshot; the result is applied on the event loop, so the window is only ever mutated by one
thread and no lock is needed. Messages that arrive meanwhile stay active and count toward the
next trigger; the event records how many turns the summary lagged.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rollsum.engine import RollingSummarizer
from rollsum.types import Message, SummaryEvent

log = logging.getLogger(__name__)


class AsyncRollingSummarizer:
    """Wraps a `RollingSummarizer` (its policy, summarizer, store and format) for asyncio apps."""

    def __init__(self, core: RollingSummarizer) -> None:
        if core.lag_turns:
            raise ValueError("use lag_turns=0 with the async wrapper: the lag is real here")
        self.core = core
        self._task: asyncio.Task[SummaryEvent] | None = None
        self.events: list[SummaryEvent] = []

    @classmethod
    def from_preset(cls, name: str, model: Any = None, **overrides: Any) -> AsyncRollingSummarizer:
        return cls(RollingSummarizer.from_preset(name, model, **overrides))

    @property
    def busy(self) -> bool:
        """True while a summarization is running for this conversation."""
        return self._task is not None and not self._task.done()

    async def add(self, message: Message) -> list[SummaryEvent]:
        """Append and return at once; start a background summary if due and none is running.

        Returns the events applied synchronously this turn (evictions, drops); summary events
        arrive later in `events` and through the core's `on_event` callback.
        """
        core = self.core
        message = core._append(message)
        if message.role == "system":
            return []
        applied: list[SummaryEvent] = []
        if not self.busy:
            last_failed = core._recently_failed()
            for decision in core._summary_decisions(applied, last_failed):
                if not last_failed:
                    self._task = asyncio.create_task(self._summarize(core._plan(decision)))
                break
        core._observe()
        for ev in applied:
            self._emit(ev)
        return applied

    async def _summarize(self, job: Any) -> SummaryEvent:
        try:
            outcome = await asyncio.to_thread(self.core._run, job)
        except Exception as err:  # never let a background failure reach message handling
            log.exception("background summary crashed: %s", err)
            from rollsum.engine import _Outcome
            from rollsum.errors import SummarizeError

            outcome = _Outcome(error=SummarizeError(f"crashed: {err}", transport=False))
        event = self.core._apply(job, outcome)
        self._emit(event)
        return event

    def _emit(self, event: SummaryEvent) -> None:
        self.events.append(event)
        if self.core.on_event is not None:
            self.core.on_event(event)

    async def wait_idle(self) -> None:
        """Wait for the running summary, if any (tests, shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def context(self, system: str | None = None) -> list[Message]:
        return self.core.context(system)

    def context_tokens(self, system: str | None = None) -> int:
        return self.core.context_tokens(system)

    @property
    def summary(self) -> Any:
        return self.core.summary

    @property
    def history(self) -> Any:
        return self.core.history

    @property
    def messages(self) -> list[Message]:
        return self.core.messages
