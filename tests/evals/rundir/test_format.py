"""The run format owns the columns: base columns plus whatever scorers declare, recorded in the
manifest, so a new scorer's columns reach `load_run` and nothing is ever dropped."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import rollsum_evals
from rollsum_evals import scoring
from rollsum_evals.run import run_sweep
from rollsum_evals.rundir.format import BASE_UNIT_COLUMNS, frame
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.spec.parse import parse_spec


class AnswerLength:
    """A scorer this code base does not ship: one class, one registration."""

    name = "answer_length"
    version = "1"
    needs: frozenset[str] = frozenset({"contexts"})
    unit_columns = (Column("mean_answer_chars", "float", math.nan),)
    probe_columns = (Column("answer_chars", "int", 0), Column("answer_in_last_item", "boolean", None))

    def score(self, inp: ScoreInput) -> Scores:
        out = Scores()
        for ask in inp.asks:
            items = inp.trace.context_at(ask.asked_turn)
            out.probes[ask.key] = {"answer_chars": len(ask.probe.answer),
                                   "answer_in_last_item": ask.probe.answer in items[-1].text if items else None}
        out.unit["mean_answer_chars"] = (sum(len(a.probe.answer) for a in inp.asks) / len(inp.asks)
                                         if inp.asks else math.nan)
        return out


SPEC = """
name = "cols"
cache = "off"
scorers = ["answer_retention", "answer_length"]
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=40&seed=3"
[[configs]]
preset = "since-last"
"""


def test_a_new_scorers_columns_reach_load_run_typed(tmp_path: Path) -> None:
    with scoring.REGISTRY.registered("answer_length", AnswerLength):
        run_sweep(parse_spec(SPEC, "cols.toml"), tmp_path / "r", progress=False)
        _read_columns(tmp_path)
    # another process that has never heard of the scorer still reads every column
    assert "mean_answer_chars" in rollsum_evals.load_run(tmp_path / "r").units.columns


def _read_columns(tmp_path: Path) -> None:
    for journal_only in (False, True):
        if journal_only:  # a killed run is read from its journals: same columns
            for name in ("units.parquet", "probes.parquet", "turns.parquet"):
                (tmp_path / "r" / name).unlink()
            manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
            manifest.pop("files")  # as a killed run leaves it: running, nothing sealed
            (tmp_path / "r" / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
        run = rollsum_evals.load_run(tmp_path / "r")
        assert (run.units["mean_answer_chars"] > 0).all()
        assert str(run.probes["answer_chars"].dtype) == "int64" and (run.probes["answer_chars"] > 0).all()
        assert str(run.probes["answer_in_last_item"].dtype) == "boolean"
        assert "retained" in run.probes.columns and "answer_length@1" in run.units["scorers"].iloc[0]


def test_frame_keeps_columns_nobody_declared() -> None:
    rows: list[dict[str, object]] = [{"unit_id": "b", "surprise": 1.5}, {"unit_id": "a", "status": "error"}]
    df = frame(rows, BASE_UNIT_COLUMNS, ["unit_id"])
    assert list(df["unit_id"]) == ["a", "b"] and list(df.columns)[-1] == "surprise"
    assert df["surprise"].isna().tolist() == [True, False] and list(df["status"]) == ["error", "ok"]


def _record(uid: str, **turns: object) -> dict[str, object]:
    return {"unit_id": uid, "context_window": 800, "unit": {"config": "c", "conversation_id": "x"}, "turns": turns}


def test_the_turns_table_is_the_traces_per_turn_lists_cut_to_the_shortest_and_sorted() -> None:
    """Built column-wise from the traces (issue #20: no dict per turn), the table has one row per
    turn of each trace, as many as its shortest per-turn list, items counted from the context
    codes, sorted by unit and turn; a value of the wrong type is named with its unit and column."""
    from rollsum_evals.rundir.format import TURN_COLUMNS, TURN_SORT, BadValue, frame_of_columns, turn_columns

    recs = [_record("u2", context_tokens=[10, 20, 30], summary_tokens=[0, 5, 5], active=[1, 2, 3],
                    pending=[0, 0, 1], context=["0-1", "+", "#0,2-3"]),
            _record("u1", context_tokens=[7, 8], summary_tokens=[0, 0, 0], active=[1, 2], pending=[0, 0],
                    context=["0", "="])]
    data: dict[str, list[object]] = {c.name: [] for c in TURN_COLUMNS}
    for rec in recs:
        for name, values in turn_columns(rec).items():
            data[name].extend(values)
    df = frame_of_columns(data, TURN_COLUMNS, TURN_SORT)
    assert list(df.columns) == [c.name for c in TURN_COLUMNS]
    assert df[["unit_id", "turn", "context_tokens", "summary_tokens", "active_messages", "pending_messages",
               "context_items"]].values.tolist() == [
        ["u1", 0, 7, 0, 1, 0, 1], ["u1", 1, 8, 0, 2, 0, 1],
        ["u2", 0, 10, 0, 1, 0, 2], ["u2", 1, 20, 5, 2, 0, 3], ["u2", 2, 30, 5, 3, 1, 3]]
    assert set(df["context_window"]) == {800} and set(df["config"]) == {"c"}
    assert str(df["turn"].dtype) == "int64"
    bad = _record("u3", context_tokens=[1, 2.5], summary_tokens=[0, 0], active=[1, 1], pending=[0, 0],
                  context=["0", "+"])
    data = {name: [*data[name], *values] for name, values in turn_columns(bad).items()}
    with pytest.raises(BadValue) as err:
        frame_of_columns(data, TURN_COLUMNS, TURN_SORT)
    assert err.value.unit_id == "u3" and err.value.column == "context_tokens"
