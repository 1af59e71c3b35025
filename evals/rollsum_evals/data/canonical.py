"""Conversations as canonical JSON lines: the one serialisation that is hashed, cached and kept.

A run pins each dataset by `conversations_hash`; the generated-set cache (`synth_cache`) and
the copies a run directory keeps of hub datasets (`copies`) store the same bytes. One
serialiser means a stored set is checked by the very sha256 the run recorded:
``sha256(canonical_jsonl(convs)) == conversations_hash(convs)``, before a byte of it is parsed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence

from rollsum_evals.data.types import Conversation


def canonical_lines(convs: Iterable[Conversation]) -> Iterator[bytes]:
    """Each conversation's record as one line of JSON (no newline): sorted keys, no spaces,
    UTF-8. JSON escapes control characters, so a line never holds a raw newline."""
    for c in convs:
        yield json.dumps(c.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                         default=str).encode("utf-8")


def canonical_jsonl(convs: Iterable[Conversation]) -> bytes:
    """The conversations as canonical JSONL (each line ends with a newline): what
    `conversations_hash` hashes."""
    return b"".join(line + b"\n" for line in canonical_lines(convs))


def conversations_hash(convs: Sequence[Conversation]) -> str:
    """What was actually replayed (after ``limit``), so editing a file changes the Unit ids."""
    h = hashlib.sha256()
    for line in canonical_lines(convs):
        h.update(line)
        h.update(b"\n")
    return h.hexdigest()


def parse_jsonl(data: bytes) -> list[dict[str, object]]:
    """The records of canonical JSONL, parsed as JSON only (`rollsum.safejson`: no NaN, no
    lone surrogate, bounded nesting). `JSONInputError` (a ValueError) names the line."""
    from rollsum.safejson import JSONInputError, loads

    out: list[dict[str, object]] = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line:
            continue
        try:
            row = loads(line)
        except JSONInputError as err:
            raise JSONInputError(f"line {n}: {err}") from None
        if not isinstance(row, dict):
            raise JSONInputError(f"line {n}: expected a conversation object, found {type(row).__name__}")
        out.append(row)
    return out
