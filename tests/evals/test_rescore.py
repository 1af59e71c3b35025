"""`rollsum score`: a finished run re-scored without replaying equals a fresh run scored that way."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx2
import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals.cli import main
from rollsum_evals.rescore import rescore
from rollsum_evals.run import run_sweep
from rollsum_evals.rundir import NON_DETERMINISTIC_UNIT_COLUMNS
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.spec.parse import parse_spec

from rollsum import RollingSummarizer
from rollsum.models.base import Completion, CompletionRequest
from rollsum.models.fake import FakeModel
from tests.evals.synth_count import count_generations
from tests.support.anthropic import message_json

SPEC = """
name = "rs"
context_window = 3000
models = ["fake:mode=extractive"]
cache = "off"
{scorers}
[probes]
{probes}

[[datasets]]
name = "chat"
source = "{source}"

[[configs]]
preset = "full-context"
[[configs]]
preset = "since-last"
grid = {{ keep_last = [4, 8] }}
[[configs]]
preset = "evict-window"
[[configs]]
preset = "budget-rule-based"
"""
SYNTH = "synth:chat?conversations=2&messages=80&seed=6"
AGES = "ages = [5, 20]"


def _spec(scorers: str = "", probes: str = AGES, source: str = SYNTH) -> Any:
    return parse_spec(SPEC.format(scorers=scorers, probes=probes, source=source), "rs.toml")


def _tables(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    run = rollsum_evals.load_run(path)
    return run.units.drop(columns=list(NON_DETERMINISTIC_UNIT_COLUMNS)), run.probes, run.turns


def _assert_same(a: Path, b: Path) -> None:
    for x, y in zip(_tables(a), _tables(b), strict=True):
        pd.testing.assert_frame_equal(x, y)


class _Counter:
    """Counts replays (engine additions) and model calls through the seams a replay uses."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.adds = self.calls = 0
        real_add, real_complete = RollingSummarizer.add, FakeModel.complete

        def add(engine: RollingSummarizer, message: Any) -> Any:
            self.adds += 1
            return real_add(engine, message)

        def complete(model: FakeModel, request: CompletionRequest) -> Completion:
            self.calls += 1
            return real_complete(model, request)

        monkeypatch.setattr(RollingSummarizer, "add", add)
        monkeypatch.setattr(FakeModel, "complete", complete)


def test_score_with_other_scorers_equals_a_fresh_run_with_no_replay_and_no_model_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    count = _Counter(monkeypatch)
    run_sweep(_spec(), tmp_path / "run", progress=False)
    replayed_adds, replayed_calls = count.adds, count.calls
    assert replayed_adds > 0 and replayed_calls > 0  # the counters see a replay
    fresh = tmp_path / "fresh"
    run_sweep(_spec('scorers = ["answer_retention", "rouge"]'), fresh, progress=False)

    count.adds = count.calls = 0
    before = rollsum_evals.load_run(tmp_path / "run").manifest
    assert main(["score", str(tmp_path / "run"), "--scorers", "answer_retention,rouge"]) == 0
    assert (count.adds, count.calls) == (0, 0)
    assert "no replay" in capsys.readouterr().out
    _assert_same(tmp_path / "run", fresh)
    m = rollsum_evals.load_run(tmp_path / "run").manifest
    assert m["scoring"]["scorers"] == ["answer_retention", "rouge", "health"] and "rouge" in m["scorer_versions"]
    for key in ("spec_sha256", "replay_fingerprint", "datasets", "configs", "started_at"):
        assert m[key] == before[key], key  # the replay's provenance is untouched


def test_score_with_another_probe_timing_equals_a_fresh_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_sweep(_spec(), tmp_path / "run", progress=False)
    run_sweep(_spec(probes="ages = [3, 11, 40]\nend = false"), tmp_path / "fresh", progress=False)
    count = _Counter(monkeypatch)
    built: list[str] = []
    result = rescore(tmp_path / "run", timing=parse_timing("ages:3,11,40"),
                     models=lambda spec: built.append(spec))
    assert result.units == 10 and result.errors == 0
    assert (count.adds, count.calls, built) == (0, 0, [])
    _assert_same(tmp_path / "run", tmp_path / "fresh")


