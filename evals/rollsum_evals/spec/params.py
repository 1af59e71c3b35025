"""A preset config's parameters, checked once, when the spec is read.

Every value a config gives a parameter (in ``params``, a ``grid`` or ``--set``) goes through the
library's own check (`rollsum.presets.param_problem`: the owner's type and the range of
`rollsum.params`), so a spec and `RollingSummarizer.from_preset` refuse the same values with the
same words, and a mistake is one line at the config's key before anything runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from rollsum import presets
from rollsum.errors import ConfigError
from rollsum.params import WIRING
from rollsum.settings import EngineSettings
from rollsum_evals.spec.configs import nth
from rollsum_evals.spec.where import Where

_SUMMARY_BOUNDS = ("min_summary_tokens", "max_summary_tokens")
_ENGINE_DEFAULTS = EngineSettings()


def _summary_bounds(preset: str, params: Mapping[str, Any], grid: Mapping[str, tuple[Any, ...]]
                    ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Every value each bound takes in this config: its own, the preset's, else the engine's."""
    out = []
    for key in _SUMMARY_BOUNDS:
        if key in params:
            out.append((params[key],))
        elif key in grid:
            out.append(tuple(grid[key]))
        elif key in presets.get(preset).engine:
            out.append((presets.get(preset).engine[key],))
        else:
            out.append((getattr(_ENGINE_DEFAULTS, key),))
    return out[0], out[1]


def configurable(policy: str) -> list[str]:
    """The parameters a configuration of a preset with trigger `policy` may set (its valid
    parameters but the wiring, which the harness sets for every replay)."""
    from rollsum import policies

    return [k for k in presets.valid_params(policies.get(policy)) if k not in WIRING]


def not_a_parameter(preset: str, key: str, valid: Sequence[str]) -> str:
    """What was expected instead of `key`: one of `valid`, with the nearest spelling when one
    is close ("keep_lst" → 'keep_last'). One wording for a sweep spec and a tune's space."""
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.75)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"a parameter of preset {preset} (one of {', '.join(valid)}{hint})"


def check_params(w: Where, configs: Sequence[Mapping[str, Any]], i: int, preset: str, params: Mapping[str, Any],
                  grid: Mapping[str, tuple[Any, ...]], set_by: Mapping[tuple[int, str], str]) -> None:
    """Every value a preset config gives a parameter, checked before anything runs by the
    library's own check (`rollsum.presets.param_problem`: the owners' types, the range), so a
    spec and `from_preset` refuse the same values with the same words."""
    from rollsum import policies

    def fail(key: str, where: str, expected: str, got: Any = None) -> ConfigError:
        origin = set_by.get((i, key))
        if origin is not None:  # the value came from the command line, not the file
            return ConfigError(f"--set {origin}: expected {expected}" + ("" if got is None else f", got {got!r}"))
        return w.error(f"configs[{i}].{where}.{key}", expected, got, key=where, occurrence=nth(configs, i, where))

    values = [("params", k, (x,)) for k, x in params.items()] + [("grid", k, xs) for k, xs in grid.items()]
    chosen = [x for where, k, xs in values if k == "policy" for x in xs] or [presets.get(preset).policy]
    for where, key, xs in values:
        if key == "policy":
            for x in xs:
                if not isinstance(x, str) or x not in policies.POLICIES:
                    raise fail(key, where, f"a policy name, one of {', '.join(policies.POLICIES)}", x)
    for where, key, xs in values:
        if key == "timestamps":  # how the context shows times: the replay's, not the engine's
            from rollsum.context import TIMESTAMPS

            for x in xs:
                if x not in TIMESTAMPS:
                    raise fail(key, where, f"one of {', '.join(TIMESTAMPS)}", x)
            continue
        if key in WIRING:
            raise fail(key, where, f"a setting of the configuration, not '{key}' (it connects the engine to its "
                       "surroundings: the harness sets it for every replay)")
        for policy in chosen:
            valid = configurable(policy)
            if key not in valid:
                raise fail(key, where, not_a_parameter(preset, key, valid), key)
            for x in xs:
                found = presets.param_problem(preset, key, x, policy=policy)
                if found is not None:
                    raise fail(key, where, found, x)
    if any(k in _SUMMARY_BOUNDS for _where, k, _xs in values):  # each valid alone; together?
        lows, highs = _summary_bounds(preset, params, grid)
        for hi in highs:
            for lo in lows:
                if hi < lo:
                    where = "params" if "max_summary_tokens" in params else "grid"
                    if "max_summary_tokens" not in params and "max_summary_tokens" not in grid:
                        raise fail("min_summary_tokens", "params" if "min_summary_tokens" in params else "grid",
                                   f"a value <= max_summary_tokens ({hi})", lo)
                    raise fail("max_summary_tokens", where, f"a value >= min_summary_tokens ({lo})", hi)
