"""Atomic file writes for everything the harness writes: a file appears complete or not at all.

Temp file in the target's directory, fsync, then rename over the target, so a killed run,
report or conversion never leaves a truncated file that a later reader would trust. Files get
0644: mkstemp's 0600 would hide shared datasets, run directories and reports from their readers.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
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
    if os.fspath(path).endswith(("/", os.sep)):  # Path drops the slash: "out/" would become a file "out"
        raise IsADirectoryError(errno.EISDIR, "names a directory (ends with a slash; expected a file path)",
                                os.fspath(path))
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


# ----------------------------------------------------------------------------------------------
# a directory published whole

_BUILDING, _PREVIOUS = "building", "previous"


def _sibling(target: Path, kind: str) -> str:
    return f".{target.name}.{kind}-"


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system cannot (then the caller renames twice)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


class NotOurs(Exception):
    """The target of `building_dir` holds something it may neither replace nor carry over."""


def _carry_over(source: Path, target: Path, owned: Callable[[str], bool]) -> None:
    """Move the entries of `source` that are not `owned` (nor already in `target`) into `target`."""
    for entry in sorted(source.iterdir()):
        if not owned(entry.name) and not (target / entry.name).exists():
            os.rename(entry, target / entry.name)


def _recover(target: Path, owned: Callable[[str], bool]) -> None:
    """Finish what a killed `building_dir` left beside `target`: a previous version is put back
    when the target is missing, anyone else's entries are moved back, the leftovers removed."""
    stale = sorted(p for kind in (_PREVIOUS, _BUILDING) for p in target.parent.glob(_sibling(target, kind) + "*")
                   if p.is_dir())
    if not stale:
        return
    if not target.exists():
        previous = [p for p in stale if p.name.startswith(_sibling(target, _PREVIOUS))]
        if previous:
            os.rename(previous[-1], target)
            stale.remove(previous[-1])
    for p in stale:
        if target.is_dir():
            _carry_over(p, target, owned)
        shutil.rmtree(p, ignore_errors=True)


@contextmanager
def building_dir(target: str | os.PathLike[str], owned: Callable[[str], bool]) -> Iterator[Path]:
    """A folder to build a directory's new content in, moved into place whole when the block
    ends without error; on an error (a full disk, an interrupt) the target is left as it was.

    The folder is a hidden sibling of `target` (same file system: the move is a rename). An
    existing target is swapped with it in one step where the system can (Linux), else by two
    renames, and keeps its permissions. `owned(name)` says which of the target's entries the
    build replaces (a stale file of the previous version is dropped with it); every other entry
    (compare results kept beside a report, someone's own files) is moved over into the new
    version. A target that is the working directory or holds it is `NotOurs` (it cannot be
    swapped under the process's feet). A process killed midway leaves at most hidden siblings,
    which the next call puts right (`_recover`): never a target that mixes old and new files."""
    dest = Path(os.path.abspath(target))
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "is a file (expected a directory)", str(target))
    if Path.cwd() == dest or dest in Path.cwd().parents:
        raise NotOurs(f"{target}: is the working folder (or holds it); give a sub-folder for the output")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _recover(dest, owned)
    build = Path(tempfile.mkdtemp(dir=dest.parent, prefix=_sibling(dest, _BUILDING)))
    try:
        yield build
        # mkdtemp's 0700 would hide the report from its readers; an existing folder keeps its own
        os.chmod(build, (dest.stat().st_mode & 0o7777) if dest.is_dir() else 0o755)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    if not dest.exists():
        os.rename(build, dest)
        return
    previous = build.with_name(build.name.replace(f".{_BUILDING}-", f".{_PREVIOUS}-", 1))
    if _exchange(build, dest):
        os.rename(build, previous)  # the old version, now beside the new one
    else:
        os.rename(dest, previous)
        os.rename(build, dest)
    _carry_over(previous, dest, owned)
    shutil.rmtree(previous, ignore_errors=True)
