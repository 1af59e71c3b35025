"""The parts of a sweep spec's ``[[configs]]`` that name components: a preset or a memory, a
summarizer override, and the check of everything named by import path (`rollsum_evals.spec.imports`).

Split from `rollsum_evals.spec.parse` (which calls these while it parses) so that the parser stays one
job: every mistake here is still one line at the config's key, through the parser's `Where`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rollsum import presets
from rollsum.errors import ConfigError
from rollsum.plugins import is_import_path
from rollsum_evals.spec import imports
from rollsum_evals.spec.schema import ConfigSpec
from rollsum_evals.spec.where import Where


def preset_or_memory(w: Where, configs: Sequence[Mapping[str, Any]], i: int) -> str:
    """A config replays a preset or a memory (by import path): exactly one of them."""
    c = configs[i]
    memory = c.get("memory")
    if memory is None:
        preset = c.get("preset")
        if not isinstance(preset, str) or not preset:
            raise w.error(f"configs[{i}].preset", "a preset name (or memory = 'pkg.mod:MyMemory')", preset,
                          key="configs", occurrence=i)
        if preset not in presets.names():
            raise w.error(f"configs[{i}].preset", f"one of {', '.join(presets.names())}", preset,
                          key="preset", occurrence=nth(configs, i, "preset"))
        return preset
    occ = nth(configs, i, "memory")
    if not is_import_path(memory):
        raise w.error(f"configs[{i}].memory", "an import path 'package.module:Class'", memory,
                      key="memory", occurrence=occ)
    for other in ("preset", "summarizer", "summarizer_params", "prompts"):
        if other in c:
            raise w.error(f"configs[{i}].{other}", f"no '{other}' beside 'memory' (a memory is the "
                          "whole engine; its constructor parameters go in 'params')", key=other,
                          occurrence=nth(configs, i, other))
    return str(memory)


def nth(configs: Sequence[Mapping[str, Any]], i: int, key: str) -> int:
    """How many configs before config `i` have `key` (which of the key's lines is this one's)."""
    return sum(1 for other in configs[:i] if key in other)


def summarizer_params(w: Where, configs: Sequence[Mapping[str, Any]], i: int,
                       params: dict[str, Any]) -> dict[str, Any]:
    """``summarizer`` and ``summarizer_params`` are preset overrides like any other (the library
    takes them: `rollsum.presets.build`); the config-level keys are the documented spelling."""
    c = configs[i]
    for key in ("summarizer", "summarizer_params"):
        if key not in c:
            continue
        occ = nth(configs, i, key)
        if key in params or key in (c.get("grid") or {}):
            raise w.error(f"configs[{i}].{key}", f"'{key}' given once (here, or in params/grid)",
                          key=key, occurrence=occ)
        value = c[key]
        if key == "summarizer" and (not isinstance(value, str) or not value):
            raise w.error(f"configs[{i}].summarizer", "a summarizer name or an import path "
                          "'package.module:Class'", value, key=key, occurrence=occ)
        if key == "summarizer_params" and (not isinstance(value, dict) or "summarizer" not in c):
            raise w.error(f"configs[{i}].summarizer_params", "a table of constructor parameters, "
                          "beside 'summarizer'", value, key=key, occurrence=occ)
        if key == "summarizer_params" and c.get("summarizer") in presets.BUILTIN_KINDS:
            _check_builtin_params(w, str(c["summarizer"]), value, f"configs[{i}].summarizer_params", occ)
        params[key] = value
    return params


def _check_builtin_params(w: Where, kind: str, given: Mapping[str, Any], field_name: str, occ: int) -> None:
    """A built-in summarizer's ``summarizer_params``: names its constructor takes (the model and
    the engine's conventions are given by the preset, not here)."""
    from rollsum import plugins as library_plugins
    from rollsum import summarizers

    factory = summarizers.resolve(kind)[0]
    accepted = sorted(n for n in library_plugins.parameters(factory)
                      if n not in ("self", "model", "counter", "context_window"))
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise w.error(field_name, f"parameters of the {kind} summarizer ({', '.join(accepted)})",
                      ", ".join(unknown), key="summarizer_params", occurrence=occ)


def with_components(w: Where, configs: tuple[ConfigSpec, ...], raw: Sequence[Mapping[str, Any]],
                     models: tuple[str, ...], windows: tuple[int, ...]) -> tuple[ConfigSpec, ...]:
    """Check every component a config names (import, construct, protocol) and fingerprint the
    code of those named by import path. A mistake is one line at the config's key."""
    out = []
    for i, cfg in enumerate(configs):
        c = raw[i]
        key = next((k for k in ("memory", "summarizer") if k in c), "configs")
        field_name = key if key != "configs" else "params.summarizer"
        try:
            plugged = key == "memory" or any(imports.is_plugged(s) for s in (
                cfg.params.get("summarizer"), *cfg.grid.get("summarizer", ())))
            # only a component needs each combination built; a preset grid stays a product
            # (counted, not made, by `expand.count_variants`, so a huge grid is refused in a second)
            combos = imports.combinations(cfg.params, cfg.grid) if plugged else []
            cfg_models = cfg.models or models
            if key == "memory":
                imports.check_memory(cfg.preset, combos, models=cfg_models, window=windows[0])
            for name in sorted({str(p["summarizer"]) for p in combos if imports.is_plugged(p.get("summarizer"))}):
                imports.check_summarizer(name, [dict(p.get("summarizer_params") or {}) for p in combos
                                                if p.get("summarizer") == name], models=cfg_models,
                                         window=windows[0])
            code = imports.code_fingerprint(imports.import_paths(cfg.preset, cfg.params, cfg.grid))
        except ConfigError as err:
            loc = w.location(key, i if key == "configs" else nth(raw, i, key))
            raise ConfigError(f"{loc}: field 'configs[{i}].{field_name}': {err}") from None
        out.append(replace(cfg, code=code))
    return tuple(out)


def needs_env(preset: str) -> tuple[str, ...]:
    """The environment variables a memory named by import path declares it cannot run without
    (a class attribute ``needs_env``, e.g. the Anthropic peers' ``ANTHROPIC_API_KEY``)."""
    if not is_import_path(preset):
        return ()
    from rollsum import plugins as library_plugins

    declared = getattr(library_plugins.load(preset), "needs_env", ())
    return tuple(str(v) for v in declared) if isinstance(declared, tuple | list) else ()


def runnable(configs: tuple[ConfigSpec, ...], environ: Mapping[str, str]
             ) -> tuple[tuple[ConfigSpec, ...], tuple[str, ...]]:
    """(configs that can run here, one line per config left out and why). A config whose memory
    needs an unset variable (an API key) is skipped, not failed: an offline run of a sweep that
    names the API peers runs everything else and says what it left out (docs/imports.md)."""
    keep: list[ConfigSpec] = []
    skipped: list[str] = []
    for cfg in configs:
        missing = [v for v in needs_env(cfg.preset) if not environ.get(v)]
        if missing:
            label = cfg.label or imports.base_label(cfg.preset)
            skipped.append(f"config '{label}' skipped: needs {' and '.join(missing)} (not set)")
        else:
            keep.append(cfg)
    return tuple(keep), tuple(skipped)
