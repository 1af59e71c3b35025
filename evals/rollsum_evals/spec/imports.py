"""Components a sweep names by import path: checked when the spec is read, fingerprinted into
the Units that replay them.

A config is either a preset (optionally with ``summarizer = NAME_OR_PATH``) or a ``memory =
"pkg.mod:MyMemory"`` (any `rollsum.memory.Memory`). This module answers, for the spec parser and
the Unit expansion, what such a component is: whether it imports and constructs (a trial
construction with the spec's parameters, so a constructor error is a ``file:line`` mistake, not
a failed run), whether it takes the sweep's model, and a fingerprint of its code.

The fingerprint is part of every Unit id that replays the component: a replay cached by the
Unit-result cache is served again only while the component's source is unchanged. It covers the
source of the module that defines the object and, when that module is in a package, of its
sibling modules (helpers usually live next to the class), plus an optional ``version`` attribute
(set it to cover code elsewhere, e.g. the third-party package a class adapts).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.memory import Memory
from rollsum.models.base import Completion, CompletionRequest
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.tokens import HeuristicCounter
from rollsum_evals.spec import components


class _SpecCheckModel:
    """Stands in for the sweep's model while a component is trial-constructed from the spec:
    the real one may need a key, and a constructor has no reason to call it."""

    def __init__(self, spec: str) -> None:
        self._spec = spec

    @property
    def name(self) -> str:
        return self._spec

    @property
    def context_window(self) -> int:
        return DEFAULT_CONTEXT_WINDOW

    def complete(self, request: CompletionRequest) -> Completion:
        raise ConfigError("called its model while being constructed (the sweep's model is only "
                          "available once the replay starts)")


def combinations(params: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """`params` with every combination of the grid's values (the grid's keys sorted)."""
    keys = sorted(grid)
    combos = itertools.product(*(grid[k] for k in keys)) if keys else [()]
    return [{**params, **dict(zip(keys, combo))} for combo in combos]


def _conventions(factory: Any, models: Sequence[str], window: int) -> dict[str, Any]:
    model = next((m for m in models if not components.is_builtin(m)), None)
    return {"model": _SpecCheckModel(model) if model is not None else None, "context_window": window,
            "counter": HeuristicCounter(), "on_event": lambda _event: None}


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if callable(close):
        close()


def _needs_a_model(needs: bool, what: str, models: Sequence[str]) -> None:
    builtin = [m for m in models if components.is_builtin(m)]
    if needs and builtin:
        raise ConfigError(f"{what} needs a model (its constructor requires model=), but the config's "
                          f"models include {builtin[0]!r}; set models = [\"fake:mode=extractive\"] or a real one")


def check_memory(path: str, params: Sequence[Mapping[str, Any]], *, models: Sequence[str],
                 window: int) -> None:
    """Import `path`, construct it with each parameter set, check it is a `Memory`."""
    factory = plugins.load(path)
    what = f"memory {path}"
    if not callable(factory):
        raise ConfigError(f"{what}: {type(factory).__name__} is not a class or factory")
    _needs_a_model(plugins.requires(factory, "model"), what, models)
    for p in params:
        memory = plugins.construct(factory, p, _conventions(factory, models, window), what=what)
        try:
            if not isinstance(memory, Memory):
                raise ConfigError(f"{what}: {type(memory).__name__} is not a rollsum Memory (expected "
                                  "add(message) and context() -> list[Message])")
        finally:
            _close(memory)


def check_summarizer(name: str, params: Sequence[Mapping[str, Any]], *, models: Sequence[str],
                     window: int) -> None:
    """A summarizer the preset does not shape (`is_plugged`): resolve it, construct it with each
    parameter set (its ``summarizer_params``)."""
    from rollsum import summarizers

    factory, needs = summarizers.resolve(name)
    _needs_a_model(needs, f"summarizer {name}", models)
    conv = _conventions(factory, models, window)
    for p in params:
        _close(summarizers.create(name, conv["model"], context_window=window, counter=conv["counter"], **p))


def is_plugged(name: object) -> bool:
    """A summarizer that the preset does not shape (not one of its built-in kinds)."""
    from rollsum.presets import BUILTIN_KINDS

    return isinstance(name, str) and name not in BUILTIN_KINDS


def takes_model(preset: str, params: Mapping[str, Any]) -> bool:
    """Whether the sweep's model reaches the config: a component by import path or registry
    name only gets one when its constructor names ``model``."""
    if plugins.is_import_path(preset):
        return plugins.accepts(plugins.load(preset), "model")
    summarizer = params.get("summarizer")
    if is_plugged(summarizer):
        from rollsum import summarizers

        return plugins.accepts(summarizers.resolve(str(summarizer))[0], "model")
    return True


def takes_prompt(preset: str, params: Mapping[str, Any]) -> bool:
    """The sweep's prompts go to the built-in model summarizers only (a component takes its own
    prompt through its parameters)."""
    return not plugins.is_import_path(preset) and not is_plugged(params.get("summarizer"))


def label_value(key: str, value: Any) -> Any:
    """How a parameter shows in a config label: an import path by its attribute's name."""
    return plugins.short_name(value) if key == "summarizer" and plugins.is_import_path(value) else value


def base_label(preset: str) -> str:
    return plugins.short_name(preset) if plugins.is_import_path(preset) else preset


def import_paths(preset: str, params: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> list[str]:
    """The import paths a config names (its memory, its summarizer or the grid's summarizers)."""
    names = [preset, params.get("summarizer"), *grid.get("summarizer", ())]
    return sorted({n for n in names if plugins.is_import_path(n)})


def _sources(obj: Any) -> list[Path]:
    """The defining module's file and, for a module in a package, its sibling modules."""
    module = inspect.getmodule(obj)
    source = getattr(module, "__file__", None)
    if not source:
        return []
    path = Path(source)
    if getattr(module, "__package__", ""):
        return sorted(path.parent.glob("*.py"))
    return [path]


def code_fingerprint(paths: Iterable[str]) -> str:
    """sha256 over each named object's source (`_sources`) and its ``version`` attribute; ""
    when `paths` is empty (Units of presets keep the ids they always had)."""
    paths = sorted(set(paths))
    if not paths:
        return ""
    h = hashlib.sha256()
    for path in paths:
        obj = plugins.load(path)
        h.update(b"\0" + path.encode())
        for f in _sources(obj):
            h.update(b"\0" + f.name.encode() + b"\0")
            try:
                h.update(f.read_bytes())
            except OSError:
                h.update(b"?")
        h.update(b"\0" + str(getattr(obj, "version", "")).encode())
    return h.hexdigest()
