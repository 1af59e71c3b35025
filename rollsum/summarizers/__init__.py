"""Summarizers and their registry.

A new summarizer is one class plus one line in `_REGISTRY`. `create` turns a name and
parameters from a preset or sweep spec into an instance, rejecting unknown parameters with a
message that lists the accepted ones (a typo in a sweep must not silently use a default).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum.summarizers.base import Summarizer, SummaryDraft, SummaryRequest
from rollsum.summarizers.extractive import ExtractiveSummarizer
from rollsum.summarizers.prompted import PromptedSummarizer
from rollsum.summarizers.structured import StructuredSummarizer
from rollsum.summarizers.tools import (
    ToolSummary,
    format_tool_summary,
    summarize_dropped,
    summarize_tool_result,
)

__all__ = [
    "ExtractiveSummarizer",
    "PromptedSummarizer",
    "StructuredSummarizer",
    "Summarizer",
    "SummaryDraft",
    "SummaryRequest",
    "ToolSummary",
    "create",
    "format_tool_summary",
    "names",
    "summarize_dropped",
    "summarize_tool_result",
]

_REGISTRY: dict[str, tuple[Callable[..., Any], bool]] = {
    # name: (class, needs a model)
    "prompted": (PromptedSummarizer, True),
    "structured": (StructuredSummarizer, True),
    "extractive": (ExtractiveSummarizer, False),
}


def names() -> list[str]:
    return sorted(_REGISTRY)


def create(name: str, model: Model | None = None, **params: Any) -> Summarizer:
    """A summarizer by registry name; `model` is required by the model-backed ones only."""
    try:
        cls, needs_model = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"summarizer {name!r}: unknown; expected one of {', '.join(names())}") from None
    accepted = [p for p in inspect.signature(cls).parameters if p != "model"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(f"summarizer {name!r}: unknown parameter(s) {', '.join(unknown)}; "
                          f"expected any of {', '.join(accepted)}")
    if needs_model:
        if model is None:
            raise ConfigError(f"summarizer {name!r} needs a model; pass a model spec or use 'extractive'")
        summarizer: Summarizer = cls(model, **params)
    else:
        summarizer = cls(**params)
    return summarizer
