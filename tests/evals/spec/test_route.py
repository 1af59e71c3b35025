"""A parameter's route from a spec to the engine (issue #20, item 6; docs/architecture.md, "A
parameter's route"): checked and made into the library's typed configuration once, when the spec
is expanded; carried to the engine as that object; JSON only for the Unit's record, id and cache
key, and a Unit read back from JSON decodes to an equal object."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from rollsum_evals.replay.seam import default_engine
from rollsum_evals.run.sweep import replay_cache_key
from rollsum_evals.spec.expand import expand
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.units import Unit, replay_identity

from rollsum import RollingSummarizer, params, presets
from rollsum.errors import ConfigError
from rollsum.policies import SinceLast

SPEC = """
name = "route"
models = ["extractive"]
context_window = [4000, 8000]
seeds = [0]

[[datasets]]
name = "d"
source = "synth:chat?conversations=1&messages=30&seed=1"

[[configs]]
preset = "since-last"
params = { keep_last = 4, timestamps = "none" }
grid = { messages_per_summary = [10, 20] }

[[configs]]
preset = "token-ratio"
params = { trigger_ratio = 0.75, context_window = 6000 }

[[configs]]
preset = "budget-rule-based"
params = { max_summary_tokens = 300, summarizer_params = { merge = "append" }, summarizer = "extractive" }
"""


def _units(text: str = SPEC) -> list[Unit]:
    spec = parse_spec(text, "route.toml")
    return expand(spec, {d.name: ("h", ["c1"]) for d in spec.datasets})


def test_each_unit_carries_its_configuration_typed_and_equal_to_the_one_decoded_from_its_json() -> None:
    units = _units()
    assert len(units) == 2 * 2 + 1 + 2  # since-last: 2 grid points x 2 windows; token-ratio its own window
    for u in units:
        assert u.configuration is not None
        back = Unit.from_dict(json.loads(json.dumps(u.to_dict())))  # the journal's / the cache's copy
        assert back.configuration is None
        assert back.preset_config() == u.configuration, u.config
    since = [u for u in units if u.preset == "since-last"]
    for u in since:
        assert u.configuration is not None and isinstance(u.configuration.policy, SinceLast)
        assert u.configuration.policy.keep_last == 4
        assert u.configuration.settings.context_window == u.context_window  # each window's own
        assert u.configuration.policy.messages_per_summary == u.params["messages_per_summary"]
    (ratio,) = [u for u in units if u.preset == "token-ratio"]
    assert ratio.configuration is not None and ratio.configuration.settings.context_window == 6000


def test_units_of_one_configuration_share_one_typed_value() -> None:
    """Made once per configuration, not per Unit (conversations x seeds)."""
    spec = parse_spec(SPEC.replace("seeds = [0]", "seeds = [0, 1]"), "route.toml")
    units = expand(spec, {"d": ("h", ["c1", "c2", "c3"])})
    by_config: dict[str, set[int]] = {}
    for u in units:
        by_config.setdefault(u.config, set()).add(id(u.configuration))
    assert all(len(ids) == 1 for ids in by_config.values())
    assert len({next(iter(ids)) for ids in by_config.values()}) == len(by_config)


def test_the_typed_value_is_in_neither_the_units_record_nor_its_id_nor_its_cache_key() -> None:
    """Unit ids and Unit-cache keys are what they were before the Unit carried a typed value (a
    changed key would make every user's Unit cache miss)."""
    for u in _units():
        plain = dataclasses.replace(u, configuration=None)
        assert u == plain and hash(u) == hash(plain)
        assert set(u.to_dict()) == {f.name for f in dataclasses.fields(Unit)} - {"configuration"}
        assert replay_cache_key(u, "code") == replay_cache_key(plain, "code")
        assert u.unit_id == replay_identity(u.dataset, u.conversation_id, u.dataset_hash, u.preset, u.params,
                                            u.prompt, u.model, u.seed, u.context_window)


def test_a_replay_neither_checks_nor_parses_the_parameters_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between spec and engine nothing re-checks a value (no `rollsum.params` check, no policy
    or settings made again) and nothing reads the Unit's JSON."""
    units = [u for u in _units() if u.preset == "since-last"]
    expected = {u.unit_id: default_engine(u, None, lambda _e: None).config() for u in units}
    checks: list[str] = []
    real = params.type_problem

    def counting(name: str, value: Any, annotation: Any) -> str | None:
        checks.append(name)
        return real(name, value, annotation)

    def no_json(self: Unit) -> dict[str, Any]:
        raise AssertionError("the Unit's params JSON was read on the way to the engine")

    monkeypatch.setattr(params, "type_problem", counting)
    monkeypatch.setattr(Unit, "params", property(no_json))
    for u in units:
        engine = default_engine(u, None, lambda _e: None)
        assert isinstance(engine, RollingSummarizer) and u.configuration is not None
        assert engine.policy is u.configuration.policy and engine.settings is u.configuration.settings
        assert engine.config() == expected[u.unit_id]
    assert checks == []


def test_a_unit_read_back_from_json_builds_the_same_engine() -> None:
    for u in _units():
        back = Unit.from_dict(u.to_dict())
        a = default_engine(u, None, lambda _e: None)
        b = default_engine(back, None, lambda _e: None)
        assert a.config() == b.config(), u.config


def test_a_combination_no_value_alone_breaks_is_refused_at_expansion_naming_spec_and_config() -> None:
    """Each value passes the spec's check; the grid's combination does not: one line with the
    spec and the configuration before anything runs, not a failure per Unit."""
    text = SPEC.replace('params = { trigger_ratio = 0.75, context_window = 6000 }',
                        'params = { context_window = 6000 }\ngrid = { reset_ratio = [0.5, 0.9] }')
    spec = parse_spec(text, "route.toml")  # every value alone is in its range
    with pytest.raises(ConfigError) as err:
        expand(spec, {"d": ("h", ["c1"])})
    message = str(err.value)
    label = "token-ratio[context_window=6000,reset_ratio=0.9]"
    assert message.startswith(f"route.toml: config '{label}': preset token-ratio: ")
    assert "reset_ratio < trigger_ratio" in message and "\n" not in message


def test_the_engine_from_the_typed_value_is_the_one_from_preset_builds() -> None:
    """`make(resolve(...))` is `from_preset`: the harness's route and a library caller's agree."""
    for u in _units():
        assert u.configuration is not None
        overrides = {k: v for k, v in u.params.items() if k != "timestamps"}
        overrides.setdefault("context_window", u.context_window)
        direct = RollingSummarizer.from_preset(u.preset, None, **overrides)
        made = presets.make(RollingSummarizer, u.configuration)
        assert made.config() == direct.config(), u.config