def test_sampled_timing_rescored_from_the_cli_reproduces_a_fresh_run_exactly(tmp_path: Path) -> None:
    """The default timing draws ages: re-scoring must draw the same ones, every time."""
    run_sweep(_spec(), tmp_path / "run", progress=False)
    run_sweep(_spec(probes='ask = "sampled"\ndraws = 2'), tmp_path / "fresh", progress=False)
    for _ in range(2):
        assert main(["score", str(tmp_path / "run"), "--timing", "sampled:2+end"]) == 0
        _assert_same(tmp_path / "run", tmp_path / "fresh")
    probes = rollsum_evals.load_run(tmp_path / "run").probes
    assert set(probes["asked_turn"] - probes["evidence_turn"]) - {0} and (probes["age_turns"] >= 0).all()


def test_a_questions_file_edited_after_the_run_is_named_not_only_the_chat(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the chat was unchanged; the line named only it ("dataset 'chat' (d.jsonl) changed")
    from rollsum_evals.data import load, write_jsonl

    data, questions = tmp_path / "d.jsonl", tmp_path / "q.jsonl"
    (conv, *_) = load(SYNTH)
    write_jsonl([dataclasses.replace(conv, probes=())], data)
    questions.write_text(json.dumps({"question": "What was said first?", "answer": conv.messages[0].content[:20],
                                     "evidence": 0}) + "\n")
    spec = SPEC.format(scorers="", probes=AGES, source=data).replace(
        f'source = "{data}"', f'source = "{data}"\nquestions = "{questions}"')
    run_sweep(parse_spec(spec, "rs.toml"), tmp_path / "run", progress=False)
    questions.write_text(questions.read_text().replace("What was said first?", "What came first?"))
    assert main(["score", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"dataset 'chat' ({data} with questions {questions}) changed since the run" in err, err


def test_score_refuses_a_dataset_that_changed_since_the_run(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from rollsum_evals.data import load, write_jsonl

    data = tmp_path / "d.jsonl"
    write_jsonl(load(SYNTH), data)
    run_sweep(_spec(source=str(data)), tmp_path / "run", progress=False)
    lines = data.read_text().splitlines(keepends=True)
    data.write_text(lines[0].replace("the", "teh", 1) + "".join(lines[1:]))
    assert main(["score", str(tmp_path / "run"), "--scorers", "answer_retention"]) == 2
    err = capsys.readouterr().err.strip()
    assert "changed since the run" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("argv", "needle"), [
    (["--scorers", "vibes"], "--scorers 'vibes': expected scorer names"),
    (["--scorers", "qa"], "needs a model to answer"),
    (["--ages", "0,5"], "--ages '0,5': expected positive integers separated by commas (turns after the evidence), "
                        "e.g. --ages 5,20"),  # was the --timing keys' forms ('sampled:N...'), not the flag's
    (["--no-end"], "only together with --ages"),
    (["--timing", "sampled:0"], "--timing 'sampled:0'"),
    (["--jobs", "8"], "--jobs 8: only with --executor ray"),  # was accepted and ignored: scored serially
    # a misspelt model: the flag was not named (and the name not checked before the model was built)
    (["--scorers", "qa", "--model", "anthropic:claude-haku-4-5"],
     "--model 'anthropic:claude-haku-4-5': unknown Anthropic model 'claude-haku-4-5' (did you mean"),
    (["--scorers", "qa", "--model", "fake", "--judge-model", "nonsense:x"], "--judge-model 'nonsense:x': model spec"),
])
def test_score_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     argv: list[str], needle: str) -> None:
    run_sweep(_spec(), tmp_path / "run", progress=False)
    before = (tmp_path / "run" / "units.jsonl").read_bytes()
    assert main(["score", str(tmp_path / "run"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
    assert (tmp_path / "run" / "units.jsonl").read_bytes() == before


def test_a_model_scorer_added_later_calls_only_the_scoring_model(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """qa needs a model: re-scoring with it calls that model once per ask (and the judge), never
    the summarizer, and never replays."""
    run_sweep(_spec(), tmp_path / "run", progress=False)
    count = _Counter(monkeypatch)
    result = rescore(tmp_path / "run", scorers=["answer_retention", "qa"], model="fake:mode=echo")
    probes = rollsum_evals.load_run(tmp_path / "run").probes
    assert result.errors == 0 and count.adds == 0
    assert count.calls == len(probes) > 0
    assert (probes["prediction"] != "").all()


def test_a_run_rebuilds_any_units_context_from_its_pinned_dataset(tmp_path: Path) -> None:
    """What a drill-down needs: the context of any Unit at any turn, from the run directory."""
    run_sweep(_spec(), tmp_path / "run", progress=False)
    run = rollsum_evals.load_run(tmp_path / "run")
    uid = run.units.loc[run.units["preset"] == "evict-window", "unit_id"].iloc[0]
    trace = run.load_trace(uid)
    last = trace.context_at(len(trace.turns) - 1)
    assert [i.message_index for i in last[:2]] == [0, 1]  # evict-window keeps its head...
    assert any(i.text_id is not None for i in last)  # ...then the summary, then the tail
    turns = run.turns[run.turns["unit_id"] == uid]
    assert list(turns["context_items"]) == [len(trace.context_at(t)) for t in range(len(trace.turns))]


def test_a_received_manifest_does_not_get_to_spend_the_readers_key() -> None:
    """Re-scoring with `qa` calls the model the run's manifest names: a paid one (answering or
    judging) is refused until the reader names the model themselves; offline ones and a model
    given explicitly go ahead."""
    from rollsum_evals.rescore import plan_for

    from rollsum.errors import ConfigError

    def manifest(model: str, judge_model: str = "") -> dict[str, Any]:
        scoring = {"scorers": ["answer_retention", "qa"], "probe_timing": "end", "model": model, "judge": True}
        return {"scoring": {**scoring, "judge_model": judge_model} if judge_model else scoring}

    with pytest.raises(ConfigError, match=r"\(anthropic:claude-haiku-4-5\), paid with your key.*"
                                          r"--model anthropic:claude-haiku-4-5 \("):
        plan_for(manifest("anthropic:claude-haiku-4-5"))
    sonnet = "anthropic:claude-sonnet-4-5"
    with pytest.raises(ConfigError, match=r"\(anthropic:claude-sonnet-4-5\), paid.*--judge-model anthropic:claude-s"):
        plan_for(manifest("fake", judge_model=sonnet))
    with pytest.raises(ConfigError, match=r"--judge-model anthropic:claude-sonnet-4-5"):  # naming one is not both
        plan_for(manifest("anthropic:claude-haiku-4-5", judge_model=sonnet), model="anthropic:claude-haiku-4-5")
    assert plan_for(manifest("anthropic:claude-haiku-4-5"), model="anthropic:claude-haiku-4-5").model \
        == "anthropic:claude-haiku-4-5"
    both = plan_for(manifest("anthropic:claude-haiku-4-5", judge_model=sonnet), model="anthropic:claude-haiku-4-5",
                    judge_model=sonnet)
    assert (both.model, both.judge_model) == ("anthropic:claude-haiku-4-5", sonnet)
    assert plan_for(manifest("fake", judge_model=sonnet), judge_model="fake").judge_model == "fake"
    assert plan_for(manifest("fake")).model == "fake"
    assert plan_for(manifest("anthropic:claude-haiku-4-5"), scorers=["answer_retention"]).scorers  # no model called


def test_score_reads_synthetic_sets_from_the_generated_set_cache_as_a_report_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a run with the shared user cache keeps its synth: sets beside the Unit cache
    # (`data.synth_cache`); `rollsum score` reads them there instead of generating them again
    import shutil

    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(tmp_path / "cache"))
    spec = parse_spec(SPEC.format(scorers="", probes=AGES, source=SYNTH).replace('cache = "off"', 'cache = "user"'),
                      "rs.toml")
    run_sweep(spec, tmp_path / "run", progress=False)
    generated = count_generations(monkeypatch)
    assert main(["score", str(tmp_path / "run"), "--scorers", "answer_retention,cost"]) == 0
    assert generated == []
    shutil.rmtree(tmp_path / "cache" / "datasets")  # the count sees a generation when there is one
    assert main(["score", str(tmp_path / "run"), "--scorers", "answer_retention,cost"]) == 0
    assert len(generated) == 2


class _Killed(BaseException):
    """Stands for SIGKILL: raised where the process would die, past every ``except Exception``."""


def test_a_score_killed_while_replacing_the_tables_is_refused_by_readers_and_completed_by_a_second_score(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`rollsum score` killed after it replaced the scored journals but before the new seal left
    the old seal over new files: the second `rollsum score` the docs prescribe refused the run as
    damaged ("--resume repairs what it can", which refuses too), and so did every reader."""
    from rollsum_evals.rundir.journal import RunDir

    from rollsum.errors import ConfigError

    run, fresh = tmp_path / "run", tmp_path / "fresh"
    run_sweep(_spec(), run, progress=False)
    run_sweep(_spec(probes="ages = [3, 11, 40]\nend = false"), fresh, progress=False)
    real = RunDir.rewrite_scored

    def killed(rd: RunDir, results: Any) -> None:
        real(rd, results)
        raise _Killed

    monkeypatch.setattr(RunDir, "rewrite_scored", killed)
    with pytest.raises(_Killed):
        rescore(run, timing=parse_timing("ages:3,11,40"))
    monkeypatch.setattr(RunDir, "rewrite_scored", real)
    capsys.readouterr()

    assert main(["report", str(run), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not final" in err[0], err
    assert f"`rollsum score {run} --scorers answer_retention,fact_survival,cost --timing ages:3,11,40`" in err[0]
    with pytest.raises(ConfigError, match="not final"):
        run_sweep(_spec(), run, progress=False, resume=True)

    assert main(["score", str(run), "--timing", "ages:3,11,40"]) == 0
    _assert_same(run, fresh)
    assert "rescoring" not in rollsum_evals.load_run(run).manifest


def test_score_shows_progress_on_a_terminal_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`rollsum score` printed nothing until it finished: on a nightly's 70,000 Units that is
    ~100 silent minutes. It shows a bar on a terminal, as `run` does; `--no-progress` hides it,
    and so does a stderr that is not a terminal (a log, a pipe)."""
    import sys

    run_sweep(_spec(), tmp_path / "run", progress=False)
    capsys.readouterr()
    assert main(["score", str(tmp_path / "run")]) == 0
    assert "score:" not in capsys.readouterr().err  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["score", str(tmp_path / "run")]) == 0
    assert "10/10" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "run"), "--no-progress"]) == 0
    assert "score:" not in capsys.readouterr().err


def test_an_interrupted_score_says_the_run_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C during the scoring (the long part) printed a bare "rollsum: interrupted": whether
    the run was still whole was anyone's guess. Nothing is rewritten before scoring ends."""
    from rollsum_evals import rescore as rescore_module

    run_sweep(_spec(), tmp_path / "run", progress=False)
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(rescore_module, "score_group", interrupted)
    capsys.readouterr()
    assert main(["score", str(tmp_path / "run"), "--ages", "3"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rollsum: interrupted (Ctrl-C): re-scoring stopped before it rewrote anything; "
                   f"{tmp_path / 'run'} is unchanged"]
    after = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if k != "run.lock"} == {k: v for k, v in before.items() if k != "run.lock"}


def _free_run(tmp_path: Path) -> tuple[Path, float]:
    """A finished run scored without a model, and its ``spent_usd`` (what a paid re-score adds to)."""
    spec = tmp_path / "rs.toml"
    spec.write_text(SPEC.format(scorers='scorers = ["answer_retention"]', probes='ask = "end"',
                                source="synth:chat?conversations=1&messages=60&seed=4"))
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--no-progress"]) == 0
    return run, float(json.loads((run / "manifest.json").read_text()).get("spent_usd", 0.0))


def test_a_paid_rescoring_records_what_it_spent(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                served: Any) -> None:
    """`rollsum score --model anthropic:...` paid for every QA call it made, but the run's
    ``spent_usd`` stayed the sweep's and the command said nothing of money."""
    run, before = _free_run(tmp_path)
    calls = served(lambda request: httpx2.Response(200, json=message_json("Sweden", input_tokens=1000,
                                                                         output_tokens=100)))
    capsys.readouterr()
    assert main(["score", str(run), "--scorers", "answer_retention,qa", "--model", "anthropic:claude-haiku-4-5",
                 "--no-progress"]) == 0
    assert calls
    paid = len(calls) * 0.0015  # $1 / $5 per MTok
    assert f"${paid:.4f} spent" in capsys.readouterr().out
    assert json.loads((run / "manifest.json").read_text())["spent_usd"] == pytest.approx(before + paid)


def test_an_injected_paid_model_is_charged_to_the_runs_account_as_a_sweeps_is(tmp_path: Path) -> None:
    """A builder handed to `rescore` (as a sweep's `models=`) was used unmetered: a paid QA model
    behind it spent without a record. A sweep meters an injected builder; re-scoring now does too."""
    run, before = _free_run(tmp_path)
    res = rescore(run, scorers=["answer_retention", "qa"], model="anthropic:claude-haiku-4-5",
                  models=lambda spec: FakeModel("extractive", model="claude-haiku-4-5"))
    assert res.spent_usd > 0
    assert json.loads((run / "manifest.json").read_text())["spent_usd"] == pytest.approx(before + res.spent_usd)
