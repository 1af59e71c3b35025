"""The new user's whole path, through the CLI only: a plain OpenAI-style export and a questions
sidecar -> `rollsum init` -> `run` -> `report` -> `compare` -> `regress --promote` -> a passing
`regress`. docs/quickstart.md walks the same path with real output.

Every step is `rollsum_evals.cli.main` with the arguments a user would type, from a directory
that is not the data's (paths in the spec resolve against the spec file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from rollsum_evals.cli import main
from rollsum_evals.data import load


def _write_export(data: Path, messages: int = 120) -> tuple[Path, Path]:
    """A bare `[{"role", "content"}]` array and questions.jsonl in the forms a person writes:
    evidence as a message index or as text copied from the chat, `ask_at` as `end` or `+N`."""
    (conv,) = load(f"synth:chat?conversations=1&messages={messages}&seed=8")
    data.mkdir(parents=True)
    chat = data / "my-chat.json"
    chat.write_text(json.dumps([{"role": m.role, "content": m.content} for m in conv.messages], indent=1))
    index = {m.id: i for i, m in enumerate(conv.messages)}
    rows: list[dict[str, object]] = [{"question": p.question, "answer": p.answer, "evidence": index[p.evidence[-1]]}
                                     for p in conv.probes]
    rows[0]["ask_at"] = "end"
    rows[1]["ask_at"] = "+7"
    quoted = conv.messages[index[conv.probes[2].evidence[-1]]].content
    start = quoted.index(conv.probes[2].answer)
    rows[2]["evidence"] = quoted[max(0, start - 20): start + len(conv.probes[2].answer)]  # text, not an index
    questions = data / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return chat, questions


def _cli(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> list[str]:
    assert main(list(argv)) == code, capsys.readouterr()
    return capsys.readouterr().out.strip().splitlines()


def test_from_a_plain_export_to_a_passing_gate_with_cli_commands_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    chat, questions = _write_export(tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    out = _cli(capsys, "init", "../data/my-chat.json", "--questions", str(questions))  # as typed: relative
    spec = chat.with_name("my-chat.sweep.toml")
    assert out[0].startswith(f"wrote {spec.resolve()}: ")  # what it wrote: absolute
    assert out[-1] == "next: rollsum run ../data/my-chat.sweep.toml --out runs/my-chat"  # what to type: as typed

    out = _cli(capsys, "run", str(spec), "--out", "runs/my-chat", "--jobs", "2", "--no-progress")
    run = work / "runs" / "my-chat"
    assert out[-1] == str(run.resolve())
    assert "15/15 units" in out[-2] and "0 errors" in out[-2]
    asked = pd.read_parquet(run / "probes.parquet").groupby("probe_id")
    turns = {pid: set(g["asked_turn"]) for pid, g in asked}
    evidence = {pid: int(g["evidence_turn"].iloc[0]) for pid, g in asked}
    assert turns["my-chat:q1"] == {119} and turns["my-chat:q2"] == {evidence["my-chat:q2"] + 7}
    assert len(turns["my-chat:q3"]) > 1  # the spec's timing: several ages and the end

    out = _cli(capsys, "report", str(run), "--out", "reports/my-chat", "--resamples", "200")
    report = Path(out[-1])
    assert report == (work / "reports" / "my-chat" / "report.html").resolve()
    md = report.with_name("report.md").read_text()
    assert "## Verdict" in md and "Best: since-last" in md and "## Legend" in md and "## Grid: since-last" in md

    # labels as a person types them: another parameter order, spaces
    out = _cli(capsys, "compare", str(run), "--a", "since-last[messages_per_summary=20, keep_last=2]",
               "--b", "truncate", "--out", "reports/ab", "--resamples", "200")
    assert out[0] == "A = since-last[keep_last=2,messages_per_summary=20]" and out[1] == "B = truncate"
    assert out[-1] == f"written: {(work / 'reports' / 'ab' / 'compare.md').resolve()}"

    baseline = work / "baselines" / "my-chat.json"
    out = _cli(capsys, "regress", str(run), "--baseline", "baselines/my-chat.json", "--promote", "--resamples", "200")
    assert out[-1] == f"promoted: {baseline.resolve()} now holds 15 configurations from run my-chat"
    assert set(json.loads(baseline.read_text())["configs"]) >= {"truncate", "full-context"}

    out = _cli(capsys, "regress", str(run), "--baseline", str(baseline), "--resamples", "200")
    assert out[-1].startswith("gate: PASS (0 problem(s)")
    assert sum(line.rstrip().endswith(" ok") for line in out) >= 15  # every configuration was checked

    # the gate is a gate: a baseline that kept more facts fails it
    promoted = json.loads(baseline.read_text())
    truncate = promoted["configs"]["truncate"]  # retained asks per unit, one character per ask
    truncate["verdicts"] = {unit: "1" * len(bits) for unit, bits in truncate["verdicts"].items()}
    baseline.write_text(json.dumps(promoted))
    out = _cli(capsys, "regress", str(run), "--baseline", str(baseline), "--resamples", "200", code=1)
    assert out[-1].startswith("gate: FAIL")

    # re-scoring names the run it wrote to by its absolute path, as run and report do
    out = _cli(capsys, "score", "runs/my-chat")
    assert out[-1] == str(run.resolve())
