from __future__ import annotations

from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay import replay
from rollsum_evals.scoring import ScoreContext, score_all
from rollsum_evals.spec import Unit
from rollsum.types import Message


def _conv(n: int = 60) -> Conversation:
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"filler message number {i} about nothing",
                    id=f"m{i}") for i in range(n)]
    msgs[4] = Message("user", "my locker code is 4417", id="m4")
    return Conversation("c", tuple(msgs), (Probe("p", "code?", "4417", evidence=("m4",), category="number"),))


def _unit(preset: str, params: str = "{}", timing: str = "end") -> Unit:
    return Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config=preset,
                preset=preset, params_json=params, prompt="", model="extractive", seed=0,
                context_window=2000, probe_timing=timing, scorers=("answer_retention",),
                main_model="claude-haiku-4-5")


def test_full_context_keeps_everything_and_records_every_turn() -> None:
    conv = _conv()
    trace = replay(_unit("full-context"), conv)
    assert [t.turn for t in trace.turns] == list(range(60))
    assert trace.turns[-1].context_tokens > trace.turns[0].context_tokens
    assert trace.asked_turn == {"p": 59} and trace.evidence_turn == {"p": 4}
    assert trace.observations["p"].in_context and trace.observations["p"].in_verbatim
    assert not trace.snapshots, "whole contexts are kept only when a scorer needs them"
    kept = replay(_unit("full-context"), conv, keep_contexts=True)
    assert "4417" in kept.snapshot_for("p").context_text
    assert not trace.summaries


def test_probe_asked_n_turns_after_evidence_sees_the_context_of_that_turn() -> None:
    conv = _conv()
    at_end = replay(_unit("truncate", '{"keep": 5}'), conv, keep_contexts=True)
    soon = replay(_unit("truncate", '{"keep": 5}', timing="after:2"), conv, keep_contexts=True)
    assert soon.asked_turn == {"p": 6}
    assert "4417" in soon.snapshot_for("p").context_text
    assert "4417" not in at_end.snapshot_for("p").context_text
    ctx = ScoreContext(unit=_unit("truncate"), conversation=conv, trace=at_end)
    assert score_all(("answer_retention",), ctx).probes["p"]["retained"] is False


def test_summarizing_preset_records_events_and_summaries_with_turns() -> None:
    conv = _conv(120)
    trace = replay(_unit("since-last"), conv, keep_contexts=True)
    assert trace.summaries, "since-last must summarize a 120-message conversation"
    assert len(trace.summary_turns) == len(trace.summaries)
    assert trace.summary_turns == sorted(trace.summary_turns)
    assert any(e.kind == "summary" for e in trace.events)
    assert trace.turns[-1].summary_tokens > 0
    assert trace.snapshot_for("p").summary_text


def test_probe_ages_give_one_ask_per_age_that_fits_plus_the_end() -> None:
    conv = _conv()  # evidence at turn 4, last turn 59
    trace = replay(_unit("truncate", '{"keep": 5}', timing="ages:2,20,60+end"), conv)
    assert [(a.key, a.asked_turn, a.age_turns) for a in trace.asks] == [
        ("p@6", 6, 2), ("p@24", 24, 20), ("p@59", 59, 55)]  # age 60 does not fit: skipped
    ctx = ScoreContext(unit=_unit("truncate"), conversation=conv, trace=trace)
    rows = score_all(("answer_retention", "fact_survival"), ctx).probes
    assert [rows[k]["retained"] for k in ("p@6", "p@24", "p@59")] == [True, False, False]
    assert rows["p@24"]["baseline_retained"] is True


def test_observations_match_scoring_the_kept_contexts() -> None:
    """The cheap per-message normalization must agree with normalizing whole contexts."""
    conv = _conv(120)
    unit = _unit("since-last", timing="ages:1,5,30,80+end")
    fast = replay(unit, conv)
    full = replay(unit, conv, keep_contexts=True)
    full.observations.clear()
    assert fast.asks == full.asks
    for a in fast.asks:
        assert fast.observations[a.key] == full.observation(a), a.key


def test_probe_without_evidence_is_asked_once_at_the_end() -> None:
    conv = _conv(30)
    conv = Conversation("c", conv.messages, (*conv.probes, Probe("q", "pet?", "none", category="adversarial")))
    trace = replay(_unit("full-context", timing="ages:5"), conv)
    assert [(a.key, a.asked_turn) for a in trace.asks] == [("p@9", 9), ("q@29", 29)]
