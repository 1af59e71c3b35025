"""What a Unit's components are: read from the components' own declarations, in one place.

Whether a configuration calls a summarizer at all (a baseline preset), and whether its
summarizer model is offline, free, deterministic or prompt-blind, is declared once on the
component (`rollsum.presets.Preset.baseline`, `rollsum.models.spec.BACKENDS`,
`ExtractiveSummarizer.capabilities`); the harness asks here and nowhere else, so a new backend
or preset needs no harness change. A component named by import path (a ``memory``, a
``summarizer``) declares them as a ``capabilities`` attribute, read through
`rollsum.plugins.capabilities` (the conservative `rollsum.plugins.UNDECLARED` without one); when
it also takes the sweep's model, the configuration is what both are (offline only if both are).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollsum import plugins, presets
from rollsum.capabilities import Capabilities
from rollsum.errors import ConfigError
from rollsum.models.spec import capabilities as model_capabilities
from rollsum.summarizers.extractive import ExtractiveSummarizer

BUILTIN_SUMMARIZERS: frozenset[str] = frozenset({"", "extractive"})
"""Model settings that name the built-in offline summarizer rather than a model to build."""

NO_SUMMARIZER = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)


def is_builtin(model: str) -> bool:
    """The config's "model" is the built-in extractive summarizer: there is nothing to build."""
    return model in BUILTIN_SUMMARIZERS


def is_baseline(preset: str) -> bool:
    """A preset that never calls a summarizer (model and prompt do not apply to it)."""
    try:
        return presets.get(preset).baseline
    except ConfigError:
        return False


def of_model(model: str) -> Capabilities:
    """What a model setting is: the built-in summarizer's declaration, or the backend's."""
    if is_builtin(model):
        return ExtractiveSummarizer.capabilities
    return model_capabilities(model)


def with_model(own: Capabilities, model: str) -> Capabilities:
    """A component that calls `model`: offline, free and deterministic only if both are."""
    if is_builtin(model):
        return own
    m = of_model(model)
    return Capabilities(offline=own.offline and m.offline, free=own.free and m.free,
                        deterministic=own.deterministic and m.deterministic, follows_prompt=own.follows_prompt)


def of_config(preset: str, model: str, params: Mapping[str, Any] | None = None) -> Capabilities:
    """What a configuration's summarization is: a baseline summarizes nothing at all; a memory
    by import path (in `preset`) or a summarizer override in `params` answers for itself."""
    if is_baseline(preset):
        return NO_SUMMARIZER
    if plugins.is_import_path(preset):
        return with_model(plugins.capabilities(plugins.load(preset)), model)
    summarizer = (params or {}).get("summarizer")
    if summarizer == "extractive":
        return ExtractiveSummarizer.capabilities
    if isinstance(summarizer, str) and summarizer not in presets.BUILTIN_KINDS:
        from rollsum import summarizers

        return with_model(plugins.capabilities(summarizers.resolve(summarizer)[0]), model)
    return of_model(model)
