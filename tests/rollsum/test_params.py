"""Preset parameters are checked as numbers, by their owners' types and one range table
(`rollsum.params`), before anything is built: the library refuses what a sweep spec refuses."""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import RollingSummarizer, policies, presets
from rollsum.errors import ConfigError
from rollsum.params import MAX_INT, RANGES, WIRING, Range, check_number, type_problem


@pytest.mark.parametrize(("preset", "key", "value", "expected"), [
    ("since-last", "keep_last", True, "an integer >= 0"),
    ("since-last", "keep_last", 2.5, "an integer >= 0"),
    ("since-last", "keep_last", math.inf, "an integer >= 0"),
    ("since-last", "keep_last", math.nan, "an integer >= 0"),
    ("since-last", "keep_last", -1, "an integer >= 0"),
    ("since-last", "keep_last", "10", "an integer >= 0"),
    ("since-last", "max_passes", 0, "an integer >= 1"),
    ("evict-window", "head", -3, "an integer >= 0"),
    ("evict-window", "tail", -2, "an integer >= 0"),
    ("token-ratio", "trigger_ratio", math.nan, "a number > 0"),
    ("token-ratio", "trigger_ratio", False, "a number > 0"),
    ("since-last", "summary_share", math.inf, "a number in (0, 1]"),
    ("budget-rule-based", "max_context_tokens", True, "an integer >= 1 or None"),
    ("since-last", "ledger", "sometimes", "one of 'auto', 'pin', 'retry', 'off'"),
    ("since-last", "counter", "words", "a TokenCounter or None"),
    ("since-last", "clock", 5, "a callable"),
    ("since-last", "context_format", "fancy", "one of bracketed-assistant"),
    ("since-last", "fallback", "prompted", "'extractive' or None"),
    ("truncate", "keep", MAX_INT + 1, f"an integer >= 1 (at most {MAX_INT:,})"),
])
def test_from_preset_refuses_a_value_its_owners_cannot_take(preset: str, key: str, value: Any,
                                                             expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        RollingSummarizer.from_preset(preset, **{key: value})
    assert str(err.value).startswith(f"preset {preset}: {key}: expected {expected}")
    assert str(err.value).endswith(f", got {value!r}")


def test_the_engine_identity_is_not_an_override() -> None:
    """`from_preset` sets `preset` itself: passing it was a TypeError (two values) before."""
    with pytest.raises(ConfigError, match="unknown parameter 'preset'"):
        RollingSummarizer.from_preset("since-last", preset="x")


def test_objects_a_library_caller_wires_in_are_still_accepted() -> None:
    events: list[Any] = []
    rs = RollingSummarizer.from_preset("since-last", on_event=events.append, store="memory", keep_last=0,
                                       context_window=4096, max_request_tokens=None)
    assert policies.policy_params(rs.policy)["keep_last"] == 0 and rs.context_window == 4096


def _numeric_params() -> list[tuple[str, str, Any]]:
    """(preset, parameter, annotation) for every numeric parameter any preset routes."""
    out = []
    for name, preset in presets.PRESETS.items():
        for key in presets.valid_params(policies.get(preset.policy)):
            if key in WIRING or key in presets.CHOICE_PARAMS:
                continue
            for owner in presets.owners(key, policies.get(preset.policy)):
                hints = typing.get_type_hints(owner) if dataclasses.is_dataclass(owner) else \
                    typing.get_type_hints(owner.__init__)
                arms = typing.get_args(hints[key]) or (hints[key],)
                if int in arms or float in arms:
                    out.append((name, key, hints[key]))
                    break
    return out


NUMERIC = _numeric_params()


def test_every_numeric_parameter_has_a_range() -> None:
    """A new numeric parameter without an entry in `RANGES` would only be type-checked."""
    assert NUMERIC
    assert sorted({k for _, k, _ in NUMERIC} - set(RANGES)) == []


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(NUMERIC),
       bad=st.one_of(st.booleans(), st.just(math.nan), st.just(math.inf), st.just(-math.inf),
                     st.text(max_size=3), st.integers(min_value=MAX_INT + 1)))
