"""The ``[tune]`` table of a sweep spec: what `rollsum tune` may vary, what it optimises, under
which constraints, and how much it may spend.

A spec that tunes looks like a sweep spec (datasets, window, scorers, probes) plus::

    [tune]
    presets = ["since-last", "token-ratio"]     # default: the presets named in [tune.params]
    objective = "gain"                            # or "pareto": retention vs main-model tokens
    trials = 40
    seed = 0
    min_conversations = 2                         # first rung: conversations per dataset
    reduction_factor = 2                          # successive halving: keep the best 1/eta
    [tune.constraints]
    max_tokens_per_call = 4000
    max_calls_per_message = 0.2
    [tune.params.since-last]
    keep_last = { low = 2, high = 30 }
    messages_per_summary = { low = 5, high = 60, step = 5 }
    [tune.params.token-ratio]
    trigger_ratio = { low = 0.6, high = 0.95, step = 0.05 }
    reset_ratio = 0.5                             # a plain value is fixed, not searched
    prompt = { choices = ["since-last/v1", "since-last/v2"] }

Why a space is written per preset: parameters mean different things in different presets
(``keep_last`` is since-last's verbatim tail; token-ratio keeps ``preserve_recent``), so one flat
space would let the sampler suggest values a preset ignores. A preset without a space gets the
default one (`default_space`): its trigger parameters, bounded around the preset's own default
and clipped to `rollsum.params.RANGES` — the same ranges the library checks.

``step`` matters twice: the sampler only proposes multiples of it, and it defines the
*equivalent grid* (`grid_size`) that the tune's cost is reported against (``units_full_grid``). A
float range without a step, or a log range, has no grid a person would write point by point: it is
counted at `FLOAT_GRID_POINTS` (geometric for log) points, which flatters the grid, not the tune.
Default integer ranges get a step of a tenth of their span for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rollsum import presets
from rollsum.errors import ConfigError
from rollsum.params import RANGES, Range, check_number

FLOAT_GRID_POINTS = 5
"""How many points a float range without ``step`` counts as in the equivalent grid."""

OBJECTIVES = ("gain", "pareto")
CATEGORICAL_KEYS = ("prompt", "model")
"""Not preset parameters: the summarizer's prompt and model, varied per trial (a prompt A/B at
scale). A model-blind or prompt-blind component makes them moot (`moot_dimensions`)."""

_TUNE_KEYS = {"presets", "objective", "trials", "seed", "min_conversations", "reduction_factor",
              "constraints", "params", "max_units", "top"}
_CONSTRAINT_KEYS = {"max_tokens_per_call", "max_calls_per_message"}
_DIM_KEYS = {"low", "high", "step", "log", "choices"}

DEFAULT_TRIALS = 40
DEFAULT_TOP = 5


@dataclass(frozen=True, slots=True)
class Dim:
    """One searched parameter: an int or float range, or a list of choices."""

    name: str
    kind: Literal["int", "float", "categorical"]
    low: float = 0.0
    high: float = 0.0
    step: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()

    def grid_values(self) -> int:
        """How many values this dimension has in the equivalent grid."""
        if self.kind == "categorical":
            return len(self.choices)
        if self.kind == "int" and not self.log:
            step = int(self.step or 1)
            return int((self.high - self.low) // step) + 1
        if self.step:
            return math.floor((self.high - self.low) / self.step + 1e-9) + 1
        return FLOAT_GRID_POINTS

    def values(self) -> list[Any]:
        """The equivalent grid's values (log ranges without a step: geometric points)."""
        if self.kind == "categorical":
            return list(self.choices)
        n = self.grid_values()
        if self.kind == "int" and not self.log:
            step = int(self.step or 1)
            return [int(self.low) + i * step for i in range(n)]
        if self.kind == "int":
            ratio = (self.high / self.low) ** (1 / (n - 1))
            return sorted({round(self.low * ratio**i) for i in range(n)})
        if self.step:
            return [round(self.low + i * self.step, 10) for i in range(n)]
        if self.log:
            ratio = (self.high / self.low) ** (1 / (n - 1))
            return [round(self.low * ratio**i, 10) for i in range(n)]
        return [round(self.low + i * (self.high - self.low) / (n - 1), 10) for i in range(n)]


