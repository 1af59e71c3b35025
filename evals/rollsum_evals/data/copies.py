"""Copies of hub datasets a run directory keeps, by content: ``datasets/<sha256>.jsonl.gz``.

A run pins each dataset by the sha256 of the conversations it replayed; `rollsum score`, a
report's drill-down, ``compare`` and ``regress`` load it again. For an ``hf:`` source that
meant the Hugging Face hub (or the `datasets` cache): a run on a hub dataset could not be
reported offline, on another machine, or once the hub's copy changed, although nothing of the
run was lost. So a run keeps what it replayed, and the readers read that first.

The file is gzip of the canonical JSONL `conversations_hash` is computed over
(`data.canonical`), named by that hash: ``sha256(gunzip(file))`` must equal the name, which is
the manifest's sha256, before a byte is parsed. A received run directory is untrusted input, so:

- a file that is not a regular file (a symbolic link, a FIFO) is refused, never followed;
- it is inflated up to `MAX_COPY_BYTES` only (no zip bomb);
- it is parsed as JSON only (`rollsum.safejson`) and every record goes through the dataset
  validator (`checks.check_record`), as a dataset file would: data, never code;
- anything wrong is one `ConfigError` naming the file and saying what to do. A damaged copy is
  never replaced silently by the hub's data: that could be other data under the same name.

Only what was replayed is kept (after ``limit``), gzip-compressed; sets over `MAX_COPY_BYTES`
of JSONL, and sets holding a credential-looking value (a run directory never holds a secret,
`rollsum.redact`), are not kept: the readers then load them from the hub as before.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import os
import re
import stat
import zlib
from collections.abc import Sequence
from pathlib import Path

from rollsum.errors import ConfigError
from rollsum_evals.data.canonical import canonical_jsonl, parse_jsonl
from rollsum_evals.data.types import Conversation
from rollsum_evals.fileio import atomic_write_bytes

MAX_COPY_BYTES = 256 * 1024 * 1024
"""Largest set kept, in bytes of canonical JSONL (a quarter or less of that on disk). A run
directory is sent to colleagues: a bigger set is better fetched from the hub by whoever needs it."""
SUFFIX = ".jsonl.gz"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class DatasetCopies:
    """The copies in `directory` (a run's ``datasets/``; created on the first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, sha256: str) -> Path | None:
        """Where the copy of the set with this sha256 is; None for a value that is not a
        sha256 (a manifest is untrusted: ``../../x`` must never become a path)."""
        return self.directory / f"{sha256}{SUFFIX}" if _SHA256.fullmatch(sha256) else None

    def read(self, sha256: str) -> list[Conversation] | None:
        """The kept set whose conversations hash to `sha256`; None when there is no copy.
        A copy that is there but is not exactly that set is a `ConfigError`, one line."""
        path = self.path(sha256)
        if path is None:
            return None
        data = _read_regular(path)
        if data is None:
            return None
        fix = "; delete it to load the dataset from the hub again"
        try:
            raw = _inflate(data, MAX_COPY_BYTES)
        except ValueError as err:
            raise ConfigError(f"{path}: not a usable dataset copy ({err}){fix}") from None
        got = hashlib.sha256(raw).hexdigest()
        if got != sha256:
            raise ConfigError(f"{path}: the dataset copy was changed (its conversations hash to {got[:12]}…, "
                              f"its name and the run's manifest say {sha256[:12]}…){fix}")
        return _conversations(raw, path, fix)

    def write(self, sha256: str, convs: Sequence[Conversation]) -> str | None:
        """Keep `convs` (whose hash is `sha256`) unless a whole copy is there already; None
        when kept (or already there), else why it was not. Atomic (temporary file, rename)."""
        from rollsum.redact import contains_secret

        path = self.path(sha256)
        if path is None:
            return f"{sha256!r} is not a sha256"
        raw = canonical_jsonl(convs)
        if hashlib.sha256(raw).hexdigest() != sha256:  # a caller's mistake, never a user's
            raise ValueError(f"the conversations do not hash to {sha256}")
        if len(raw) > MAX_COPY_BYTES:
            return f"{len(raw) / 2**20:.0f} MB of JSON, over the {MAX_COPY_BYTES // 2**20} MB a run keeps"
        if contains_secret(raw.decode("utf-8")):
            return "it holds a credential-looking value, and a run directory never holds a secret"
        packed = gzip.compress(raw, compresslevel=6, mtime=0)  # the same bytes for the same set
        try:
            same = _read_regular(path) == packed
        except ConfigError:  # a link or a FIFO where the copy goes: replaced by the file itself
            same = False
        if same:
            return None  # kept by an earlier start of this run (--resume)
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, packed)
        return None


def _read_regular(path: Path) -> bytes | None:
    """The bytes of `path`, a regular file opened without following a symbolic link; None when
    there is nothing there."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise ConfigError(f"{path}: a symbolic link, expected a dataset copy written by `rollsum run`; "
                              "the run directory is damaged") from None
        raise ConfigError(f"{path}: cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path}: not a regular file, expected a dataset copy written by `rollsum run`; "
                              "the run directory is damaged")
        return fh.read(MAX_COPY_BYTES + 1)


def _inflate(data: bytes, limit: int) -> bytes:
    """One whole gzip stream, inflated to at most `limit` bytes."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as err:
        raise ValueError(f"not gzip: {err}") from None
    if len(out) > limit:
        raise ValueError(f"it inflates to more than {limit // 2**20} MB")
    if not inflater.eof or inflater.unused_data:
        raise ValueError("cut short, or bytes after its end")
    return out


def _conversations(raw: bytes, path: Path, fix: str) -> list[Conversation]:
    """The records of a copy, checked as a dataset file's would be (`checks.check_record`)."""
    from rollsum.safejson import JSONInputError
    from rollsum_evals.data.checks import check_record

    try:
        rows = parse_jsonl(raw)
    except JSONInputError as err:
        raise ConfigError(f"{path}: not a usable dataset copy ({err}){fix}") from None
    out = []
    for n, row in enumerate(rows, 1):
        errors = [i for i in check_record(row, file=str(path), line=n) if i.severity == "error"]
        if errors:
            raise ConfigError(f"{errors[0]}{fix}")
        out.append(Conversation.from_dict(row))
    return out
