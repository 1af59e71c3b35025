"""Bounded line reading: the one place that touches a dataset file's bytes.

A hostile or broken file must not exhaust memory, so lines are read in fixed-size chunks and a
line longer than the limit is skipped while it is read (its bytes are counted, never held).
Invalid UTF-8 is reported per line instead of aborting the whole file.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

CHUNK_BYTES = 1 << 16


@dataclass(frozen=True, slots=True)
class Limits:
    """Ceilings that keep one bad record from taking the process down.

    The defaults fit every real conversation we know of; `max_line_bytes` must be raised to
    read a single conversation of hundreds of thousands of messages (one JSONL line each).
    """

    max_line_bytes: int = 32 * 1024 * 1024
    max_message_chars: int = 1_000_000
    max_messages: int = 2_000_000
    max_probes: int = 100_000
    max_json_bytes: int = 512 * 1024 * 1024
    """Whole-file JSON formats (LoCoMo, chat-export arrays) are parsed in one piece."""


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line: its 1-based number and either its text or why it was unreadable."""

    number: int
    text: str | None
    error: str | None = None


def iter_lines(stream: BinaryIO, max_line_bytes: int = DEFAULT_LIMITS.max_line_bytes) -> Iterator[Line]:
    """Yield lines of a binary stream, never holding more than `max_line_bytes` + one chunk."""
    number = 0
    parts: list[bytes] = []
    held = 0
    overflow = 0  # bytes of the current line seen after it went over the limit
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if overflow:
                overflow += len(piece)
            elif held + len(piece) > max_line_bytes:
                overflow = held + len(piece)
                parts, held = [], 0
            elif piece:
                parts.append(piece)
                held += len(piece)
            if nl < 0:
                break
            number += 1
            yield _finish(number, parts, overflow, max_line_bytes)
            parts, held, overflow = [], 0, 0
            start = nl + 1
    if parts or overflow:
        number += 1
        yield _finish(number, parts, overflow, max_line_bytes)


def _finish(number: int, parts: list[bytes], overflow: int, limit: int) -> Line:
    if overflow:
        return Line(number, None, f"line is {overflow:,} bytes, over the limit of {limit:,} bytes "
                                  "(raise it with --max-line-bytes if the file is trusted)")
    raw = b"".join(parts)
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return Line(number, raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        return Line(number, None, f"invalid UTF-8 at byte {err.start} of the line (expected UTF-8 text)")


def read_json_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """A whole-file read with a size check first, for formats that are one JSON document."""
    size = os.path.getsize(path)
    if size > max_bytes:
        from rollsum.errors import ConfigError

        raise ConfigError(f"{path}: file is {size:,} bytes, over the limit of {max_bytes:,} for a "
                          "single JSON document (expected JSONL for large data)")
    with open(path, "rb") as fh:
        return fh.read()


def dataset_hash(path: str | os.PathLike[str]) -> str:
    """sha256 of the file's bytes (of every file, in sorted order, for a directory)."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                h.update(os.path.relpath(full, path).replace(os.sep, "/").encode() + b"\0")
                _feed(h, full)
        return h.hexdigest()
    _feed(h, path)
    return h.hexdigest()


def _feed(h: hashlib._Hash, path: str | os.PathLike[str]) -> None:
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


class SkipLog:
    """Skipped records of one file, logged without flooding: each kind of problem once (the
    first of up to three kinds, with its file and line), then one line with the counts. A file
    of 460 records with the same mistake gives two lines, not 460."""

    SHOWN = 3

    def __init__(self, file: str, logger: logging.Logger) -> None:
        self.file = file
        self.log = logger
        self.count = 0
        self.kinds: dict[str, int] = {}

    def skip(self, problem: object) -> None:
        """`problem`: an Issue, or a RecordError (its first issue names the kind)."""
        first = (getattr(problem, "issues", None) or [problem])[0]
        kind = f"{getattr(first, 'field', '')}: {getattr(first, 'expected', first)}".lstrip(": ")
        seen = self.kinds.get(kind, 0)
        self.kinds[kind] = seen + 1
        self.count += 1
        if not seen and len(self.kinds) <= self.SHOWN:
            self.log.warning("skipped record: %s", problem)

    def close(self) -> None:
        shown = min(len(self.kinds), self.SHOWN)
        if self.count > shown:
            top = sorted(self.kinds.items(), key=lambda kv: -kv[1])[:self.SHOWN]
            kinds = "; ".join(f"{n} x {k if len(k) <= 100 else k[:99] + '…'}" for k, n in top)
            self.log.warning("%s: skipped %d records in all (%s%s); `rollsum data validate %s` lists every "
                             "one", self.file, self.count, kinds, "; ..." if len(self.kinds) > self.SHOWN else "",
                             self.file)


def first_record_line(path: str | os.PathLike[str], max_line_bytes: int = DEFAULT_LIMITS.max_line_bytes) -> str | None:
    """The first non-blank line, whole (a synthetic conversation's line can be megabytes), or
    None when it is over the limit or unreadable. What format guessing decides by."""
    with open(path, "rb") as fh:
        for ln in iter_lines(fh, max_line_bytes):
            if ln.text is None:
                return None
            if ln.text.strip():
                return ln.text.removeprefix("\ufeff")
    return None
