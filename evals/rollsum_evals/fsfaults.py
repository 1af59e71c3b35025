"""File-system faults as one line: a read-only directory or a full disk is not a bug.

`describe_os_error` names the kind of fault, the file and the system's words; `WriteFailed` is
the `RollsumError` a command raises with it, so the CLI prints one line and exits 2 instead of
three chained tracebacks.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from rollsum.errors import RollsumError


class WriteFailed(RollsumError):
    """A file could not be written (read-only file system, disk full, permissions)."""


_FAULTS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
           errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def describe_os_error(err: OSError) -> str:
    """``kind (FILE): the system's words`` for a known fault (disk full, read-only, permission),
    else ``FILE: the system's words``; both paths of a rename are named."""
    paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
    words = err.strerror or str(err)
    if err.errno == errno.ENOTDIR and err.filename is not None:
        # "runs/x/run: Not a directory" does not say which part is the file: name it
        found = _file_on_the_way(os.fspath(err.filename))
        if found is not None:
            return f"{paths}: {found} is a file, not a directory"
    what = _FAULTS.get(err.errno or 0)
    if what is None:
        return f"{paths}: {words}" if paths else words
    return f"{what} ({paths}): {words}" if paths else f"{what}: {words}"


def _file_on_the_way(path: str | bytes) -> str | None:
    """The first part of `path`, from its root, that exists and is not a directory (None: none is)."""
    full = Path(os.fsdecode(path))
    for part in (*reversed(full.parents), full):
        if part.exists() and not part.is_dir():
            return str(part)
    return None
