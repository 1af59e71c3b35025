"""Reading a run never imports anything the run directory names (issue #19 item 1).

A received run directory is data: its ``units`` name components by import path, and importing
one runs its code (``this`` prints the Zen of Python; with ``PYTHONPATH=.`` any ``.py`` in the
working directory runs). Only `rollsum run` imports a plug-in; everything a reader needs to know
about it (its capabilities) is recorded in the manifest at run time, so `report`, `compare`,
`regress` and `score` neither import it nor need it installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from rollsum_evals import analysis
from rollsum_evals.cli import main
from rollsum_evals.rundir import load_run
from rollsum_evals.rundir.integrity import spec_sha256
from rollsum_evals.spec import components

MODULE = "rollsum_sidefx_plugin"
MEMORY = "Mem[mark=M1]"

PLUGIN = '''
import os
from pathlib import Path

from rollsum.capabilities import Capabilities
from tests.support.plugin_components import MarkMemory

Path(os.environ["SIDEFX_MARKER"]).write_text("imported")  # the side effect a reader must never cause


class Mem(MarkMemory):
    capabilities = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)
'''

SPEC = f"""
name = "sidefx"
context_window = 1500
cache = "off"
models = ["fake:mode=extractive"]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=1&messages=40&seed=3"

[[configs]]
memory = "{MODULE}:Mem"
params = {{ mark = "M1" }}

[[configs]]
preset = "since-last"
"""


@pytest.fixture
def plugged_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A finished run made with a plug-in that writes a marker file whenever it is imported;
    returned with the marker removed and the module forgotten (`sys.modules`)."""
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / f"{MODULE}.py").write_text(PLUGIN)
    marker = tmp_path / "marker"
    monkeypatch.setenv("SIDEFX_MARKER", str(marker))
    monkeypatch.syspath_prepend(str(plug))
    monkeypatch.setenv("PYTHONPATH", str(plug))
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    sys.modules.pop(MODULE, None)
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    assert marker.exists()  # the run itself imports the plug-in (it replays it)
    marker.unlink()
    sys.modules.pop(MODULE, None)
    return out


def _read_everything(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """report (with its drill-down), compare, regress (promote, then gate) and score."""
    baseline = tmp_path / "base.json"
    commands = [
        ["report", str(run), "--out", str(tmp_path / "rep"), "--resamples", "100"],
        ["compare", str(run), "--a", MEMORY, "--b", "since-last", "--out", str(tmp_path / "cmp"),
         "--resamples", "100"],
        ["regress", str(run), "--baseline", str(baseline), "--promote", "--resamples", "100"],
        ["regress", str(run), "--baseline", str(baseline), "--resamples", "100"],
        ["score", str(run)],
    ]
    for argv in commands:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 0, (argv[0], err)


def test_report_compare_regress_and_score_never_import_what_the_run_names(
        plugged_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = set(sys.modules)
    _read_everything(plugged_run, tmp_path, capsys)
    assert not (tmp_path / "marker").exists(), "a reader imported the run's plug-in"
    assert MODULE not in sys.modules
    assert not {m for m in set(sys.modules) - before if m == "this" or m.startswith(MODULE)}


def test_a_run_made_with_a_plug_in_reads_without_it_and_keeps_its_declared_capabilities(
        plugged_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for entry in [p for p in sys.path if p == str(tmp_path / "plug")]:
        sys.path.remove(entry)
    (tmp_path / "plug" / f"{MODULE}.py").unlink()
    _read_everything(plugged_run, tmp_path, capsys)
    # the memory declared itself deterministic: the reader knows it from the manifest, not from a
    # conservative guess (undeclared = not deterministic)
    table = analysis.config_table(load_run(plugged_run), n_resamples=100).set_index("config")
    assert bool(table.loc[MEMORY, "deterministic"]) is True
    manifest = json.loads((plugged_run / "manifest.json").read_text())
    assert manifest[components.FACTS_KEY][MEMORY] == {
        "baseline": False, "offline": True, "free": True, "deterministic": True, "follows_prompt": False}
    assert manifest[components.FACTS_KEY]["since-last"]["baseline"] is False
    # the spec hash covers the plug-in's code, recorded so a reader can check it without importing
    assert len(manifest["spec_code"]) == 1
    assert spec_sha256(manifest["spec"], manifest["spec_code"]) == manifest["spec_sha256"]


def test_without_a_record_a_component_by_import_path_is_read_as_undeclared_never_imported() -> None:
    """An older run (no record): the conservative reading, and `this` is not imported."""
    sys.modules.pop("this", None)
    caps = components.of_run_config({}, "x", "this:s", "fake:mode=extractive")
    assert caps.deterministic is False and caps.free is False
    caps = components.of_run_config({}, "x", "since-last", "fake:mode=extractive",
                                    {"summarizer": "this:s"})
    assert caps.deterministic is False
    assert "this" not in sys.modules


def test_score_never_imports_a_scorer_the_manifest_names_by_import_path(
        plugged_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rollsum score RUN` re-scores with the run's own scorers: a received manifest that lists
    ``pkg.module:Class`` among them used to have score import (run) that module. It is one line
    naming the run and the scorer, and the user can name it on the command line instead."""
    path = plugged_run / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["scoring"]["scorers"] = [*manifest["scoring"]["scorers"], f"{MODULE}:Mem"]
    path.write_text(json.dumps(manifest))
    assert main(["score", str(plugged_run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(plugged_run) in err and f"{MODULE}:Mem" in err and "--scorers" in err, err
    assert not (tmp_path / "marker").exists(), "score imported a scorer the run directory names"
    assert MODULE not in sys.modules
    # named by the user, it is imported (and refused here: a memory is not a scorer), one line
    assert main(["score", str(plugged_run), "--scorers", f"answer_retention,{MODULE}:Mem"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"scorer {MODULE}:Mem" in err, err
    assert (tmp_path / "marker").exists()
