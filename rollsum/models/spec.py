"""One model-spec string everywhere (CLI, sweep files, presets) and its parser.

Forms: ``anthropic:MODEL``, ``fake[:k=v,...]``, ``replay:PATH``, ``record:PATH:INNER_SPEC``,
``local:PATH.gguf`` / ``local:gemma3-270m``. Keyword arguments go to the model's constructor
(tests pass ``client=``; the harness passes nothing), so a spec stays plain, hashable text.
"""

from __future__ import annotations

from typing import Any

from rollsum.errors import ConfigError
from rollsum.models.base import Model

SPEC_FORMS: tuple[str, ...] = (
    "anthropic:MODEL (e.g. anthropic:claude-haiku-4-5)",
    "fake[:k=v,...] (e.g. fake:mode=extractive,latency_ms=50,seed=1)",
    "replay:PATH (answer from a recorded cassette)",
    "record:PATH:INNER_SPEC (record INNER_SPEC's answers into PATH)",
    "local:PATH.gguf or local:gemma3-270m (offline GGUF model, extra 'local')",
)
NOT_A_MODEL = {
    "extractive": "'extractive' is not a model: it is the offline rule-based summarizer, chosen by "
                  "the summarizer layer (use it as a config's model setting, not with from_spec)",
}


def _forms() -> str:
    return "; ".join(SPEC_FORMS)


def from_spec(spec: str, **kw: Any) -> Model:
    """Build the model a spec string names; user mistakes raise `ConfigError`."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"model spec is empty: expected one of {_forms()}")
    spec = spec.strip()
    if spec in NOT_A_MODEL:
        raise ConfigError(NOT_A_MODEL[spec])
    prefix, sep, rest = spec.partition(":")
    if prefix == "fake":
        from rollsum.models.fake import FakeModel
        return FakeModel.from_options(rest, **kw)
    if not sep:
        hint = f" (did you mean anthropic:{spec}?)" if spec.startswith("claude") else ""
        raise ConfigError(f"model spec {spec!r} is not recognized{hint}: expected one of {_forms()}")
    if not rest:
        raise ConfigError(f"model spec {spec!r} has nothing after '{prefix}:': expected one of {_forms()}")
    if prefix == "anthropic":
        from rollsum.models.anthropic_model import AnthropicModel
        return AnthropicModel(model=rest, **kw)
    if prefix == "replay":
        from rollsum.models.replay import ReplayModel
        return ReplayModel(rest, **kw)
    if prefix == "record":
        path, sep2, inner = rest.partition(":")
        if not sep2 or not path or not inner:
            raise ConfigError(f"model spec {spec!r}: expected record:PATH:INNER_SPEC, e.g. "
                              "record:cassettes/run.jsonl:anthropic:claude-haiku-4-5")
        from rollsum.models.replay import RecordingModel
        return RecordingModel(from_spec(inner, **kw), path)
    if prefix == "local":
        from rollsum.models.local import LocalModel
        return LocalModel(rest, **kw)
    raise ConfigError(f"model spec {spec!r}: unknown prefix {prefix!r}; expected one of {_forms()}")