@dataclass(frozen=True, slots=True)
class PresetSpace:
    preset: str
    dims: tuple[Dim, ...]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """Parameters written as plain values: every trial of this preset uses them."""

    def grid_size(self) -> int:
        return math.prod(d.grid_values() for d in self.dims) if self.dims else 1


@dataclass(frozen=True, slots=True)
class Constraints:
    max_tokens_per_call: float | None = None
    max_calls_per_message: float | None = None

    def violations(self, tokens_per_call: float, calls_per_message: float) -> dict[str, float]:
        """Optuna's constraint convention: one number per constraint, > 0 when violated (by how
        much, relative), <= 0 when satisfied. NaN measurements count as violated."""
        out: dict[str, float] = {}
        for key, limit, value in (("max_tokens_per_call", self.max_tokens_per_call, tokens_per_call),
                                  ("max_calls_per_message", self.max_calls_per_message, calls_per_message)):
            if limit is None:
                continue
            out[key] = (value - limit) / max(limit, 1e-9) if math.isfinite(value) else 1.0
        return out

    def to_dict(self) -> dict[str, float]:
        return {k: v for k, v in (("max_tokens_per_call", self.max_tokens_per_call),
                                  ("max_calls_per_message", self.max_calls_per_message)) if v is not None}


@dataclass(frozen=True, slots=True)
class TuneSpec:
    spaces: tuple[PresetSpace, ...]
    objective: Literal["gain", "pareto"] = "gain"
    trials: int = DEFAULT_TRIALS
    seed: int = 0
    min_conversations: int = 2
    reduction_factor: int = 2
    constraints: Constraints = field(default_factory=Constraints)
    max_units: int | None = None
    top: int = DEFAULT_TOP
    """How many of the best trials the final run (the tune's own run directory) re-scores on
    every conversation, beside the Pareto set."""

    def grid_configs(self) -> int:
        return sum(s.grid_size() for s in self.spaces)

    def space(self, preset: str) -> PresetSpace:
        return next(s for s in self.spaces if s.preset == preset)


# ----------------------------------------------------------------------------------------------
# defaults


_DEFAULT_DIMS: Mapping[str, tuple[str, ...]] = {
    "since-last": ("keep_last", "messages_per_summary"),
    "token-ratio": ("trigger_ratio", "preserve_recent"),
    "evict-window": ("head", "tail", "min_evicted"),
    "count-and-tokens": ("token_threshold", "recent_messages_to_keep"),
    "budget-rule-based": ("min_keep", "low_water"),
}
"""Each summarizing preset's trigger parameters: what decides when and how much it summarizes."""


def _defaults(preset: str) -> dict[str, Any]:
    """The preset's own parameter values (its policy's dataclass defaults)."""
    import dataclasses

    from rollsum import policies

    policy = policies.get(presets.get(preset).policy)
    return {f.name: f.default for f in dataclasses.fields(policy)
            if f.default is not dataclasses.MISSING}


