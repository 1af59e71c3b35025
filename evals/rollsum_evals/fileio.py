"""Atomic file writes for everything the harness writes: a file appears complete or not at all.

Temp file in the target's directory, fsync, then rename over the target, so a killed run,
report or conversion never leaves a truncated file that a later reader would trust. Files get
0644: mkstemp's 0600 would hide shared datasets, run directories and reports from their readers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from rollsum.errors import RollsumError


class WriteFailed(RollsumError):
    """A file could not be written (read-only file system, disk full, permissions): not a bug,
    one line for the user (`describe_os_error`)."""


_FAULTS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
           errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def describe_os_error(err: OSError) -> str:
    """One line for a file-system fault: what kind, on which file, the system's words."""
    what = _FAULTS.get(err.errno or 0, "cannot write")
    where = f" ({err.filename})" if err.filename else ""
    return f"{what}{where}: {err.strerror or err}"


@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_writer(path, binary=True) as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def overwrite_in_place(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace an existing file's content without a new file: the last resort when the disk is
    too full for `atomic_writer`'s temporary file (rewriting blocks a file already has needs no
    free space while it does not grow past its last block). Not atomic: use only where a stale
    file would be worse (a run's manifest left saying ``running``)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
