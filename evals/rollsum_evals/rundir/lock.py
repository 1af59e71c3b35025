"""One writer per run directory: an OS lock held by whatever writes it.

Two sweeps appending to one run directory duplicate Units (issue #11: 215 unit rows for 112
Units, reported ``complete 112/112``). So `rollsum run` (also ``--resume`` and
``--retry-errors``) and `rollsum score` hold an exclusive ``flock`` on ``run.lock`` in the run
directory for as long as they write it; a second writer is refused at once with one line:
``run in progress (pid N)``.

Why ``flock``: the kernel releases it when the holder's last descriptor closes, including when
the process is killed (SIGKILL, OOM), so a stale lock from a killed run is simply free: the
next ``--resume`` takes it with no pid guessing and no race. The file keeps the holder's pid
and host only for that message; it is never what decides. The descriptor is close-on-exec and
the worker processes are not forked from the holder (forkserver), so no child inherits it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
from pathlib import Path
from types import TracebackType

from rollsum.errors import ConfigError
from rollsum_evals.rundir.format import LOCK
from rollsum_evals.rundir.integrity import own_file


class RunInProgress(ConfigError):
    """Another process holds the run directory's lock."""


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return "pid unknown"
    if not isinstance(info, dict):
        return "pid unknown"
    pid, host = info.get("pid", "unknown"), info.get("host")
    return f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")


class RunLock:
    """``with RunLock(dir):`` — held until the block ends (or `release`). `acquire` is
    idempotent, so a caller can take it early and the writer again."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self.directory / LOCK

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        own_file(self.path)  # the lock is truncated and written: never through a link
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as err:
            raise ConfigError(f"{self.directory}: cannot write the run directory ({err.strerror or err})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = _holder(fd)
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunInProgress(f"{self.directory}: run in progress ({holder}); wait for it to finish "
                                    "or stop it, or choose another --out") from None
            raise ConfigError(f"{self.directory}: cannot lock the run directory ({err.strerror or err})") from None
        with contextlib.suppress(OSError):  # the pid is only for the message; the lock is held
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode() + b"\n", 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