def default_space(preset: str, context_window: int) -> PresetSpace:
    """The default space of a summarizing preset: each trigger parameter from a quarter to three
    times its default (token thresholds: up to the window), clipped to its `RANGES` entry;
    ratios within (0, 1)."""
    if preset not in _DEFAULT_DIMS:
        known = ", ".join(_DEFAULT_DIMS)
        raise ConfigError(f"[tune] preset {preset!r} has no default search space (expected one of {known}, or "
                          f"write [tune.params.{preset}])")
    defaults = _defaults(preset)
    dims: list[Dim] = []
    for name in _DEFAULT_DIMS[preset]:
        value = defaults[name]
        rng = RANGES.get(name, Range())
        if isinstance(value, float):
            low = max(value / 2, rng.low or 0.05)
            high = min(value + (1 - value) * 0.75, rng.high if rng.high is not None else 0.95, 0.95)
            dims.append(Dim(name, "float", low=round(low, 2), high=round(high, 2), step=0.05))
        elif "token" in name:
            low = max(int(rng.low or 0), 250)
            dims.append(Dim(name, "int", low=low, high=max(low + 1, context_window), log=True))
        else:
            low = max(int(rng.low or 0), value // 4)
            high = max(low + 1, value * 3)
            dims.append(Dim(name, "int", low=low, high=high, step=max(1, (high - low) // 10)))
    return PresetSpace(preset, tuple(dims))


# ----------------------------------------------------------------------------------------------
# parsing


def _fail(path: str, key: str, expected: str, got: Any = None) -> ConfigError:
    tail = f", got {got!r}" if got is not None else ""
    return ConfigError(f"{path}: [tune] {key}: expected {expected}{tail}")


def _dim(path: str, preset: str, name: str, value: Mapping[str, Any]) -> Dim:
    where = f"params.{preset}.{name}"
    unknown = sorted(set(value) - _DIM_KEYS)
    if unknown:
        raise _fail(path, where, f"keys among {', '.join(sorted(_DIM_KEYS))} (unknown: {', '.join(unknown)})")
    if "choices" in value:
        choices = value["choices"]
        if not isinstance(choices, list) or not choices or len(set(map(repr, choices))) != len(choices):
            raise _fail(path, where + ".choices", "a non-empty list of distinct values", choices)
        if set(value) - {"choices"}:
            raise _fail(path, where, "either choices or low/high, not both")
        return Dim(name, "categorical", choices=tuple(choices))
    if name in CATEGORICAL_KEYS:
        raise _fail(path, where, "choices = [...] (a prompt or model is chosen, not ranged)")
    low, high = value.get("low"), value.get("high")
    integer = isinstance(low, int) and isinstance(high, int) and not isinstance(value.get("step"), float)
    for key, v in (("low", low), ("high", high)):
        problem = check_number(v, integer=False, range=RANGES.get(name))
        if problem is not None:
            raise _fail(path, f"{where}.{key}", problem, v)
    assert isinstance(low, int | float) and isinstance(high, int | float)
    if not low < high:
        raise _fail(path, where, "low < high", f"{low} .. {high}")
    step = value.get("step")
    if step is not None and (check_number(step, integer=False, range=Range(0, low_open=True)) is not None
                             or step > high - low):
        raise _fail(path, f"{where}.step", f"a number in (0, {high - low:g}]", step)
    log = value.get("log", False)
    if not isinstance(log, bool):
        raise _fail(path, f"{where}.log", "true or false", log)
    if log and (low <= 0 or step is not None):
        raise _fail(path, where, "log = true needs low > 0 and no step")
    return Dim(name, "int" if integer else "float", low=low, high=high, step=step, log=log)


def _check_values(path: str, preset: str, dims: Sequence[Dim], fixed: Mapping[str, Any]) -> None:
    """Every key a parameter of the preset and every value one the library takes (a fixed value,
    a range's ends as the sampler would propose them, each choice), checked before anything runs.
    Why: a misspelt key, a bad fixed value or a float step on an integer parameter failed every
    trial in turn and the tune ended "best: none (no feasible trial)", exit 0."""
    from rollsum import policies
    from rollsum_evals.spec.params import configurable, not_a_parameter

    policy = fixed.get("policy")
    valid = configurable(policy if isinstance(policy, str) and policy in policies.POLICIES
                         else presets.get(preset).policy)
    values: list[tuple[str, str, Any]] = [(f"params.{preset}.{k}", k, v) for k, v in fixed.items()]
    for d in dims:
        where = f"params.{preset}.{d.name}"
        if d.kind == "categorical":
            values += [(f"{where}.choices", d.name, v) for v in d.choices]
        elif d.kind == "int":
            values += [(f"{where}.{end}", d.name, int(v)) for end, v in (("low", d.low), ("high", d.high))]
        else:  # what the sampler proposes for a range of floats (or a float step) is a float
            values += [(f"{where}.{end}", d.name, float(v)) for end, v in (("low", d.low), ("high", d.high))]
    for where, key, value in values:
        if key in CATEGORICAL_KEYS:
            continue
        if key == "timestamps":  # how the context shows times: the replay's (as in a spec's params)
            from rollsum.context import TIMESTAMPS

            if value not in TIMESTAMPS:
                raise _fail(path, where, f"one of {', '.join(TIMESTAMPS)}", value)
            continue
        if key not in valid:
            raise _fail(path, where.removesuffix(".low").removesuffix(".choices"), not_a_parameter(preset, key, valid))
        found = presets.param_problem(preset, key, value, policy=policy)
        if found is not None:
            if isinstance(value, float) and presets.param_problem(preset, key, int(value), policy=policy) is None:
                found += " (a float step or float ends make the sampler propose floats: give integers)"
            raise _fail(path, where, found, value)


def _positive_int(path: str, table: Mapping[str, Any], key: str, default: int, minimum: int = 1) -> int:
    v = table.get(key, default)
    if check_number(v, integer=True, range=Range(minimum)) is not None:
        raise _fail(path, key, f"an integer >= {minimum}", v)
    return int(v)


def parse_tune(raw: Mapping[str, Any], path: str, *, context_window: int,
               configured: Sequence[str] = ()) -> TuneSpec:
    """The ``[tune]`` table, checked whole before anything runs (one line per mistake, naming the
    key). `configured`: the presets of the spec's own ``[[configs]]`` (used as the presets to tune
    when neither ``presets`` nor ``[tune.params]`` names any)."""
    table = raw.get("tune")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: no [tune] table (expected the search space, objective and budget: "
                          "docs/tuning.md)")
    unknown = sorted(set(table) - _TUNE_KEYS)
    if unknown:
        raise _fail(path, unknown[0], f"one of {', '.join(sorted(_TUNE_KEYS))} (unknown key)")
    params = table.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise _fail(path, "params", "tables [tune.params.PRESET]", params)
    names = table.get("presets")
    if names is None:
        names = list(params) or [p for p in configured if p in _DEFAULT_DIMS]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise _fail(path, "presets", "a non-empty list of preset names", names)
    for n in [*names, *params]:
        if n not in presets.names() or presets.get(n).baseline:
            summarizing = ", ".join(p for p in presets.names() if not presets.get(p).baseline)
            raise _fail(path, "presets", f"summarizing presets ({summarizing})", n)
    spaces: list[PresetSpace] = []
    for preset in dict.fromkeys([*names, *params]):
        own = params.get(preset)
        if own is None:
            spaces.append(default_space(preset, context_window))
            continue
        dims = tuple(_dim(path, preset, k, v) for k, v in own.items() if isinstance(v, dict))
        fixed = {k: v for k, v in own.items() if not isinstance(v, dict)}
        if not dims:
            raise _fail(path, f"params.{preset}", "at least one searched parameter ({ low, high } or { choices })")
        _check_values(path, preset, dims, fixed)
        spaces.append(PresetSpace(preset, dims, fixed))
    objective = table.get("objective", "gain")
    if objective not in OBJECTIVES:
        raise _fail(path, "objective", " or ".join(repr(o) for o in OBJECTIVES), objective)
    cons = table.get("constraints", {})
    if not isinstance(cons, dict) or set(cons) - _CONSTRAINT_KEYS:
        raise _fail(path, "constraints", f"a table with {', '.join(sorted(_CONSTRAINT_KEYS))}", cons)
    for k, v in cons.items():
        if check_number(v, integer=False, range=Range(0, low_open=True)) is not None:
            raise _fail(path, f"constraints.{k}", "a positive number", v)
    max_units = table.get("max_units")
    if max_units is not None:
        max_units = _positive_int(path, table, "max_units", 1)
    seed = table.get("seed", 0)
    if check_number(seed, integer=True) is not None:
        raise _fail(path, "seed", "an integer", seed)
    return TuneSpec(spaces=tuple(spaces), objective=objective, trials=_positive_int(path, table, "trials",
                                                                                    DEFAULT_TRIALS),
                    seed=int(seed), min_conversations=_positive_int(path, table, "min_conversations", 2),
                    reduction_factor=_positive_int(path, table, "reduction_factor", 2, minimum=2),
                    constraints=Constraints(**{k: float(v) for k, v in cons.items()}),
                    max_units=max_units, top=_positive_int(path, table, "top", DEFAULT_TOP))


__all__ = ["CATEGORICAL_KEYS", "Constraints", "Dim", "PresetSpace", "TuneSpec", "default_space", "parse_tune"]
