"""`rollsum tune` end to end on small synthetic data: it finds a feasible configuration with
fewer units than the grid, survives a kill, is deterministic, and respects its constraints."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from rollsum_evals.rundir.read import load_run
from rollsum_evals.tune.search import TuneOptions, run_tune, rungs
from rollsum_evals.tune.trials import TrialRecord, TuneResult, best_of, pareto_of

from rollsum.errors import ConfigError

SPEC = """
name = "tiny-tune"
models = ["extractive"]
scorers = ["answer_retention", "cost", "health"]
context_window = 4000
seeds = [0]

[[datasets]]
name = "chat"
source = "synth:chat?conversations=4&messages=100&seed=7"

[tune]
trials = 5
seed = 3
min_conversations = 1
reduction_factor = 2
{constraints}

[tune.params.since-last]
keep_last = {{ low = 2, high = 12, step = 2 }}
messages_per_summary = {{ low = 10, high = 30, step = 10 }}
{extra}
"""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One Unit cache for the module (as a user's is shared between tunes), never the user's."""
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROLLSUM_CACHE_DIR", str(path))
        yield path


@pytest.fixture(autouse=True)
def _own_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLSUM_CACHE_DIR", str(cache_dir))


def _spec(tmp_path: Path, constraints: str = "", extra: str = "") -> Path:
    p = tmp_path / "tune.toml"
    p.write_text(SPEC.format(constraints=constraints, extra=extra), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> TuneResult:
    """An uninterrupted tune: what the other tests compare with."""
    base = tmp_path_factory.mktemp("reference")
    return run_tune(_spec(base), base / "t", TuneOptions(jobs=2, executor="thread"))


def _summary(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "tune.json").read_text(encoding="utf-8"))
    return data


def test_rungs_double_up_to_every_conversation() -> None:
    assert rungs(2, 2, 16) == [2, 4, 8, 16]
    assert rungs(2, 3, 10) == [2, 6, 10]
    assert rungs(5, 2, 3) == [3]


def test_a_tune_finds_a_feasible_config_for_less_than_the_grid_and_leaves_a_reportable_run(
        reference: TuneResult) -> None:
    out, result = reference.out, reference
    data = _summary(out)
    assert result.best is not None and data["best"] == result.best.label
    assert result.best.state == "complete" and result.best.status == "ok"
    assert data["best_params"] == result.best.params and set(result.best.params) == {"keep_last",
                                                                                     "messages_per_summary"}
    assert isinstance(data["units_evaluated"], int) and isinstance(data["units_full_grid"], int)
    assert 0 < data["units_evaluated"] < data["units_full_grid"]
    assert data["grid_configs"] == 6 * 3
    assert len(data["trials"]) == 5  # type: ignore[arg-type]
    assert {t.conversations for t in result.trials} <= {1, 2, 4} and result.rungs == [1, 2, 4]
    # the final run is an ordinary run directory with the best configuration on every conversation
    run = load_run(out / "run")
    assert result.best.label in set(run.units["config"])
    assert run.units[run.units["config"] == result.best.label]["conversation_id"].nunique() == 4
    md = (out / "tune.md").read_text(encoding="utf-8")
    assert f"**Best: `{result.best.label}`**" in md and "[[configs]]" in md and "units evaluated" in md
    assert (out / "convergence.png").stat().st_size > 1000
    grid = (out / "grid.toml").read_text(encoding="utf-8")
    assert "keep_last = [" in grid and "[tune" not in grid


