"""Atomic file writes for everything the harness writes: a file appears complete or not at all.

Temp file in the target's directory, fsync, then rename over the target, so a killed run,
report or conversion never leaves a truncated file that a later reader would trust. Files get
0644: mkstemp's 0600 would hide shared datasets, run directories and reports from their readers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

_UNSAFE = re.compile(r"[^\w.+-]+")
MAX_NAME_CHARS = 80


def safe_name(text: str, default: str = "run") -> str:
    """A file or directory name made from user text (a spec's ``name``): letters, digits and
    ``. _ + -`` only, no leading dot or dash, at most 80 characters. ``../../x`` becomes ``x``
    and ``/abs/x`` becomes ``abs-x``: a name can never point outside the directory it is put in."""
    name = _UNSAFE.sub("-", text).strip(".-")[:MAX_NAME_CHARS].strip(".-")
    return name or default


@contextmanager
def atomic_writer(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    target = Path(path)
    if target.is_dir():  # else the rename's error would name our temporary file
        raise IsADirectoryError(errno.EISDIR, "is a directory (expected a file path)", str(target))
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
