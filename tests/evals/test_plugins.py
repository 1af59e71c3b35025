"""A user's summarizer and memory, named by import path in a sweep spec, are replayed and scored
by the real `rollsum run` (issue #12 item 3); their mistakes are one line at the spec's line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.rundir import load_run
from rollsum_evals.spec import imports
from rollsum_evals.spec.expand import expand, variants
from rollsum_evals.spec.parse import parse_spec

from rollsum.errors import ConfigError

HERE = "tests.support.plugin_components"

SPEC = f"""
name = "plugins"
context_window = 1500
cache = "off"
models = ["fake:mode=extractive"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=1&messages=80&seed=3"

[[configs]]
preset = "since-last"
summarizer = "{HERE}:MarkSummarizer"
summarizer_params = {{ mark = "S1" }}

[[configs]]
memory = "{HERE}:MarkMemory"
params = {{ mark = "M1" }}

[[configs]]
preset = "since-last"
"""


def test_a_user_summarizer_and_memory_are_replayed_and_scored_by_rollsum_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    run = load_run(out)
    units = run.units.set_index("config")
    mine, memory, builtin = "since-last[summarizer=MarkSummarizer,summarizer_params={\"mark\": \"S1\"}]", \
        "MarkMemory[mark=M1]", "since-last"
    assert set(units.index) == {mine, memory, builtin}
    assert (units["status"] == "ok").all(), units["error"].tolist()
    # scored like any preset: retention and fact survival are numbers, probes have rows
    assert units["retention"].notna().all() and units["n_probes"].gt(0).all()
    assert set(run.probes["config"]) == {mine, memory, builtin}
    assert units.loc[memory, "preset"] == f"{HERE}:MarkMemory"

    # the summaries of the first config are the user summarizer's, and only there
    by_config: dict[str, list[str]] = {}
    for row in run.summaries():
        by_config.setdefault(row["config"], []).append(row["record"]["text"])
    assert by_config[mine] and all(t.startswith("[S1] ") for t in by_config[mine])
    assert not any("[S1]" in t for t in by_config.get(builtin, []))
    # the memory's summaries (reported through on_event) are the chain, and its marked text is
    # what the contexts held; its model calls went through the sweep's metered model
    assert by_config[memory] and all(t.startswith("[M1] ") for t in by_config[memory])
    assert any(t.content.startswith("[M1] ") for t in run.texts().values())
    traces = {r["unit"]["config"]: r for r in run.trace_records().values()}
    assert traces[memory]["model_calls"] > 0 and traces[memory]["usage"]["calls"] == traces[memory]["model_calls"]
    assert traces[memory]["engine_config"]["memory"] == f"{HERE}:MarkMemory"
    assert traces[memory]["engine_config"]["capabilities"]["offline"] is True
    assert traces[mine]["engine_config"]["summarizer"]["name"] == "mark"
    # the memory kept its half-window budget, measured with the library's counter
    assert max(traces[memory]["turns"]["context_tokens"]) <= 1500
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["configs"][memory]["engine"]["memory"] == f"{HERE}:MarkMemory"


def test_a_memory_that_takes_no_model_is_not_multiplied_by_the_models() -> None:
    text = SPEC.replace('models = ["fake:mode=extractive"]', 'models = ["fake:mode=extractive", "fake:mode=echo"]')
    labels = [v.label for v in variants(parse_spec(text, "s.toml"))]
    # MarkSummarizer takes no model: one variant, no model= in its label; the built-in one varies
    assert sum(label.startswith("since-last[summarizer=MarkSummarizer") for label in labels) == 1
    assert sum(label.startswith("MarkMemory") for label in labels) == 2
    assert "since-last[model=fake:mode=echo]" in labels


def test_unit_ids_follow_the_components_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached replay of an edited component must never be served: its code is in the id."""
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    source = ("from rollsum.types import Message\n"
              "class Keep:\n"
              "    def __init__(self):\n        self.m = []\n"
              "    def add(self, message):\n        self.m.append(message)\n"
              "    def context(self):\n        return list(self.m[-VERSION:])\n")
    (pkg / "mem.py").write_text(source.replace("VERSION", "5"))
    monkeypatch.syspath_prepend(str(tmp_path))
    text = SPEC.replace(f'memory = "{HERE}:MarkMemory"\nparams = {{ mark = "M1" }}', 'memory = "userpkg.mem:Keep"')

    def ids() -> tuple[set[str], str]:
        spec = parse_spec(text, "s.toml")
        units = expand(spec, {"chat": ("h", ["c1"])})
        return {u.unit_id for u in units if u.preset == "userpkg.mem:Keep"}, spec.sha256()

    (pkg / "helper.py").write_text("LIMIT = 5\n")
    before, sha_before = ids()
    (pkg / "mem.py").write_text(source.replace("VERSION", "7"))
    after, sha_after = ids()
    assert before and after and before != after and sha_before != sha_after
    (pkg / "helper.py").write_text("LIMIT = 6\n")  # a helper beside the class counts too
    assert ids()[0] != after
    assert ids()[0] == ids()[0]  # and nothing else moves it
    # presets' Units keep the ids they always had (no code hash in them)
    spec = parse_spec(text, "s.toml")
    assert [v.code for v in variants(spec) if v.label == "since-last"] == [""]


@pytest.mark.parametrize(("config", "needle"), [
    ('memory = "nosuchpkg.mod:X"',
     "s.toml:10: field 'configs[0].memory': nosuchpkg.mod:X: cannot import 'nosuchpkg.mod'"),
    (f'memory = "{HERE}:Nope"', f"s.toml:10: field 'configs[0].memory': {HERE}:Nope: '{HERE}' has no attribute 'Nope'"),
    (f'memory = "{HERE}:NotAMemory"', "NotAMemory is not a rollsum Memory"),
    (f'memory = "{HERE}:broken_memory"', "broken_memory: RuntimeError: cannot open the vector store"),
    (f'memory = "{HERE}:MarkMemory"\nparams = {{ colour = "red" }}', "unexpected keyword argument 'colour'"),
    (f'memory = "{HERE}:MarkMemory"\nmodels = ["extractive"]', "needs a model (its constructor requires model=)"),
    ('memory = "not a path"', "expected an import path 'package.module:Class'"),
    (f'memory = "{HERE}:MarkMemory"\npreset = "since-last"', "field 'configs[0].preset': expected no 'preset' beside"),
    (f'preset = "since-last"\nsummarizer = "{HERE}:NotAMemory"', "s.toml:11: field 'configs[0].summarizer'"),
    (f'preset = "since-last"\nsummarizer = "{HERE}:MarkSummarizer"\nsummarizer_params = {{ colour = 1 }}',
     "unknown parameter(s) colour"),
    ('preset = "since-last"\nsummarizer = "abstractive"', "expected one of extractive, prompted, structured"),
    ('preset = "since-last"\nsummarizer_params = { a = 1 }', "beside 'summarizer'"),
])
def test_component_mistakes_are_one_line_at_the_spec_line(config: str, needle: str) -> None:
    text = ('name = "x"\ncontext_window = 1500\nmodels = ["fake:mode=extractive"]\n\n[[datasets]]\n'
            'name = "chat"\nsource = "synth:chat?conversations=1&messages=20&seed=3"\n\n'
            '[[configs]]\n' + config + "\n")  # the config starts at line 10
    with pytest.raises(ConfigError) as err:
        parse_spec(text, "s.toml")
    msg = str(err.value)
    assert needle in msg and "\n" not in msg and "Traceback" not in msg


def test_labels_are_the_components_names() -> None:
    assert imports.base_label(f"{HERE}:MarkMemory") == "MarkMemory"
    assert imports.base_label("since-last") == "since-last"
    assert imports.label_value("summarizer", f"{HERE}:MarkSummarizer") == "MarkSummarizer"
    assert imports.label_value("summarizer", "structured") == "structured"
