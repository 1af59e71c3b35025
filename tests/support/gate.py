"""A summarizer that waits for the test: deterministic tests of a run that is still going.

A test that must act while a ``rollsum run`` subprocess is mid-sweep (a second writer, SIGTERM,
SIGKILL) cannot rely on the run outlasting a few CLI start-ups on a loaded machine. Here the run
cannot finish until the test lets it: with ``ROLLSUM_TEST_GATE`` naming a FIFO, every
``summarize`` call reads one byte from it, and blocks while the test holds the FIFO open
without writing. Closing the test's end opens the gate for good (end of file). Without the
variable (the in-process reference run) it is an ordinary summarizer.

Referenced from specs as ``tests.support.gate:GatedSummarizer``; `Gate` is the test's end.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from rollsum.capabilities import Capabilities
from rollsum.summarizers.base import SummaryDraft, SummaryRequest

GATE_ENV = "ROLLSUM_TEST_GATE"
REPO = Path(__file__).resolve().parents[2]
"""On ``PYTHONPATH`` for a subprocess, so it imports this module as the spec names it."""


class GatedSummarizer:
    """Keeps the span's text, cut to the request's budget, after the gate lets the call through."""

    name = "gated"
    capabilities = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)

    def __init__(self, *, context_window: int | None = None) -> None:
        self.context_window = context_window
        self._fd: int | None = None

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        gate = os.environ.get(GATE_ENV)
        if gate:
            if self._fd is None:  # opened without waiting for a writer: an opened gate is end of file
                self._fd = os.open(gate, os.O_RDONLY | os.O_NONBLOCK)
                os.set_blocking(self._fd, True)
            os.read(self._fd, 1)  # blocks until the test writes a byte or closes its end
        previous = request.previous.text if request.previous is not None else ""
        body = " ".join([previous, *(m.content for m in request.messages)])
        return SummaryDraft(text=body[-max(40, request.max_tokens * 3):])

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def subprocess_env(gate: Path | None = None) -> dict[str, str]:
    """The environment for ``python -m rollsum_evals`` on a spec naming `GatedSummarizer`: this
    repository importable, and the gate (none: every call goes through)."""
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k != GATE_ENV}
    return {**env, "PYTHONPATH": pythonpath, **({GATE_ENV: str(gate)} if gate is not None else {})}


class Gate:
    """The test's end of the FIFO: held shut from creation until `open` (or leaving the block)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._fd: int | None = os.open(path, os.O_RDWR)  # never blocks; keeps readers waiting

    def env(self) -> dict[str, str]:
        """What a subprocess behind this gate needs: the FIFO, and this repository importable."""
        return subprocess_env(self.path)

    def open(self) -> None:
        """Let every call through, now and later."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.open()
