"""Generated synthetic datasets kept on disk, so a re-run does not generate them again.

A cached re-run (every Unit copied from the Unit cache) still loaded its ``synth:`` datasets,
which means generating them, only to hash them (the hash is part of every Unit id); a report
generated them once more to rebuild the traces its drill-down shows. The generator is
deterministic, so its output can be kept: one file per ``synth:`` source, under a key made of
the source string (flavor and every parameter, as written), the generator's version and a
fingerprint of the code that parses, generates and serialises the conversations, so an edit of
that code misses even when nobody bumped the version.

Never trusted blindly:
- a file is used only when its header names this key and its payload has the sha256 the
  header records; anything else (another key, a cut or edited file, bytes that do not parse)
  is a miss: the set is generated again and the file replaced;
- files are written atomically (temporary file, then rename), so a reader never sees half of
  one; two runs writing the same key write the same bytes;
- a cache that cannot be read or written is a warning (a debug line when its directory cannot
  be made at all: the Unit cache beside it already warns), never a failed run: it is a speed-up;
- sets larger than `MAX_PAYLOAD_BYTES` are not kept (a million-message set is generated in
  flat memory; its copy on disk would not be).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from rollsum_evals.data import synth
from rollsum_evals.data.canonical import canonical_jsonl, parse_jsonl
from rollsum_evals.data.pinned import DatasetSpec, Loaded, Loader
from rollsum_evals.data.types import Conversation
from rollsum_evals.fileio import atomic_write_bytes

log = logging.getLogger(__name__)

FILE_FORMAT = 2
"""2: the payload is the canonical JSONL the conversations' hash is computed over (`data.canonical`);
1 was a JSON array."""
SYNTH_PREFIX = "synth:"
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
_CODE = ("rollsum_evals.data.synth", "rollsum_evals.data.synth_text", "rollsum_evals.data.formats",
         "rollsum_evals.data.types", "rollsum_evals.data.canonical")
"""The modules whose code decides a generated set's bytes: the generator and its word pools, the
``synth:`` parameter parsing, and the conversation records (serialised here and back). By
module name, so a moved module fails loudly at import, never silently drops out of the key."""


@functools.cache
def generator_fingerprint() -> str:
    """sha256 over the file format, `synth.GENERATOR_VERSION` and the source of `_CODE`."""
    h = hashlib.sha256(f"format {FILE_FORMAT}|generator {synth.GENERATOR_VERSION}".encode())
    for name in _CODE:
        h.update(f"|{name}|".encode())
        h.update(Path(str(importlib.import_module(name).__file__)).read_bytes())
    return h.hexdigest()


class SynthCache:
    """Generated sets by source, in `directory` (created on the first write). ``fingerprint``:
    the generator's, by default `generator_fingerprint()` (tests pass another to stand for
    changed code). ``write``: False for readers (a report uses what a run stored, stores nothing)."""

    def __init__(self, directory: Path, *, fingerprint: str | None = None, write: bool = True) -> None:
        self.directory = directory
        self.fingerprint = fingerprint
        self.write = write

    def key(self, source: str) -> str:
        payload = json.dumps([self.fingerprint or generator_fingerprint(), source], ensure_ascii=True)
        return hashlib.sha256(payload.encode("ascii")).hexdigest()

    def path(self, source: str) -> Path:
        return self.directory / f"{self.key(source)}.synth"

    def conversations(self, source: str, generate: Callable[[], Sequence[Conversation]]) -> list[Conversation]:
        """The set `source` names: from its file when that is whole and this code's, else
        `generate()`d (and stored)."""
        try:
            key, path = self.key(source), self.path(source)
        except OSError as err:  # the generator's source cannot be read: no key, no cache
            log.warning("synthetic dataset cache unusable (%s): generating the set", err)
            return list(generate())
        hit = self._read(path, key)
        if hit is not None:
            return hit
        convs = list(generate())
        if self.write:
            self._store(path, key, source, convs)
        return convs

    def _read(self, path: Path, key: str) -> list[Conversation] | None:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            log.warning("synthetic dataset cache %s unreadable (%s): generating the set", path, err)
            return None
        try:
            head, _, body = data.partition(b"\n")
            header = json.loads(head)
            if not isinstance(header, dict) or header.get("key") != key or header.get("format") != FILE_FORMAT:
                return None
            if hashlib.sha256(body).hexdigest() != header.get("sha256"):
                raise ValueError("its payload does not match its checksum")
            return [Conversation.from_dict(r) for r in parse_jsonl(zlib.decompress(body))]
        except (ValueError, TypeError, KeyError, AttributeError, zlib.error) as err:
            log.warning("synthetic dataset cache %s damaged (%s): generating the set again", path, err)
            return None

    def _store(self, path: Path, key: str, source: str, convs: Sequence[Conversation]) -> None:
        raw = canonical_jsonl(convs)
        if len(raw) > MAX_PAYLOAD_BYTES:
            return
        body = zlib.compress(raw, 1)
        header = json.dumps({"format": FILE_FORMAT, "key": key, "source": source,
                             "sha256": hashlib.sha256(body).hexdigest()}, ensure_ascii=True)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, header.encode("ascii") + b"\n" + body)
        except OSError as err:
            # a cache directory that cannot be made at all is already reported by the Unit
            # cache beside it (one warning per fault, not one per cache)
            warn = log.warning if self.directory.parent.is_dir() else log.debug
            warn("synthetic dataset cache %s not written (%s)", path, err)


def caching_loader(inner: Loader, cache: SynthCache) -> Loader:
    """`inner` (the default loader), with ``synth:`` sets served by `cache`; every other
    dataset, and a synthetic one with a questions sidecar (a file that can change), goes to
    `inner` unchanged."""

    def load(ds: DatasetSpec) -> Sequence[Conversation] | Loaded:
        if not ds.source.startswith(SYNTH_PREFIX) or ds.questions or ds.format not in (None, "synth"):
            return inner(ds)

        def generate() -> Sequence[Conversation]:
            loaded = inner(ds)
            return loaded.conversations if isinstance(loaded, Loaded) else loaded

        return Loaded(cache.conversations(ds.source, generate))

    return load
