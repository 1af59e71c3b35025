"""Summarizers and their registry.

A new summarizer is one class plus one line in `REGISTRY` (or `register(name, cls)`). `create` turns a name and
parameters from a preset or sweep spec into an instance, rejecting unknown parameters with a
message that lists the accepted ones (a typo in a sweep must not silently use a default).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum.registry import Registry
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
    "register",
    "resolve",
    "summarize_dropped",
    "summarize_tool_result",
]

REGISTRY: Registry[tuple[Callable[..., Any], bool]] = Registry("summarizer", {
    # name: (class, needs a model)
    "prompted": (PromptedSummarizer, True),
    "structured": (StructuredSummarizer, True),
    "extractive": (ExtractiveSummarizer, False),
})
"""What `create` (and through it presets and sweep specs) reads: a summarizer registered here is
reachable as ``summarizer = "NAME"`` everywhere."""


def register(name: str, cls: Callable[..., Any], *, needs_model: bool | None = None, replace: bool = False) -> None:
    """Register a summarizer class as `name` (it needs a model when its constructor requires
    ``model``, unless `needs_model` says otherwise)."""
    needs = plugins.requires(cls, "model") if needs_model is None else needs_model
    REGISTRY.register(name, (cls, needs), replace=replace)


def names() -> list[str]:
    return sorted(REGISTRY)


def resolve(name: str) -> tuple[Callable[..., Any], bool]:
    """(factory, needs a model) for a registry name or an import path ``"pkg.mod:Class"`` (which
    needs a model when its constructor requires ``model``)."""
    if name in REGISTRY:
        return REGISTRY[name]
    if plugins.is_import_path(name):
        factory = plugins.load(name)
        if not callable(factory):
            raise ConfigError(f"summarizer {name}: not a class or factory")
        return factory, plugins.requires(factory, "model")
    raise ConfigError(f"summarizer {name!r}: unknown; expected one of {', '.join(names())} "
                      "or an import path 'package.module:Class'")


def create(name: str, model: Model | None = None, **params: Any) -> Summarizer:
    """A summarizer by registry name or import path.

    `model` goes to constructors that take one (required by the model-backed ones);
    ``context_window`` and ``counter`` in `params` follow the conventions of `rollsum.plugins`
    (passed only to constructors that name them). The result must have ``summarize(request)``.
    """
    factory, needs_model = resolve(name)
    accepted = [p for p in plugins.parameters(factory) if p != "model"]
    counter = params.pop("counter", None)
    context_window = params.pop("context_window", None)
    unknown = sorted(set(params) - set(accepted))
    if unknown and not plugins.takes_any_keyword(factory):
        raise ConfigError(f"summarizer {name!r}: unknown parameter(s) {', '.join(unknown)}; "
                          f"expected any of {', '.join(accepted)}")
    if needs_model and model is None:
        raise ConfigError(f"summarizer {name!r} needs a model; pass a model spec or use 'extractive'")
    summarizer = plugins.construct(factory, params, {"model": model, "context_window": context_window,
                                                     "counter": counter}, what=f"summarizer {name}")
    if not callable(getattr(summarizer, "summarize", None)):
        raise ConfigError(f"summarizer {name}: {type(summarizer).__name__} has no summarize(request) method")
    result: Summarizer = summarizer
    return result
