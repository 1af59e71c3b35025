"""What a new user reads off the report: each number's label says what it is (docs/quickstart.md)."""

from __future__ import annotations

from pathlib import Path

from rollsum_evals.report import write_report

from tests.evals.report.fakerun import make_run

N = 200


def test_the_ranked_table_says_its_cost_is_priced_not_spent(tmp_path: Path) -> None:
    # an offline run prints "$0.0000 spent" yet the table shows dollars: the text must say why
    make_run(tmp_path / "r", {"a": 0.6, "b": 0.4}, n_conversations=2)
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    md = (tmp_path / "out" / "report.md").read_text()
    ranked = md.split("## Ranked configurations", 1)[1].split("\n|", 1)[0]
    assert "Cost / conversation is priced, not spent" in ranked and "`main_model`" in ranked


def test_one_conversation_gets_no_verdict_rather_than_none_beats_truncation(tmp_path: Path) -> None:
    curve = {f"truncate-curve[keep={k}]": k / 100 for k in (10, 20, 40, 80)}
    tokens = {f"truncate-curve[keep={k}]": 1000 * k for k in (10, 20, 40, 80)}
    make_run(tmp_path / "r", {"a": 0.9, **curve}, tokens={"a": 20_000, **tokens}, n_conversations=1, n_probes=60)
    write_report(tmp_path / "r", tmp_path / "out", n_resamples=N)
    first = (tmp_path / "out" / "report.md").read_text().splitlines()[2]
    assert first.startswith("**No verdict on 1 conversation(s) (an interval needs 5): the top gain, a, is +0.")
    assert "beats truncation" not in first
