"""What a Unit's components are: read from the components' own declarations, in one place.

Whether a configuration calls a summarizer at all (a baseline preset), and whether its
summarizer model is offline, free, deterministic or prompt-blind, is declared once on the
component (`rollsum.presets.Preset.baseline`, `rollsum.models.spec.BACKENDS`,
`ExtractiveSummarizer.capabilities`); the harness asks here and nowhere else, so a new backend
or preset needs no harness change.
"""

from __future__ import annotations

from rollsum import presets
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


def of_config(preset: str, model: str) -> Capabilities:
    """What a configuration's summarization is: a baseline summarizes nothing at all."""
    return NO_SUMMARIZER if is_baseline(preset) else of_model(model)
