"""SIGTERM handled like Ctrl-C: a process manager, ``timeout`` or ``kill`` ends a command the
same clean way a user's Ctrl-C does (a run's manifest says ``interrupted``, one line, exit
128 + the signal), instead of the interpreter's silent default death that leaves a run
``running``.

The handler raises `Interrupted` (a `KeyboardInterrupt`) in the main thread, so every place
that already cleans up after Ctrl-C cleans up after SIGTERM with no code of its own.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Interrupted(KeyboardInterrupt):
    """A signal that asked the command to stop. ``str()`` is the line the CLI prints."""

    def __init__(self, message: str, signum: int = signal.SIGTERM) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


def signal_name(err: BaseException) -> str:
    """``SIGTERM`` for a terminated command, ``Ctrl-C`` for a keyboard interrupt."""
    if isinstance(err, Interrupted):
        return signal.Signals(err.signum).name
    return "Ctrl-C"


def interrupted(err: KeyboardInterrupt, what: str) -> Interrupted:
    """The one line a command stopped by `err` (Ctrl-C, or a signal `sigterm_as_interrupt`
    raised) prints: ``interrupted (SIGNAL): what``, exiting 128 + that signal (SIGINT for
    Ctrl-C)."""
    return Interrupted(f"interrupted ({signal_name(err)}): {what}",
                       err.signum if isinstance(err, Interrupted) else signal.SIGINT)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises `Interrupted` in the main thread (outside the main thread,
    where Python cannot install handlers, nothing changes). The previous handler comes back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted("interrupted (SIGTERM)", signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
