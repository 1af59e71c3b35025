from __future__ import annotations

import pytest

from evals.spec import expand, parse_spec, variants
from rollsum.errors import ConfigError

SPEC = """
name = "t"
models = ["extractive"]
context_window = 4000
seeds = [0, 1]

[[datasets]]
name = "d"
source = "synth:chat?conversations=2&messages=40&seed=1"

[[datasets]]
name = "lc"
source = "@locomo"

[[configs]]
preset = "since-last"
grid = { keep_last = [2, 5] }

[[configs]]
preset = "full-context"
"""

VERSIONS = {"answer_retention": "1", "fact_survival": "1", "cost": "1"}


def _units(text: str = SPEC, **kw: object) -> list:
    spec = parse_spec(text, "t.toml", **kw)  # type: ignore[arg-type]
    return expand(spec, {d.name: ("h", ["c1", "c2"]) for d in spec.datasets}, VERSIONS)


def test_grid_expands_to_labelled_units_per_conversation_and_seed() -> None:
    units = _units()
    assert len(units) == 3 * 2 * 2  # (2 grid points + baseline) x conversations x seeds
    assert {u.config for u in units} == {"since-last[keep_last=2]", "since-last[keep_last=5]",
                                         "full-context"}
    assert all(u.context_window == 4000 for u in units)


def test_unit_ids_are_stable_and_change_with_what_defines_a_unit() -> None:
    a, b = _units(), _units()
    assert [u.unit_id for u in a] == [u.unit_id for u in b]
    changed = _units(SPEC.replace("context_window = 4000", "context_window = 5000"))
    assert not {u.unit_id for u in a} & {u.unit_id for u in changed}
    v2 = expand(parse_spec(SPEC, "t.toml"), {"d": ("h", ["c1", "c2"])},
                {**VERSIONS, "cost": "2"})
    assert not {u.unit_id for u in a} & {u.unit_id for u in v2}


def test_locomo_dataset_is_included_only_with_a_path() -> None:
    assert {u.dataset for u in _units()} == {"d"}
    assert {u.dataset for u in _units(locomo="/x/locomo10.json")} == {"d", "lc"}


def test_model_override_replaces_models_and_labels_stay_unique() -> None:
    text = SPEC.replace('models = ["extractive"]', 'models = ["extractive", "fake:mode=extractive"]')
    labels = [v.label for v in variants(parse_spec(text, "t.toml"))]
    assert len(labels) == len(set(labels)) == 5
    units = _units(text, model_override="fake:mode=extractive")
    assert {u.model for u in units if u.preset == "since-last"} == {"fake:mode=extractive"}
    # baselines never call a model, so they are not multiplied by models
    assert {u.model for u in units if u.preset == "full-context"} == {"extractive"}


@pytest.mark.parametrize(("text", "needle"), [
    (SPEC.replace("seeds = [0, 1]", "seeds = [0, 1]\ncolour = 3"), "t.toml:6: field 'colour'"),
    (SPEC.replace('preset = "full-context"', 'preset = 3'), "configs[1].preset"),
    (SPEC.replace("context_window = 4000", "context_window = -1"), "t.toml:4: field 'context_window'"),
    (SPEC + '\n[probes]\nask = "sometimes"\n', "probes.ask"),
    (SPEC.replace('"synth:chat?conversations=2&messages=40&seed=1"', "7"), "datasets[0].source"),
    ('scorers = ["vibes"]\n' + SPEC, "scorers[0]"),
    ("name = [", "not valid TOML"),
])
def test_mistakes_name_file_line_and_field(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        _units(text)
    assert needle in str(err.value)
