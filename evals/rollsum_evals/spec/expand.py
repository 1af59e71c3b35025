"""How a `SweepSpec` becomes Units: configurations × grids × prompts × models × windows ×
conversations × seeds, with labels unique in the run (and counted without being made)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.presets import WINDOW_ALIASES, PresetConfig
from rollsum_evals.spec import components, imports
from rollsum_evals.spec.schema import ConfigSpec, SweepSpec
from rollsum_evals.units import Unit, canonical_json, configure, replay_identity


@dataclass(frozen=True, slots=True)
class Variant:
    """One configuration after grid expansion, before it meets conversations."""

    label: str
    preset: str
    params: Mapping[str, Any]
    prompt: str
    model: str
    context_window: int
    code: str = ""
    line: int | None = field(default=None, compare=False)
    """Its config's line in the spec file (`ConfigSpec.line`)."""


def _fmt(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, str) else v


def own_window(params: Mapping[str, Any]) -> tuple[int, ...]:
    """A configuration's own window (``context_window``, or seed 002's ``max_context_tokens``,
    in its params or grid): the one its engine runs at, so the one its Unit, trace, scorers and
    report use too, instead of the spec's ``context_window`` list (issue #19)."""
    for key in ("context_window", *WINDOW_ALIASES):
        value = params.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return (value,)
    return ()


def variants(spec: SweepSpec) -> list[Variant]:
    """Configurations × grids × prompts × models × windows, with labels unique in the run.

    A baseline, or a component that takes no model (`rollsum_evals.spec.imports.takes_model`), is
    not multiplied by the models; only the built-in model summarizers are by the prompts."""
    raw: list[tuple[ConfigSpec, dict[str, Any], str, str, int, bool]] = []
    for cfg in spec.configs:
        for params in imports.combinations(cfg.params, cfg.grid):
            fixed = components.is_baseline(cfg.preset) or not imports.takes_model(cfg.preset, params)
            models = ("extractive",) if fixed else (cfg.models or spec.models)
            for model in models:
                no_prompt = fixed or components.is_builtin(model) or not imports.takes_prompt(cfg.preset, params)
                prompts = ("",) if no_prompt else (cfg.prompts or spec.prompts)
                for prompt in prompts:
                    for cw in own_window(params) or spec.context_windows:
                        raw.append((cfg, params, prompt, model, cw, fixed))
    vary_prompt = len({r[2] for r in raw if r[2]}) > 1
    vary_model = len({r[3] for r in raw if not r[5]}) > 1
    vary_window = len(spec.context_windows) > 1
    labels: list[str] = []
    for cfg, params, prompt, model, cw, fixed in raw:
        base = cfg.label or imports.base_label(cfg.preset)
        parts = [f"{k}={_fmt(imports.label_value(k, v))}" for k, v in sorted(params.items())
                 if cfg.label is None or k in cfg.grid]
        if vary_prompt and prompt:
            parts.append(f"prompt={prompt}")
        if vary_model and not fixed:
            parts.append(f"model={model}")
        if vary_window and not own_window(params):
            parts.append(f"window={cw}")
        labels.append(f"{base}[{','.join(parts)}]" if parts else base)
    _explicit_once(spec, raw, labels)
    out: list[Variant] = []
    for (cfg, params, prompt, model, cw, _fixed), label in zip(raw, _unique(labels), strict=True):
        out.append(Variant(label=label, preset=cfg.preset, params=params, prompt=prompt,
                           model=model, context_window=cw, code=cfg.code, line=cfg.line))
    return out


def _explicit_once(spec: SweepSpec, raw: Sequence[tuple[ConfigSpec, Any, Any, Any, Any, Any]],
                   labels: Sequence[str]) -> None:
    """A label the user wrote is never renamed: if another configuration's label (written or
    generated) is the same, that is a mistake, refused (generated ones alone get ``#N``)."""
    owners: dict[str, int] = {}
    for (cfg, *_rest), label in zip(raw, labels, strict=True):
        k = spec.configs.index(cfg)
        first = owners.setdefault(label, k)
        if first != k and (cfg.label is not None or spec.configs[first].label is not None):
            raise ConfigError(f"{spec.path}: configs[{first}] and configs[{k}] both have the label {label!r} "
                              "(expected a label unique in the spec: change or add a 'label')")


