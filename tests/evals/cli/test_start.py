"""Starting from your own chat: `rollsum init`, `rollsum list`, `rollsum run NAME`, `--limit`,
`--retry-errors`, `--resume` without `--out`, and the run-status banner."""

from __future__ import annotations

import json
import math
import os
import re
import socket
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rollsum_evals.bundled import bundled_specs
from rollsum_evals.cli import main
from rollsum_evals.cli.init_cmd import ChatShape, grids, suggest_window
from rollsum_evals.data import load
from rollsum_evals.gain import is_curve
from rollsum_evals.rundir.status import banner, run_banner
from rollsum_evals.spec.parse import load_spec

from rollsum import EngineSettings


@pytest.fixture
def export(tmp_path: Path) -> tuple[Path, Path]:
    """A plain OpenAI-style export (a bare message array) and a questions sidecar about it."""
    data = tmp_path / "data"
    data.mkdir()
    (conv,) = load("synth:chat?conversations=1&messages=120&seed=8")
    chat = data / "my-chat.json"
    chat.write_text(json.dumps([{"role": m.role, "content": m.content} for m in conv.messages]))
    index = {m.id: i for i, m in enumerate(conv.messages)}
    rows = [{"question": p.question, "answer": p.answer, "evidence": index[p.evidence[-1]]} for p in conv.probes]
    rows[0]["ask_at"] = index[conv.probes[0].evidence[-1]] + 3
    questions = data / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return chat, questions


