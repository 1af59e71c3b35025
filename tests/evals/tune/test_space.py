"""The [tune] table: parsed whole, one line per mistake; default spaces; the equivalent grid."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from rollsum_evals.bundled import bundled_specs
from rollsum_evals.tune.space import Dim, default_space, parse_tune

from rollsum.errors import ConfigError
from rollsum.params import RANGES


def _tune(table: dict[str, Any], **kw: Any) -> Any:
    return parse_tune({"tune": table}, "spec.toml", context_window=8000, **kw)


def test_the_bundled_tune_spec_stands_for_a_grid_of_at_least_200_configurations() -> None:
    raw = tomllib.loads(bundled_specs()["tune"].read_text(encoding="utf-8"))
    tune = parse_tune(raw, "tune.toml", context_window=8000)
    assert {s.preset for s in tune.spaces} == {"since-last", "token-ratio", "evict-window"}
    assert tune.grid_configs() == 15 * 12 + 8 * 10 + 4 * 10
    assert tune.space("token-ratio").fixed == {"reset_ratio": 0.5}


@pytest.mark.parametrize(("table", "needle"), [
    ({"params": {"since-last": {"keep_last": {"low": 10, "high": 2}}}}, "low < high"),
    ({"params": {"since-last": {"keep_last": {"low": -1, "high": 2}}}}, "keep_last.low"),
    ({"params": {"since-last": {"keep_last": {"low": 1, "high": 5, "step": 9}}}}, "step"),
    ({"params": {"since-last": {"keep_last": {"low": 1, "high": 5, "log": True, "step": 1}}}}, "log = true"),
    ({"params": {"since-last": {"keep_last": {"choices": [1, 2], "low": 1}}}}, "not both"),
    ({"params": {"since-last": {"keep_last": {"choices": []}}}}, "non-empty"),
    ({"params": {"since-last": {"keep_last": {"lo": 1}}}}, "unknown: lo"),
    ({"params": {"truncate": {"keep": {"low": 1, "high": 5}}}}, "summarizing presets"),
    ({"params": {"since-last": {"prompt": {"low": 1, "high": 2}}}}, "choices"),
    ({"objective": "fast"}, "objective"),
    ({"trials": 0}, "trials"),
    ({"reduction_factor": 1}, "reduction_factor"),
    ({"constraints": {"max_tokens_per_call": -5}}, "constraints.max_tokens_per_call"),
    ({"constraints": {"tokens": 5}}, "constraints"),
    ({"budget": 5}, "unknown key"),
    # each of these failed every trial in turn: "best: none (no feasible trial)", exit 0
    ({"params": {"since-last": {"keep_lst": {"low": 2, "high": 10}}}}, "did you mean 'keep_last'?"),
    ({"params": {"since-last": {"keep_last": {"low": 2, "high": 10}, "fallback": "nope"}}},
     "params.since-last.fallback: expected 'extractive' or None, got 'nope'"),
    ({"params": {"since-last": {"keep_last": {"low": 2, "high": 10, "step": 2.5}}}},
     "params.since-last.keep_last.low: expected an integer >= 0 (a float step"),
    ({"params": {"since-last": {"keep_last": {"choices": [2, "x"]}}}}, "keep_last.choices: expected an integer"),
    ({"params": {"since-last": {"keep_last": {"low": 2, "high": 10}, "timestamps": "daily"}}}, "timestamps"),
])
def test_a_mistake_in_the_tune_table_is_one_line_naming_the_key(table: dict[str, Any], needle: str) -> None:
    table.setdefault("presets", ["since-last"])
    with pytest.raises(ConfigError) as err:
        _tune(table)
    text = str(err.value)
    assert needle in text and "spec.toml: [tune]" in text and "\n" not in text


def test_without_a_tune_table_the_error_says_what_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"no \[tune\] table"):
        parse_tune({}, "x.toml", context_window=8000)


def test_a_preset_without_a_space_gets_its_default_one_inside_the_library_ranges() -> None:
    tune = _tune({"presets": ["since-last", "token-ratio", "count-and-tokens"]})
    for space in tune.spaces:
        assert space.dims, space.preset
        for d in space.dims:
            rng = RANGES.get(d.name)
            assert d.low < d.high
            if rng is not None:
                assert d.low in rng and d.high in rng, d
    tokens = tune.space("count-and-tokens").dims[0]
    assert tokens.name == "token_threshold" and tokens.log and tokens.high == 8000
    ratio = tune.space("token-ratio").dims[0]
    assert ratio.kind == "float" and 0 < ratio.low < 0.8 < ratio.high < 1


def test_presets_default_to_the_spec_configs_that_can_be_tuned() -> None:
    tune = _tune({}, configured=["truncate", "since-last", "full-context"])
    assert [s.preset for s in tune.spaces] == ["since-last"]
    with pytest.raises(ConfigError, match="no default search space"):
        default_space("truncate", 8000)


def test_equivalent_grid_values_follow_the_step_or_count_a_fixed_number_of_points() -> None:
    assert Dim("k", "int", low=2, high=30, step=2).values() == list(range(2, 31, 2))
    assert Dim("r", "float", low=0.6, high=0.95, step=0.05).grid_values() == 8
    assert Dim("r", "float", low=0.5, high=0.9).grid_values() == 5
    logs = Dim("t", "int", low=250, high=8000, log=True).values()
    assert logs[0] == 250 and logs[-1] == 8000 and len(logs) == 5  # geometric points, not every integer
    assert Dim("k", "int", low=2, high=5).grid_values() == 4  # no step: every integer
    assert Dim("p", "categorical", choices=("a", "b")).values() == ["a", "b"]
