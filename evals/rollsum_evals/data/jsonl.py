"""The canonical format: JSONL, one conversation per line; reading it and writing it atomically."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from rollsum.types import Message
from rollsum_evals.data.checks import RecordError, iter_checked
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, SkipLog
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.fileio import atomic_writer

log = logging.getLogger(__name__)


def iter_jsonl(path: str | os.PathLike[str], *, strict: bool = False, limits: Limits = DEFAULT_LIMITS,
               skips: SkipLog | None = None) -> Iterator[Conversation]:
    """Conversations of a canonical file; a bad record is a `RecordError` when `strict`, else
    logged and counted in `skips` and left out."""
    log_skips = skips if skips is not None else SkipLog(os.fspath(path), log)
    try:
        for _line, obj, issues in iter_checked(path, limits=limits):
            errors = [i for i in issues if i.severity == "error"]
            if errors or obj is None:
                if strict:
                    raise RecordError(errors or issues)
                log_skips.skip(RecordError(errors or issues))
                continue
            yield Conversation.from_dict(obj)
    finally:
        if skips is None:
            log_skips.close()


def dumps(conv: Conversation) -> str:
    """One line of canonical JSONL; stable bytes for equal conversations (manifests hash them)."""
    return json.dumps(conv.to_dict(), ensure_ascii=False, separators=(",", ":"))


def write_jsonl(conversations: Iterable[Conversation], path: str | os.PathLike[str]) -> int:
    """Write conversations as canonical JSONL, atomically; returns how many were written."""
    n = 0
    with atomic_writer(path) as fh:
        for conv in conversations:
            fh.write(dumps(conv))
            fh.write("\n")
            n += 1
    return n


class StreamedConversation(Protocol):
    """A conversation whose messages are produced on demand (the synthetic generator)."""

    @property
    def id(self) -> str: ...

    @property
    def meta(self) -> dict[str, Any]: ...

    def messages(self) -> Iterator[Message]: ...

    def probes(self) -> tuple[Probe, ...]: ...


def write_streamed(conversations: Iterable[StreamedConversation], path: str | os.PathLike[str],
                   on_message: Callable[[], None] | None = None) -> int:
    """Canonical JSONL written message by message: memory stays flat at any conversation length.

    The bytes are identical to `write_jsonl` of the same conversations held in memory.
    """
    n = 0
    with atomic_writer(path) as fh:
        for conv in conversations:
            fh.write('{"id":' + json.dumps(conv.id, ensure_ascii=False) + ',"messages":[')
            for k, m in enumerate(conv.messages()):
                if k:
                    fh.write(",")
                fh.write(json.dumps(m.to_dict(), ensure_ascii=False, separators=(",", ":")))
                if on_message is not None:
                    on_message()
            probes = [p.to_dict() for p in conv.probes()]
            fh.write('],"probes":' + json.dumps(probes, ensure_ascii=False, separators=(",", ":")))
            fh.write(',"references":[],"meta":' + json.dumps(conv.meta, ensure_ascii=False,
                                                               separators=(",", ":")) + "}\n")
            n += 1
    return n