def test_init_writes_a_ready_spec_beside_the_data_and_prints_the_next_command(
        tmp_path: Path, export: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    chat, questions = export
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["init", str(chat), "--questions", str(questions)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    spec_path = chat.with_name("my-chat.sweep.toml")
    assert out[-1] == f"next: rollsum run {spec_path} --out runs/my-chat"
    text = spec_path.read_text()
    assert 'source = "my-chat.json"' in text and 'questions = "questions.jsonl"' in text  # beside the spec
    spec = load_spec(spec_path)
    presets = {c.preset for c in spec.configs}
    assert presets == {"full-context", "truncate", "since-last", "token-ratio"}
    grids = {c.preset: c.grid for c in spec.configs}
    assert set(grids["since-last"]) == {"messages_per_summary", "keep_last"} and "trigger_ratio" in grids["token-ratio"]
    # "configurations" are the spec's own (the ones the report ranks), the harness's truncate curve apart
    own = sum(math.prod(len(v) for v in c.grid.values()) for c in spec.configs if not is_curve(c.label or ""))
    counts = re.search(r"; (\d+) configurations \+ (\d+) truncation-curve points \(the yardstick\), (\d+) units$",
                       out[-2])
    assert counts is not None, out[-2]
    configs, curve, units = map(int, counts.groups())
    assert configs == own == 15 and units == configs + curve  # one conversation: a unit per config
    tokens = sum(len(m["content"]) // 4 for m in json.loads(chat.read_text()))
    assert spec.context_windows[0] < tokens  # the chat does not fit: summaries matter
    # the next command works from anywhere: paths are relative to the spec
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(spec_path), "--out", "run", "--jobs", "2", "--no-progress"]) == 0
    probes = pd.read_parquet(elsewhere / "run" / "probes.parquet")
    first = probes[probes["probe_id"] == "my-chat:q1"]
    assert set(first["asked_turn"]) == {int(first["evidence_turn"].iloc[0]) + 3}  # its own ask_at only
    assert probes["probe_id"].nunique() == len(questions.read_text().splitlines())


def test_init_refuses_bad_questions_in_one_line_and_never_overwrites(
        tmp_path: Path, export: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    chat, questions = export
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q?", "answer": "A", "evidence": 1}\n'
                   '{"question": "Q?", "answer": "A", "evidence": 999}\n')
    assert main(["init", str(chat), "--questions", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rollsum: error: {bad}:2:") and "evidence" in err[0]
    assert not chat.with_name("my-chat.sweep.toml").exists()
    assert main(["init", str(chat), "--questions", str(questions)]) == 0
    assert main(["init", str(chat)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_init_without_questions_warns_that_retention_cannot_be_measured(
        export: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    chat, _ = export
    assert main(["init", str(chat), "--out", str(chat.with_name("s.toml"))]) == 0
    assert "no questions" in capsys.readouterr().out


def test_init_with_a_bad_model_writes_nothing_and_names_the_flag(
        tmp_path: Path, export: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # the spec was written, then refused at "SPEC:7: field 'models'": a spec `run` refuses was
    # left behind (and with --force the user's earlier spec was already replaced)
    chat, _ = export
    spec = chat.with_name("my-chat.sweep.toml")
    assert main(["init", str(chat), "--model", "anthropc:claude"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rollsum: error: --model 'anthropc:claude': ") and len(err.splitlines()) == 1
    assert not spec.exists()
    spec.write_text("# mine\n")
    assert main(["init", str(chat), "--model", "anthropc:claude", "--force"]) == 2
    assert spec.read_text() == "# mine\n"


def test_init_on_a_chat_that_fits_the_smallest_window_says_so(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # a 40-message chat (~600 tokens) under the 2,000-token floor: the spec said "about a quarter
    # of the chat" above a window that held all of it, and init printed nothing
    chat = tmp_path / "short.json"
    chat.write_text(json.dumps([{"role": "user" if i % 2 == 0 else "assistant",
                                 "content": f"message {i} about the weather and the garden"} for i in range(40)]))
    assert main(["init", str(chat)]) == 0
    out = capsys.readouterr().out
    assert "warning: the chat (~" in out and "fits the smallest window init writes (2,000 tokens)" in out
    text = chat.with_name("short.sweep.toml").read_text()
    assert "about a quarter of the chat" not in text and "the chat (~" in text and "fits in it" in text


@given(messages=st.integers(2, 5000))
def test_the_suggested_grid_has_no_two_values_that_replay_alike(messages: int) -> None:
    # the engine summarizes at most once per `min_messages_per_attempt` messages: a smaller
    # messages_per_summary (init once offered 5 for short chats) gives a row identical to 10's
    every, _, _ = grids(ChatShape(1, messages, messages * 30, 60, 0))
    floor = EngineSettings().min_messages_per_attempt
    assert every == sorted(set(every)) and min(every) >= floor


@given(messages=st.integers(2, 5000), per_message=st.integers(5, 3000), p95=st.integers(5, 20_000))
def test_the_suggested_window_is_smaller_than_the_chat(messages: int, per_message: int, p95: int) -> None:
    tokens = messages * per_message
    window = suggest_window(ChatShape(1, messages, tokens, p95, 0))
    assert 2_000 <= window <= 200_000
    if tokens >= 8_000:
        assert window <= tokens // 2  # never a window that holds the whole chat


def test_list_shows_every_registered_preset_spec_scorer_and_model_form(capsys: pytest.CaptureFixture[str]) -> None:
    from rollsum_evals import scoring
    from rollsum_evals.bundled import bundled_specs

    from rollsum.models.spec import BACKENDS
    from rollsum.presets import PRESETS

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, preset in PRESETS.items():
        assert any(line.split()[0] == name and preset.description[:30] in line for line in lines if line.strip())
    for name in [*bundled_specs(), *scoring.names(), *(f"{p}:" for p in BACKENDS)]:
        assert any(line.split() and line.split()[0] == name for line in lines), name
    assert "threshold" in next(line for line in lines if line.strip().startswith("thresholds"))


def test_run_finds_bundled_specs_by_name_and_limit_makes_a_smoke_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["run", "quickstart", "--limit", "1", "--out", "q", "--jobs", "2", "--no-progress"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == str((tmp_path / "q").resolve())  # an absolute path, last
    manifest = json.loads((tmp_path / "q" / "manifest.json").read_text())
    assert all(d["conversations"] == 1 and d["limit"] == 1 for d in manifest["datasets"].values())
    assert manifest["units_total"] == 7 * len(manifest["datasets"])
    assert main(["run", "no-such-spec", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no bundled spec of that name" in err and "thresholds" in err and len(err.strip().splitlines()) == 1


def test_resume_without_out_names_the_directory_it_would_have_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "thresholds-20250101-000000").mkdir(parents=True)
    (tmp_path / "runs" / "thresholds-20250101-000000" / "manifest.json").write_text("{}")
    for flag in ("--resume", "--retry-errors"):
        assert main(["run", "thresholds", flag, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert f"{flag} needs --out RUN" in err and "would start a new run in runs/thresholds-" in err
        assert "--out runs/thresholds-20250101-000000" in err and len(err.splitlines()) == 1
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["thresholds-20250101-000000"]  # nothing started


def test_the_resume_hint_finds_the_run_directory_init_suggests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # `rollsum init` prints `--out runs/<name>`: a later --resume without --out must point there
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "thresholds").mkdir(parents=True)
    (tmp_path / "runs" / "thresholds" / "manifest.json").write_text("{}")
    assert main(["run", "thresholds", "--resume", "--no-progress"]) == 2
    assert "the latest run of this spec is runs/thresholds (--out runs/thresholds)" in capsys.readouterr().err


def test_the_resume_hint_finds_runs_of_a_name_that_is_not_a_safe_file_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint looks where `_default_out` puts runs: under the sanitised name, not the raw one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(SMALL.replace('name = "small"', 'name = "../my run"'))
    (tmp_path / "runs" / "my-run-20250101-000000").mkdir(parents=True)
    (tmp_path / "runs" / "my-run-20250101-000000" / "manifest.json").write_text("{}")
    assert main(["run", "s.toml", "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "would start a new run in runs/my-run-" in err and len(err.splitlines()) == 1
    assert "--out runs/my-run-20250101-000000" in err


SMALL = """
name = "small"
context_window = 2000
cache = "off"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=40&seed=2"
[[configs]]
preset = "since-last"
grid = { keep_last = [2, 6] }
[[configs]]
preset = "full-context"
"""


def _small_run(tmp_path: Path) -> tuple[Path, Path]:
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    return spec, out


def test_retry_errors_reruns_only_the_failed_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, out = _small_run(tmp_path)
    journal = out / "units.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    failed = {rows[0]["unit_id"], rows[3]["unit_id"]}
    for r in rows:  # as if these two had failed
        if r["unit_id"] in failed:
            r.update(status="error", error="RuntimeError: boom")
    journal.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("files")  # as if the run had written those rows: an edited sealed run is refused
    (out / "manifest.json").write_text(json.dumps(manifest))
    kept = {r["unit_id"]: r["wall_s"] for r in rows if r["unit_id"] not in failed}
    capsys.readouterr()
    # a retry the run cannot take (another spec) is refused and forgets nothing
    other = tmp_path / "other.toml"
    other.write_text(SMALL.replace("[2, 6]", "[2, 7]"))
    assert main(["run", str(other), "--out", str(out), "--retry-errors", "--no-progress"]) == 2
    assert len(journal.read_text().splitlines()) == len(rows)
    assert main(["run", str(spec), "--out", str(out), "--retry-errors", "--no-progress"]) == 0
    said = capsys.readouterr().out
    assert "2 failed unit(s)" in said and "(2 run now," in said
    after = {json.loads(line)["unit_id"]: json.loads(line) for line in journal.read_text().splitlines()}
    assert all(r["status"] == "ok" for r in after.values()) and set(after) == {r["unit_id"] for r in rows}
    assert all(after[u]["wall_s"] == w for u, w in kept.items())  # the others untouched
    units = pd.read_parquet(out / "units.parquet")
    assert (units["status"] == "ok").all()


def test_failed_means_error_or_summaries_that_failed_on_a_real_api() -> None:
    from rollsum_evals.run.retry import is_failed

    assert is_failed({"status": "error"})
    assert is_failed({"status": "ok", "n_failures": 2, "model": "anthropic:claude-haiku-4-5"})
    assert not is_failed({"status": "ok", "n_failures": 2, "model": "fake:mode=fail"})
    assert not is_failed({"status": "ok", "n_failures": 0, "model": "anthropic:claude-haiku-4-5"})


def test_units_table_has_typed_param_columns(tmp_path: Path) -> None:
    _, out = _small_run(tmp_path)
    units = pd.read_parquet(out / "units.parquet")
    assert str(units["param_keep_last"].dtype) == "Int64"
    by = dict(zip(units["config"], units["param_keep_last"], strict=False))
    assert by["since-last[keep_last=2]"] == 2 and by["since-last[keep_last=6]"] == 6
    assert pd.isna(by["full-context"])
    cols = list(units.columns)
    assert cols.index("param_keep_last") == cols.index("params") + 1


def test_an_interrupted_run_says_so_with_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum_evals.rundir.journal import RunDir

    _, out = _small_run(tmp_path)
    with monkeypatch.context() as m:  # a complete run: no banner, and its units journal is not decoded
        m.setattr(RunDir, "unit_rows", lambda self: pytest.fail("read the units journal of a complete run"))
        assert run_banner(out) is None
    manifest = json.loads((out / "manifest.json").read_text())
    # a run whose writer is this very process is still going, not interrupted
    (out / "manifest.json").write_text(json.dumps({**manifest, "status": "running", "pid": os.getpid(),
                                                   "host": socket.gethostname()}))
    assert (run_banner(out) or "").startswith("STILL RUNNING")
    manifest["status"] = "running"
    manifest["pid"] = 2 ** 22 + 12345  # no such process
    (out / "manifest.json").write_text(json.dumps(manifest))
    lines = (out / "units.jsonl").read_text().splitlines()
    (out / "units.jsonl").write_text("\n".join(lines[:3]) + "\n")
    text = run_banner(out)
    assert text is not None and text.startswith("INTERRUPTED") and "3 of 6 units finished" in text
    assert "--resume" in text
    assert banner({"status": "interrupted", "units_total": 6}, 2, 1) == (
        "INTERRUPTED: 2 of 6 units finished, 1 with errors; the numbers below are partial; continue it with "
        "`rollsum run SPEC --out RUN --resume`")
    alive = banner({"status": "running", "units_total": 6, "pid": os.getpid()}, 2, 0, alive=True)
    assert alive is not None and alive.startswith("STILL RUNNING")
    assert "stopped: auth" in (banner({"status": "stopped: auth", "units_total": 6}, 2, 0) or "")


def test_a_directory_named_like_a_bundled_spec_does_not_hide_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rollsum run nightly --out nightly` then `rollsum run nightly` again must find the spec."""
    from rollsum_evals.bundled import find_spec

    (tmp_path / "nightly").mkdir()
    monkeypatch.chdir(tmp_path)
    assert find_spec("nightly") == bundled_specs()["nightly"]


def test_every_bundled_spec_runs_without_a_checkout() -> None:
    """Installed, the bundled specs have no `datasets/` beside them: their data is generated
    (`synth:`), LoCoMo by --locomo, or a file shipped inside the package. The nightly's generated
    sets are the committed files byte for byte (their recorded specs, datasets/synthetic/manifest.json).
    Read as TOML, not through `load_spec`: peers.toml names plugins of an extra CI does not install."""
    import tomllib

    manifest = Path(__file__).resolve().parents[3] / "datasets" / "synthetic" / "manifest.json"
    shipped = {s["spec"] for s in json.loads(manifest.read_text())["files"].values()}
    for name, path in bundled_specs().items():
        for ds in tomllib.loads(path.read_text())["datasets"]:
            src = str(ds["source"])
            inside = (path.parent / src).resolve().is_relative_to(path.parent.resolve())
            assert src.startswith(("synth:", "@locomo")) or inside, f"{name}: {ds['name']} reads {src}"
    nightly = tomllib.loads(bundled_specs()["nightly"].read_text())
    assert {str(d["source"]) for d in nightly["datasets"]} <= shipped


def test_a_message_batchs_waiting_is_shown_by_default_and_not_with_quiet() -> None:
    """With ``[qa] batch = true`` a sweep waited minutes on a batch with nothing on the screen
    (its lines were INFO, under the command's default WARNING): they are shown by default now,
    and ``-q`` (errors only) still hides them."""
    import logging

    from rollsum_evals.cli import BATCH_LOGGER

    import rollsum.models.batch as batch

    assert batch.log.name == BATCH_LOGGER
    logger = logging.getLogger(BATCH_LOGGER)
    was = logger.level
    try:
        logger.setLevel(logging.NOTSET)
        assert main(["list"]) == 0
        assert logger.level == logging.INFO  # its own level: not a root some other test set to INFO
        logger.setLevel(logging.NOTSET)
        assert main(["-q", "list"]) == 0
        assert logger.level == logging.NOTSET
    finally:
        logger.setLevel(was)