def count_variants(spec: SweepSpec) -> int:
    """How many `Variant`s `variants` makes, counted from the spec without making them: a grid
    of 10^6 combinations is counted in microseconds, where building it takes minutes and
    gigabytes. Only the ``summarizer`` axis can change whether a combination takes the models
    and prompts, so it alone is walked; every other axis multiplies."""
    total = 0
    for cfg in spec.configs:
        rest = math.prod(len(v) for k, v in cfg.grid.items() if k != "summarizer")
        for summarizer in cfg.grid.get("summarizer", (cfg.params.get("summarizer"),)):
            params = {**cfg.params, "summarizer": summarizer} if summarizer is not None else dict(cfg.params)
            fixed = components.is_baseline(cfg.preset) or not imports.takes_model(cfg.preset, params)
            models = ("extractive",) if fixed else (cfg.models or spec.models)
            prompts = 0
            for model in models:
                no_prompt = fixed or components.is_builtin(model) or not imports.takes_prompt(cfg.preset, params)
                prompts += 1 if no_prompt else len(cfg.prompts or spec.prompts)
            total += rest * prompts * len(spec.context_windows)
    return total


def count_units(spec: SweepSpec, conversations: Mapping[str, int]) -> int:
    """How many Units `expand` makes (`conversations`: how many each dataset holds)."""
    return count_variants(spec) * len(spec.seeds) * sum(conversations[ds.name] for ds in spec.datasets)


def _unique(labels: Sequence[str]) -> list[str]:
    """The second and later uses of a label become ``label#2``, ``label#3``, ... skipping any
    number another label already is (an explicit ``x#2``): two configurations never share a
    label, so their rows are never merged into one configuration."""
    taken = set(labels)
    first: set[str] = set()
    counters: dict[str, int] = {}
    out = []
    for label in labels:
        if label not in first:
            first.add(label)
            out.append(label)
            continue
        n = counters.get(label, 1) + 1
        while f"{label}#{n}" in taken:
            n += 1
        counters[label] = n
        taken.add(f"{label}#{n}")
        out.append(f"{label}#{n}")
    return out


def _same_replays(spec: SweepSpec, first: Variant, second: Variant) -> ConfigError:
    """Two configurations that replay the same Units (same preset, parameters, prompt, model
    and window: a config listed twice, or grids that overlap, or a truncate point the harness's
    curve has too): one line at the spec line of the second (`ConfigSpec.line`), naming both."""

    def config(var: Variant) -> str:
        return f"config {var.label!r} " + (f"(line {var.line})" if var.line is not None
                                           else "(the truncate curve the report adds)")

    at = second.line if second.line is not None else first.line
    loc = f"{spec.path}:{at}" if at is not None else spec.path
    hint = ("set [report] truncate_curve = false, or leave the point to the curve"
            if first.line is None or second.line is None else "remove one, or change one of them")
    return ConfigError(f"{loc}: {config(second)} replays exactly what {config(first)} does (same preset, "
                       f"parameters, prompt, model and window; expected each configuration once: {hint})")


def _configuration(spec: SweepSpec, var: Variant) -> PresetConfig | None:
    """A preset configuration's typed value, made once for all its Units (a memory's: None). Its
    values were each checked when the spec was read (`spec.params`); what is left to refuse here
    is a combination (a grid's ``reset_ratio`` above its ``trigger_ratio``), one line naming the
    spec and the configuration."""
    if plugins.is_import_path(var.preset):
        return None
    try:
        return configure(var.preset, var.params, var.context_window, var.prompt)
    except ConfigError as err:
        raise ConfigError(f"{spec.path}: config '{var.label}': {err}") from None


def expand(spec: SweepSpec, datasets: Mapping[str, tuple[str, Sequence[str]]]) -> list[Unit]:
    """Units for every dataset conversation × variant × seed.

    `datasets` maps a dataset name to (dataset hash, conversation ids in order).
    Units come back sorted by id, so the order never depends on dict or thread order.
    """
    configured = [(var, _configuration(spec, var)) for var in variants(spec)]
    units: list[Unit] = []
    made_by: dict[str, Variant] = {}
    for ds in spec.datasets:
        dhash, conv_ids = datasets[ds.name]
        for var, configuration in configured:
            params_json = canonical_json(dict(var.params))
            for cid in conv_ids:
                for seed in spec.seeds:
                    uid = replay_identity(ds.name, cid, dhash, var.preset, var.params, var.prompt,
                                          var.model, seed, var.context_window, var.code)
                    first = made_by.setdefault(uid, var)
                    if first is not var:
                        raise _same_replays(spec, first, var)
                    units.append(Unit(
                        unit_id=uid, dataset=ds.name, conversation_id=cid, dataset_hash=dhash,
                        config=var.label, preset=var.preset, params_json=params_json,
                        prompt=var.prompt, model=var.model, seed=seed,
                        context_window=var.context_window, configuration=configuration))
    units.sort(key=lambda u: u.unit_id)
    return units
