"""The asynchronous rolling summarizer: adding a message never waits for a summary.

Seed 001's requirements: the response returns before the summary completes; a failure does
not disturb message handling; a burst of messages starts at most one summarization per
conversation at a time. The summarizer runs in a worker thread (`asyncio.to_thread`) on an
immutable snapshot; the result is applied on the event loop, so the window is only ever
mutated by one thread and no lock is needed. Messages that arrive meanwhile stay active and
count toward the next trigger; the event records how many turns the summary lagged.

Catching up: when a summary lands, the policy is asked again at once, so after a burst the
summaries run back to back (still one at a time) until no policy would trigger; `wait_idle()`
returns only then. The window guard runs on every `add()` and after every landing, without
waiting for the model (it moves the oldest messages to pending while a summary is running), so
``context_tokens() <= context_window`` holds whenever control is back with the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from rollsum.engine import RollingSummarizer
from rollsum.errors import classify_exception
from rollsum.jobs import Job, Outcome
from rollsum.params import ParamError
from rollsum.redact import redacting_logger
from rollsum.types import Message, SummaryEvent

log = redacting_logger(__name__)


def _cancelling() -> bool:
    """Whether the running task is being cancelled (a request to stop it is pending)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class AsyncRollingSummarizer:
    """Wraps a `RollingSummarizer` (its policy, summarizer, store and format) for asyncio apps."""

    def __init__(self, core: RollingSummarizer) -> None:
        if core.lag_turns:
            # a setting's mistake: the library's ConfigError, and still the ValueError it was
            raise ParamError(f"lag_turns: expected 0 with the async wrapper (the lag is real here), "
                             f"got {core.lag_turns}")
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

        Returns the events applied synchronously this turn (evictions, drops, the window
        guard's moves); summary events arrive later in `events` and through the core's
        `on_event` callback. Raises only if the message could not be stored.
        """
        message = self.core._append(message)
        applied = self._round(system=message.role == "system")
        self._emit(applied)
        return applied

    def _round(self, *, system: bool = False) -> list[SummaryEvent]:
        try:
            return self.core._process(self._launch, lambda: self.busy, system=system)
        except Exception as err:  # stored already: a failure is an event, never an exception
            return [*self.core._refit(), self.core._internal_failure(err)]  # and inside the window

    def _launch(self, job: Job) -> None:
        self._task = asyncio.get_running_loop().create_task(self._summarize(job))
        return None

    async def _summarize(self, job: Job) -> SummaryEvent:
        try:
            outcome = await asyncio.to_thread(self.core._run, job)
        except Exception as err:  # never let a background failure reach message handling
            log.exception("background summary crashed: %s", err)
            outcome = Outcome(error=classify_exception(err))
        try:
            event = self.core._apply(job, outcome)
        except Exception as err:
            event = self.core._internal_failure(err)
        self._emit([event])
        # this task is finishing: the next summary (if the policy wants one) starts right away,
        # and the guard keeps the window after this landing
        self._task = None
        self._emit(self._round())
        return event

    def _emit(self, events: list[SummaryEvent]) -> None:
        self.events.extend(events)
        self.core._emit(events)

    async def wait_idle(self) -> None:
        """Wait until no summary runs and none would start: every landing asks the policy
        again, so this returns only once the conversation has caught up (tests, shutdown)."""
        while self._task is not None:
            task = self._task
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                # the caller cancelled: its cancellation goes on (shield kept the summary running).
                # The summary's own task cancelled (a loop's shutdown cancels every task): it
                # landed nothing, its messages stay active; this raised CancelledError into the
                # caller on every later call, as if the caller had been cancelled
                if not task.cancelled() or _cancelling():
                    raise
            if self._task is task:
                self._task = None

    def close(self) -> None:
        """Release the conversation's claim, abandoning a summary that is still running.

        Why abandon it: once the claim is released another engine may resume the conversation
        from the store (the next request of a chat app), and a summary landing after that would
        commit behind its back: its window would still show the covered messages and every
        summary it made would be refused ("summary id ... already exists"), its context growing
        without end. Abandoned, nothing lands: the span's messages stay active in the store and
        the next engine summarizes them (the attempt still counts toward the cadence). To keep
        the running summary, ``await wait_idle()`` before closing."""
        task, self._task = self._task, None
        try:
            if task is not None and not task.done():
                # a warning: a server that closes its async engine at the end of every request this
                # way never lands a summary at all (200 messages: 0 summaries, 164 messages pending
                # out of the context), and said so only at INFO
                log.warning("conversation %s closed while a summary was running: abandoned, its messages stay "
                            "active (await wait_idle() before close() to keep it; an engine closed this way after "
                            "every request never lands a summary)", self.core.conversation_id)
                # suspended in the worker's await, before `_apply`: nothing is committed. On a
                # closed loop cancel() raises, and the task can never run again anyway
                with contextlib.suppress(RuntimeError):
                    task.cancel()
        finally:
            self.core.close()  # the claim is released whatever happened above

    def context(self, system: str | None = None, *, timestamps: str = "none") -> list[Message]:
        return self.core.context(system, timestamps=timestamps)

    def to_anthropic(self, system: str | None = None, *, timestamps: str = "none"
                     ) -> tuple[str, list[dict[str, str]]]:
        """`RollingSummarizer.to_anthropic`: what an async chat app sends to the Messages API
        (the wrapper lacked it, so the README's call was an AttributeError here)."""
        return self.core.to_anthropic(system, timestamps=timestamps)

    def context_tokens(self, system: str | None = None) -> int:
        return self.core.context_tokens(system)

    @property
    def pending(self) -> list[Message]:
        return self.core.pending

    @property
    def summary(self) -> Any:
        return self.core.summary

    @property
    def history(self) -> Any:
        return self.core.history

    @property
    def messages(self) -> list[Message]:
        return self.core.messages