def test_no_numeric_parameter_takes_a_bool_nan_inf_text_or_a_huge_integer(case: tuple[str, str, Any],
                                                                          bad: Any) -> None:
    preset, key, _ = case
    with pytest.raises(ConfigError, match=re.escape(f"preset {preset}: {key}: expected ")):
        RollingSummarizer.from_preset(preset, **{key: bad})


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(NUMERIC), data=st.data())
def test_a_value_in_range_passes_the_check(case: tuple[str, str, Any], data: st.DataObject) -> None:
    """The check refuses only what is out of type or range (cross-parameter rules, such as
    reset_ratio < trigger_ratio, are the components' own)."""
    preset, key, annotation = case
    rng = RANGES[key]
    integer = float not in (typing.get_args(annotation) or (annotation,))
    low = rng.low if rng.low is not None else -1e6
    high = rng.high if rng.high is not None else 1e6
    if integer:
        value: float = data.draw(st.integers(min_value=math.ceil(low) + (1 if rng.low_open else 0),
                                             max_value=math.floor(high) - (1 if rng.high_open else 0)))
    else:
        value = data.draw(st.floats(min_value=low, max_value=high, exclude_min=rng.low_open,
                                    exclude_max=rng.high_open, allow_nan=False))
    assert presets.param_problem(preset, key, value) is None


def test_check_number_is_the_one_wording() -> None:
    assert check_number(3, integer=True, range=Range(1)) is None
    assert check_number(True, integer=True, range=Range(1)) == "an integer >= 1"
    assert check_number(2.0, integer=True) == "an integer"
    assert check_number(0.5, integer=False, range=Range(0, 1, low_open=True)) is None
    assert check_number(0, integer=False, range=Range(0, 1, low_open=True)) == "a number in (0, 1]"
    assert check_number(math.nan, integer=False, what="a number of dollars >= 0") == "a number of dollars >= 0"
    assert type_problem("keep_last", None, int | None) is None


# ----------------------------------------------------------------------------------------------
# one validation function, one range table (issue #20, item 6)


def _numeric_fields(cls: type) -> list[str]:
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls)
            if f.init and f.name in RANGES and (int in typing.get_args(hints[f.name]) or hints[f.name] in (int, float))]


@pytest.mark.parametrize("cls", list(policies.POLICIES.values()), ids=lambda c: c.name)
def test_a_policy_built_by_hand_refuses_what_a_preset_refuses(cls: type) -> None:
    """A library user constructing a policy directly gets the same check, in the same words, as
    `from_preset` and a sweep spec: below its range, a bool, NaN."""
    for name in _numeric_fields(cls):
        low = RANGES[name].low
        assert low is not None, name
        for bad in (low - 1, True, math.nan):
            with pytest.raises(ConfigError) as err:
                cls(**{name: bad})
            assert isinstance(err.value, ValueError)  # what the policies raised before: callers keep working
            assert str(err.value).startswith(f"{name}: expected "), str(err.value)


def test_policies_and_settings_read_the_one_range_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Narrowing a range in `rollsum.params.RANGES` narrows it for a policy built by hand, the
    engine's settings and a preset's (or spec's) check alike: no owner keeps a copy of it."""
    from rollsum.settings import EngineSettings

    policies.SinceLast(keep_last=4)
    EngineSettings(max_passes=4)
    monkeypatch.setitem(RANGES, "keep_last", Range(5))
    monkeypatch.setitem(RANGES, "max_passes", Range(10))
    with pytest.raises(ConfigError, match="keep_last: expected an integer >= 5, got 4"):
        policies.SinceLast(keep_last=4)
    with pytest.raises(ConfigError, match="max_passes: expected an integer >= 10, got 4"):
        EngineSettings(max_passes=4)
    assert presets.param_problem("since-last", "keep_last", 4) == "an integer >= 5"
    with pytest.raises(ConfigError, match="preset since-last: keep_last: expected an integer >= 5, got 4"):
        RollingSummarizer.from_preset("since-last", keep_last=4)


def test_an_engine_made_from_a_resolved_configuration_checks_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """`presets.resolve` checks (the typed objects it makes check themselves); `presets.make`
    hands the policy and the settings to the engine as they are: many engines from one
    configuration, one check."""
    import rollsum.params as params_module

    config = presets.resolve("since-last", keep_last=4, context_window=8000)
    calls: list[str] = []
    real = params_module.type_problem

    def counting(name: str, value: Any, annotation: Any) -> str | None:
        calls.append(name)
        return real(name, value, annotation)

    monkeypatch.setattr(params_module, "type_problem", counting)
    for _ in range(3):
        engine = presets.make(RollingSummarizer, config)
        assert engine.policy is config.policy and engine.settings is config.settings
    assert calls == []
    presets.resolve("since-last", keep_last=4, context_window=8000)
    assert calls  # the check does go through `type_problem`: the count above is meaningful


def test_resolve_refuses_wiring_and_make_takes_it() -> None:
    with pytest.raises(ConfigError, match="conversation_id connect"):
        presets.resolve("since-last", conversation_id="c1")
    engine = presets.make(RollingSummarizer, presets.resolve("since-last"), conversation_id="c1")
    assert engine.conversation_id == "c1"
