"""The malformed-input corpus through the real CLI (issue #11): every bad input is refused in
one line on stderr naming the file (line or field), exit 2, no traceback, nothing written.

The cases are `tests.evals.cli.corpus.CASES`; the before/after inventory is
``PYTHONPATH=. python -m tests.evals.cli.corpus``. Below them: the inputs whose right answer is a
run that succeeds — but correctly (a spec name that would leave ``runs/``, labels that would
merge two configurations, bad records skipped on request, a line longer than the default limit).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.rundir.format import PROCESS_MANIFEST_KEYS

from tests.evals.cli.corpus import (
    BASELINE_EDITS,
    CASES,
    GOOD,
    RUN_EDITS,
    Case,
    conversation,
    jsonl,
    spec,
    unsealed,
)
from tests.evals.cli.malformed import check_refused, refused, run_cli

CATEGORIES = sorted({c.category for c in CASES})


def test_the_corpus_covers_every_category_with_enough_cases() -> None:
    assert len(CASES) >= 60
    assert {"dataset", "sidecar", "spec", "params", "cli", "cassette", "rundir"} <= set(CATEGORIES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_is_refused_in_one_line(tmp_path: Path, case: Case) -> None:
    case.materialize(tmp_path)
    refused(case.argv, tmp_path, needle=case.needle, may_write=case.may_write, env=case.env)


SUBPROCESS = [next(c for c in CASES if c.category == cat) for cat in CATEGORIES]


@pytest.mark.parametrize("case", SUBPROCESS, ids=[c.id for c in SUBPROCESS])
def test_the_installed_command_refuses_the_same_way(tmp_path: Path, case: Case) -> None:
    """One case per category as a real process (`python -m rollsum_evals`): the interpreter's
    own handling of an escaping exception, logging to a real stderr."""
    case.materialize(tmp_path)
    refused(case.argv, tmp_path, needle=case.needle, may_write=case.may_write, env=case.env, subprocess=True)


# ----------------------------------------------------------------------------------------------
# inputs that must run, and run right


@pytest.mark.parametrize("name", ["../../x", "/abs/x", "a/../../../b", "..", "x/./y"])
def test_a_spec_name_never_leaves_runs(tmp_path: Path, name: str) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    (cwd / "s.toml").write_text(spec(name=name))
    (cwd / "data.jsonl").write_text(GOOD)
    out = run_cli(["run", "s.toml", "--no-progress", "--jobs", "1"], cwd, watch=tmp_path)
    assert out.code == 0, out.describe()
    made = {p for p in out.written if not p.startswith(("a/b/.home", "a/b/.cache"))}
    assert made and all(p.startswith("a/b/runs/") for p in made), made
    run_dir = Path(out.stdout.strip().splitlines()[-1])
    assert run_dir.parent == (cwd / "runs").resolve()
    assert not run_dir.name.startswith((".", "-")) and "/" not in run_dir.name


def test_labels_never_merge_two_configurations(tmp_path: Path) -> None:
    """A label the user wrote is never renamed or shared (issue #19: ``x``, ``x`` and ``x#2``
    used to run as ``x``, ``x#3``, ``x#2``): each of these is one line, exit 2, nothing run."""
    (tmp_path / "data.jsonl").write_text(GOOD)
    for second, needle in (('label = "x"', ("s.toml:13", "configs[0] has it too")),
                           ('label = "x#2"', ("s.toml:13", "'#N'")),
                           ('label = "truncate"', ("s.toml", "configs[0] and configs[1]", "'truncate'"))):
        first = "" if "truncate" in second else 'label = "x"'
        (tmp_path / "s.toml").write_text(spec(config=first) + f'[[configs]]\npreset = "full-context"\n{second}\n')
        refused(["run", "s.toml", "--out", "out", "--no-progress"], tmp_path, needle=needle)


BAD_LINE = jsonl(conversation("c1"), '{"id": "c2", "messages": [}', conversation("c3"))


def test_bad_records_stop_a_sweep_unless_skipped_and_then_they_are_counted(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(spec())
    (tmp_path / "data.jsonl").write_text(BAD_LINE)
    refused(["run", "s.toml", "--out", "out", "--no-progress"], tmp_path, needle=("data.jsonl:2", "invalid JSON"))
    out = run_cli(["run", "s.toml", "--out", "out", "--no-progress", "--jobs", "1", "--skip-bad-records"], tmp_path)
    assert out.code == 0, out.describe()
    assert "1 bad dataset record(s) left out (--skip-bad-records" in out.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["datasets"]["d"]["skipped_records"] == 1
    assert manifest["datasets"]["d"]["skip_bad_records"] is True
    assert manifest["datasets"]["d"]["conversations"] == 2
    units = pd.read_parquet(tmp_path / "out" / "units.parquet")
    assert sorted(units["conversation_id"]) == ["c1", "c3"]
    report = run_cli(["report", "out", "--out", "rep", "--resamples", "200"], tmp_path)
    assert report.code == 0, report.describe()
    note = "1 bad dataset record(s) were left out (--skip-bad-records: 1 in d)"
    for name in ("report.md", "report.html"):
        assert note in (tmp_path / "rep" / name).read_text()
    # a resume must read the data the same way: refused in one line, the run left as it was
    again = run_cli(["run", "s.toml", "--out", "out", "--no-progress", "--resume"], tmp_path)
    check_refused(again, needle=("--skip-bad-records", "resume needs the same options"))


def test_max_line_bytes_reaches_the_loaders_a_run_uses(tmp_path: Path) -> None:
    """One long conversation is one long line: `--max-line-bytes` lets a run read it."""
    long = conversation("long", n=400)
    line = json.dumps(long)
    (tmp_path / "s.toml").write_text(spec())
    (tmp_path / "data.jsonl").write_text(line + "\n")
    limit = len(line.encode()) - 1
    refused(["run", "s.toml", "--out", "out", "--no-progress", "--max-line-bytes", str(limit)], tmp_path,
            needle=("data.jsonl:1", f"over the limit of {limit:,} bytes", "--max-line-bytes"))
    out = run_cli(["run", "s.toml", "--out", "out", "--no-progress", "--jobs", "1", "--max-line-bytes",
                   str(limit + 1)], tmp_path)
    assert out.code == 0, out.describe()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["datasets"]["d"]["max_line_bytes"] == limit + 1
    assert int(pd.read_parquet(tmp_path / "out" / "units.parquet")["n_messages"].iloc[0]) == 400


# ----------------------------------------------------------------------------------------------
# baselines and reports over a real run


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small finished run and its promoted baseline (regress reads, never writes, both)."""
    root = tmp_path_factory.mktemp("finished")
    (root / "s.toml").write_text(spec(preset="since-last", config='label = "$\\\\frac{1}{$"') +
                                 '[[configs]]\npreset = "truncate"\n')
    (root / "data.jsonl").write_text(GOOD)
    out = run_cli(["run", "s.toml", "--out", "run", "--no-progress", "--jobs", "1"], root)
    assert out.code == 0, out.describe()
    promoted = run_cli(["regress", "run", "--baseline", "good.json", "--promote", "--resamples", "200"], root)
    assert promoted.code == 0, promoted.describe()
    return root


def test_a_mathtext_label_is_drawn_as_plain_text(finished_run: Path, tmp_path: Path) -> None:
    """A label like ``$\\frac{1}{$`` crashed `rollsum report` inside matplotlib's mathtext."""
    out = run_cli(["report", str(finished_run / "run"), "--out", str(tmp_path / "rep"), "--resamples", "200"],
                  tmp_path)
    assert out.code == 0, out.describe()
    assert list((tmp_path / "rep").glob("*.svg"))
    assert "$\\frac{1}{$" in (tmp_path / "rep" / "configs.csv").read_text()
    png = run_cli(["report", str(finished_run / "run"), "--out", str(tmp_path / "png"), "--resamples", "200",
                   "--figures", "png"], tmp_path)
    assert png.code == 0, png.describe()
    assert list((tmp_path / "png").glob("*.png")) and not list((tmp_path / "png").glob("*.svg"))


@pytest.mark.parametrize("name", sorted(BASELINE_EDITS))
def test_a_bad_baseline_is_refused_in_one_line(finished_run: Path, tmp_path: Path, name: str) -> None:
    edit, needle = BASELINE_EDITS[name]
    path = tmp_path / "b.json"
    if isinstance(edit, str | bytes):
        path.write_bytes(edit.encode() if isinstance(edit, str) else edit)
    else:
        data = json.loads((finished_run / "good.json").read_text())
        edit(data)
        path.write_text(json.dumps(data))
    refused(["regress", str(finished_run / "run"), "--baseline", str(path), "--resamples", "200"], tmp_path,
            needle=("b.json", *needle))


@pytest.mark.parametrize("name", sorted(RUN_EDITS))
def test_a_damaged_run_directory_is_named_in_one_line(finished_run: Path, tmp_path: Path, name: str) -> None:
    """Run directories are verified, not trusted: a bad journal line, a cut or edited table, a
    broken manifest is named (file, and line or field) by whatever reads it; nothing is written."""
    edit, argv, needle = RUN_EDITS[name]
    run = tmp_path / "run"
    shutil.copytree(finished_run / "run", run)
    edit(run)
    args = [{"{run}": "run", "{good}": str(finished_run / "good.json")}.get(a, a) for a in argv]
    refused(args, tmp_path, needle=needle)


def test_compare_refuses_a_configuration_compared_with_itself(finished_run: Path, tmp_path: Path) -> None:
    """``--a X --b X`` used to write a compare.md of zero differences and exit 0: a typo in one
    label looked like a finding."""
    refused(["compare", str(finished_run / "run"), "--a", "truncate", "--b", "truncate", "--out", "cmp",
             "--resamples", "200"], tmp_path, needle=("--a and --b", "'truncate' twice"))


def _duplicate_first_unit(run: Path) -> None:
    with (run / "units.jsonl").open("ab") as fh:
        fh.write((run / "units.jsonl").read_bytes().split(b"\n")[0] + b"\n")


REPAIRS = {
    "probes-jsonl-bad-line": (RUN_EDITS["probes-jsonl-bad-line-report"][0], "probes.jsonl"),
    "unsealed-probes-jsonl-bad-line": (unsealed(RUN_EDITS["probes-jsonl-bad-line-report"][0]), "probes.jsonl"),
    "units-jsonl-unit-twice": (_duplicate_first_unit, "units.jsonl"),
    "unsealed-units-jsonl-unit-twice": (unsealed(_duplicate_first_unit), "units.jsonl"),
    "units-parquet-garbage": (RUN_EDITS["units-parquet-garbage-report"][0], "units.parquet"),
    "units-jsonl-cut": (RUN_EDITS["units-jsonl-cut-score"][0], "units.jsonl"),
}


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_resume_repairs_a_damaged_run_exactly_and_says_what_it_fixed(finished_run: Path, tmp_path: Path,
                                                                     name: str) -> None:
    """`--resume` on a damaged finished run: one warning naming the file, exit 0, and tables equal
    to the undamaged run's (a bad probes line used to be skipped by readers and never repaired)."""
    edit, file = REPAIRS[name]
    root = tmp_path / "copy"
    shutil.copytree(finished_run, root, ignore=shutil.ignore_patterns(".home", ".cache"))
    edit(root / "run")
    out = run_cli(["run", "s.toml", "--out", "run", "--no-progress", "--jobs", "1", "--resume"], root)
    assert out.code == 0 and not out.traceback, out.describe()
    assert any("repaired" in ln and file in ln for ln in out.lines), out.describe()
    volatile = list(NON_DETERMINISTIC_UNIT_COLUMNS)
    for table in ("units", "probes", "turns"):
        got, want = (pd.read_parquet(d / "run" / f"{table}.parquet") for d in (root, finished_run))
        pd.testing.assert_frame_equal(got.drop(columns=volatile, errors="ignore"),
                                      want.drop(columns=volatile, errors="ignore"))
    # and so is the manifest, but for what describes the processes (and the copy's data path)
    manifests = [json.loads((d / "run" / "manifest.json").read_text()) for d in (root, finished_run)]
    for m in manifests:
        for key in PROCESS_MANIFEST_KEYS:
            m.pop(key, None)
        for d in m["datasets"].values():
            d.pop("source")
    assert manifests[0] == manifests[1]
    assert run_cli(["report", "run", "--out", "rep", "--resamples", "200"], root).code == 0


def test_a_cassette_that_cannot_serve_a_request_is_a_unit_error_not_a_warning(tmp_path: Path) -> None:
    """Issue #19: a cassette cut short, or recorded from other data, used to replay "fine" with a
    warning per miss (the engine fell back to its rule-based summary) and exit 0. A replay that
    is not the recorded one is an ``error`` row naming the cassette, and the run exits 1."""
    (tmp_path / "s.toml").write_text(spec(preset="since-last", params="messages_per_summary = 4"))
    other = [{"id": f"c2:{i}", "role": "user" if i % 2 == 0 else "assistant",
              "content": f"note {i}: the ferry leaves pier {i} at noon."} for i in range(12)]
    (tmp_path / "data.jsonl").write_text(jsonl(conversation("c1"), conversation("c2", messages=other)))
    recorded = run_cli(["run", "s.toml", "--out", "rec", "--no-progress", "--model",
                        "record:c.jsonl:fake:mode=extractive"], tmp_path)
    assert recorded.code == 0, recorded.describe()
    calls = (tmp_path / "c.jsonl").read_text().splitlines()
    assert len({json.loads(c)["key"] for c in calls}) >= 2

    def replay(out: str) -> pd.DataFrame:
        done = run_cli(["run", "s.toml", "--out", out, "--no-progress", "--model", "replay:c.jsonl"], tmp_path)
        assert done.code == (0 if out == "whole" else 1), done.describe()
        assert "Traceback" not in done.stderr
        return pd.read_parquet(tmp_path / out / "units.parquet")

    assert (replay("whole")["status"] == "ok").all()
    (tmp_path / "c.jsonl").write_text(calls[0] + "\n")  # cut short: the other calls are missing
    units = replay("cut")
    failed = units[units["status"] == "error"]
    assert len(failed) >= 1 and (units["status"].isin(["ok", "error"])).all(), units[["status", "error"]]
    assert failed["error"].str.contains("cassette c.jsonl has no answer").all()
    (tmp_path / "c.jsonl").write_text("\n".join(calls) + "\n")
    data = tmp_path / "data.jsonl"
    data.write_text(data.read_text().replace("Biscuit", "Marmalade").replace("ferry", "tram"))
    units = replay("other-data")  # every request differs from the recorded ones
    assert (units["status"] == "error").all(), units[["status", "error"]]
