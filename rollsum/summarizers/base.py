"""The summarizer seam.

A summarizer turns a span of messages (plus the previous rolling summary) into a
`SummaryDraft`. It knows nothing of lineage, ids, clocks or stores: the engine turns the draft
into a `SummaryRecord` and commits it. Failures raise `SummarizeError` (transport vs
validation), and the engine's failure handling decides whether to retry or fall back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rollsum.types import Message, SummaryRecord, Usage


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    conversation_id: str
    messages: Sequence[Message]
    """The span being compressed, oldest first (pending evicted messages included)."""
    previous: SummaryRecord | None = None
    """The latest record of the chain: incremental summarizers fold it into the new text."""
    depth: int = 0
    max_tokens: int = 1024
    """Upper bound for the summary's length in tokens (the summary's share of the budget)."""
    must_keep: Sequence[str] = ()
    """Facts the ledger wants preserved (identifiers, numbers, dates, names, constraints)."""
    total_messages: int = 0
    total_tokens: int = 0
    covered: Callable[[], Sequence[Message]] | None = None
    """Every message the chain before this request covers, oldest first, read from the store
    when called (None: not available). For a summarizer that keeps statistics over the
    conversation (the extractive one's word frequencies): after a restart it counts them again
    from these, so a resumed conversation gets the summaries an uninterrupted one gets."""


@dataclass(frozen=True, slots=True)
class SummaryDraft:
    text: str
    key_points: tuple[str, ...] = ()
    facets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    model: str = ""
    prompt_id: str = ""
    prompt_hash: str = ""
    usage: Usage = field(default_factory=Usage)
    notes: tuple[str, ...] = ()
    """Lossy steps taken (transcript truncated, chunked): recorded on the record, never silent."""
    fallback: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Summarizer(Protocol):
    """Optional member the engine reads when present: ``rewrites_previous: bool`` (default
    True), whether folding `SummaryRequest.previous` in rewrites its text (a model paraphrases
    it) rather than keeping each previous line verbatim or dropping it (the extractive
    selection). Only a rewrite can drift, so only a rewrite is what seed 003's depth cap
    stops (`rewrites_previous`)."""

    name: str

    def summarize(self, request: SummaryRequest) -> SummaryDraft: ...


def rewrites_previous(summarizer: object) -> bool:
    """Whether `summarizer` rewrites the previous summary when it folds it in; True unless it
    declares otherwise (an unknown summarizer is assumed to paraphrase, the safe reading)."""
    return bool(getattr(summarizer, "rewrites_previous", True))
