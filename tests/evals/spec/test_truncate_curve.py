"""Issue #18 item 5: every sweep carries a truncate grid (the curve gain is measured against)
unless the spec has its own or turns it off, and `[report] budgets` is checked like any field."""

from __future__ import annotations

import re

import pytest
from rollsum_evals.gain import CURVE_KEEPS, CURVE_LABEL
from rollsum_evals.spec.expand import variants
from rollsum_evals.spec.parse import parse_spec

from rollsum.errors import ConfigError

HEAD = """
name = "t"
context_window = 4000

[[datasets]]
name = "d"
source = "synth:chat?conversations=2&messages=40&seed=1"

[[configs]]
preset = "since-last"
"""


@pytest.fixture(autouse=True)
def _curve_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROLLSUM_TRUNCATE_CURVE", raising=False)  # the default users get


def _labels(text: str) -> list[str]:
    return [v.label for v in variants(parse_spec(text, "t.toml"))]


def test_a_sweep_gets_a_truncate_curve_capped_at_its_window() -> None:
    spec = parse_spec(HEAD, "t.toml")
    curve = [v for v in variants(spec) if v.label.startswith(CURVE_LABEL)]
    assert [v.label for v in curve] == [f"{CURVE_LABEL}[keep={k}]" for k in CURVE_KEEPS]
    assert all(v.preset == "truncate" and v.params["max_tokens"] == 4000 for v in curve)
    assert spec.budgets == ()


def test_the_specs_own_truncate_grid_is_the_curve() -> None:
    labels = _labels(HEAD + '[[configs]]\npreset = "truncate"\ngrid = { keep = [5, 10, 20] }\n')
    assert not any(label.startswith(CURVE_LABEL) for label in labels)
    # one truncate point is not a curve: the grid is still added
    labels = _labels(HEAD + '[[configs]]\npreset = "truncate"\n')
    assert "truncate" in labels and any(label.startswith(CURVE_LABEL) for label in labels)


def test_the_environment_switch_only_changes_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLSUM_TRUNCATE_CURVE", "0")
    assert not any(label.startswith(CURVE_LABEL) for label in _labels(HEAD))
    assert any(label.startswith(CURVE_LABEL) for label in _labels(HEAD + "[report]\ntruncate_curve = true\n"))


def test_the_curve_can_be_turned_off_and_budgets_are_read() -> None:
    spec = parse_spec(HEAD + "[report]\ntruncate_curve = false\nbudgets = [4000, 2000]\n", "t.toml")
    assert not any(v.label.startswith(CURVE_LABEL) for v in variants(spec))
    assert spec.budgets == (2000.0, 4000.0)


@pytest.mark.parametrize(("report", "needle"), [
    ("budgets = [0]", "field 'report.budgets': expected a list of positive numbers"),
    ('budgets = "2000"', "field 'report.budgets'"),
    ("truncate_curve = 1", "field 'report.truncate_curve': expected true or false"),
    ("budget = [2000]", "report.budget"),
])
def test_report_mistakes_name_the_field(report: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        parse_spec(HEAD + f"[report]\n{report}\n", "t.toml")