def test_later_rungs_and_the_final_run_replay_nothing_twice(reference: TuneResult) -> None:
    """A rung's Units keep the ids a full run gives them, so the next rung replays only the new
    conversations (a `--limit` per rung would pin other datasets and replay everything again)."""
    lines = [json.loads(x) for x in (reference.out / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sum(int(x["replayed"]) for x in lines) == sum(int(x["new_units"]) for x in lines)
    # the first trial (nothing cached before it) replays at each rung exactly the Units the rung
    # adds: the previous rung's come from the cache (with other ids per rung it would replay all)
    first = sorted((x for x in lines if x["trial"] == 0), key=lambda x: x["conversations"])
    assert len(first) >= 2, "the first trial is never pruned: it reaches the later rungs"
    for before, after in itertools.pairwise(first):
        assert after["replayed"] == after["units"] - before["units"], (before, after)


def test_the_same_seed_on_the_same_data_proposes_the_same_trials_and_best(tmp_path: Path,
                                                                          reference: TuneResult) -> None:
    b = run_tune(_spec(tmp_path), tmp_path / "b", TuneOptions(jobs=1, executor="thread"))
    assert [t.params for t in b.trials] == [t.params for t in reference.trials]
    assert reference.best is not None and b.best is not None and reference.best.label == b.best.label
    c = run_tune(_spec(tmp_path), tmp_path / "c", TuneOptions(seed=11, executor="thread", trials=3))
    assert [t.params for t in c.trials] != [t.params for t in reference.trials[:3]]


class _Killed(BaseException):
    """Stands for SIGKILL: nothing in the tune catches it, so the study is left as a kill leaves it."""


def test_a_killed_tune_resumes_to_the_same_best_without_repeating_a_finished_trial(
        tmp_path: Path, reference: TuneResult) -> None:
    def kill(trial: int, conversations: int) -> None:
        if trial == 3:
            raise _Killed

    out = tmp_path / "killed"
    with pytest.raises(_Killed):
        run_tune(_spec(tmp_path), out, TuneOptions(executor="thread", on_rung=kill))
    assert not (out / "tune.json").exists()
    with pytest.raises(ConfigError, match="--resume"):
        run_tune(_spec(tmp_path), out, TuneOptions(executor="thread"))
    resumed = run_tune(_spec(tmp_path), out, TuneOptions(executor="thread", resume=True))
    assert [t.params for t in resumed.trials] == [t.params for t in reference.trials]
    assert [t.state for t in resumed.trials] == [t.state for t in reference.trials]
    assert resumed.best is not None and reference.best is not None and resumed.best.label == reference.best.label
    lines = [json.loads(x) for x in (out / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()]
    seen = [(x["trial"], x["conversations"]) for x in lines]
    # trials 0-2 were finished before the kill: each of their rungs was evaluated once; trial 3's
    # first rung was evaluated when the kill came, and again (from the Unit cache) on resume
    for pair in set(seen):
        assert seen.count(pair) == (2 if pair == (3, 1) else 1), pair
    assert [x["replayed"] for x in lines if (x["trial"], x["conversations"]) == (3, 1)][-1] == 0
    with pytest.raises(ConfigError, match="another spec, seed"):
        run_tune(_spec(tmp_path), out, TuneOptions(executor="thread", resume=True, seed=99))


@pytest.mark.parametrize(("name", "damage", "needle"), [
    ("tune-state.json", b"[1, 2]", r"tune-state\.json: expected a JSON object"),
    ("tune-state.json", b"{not json", r"tune-state\.json: not usable JSON"),
    ("study.journal", b"{not a journal\n", r"study\.journal: holds no tune study"),
])
def test_resuming_a_damaged_tune_directory_is_one_line(tmp_path: Path, reference: TuneResult, name: str,
                                                       damage: bytes, needle: str) -> None:
    """A tune directory's state or study file that is not what the tune wrote used to be an
    AttributeError, JSONDecodeError or Optuna KeyError traceback on ``--resume``."""
    import shutil

    out = tmp_path / "t"
    shutil.copytree(reference.out, out)
    (out / name).write_bytes(damage)
    with pytest.raises(ConfigError, match=needle):
        run_tune(_spec(tmp_path), out, TuneOptions(executor="thread", resume=True))


def test_a_run_directory_as_out_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    # the study, trials and state would land among a `rollsum run` directory's files
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"r: holds a run directory \(its manifest.json\), not a tune"):
        run_tune(_spec(tmp_path), run, TuneOptions(executor="thread", trials=1))
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json"]


def test_constraints_no_feasible_trial_is_never_a_best(tmp_path: Path) -> None:
    out = tmp_path / "t"
    result = run_tune(_spec(tmp_path, constraints="[tune.constraints]\nmax_tokens_per_call = 5"), out,
                      TuneOptions(executor="thread", trials=3))
    assert result.best is None and _summary(out)["best"] is None
    assert all(t.state == "infeasible" and "main tokens / call > 5" in t.reason for t in result.trials)
    assert "No trial beat the constraints" in (out / "tune.md").read_text(encoding="utf-8")


def test_the_token_figure_is_named_as_the_report_names_it_for_the_probe_timing(tmp_path: Path) -> None:
    # asked at the end, the report ranks by the context at the asks, not tokens per call: the
    # constraint, the reasons and tune.md say so, with the report's own header
    out = tmp_path / "t"
    result = run_tune(_spec(tmp_path, constraints='[tune.constraints]\nmax_tokens_per_call = 5\n[probes]\nask = "end"'),
                      out, TuneOptions(executor="thread", trials=2))
    assert result.tokens == "main tokens at asks"
    assert all("main tokens at asks > 5" in t.reason for t in result.trials)
    md = (out / "tune.md").read_text(encoding="utf-8")
    assert "| main tokens at asks |" in md and "per call" not in md and "/ call" not in md


def test_prompts_are_not_tuned_for_a_model_that_reads_none(tmp_path: Path) -> None:
    result = run_tune(_spec(tmp_path, extra='prompt = { choices = ["since-last/v1", "count-and-tokens/v1"] }'),
                      tmp_path / "t", TuneOptions(executor="thread", trials=2))
    assert any("prompt not tuned" in n for n in result.notes)
    assert all(t.prompt == "" for t in result.trials)


def _rec(n: int, gain: float, tokens: float, retention: float, state: str = "complete") -> TrialRecord:
    return TrialRecord(number=n, preset="since-last", params={"keep_last": n}, label=f"c{n}", state=state,
                       gain=gain, retention=retention, tokens_per_call=tokens, status="ok")


def test_the_best_is_the_highest_gain_among_complete_trials_not_the_highest_retention() -> None:
    trials = [_rec(0, 0.05, 4000, 0.9), _rec(1, 0.10, 1000, 0.5), _rec(2, 0.30, 900, 0.6, state="pruned"),
              _rec(3, 0.50, 500, 0.95, state="infeasible"), _rec(4, math.nan, 300, 0.2)]
    best = best_of(trials)
    assert best is not None and best.number == 1
    assert [t.number for t in pareto_of(trials)] == [4, 1, 0]


def test_a_tune_whose_every_trial_failed_says_so_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A trial that errors (a configuration that cannot be built or run) is no constraint: when
    every trial failed, tune.md names the error instead of advising looser constraints, and the
    command exits 1 (it exited 0, as if the space had been searched)."""
    from rollsum_evals.cli import main
    from rollsum_evals.tune import search

    def broken(self: object, number: int, config: object, n: int) -> object:
        raise ConfigError("model 'fake:mode=nope': unknown mode")

    monkeypatch.setattr(search._Tuner, "_evaluate", broken)
    out = tmp_path / "t"
    code = main(["tune", str(_spec(tmp_path)), "--out", str(out), "--executor", "thread", "--trials", "2",
                 "--no-progress"])
    assert code == 1
    assert "error: every trial failed (model 'fake:mode=nope': unknown mode)" in capsys.readouterr().err
    md = (out / "tune.md").read_text(encoding="utf-8")
    assert "**Every trial failed**" in md and "model 'fake:mode=nope'" in md and "Loosen" not in md


@pytest.mark.parametrize(("extra", "key"), [
    ("keep_lst = { low = 2, high = 10 }", "params.since-last.keep_lst"),
    ("[tune.constraints]\nmax_tokens_per_call = -5", "constraints.max_tokens_per_call"),
])
def test_a_tune_table_mistake_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str,
                                             key: str) -> None:
    """Every other spec mistake names its line; a [tune] one said only `tune.toml: [tune] ...`."""
    from rollsum_evals.cli import main

    spec = _spec(tmp_path, extra=extra)
    lines = spec.read_text().splitlines()
    line = 1 + next(i for i, t in enumerate(lines) if t.split("=")[0].strip() == key.rsplit(".", 1)[1])
    code = main(["tune", str(spec), "--out", str(tmp_path / "t"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{spec}:{line}: [tune] {key}: expected" in err, err
