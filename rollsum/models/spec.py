"""One model-spec string everywhere (CLI, sweep files, presets) and its parser.

Forms: ``anthropic:MODEL``, ``fake[:k=v,...]``, ``replay:PATH``, ``record:PATH:INNER_SPEC``,
``local:PATH.gguf`` / ``local:gemma3-270m``. Keyword arguments go to the model's constructor
(tests pass ``client=``; the harness passes nothing), so a spec stays plain, hashable text.

The prefixes are the entries of `BACKENDS`, a `rollsum.registry.Registry` that `from_spec`,
`capabilities`, pricing, the harness's model factory and `rollsum list models` all read: a new
backend is one model class plus ``BACKENDS.register(backend.prefix, backend)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rollsum.capabilities import OFFLINE_MODEL, OFFLINE_SCRIPTED, ONLINE_MODEL, Capabilities
from rollsum.errors import ConfigError
from rollsum.models.base import Model
from rollsum.registry import Registry


@dataclass(frozen=True, slots=True)
class Backend:
    """One model backend: its spec prefix, how to build it, what it is.

    `build(rest, **kw)` gets what follows ``prefix:``; `capabilities` are what the harness reads
    (offline, free, deterministic, prompt-blind) without building the model, which may need a
    key the reader does not have.
    """

    prefix: str
    form: str
    build: Callable[..., Model]
    capabilities: Capabilities
    bare: bool = False
    """The spec may be the prefix alone (``fake``)."""


def _anthropic(rest: str, **kw: Any) -> Model:
    from rollsum.models.anthropic_model import AnthropicModel
    return AnthropicModel(model=rest, **kw)


def _fake(rest: str, **kw: Any) -> Model:
    from rollsum.models.fake import FakeModel
    return FakeModel.from_options(rest, **kw)


def _replay(rest: str, **kw: Any) -> Model:
    from rollsum.models.cassette import ReplayModel
    return ReplayModel(rest, **kw)


def _record(rest: str, **kw: Any) -> Model:
    path, sep, inner = rest.partition(":")
    if not sep or not path or not inner:
        raise ConfigError(f"model spec 'record:{rest}': expected record:PATH:INNER_SPEC, e.g. "
                          "record:cassettes/run.jsonl:anthropic:claude-haiku-4-5")
    from rollsum.models.cassette import RecordingModel
    return RecordingModel(from_spec(inner, **kw), path)


def _local(rest: str, **kw: Any) -> Model:
    from rollsum.models.local import LocalModel
    return LocalModel(rest, **kw)


BACKENDS: Registry[Backend] = Registry("model backend", {b.prefix: b for b in (
    Backend("anthropic", "anthropic:MODEL (e.g. anthropic:claude-haiku-4-5)", _anthropic, ONLINE_MODEL),
    Backend("fake", "fake[:k=v,...] (e.g. fake:mode=extractive,latency_ms=50,seed=1)", _fake,
            OFFLINE_SCRIPTED, bare=True),
    Backend("replay", "replay:PATH (answer from a recorded cassette)", _replay, OFFLINE_MODEL),
    # a recording is what its inner model is: capabilities() resolves the inner spec
    Backend("record", "record:PATH:INNER_SPEC (record INNER_SPEC's answers into PATH)", _record, ONLINE_MODEL),
    Backend("local", "local:PATH.gguf or local:gemma3-270m (offline GGUF model, extra 'local')", _local,
            OFFLINE_MODEL),
)}, name_of=lambda backend: backend.prefix)
"""The registry `from_spec` and `capabilities` read, by spec prefix: a new backend is one class
plus ``BACKENDS.register(backend.prefix, backend)`` (its own `prefix`, so that the spec a run
records builds the same model again)."""

NOT_A_MODEL = {
    "extractive": "'extractive' is not a model: it is the offline rule-based summarizer, chosen by "
                  "the summarizer layer (use it as a config's model setting, not with from_spec)",
}


def spec_forms() -> tuple[str, ...]:
    """Every registered backend's spec form, in registration order (what errors list)."""
    return tuple(b.form for b in BACKENDS.values())


def _forms() -> str:
    return "; ".join(spec_forms())


def from_spec(spec: str, **kw: Any) -> Model:
    """Build the model a spec string names; user mistakes raise `ConfigError`."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"model spec is empty: expected one of {_forms()}")
    spec = spec.strip()
    if spec in NOT_A_MODEL:
        raise ConfigError(NOT_A_MODEL[spec])
    prefix, sep, rest = spec.partition(":")
    backend = BACKENDS.get(prefix)
    if not sep and not (backend is not None and backend.bare):
        hint = f" (did you mean anthropic:{spec}?)" if spec.startswith("claude") else ""
        raise ConfigError(f"model spec {spec!r} is not recognized{hint}: expected one of {_forms()}")
    if backend is None:
        raise ConfigError(f"model spec {spec!r}: unknown prefix {prefix!r}; expected one of {_forms()}")
    if not rest and not backend.bare:
        raise ConfigError(f"model spec {spec!r} has nothing after '{prefix}:': expected one of {_forms()}")
    return backend.build(rest, **kw)


def recorded(spec: str) -> str:
    """The model a ``record:PATH:INNER`` spec records: INNER, unwrapped again while it is itself
    a recording; any other spec as it is. What prices a recording and checks its model's name."""
    name = spec.strip()
    while name.startswith("record:"):
        rest = name[len("record:"):]
        name = rest.split(":", 1)[1] if ":" in rest else rest
    return name


def capabilities(spec: str) -> Capabilities:
    """What the model a spec names is, without building it (which may need a key).

    ``record:PATH:INNER`` is what INNER is. An unknown spec is a `ConfigError`, as in `from_spec`.
    """
    spec = spec.strip()
    prefix, sep, rest = spec.partition(":")
    backend = BACKENDS.get(prefix)
    if backend is None or (not sep and not backend.bare):
        raise ConfigError(f"model spec {spec!r} is not recognized: expected one of {_forms()}")
    if prefix == "record":
        return capabilities(rest.partition(":")[2])
    return backend.capabilities
