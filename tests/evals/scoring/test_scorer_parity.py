"""The scorers give the same numbers after the replay → trace → score refactor as before it.

`fixtures/pre_refactor_scores.json` holds every Unit and probe column of a small sweep, computed
by the code before the refactor (scores observed during the replay) with the stand-in engine
and QA model of `tests/evals/stand_in.py`, which do not move when the library's presets do.
The same sweep now replays into traces and scores them afterwards; every number must match.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals.run import run_sweep
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.spec.schema import SweepSpec

from tests.evals.stand_in import QA_SPEC, stand_in_engine, stand_in_models, write_parity_dataset

HERE = Path(__file__).resolve().parent
PINNED = HERE / "fixtures" / "pre_refactor_scores.json"
LOCOMO_TINY = HERE.parent / "data" / "fixtures" / "locomo_tiny.json"


def parity_spec(refs: Path) -> str:
    return f'''
name = "parity"
scorers = ["answer_retention", "fact_survival", "cost", "rouge", "qa"]
models = ["fake:summarizer"]
cache = "off"
[qa]
model = "{QA_SPEC}"
judge = true
[probes]
ages = [3, 10, 30]
end = true
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=120&seed=3&facts=8"
[[datasets]]
name = "agent"
source = "synth:agent?conversations=1&messages=70&seed=4&agent_probes=0"   # pinned before issue #23's probes
[[datasets]]
name = "refs"
source = "{refs}"
[[datasets]]
name = "tiny"
source = "{LOCOMO_TINY}"
format = "locomo"
[[configs]]
preset = "full-context"
[[configs]]
preset = "truncate"
[[configs]]
preset = "since-last"
[[configs]]
preset = "token-ratio"
[[configs]]
preset = "count-and-tokens"
[[configs]]
preset = "evict-window"
[[configs]]
preset = "budget-rule-based"
'''


STAND_IN_PARAMS: dict[str, dict[str, int]] = {
    "truncate": {"keep": 9}, "since-last": {"keep": 6, "every": 8}, "token-ratio": {"keep": 4, "every": 5},
    "count-and-tokens": {"keep": 2, "every": 3}, "evict-window": {"keep": 5, "every": 6, "head": 2},
    "budget-rule-based": {"keep": 5, "every": 6}}
"""The stand-in engine's own parameters (`tests/evals/stand_in.py`), not the presets': given to
the parsed spec past the parser, which refuses a parameter a preset does not have."""


def _with_stand_in_params(spec: SweepSpec) -> SweepSpec:
    return dataclasses.replace(spec, configs=tuple(dataclasses.replace(c, params=STAND_IN_PARAMS.get(c.preset, {}))
                                                   for c in spec.configs))


def _clean(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


RENAMED = {"retained": "retained_containment"}
"""answer_retention v3 judges *support*; its v2 containment check lives on under this name."""
CHANGED_METHOD = frozenset({"retention", "relative_retention", "stale_rate", "stale", "in_summary",
                            "in_verbatim", "baseline_retained"})
"""answer_retention v2 numbers that v3 computes differently (tested in test_answer_retention.py)."""
QA_V2_CHANGED = frozenset({"judge_input_tokens", "judge_output_tokens", "cost_judge_usd"})
"""qa v2 also asks the judge its negative controls: more judge tokens (tested in test_qa.py)."""


def test_every_scorer_gives_the_pre_refactor_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the stand-in's parameters are no preset's: no Unit gets the presets' typed configuration
    # (`spec.expand` makes one per preset config and would refuse them, as the parser does)
    monkeypatch.setattr("rollsum_evals.spec.expand._configuration", lambda _spec, _var: None)
    refs = tmp_path / "parity.jsonl"
    write_parity_dataset(refs)
    spec = _with_stand_in_params(parse_spec(parity_spec(refs), "parity.toml"))
    result = run_sweep(spec, tmp_path / "run", engine_factory=stand_in_engine, models=stand_in_models,
                       progress=False)
    assert result.errors == 0
    pinned = json.loads(PINNED.read_text())
    run = rollsum_evals.load_run(tmp_path / "run")
    units = {f"{r['config']}|{r['conversation_id']}": [_clean(r[RENAMED.get(c, c)]) for c in pinned["unit_columns"]]
             for r in run.units.to_dict("records")}
    probes = {f"{r['config']}|{r['conversation_id']}|{r['probe_id']}|{r['asked_turn']}":
              [_clean(r[RENAMED.get(c, c)]) for c in pinned["probe_columns"]] for r in run.probes.to_dict("records")}
    assert set(units) == set(pinned["units"]) and set(probes) == set(pinned["probes"])
    for table, got, cols in (("units", units, pinned["unit_columns"]), ("probes", probes, pinned["probe_columns"])):
        for key, want in pinned[table].items():
            diff = {c: (w, g) for c, w, g in zip(cols, want, got[key])
                    if w != g and c not in CHANGED_METHOD | QA_V2_CHANGED}  # exact, floats too
            assert not diff, f"{table} {key}: {diff}"
    # the fixture exercises what it claims to: every scorer moved a number somewhere
    assert any(v[pinned["unit_columns"].index("rouge_l")] is not None for v in pinned["units"].values())
    assert any(v[pinned["unit_columns"].index("judge_accuracy")] for v in pinned["units"].values())
    assert any(v[pinned["unit_columns"].index("n_failures")] for v in pinned["units"].values())
