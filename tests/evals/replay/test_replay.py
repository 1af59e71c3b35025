from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from rollsum_evals import scoring
from rollsum_evals.data import load
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay import Engine, Text, Trace, default_engine, replay
from rollsum_evals.replay.trace import TextRef
from rollsum_evals.scoring.asks import ProbeTiming, parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.text import normalize_text
from rollsum_evals.scoring.views import ContextViews
from rollsum_evals.units import Unit

from rollsum import presets
from rollsum.types import Message, SummaryEvent


def _conv(n: int = 60) -> Conversation:
    msgs = [Message("user" if i % 2 == 0 else "assistant", f"filler message number {i} about nothing",
                    id=f"m{i}") for i in range(n)]
    msgs[4] = Message("user", "my locker code is 4417", id="m4")
    return Conversation("c", tuple(msgs), (Probe("p", "code?", "4417", evidence=("m4",), category="number"),))


def _unit(preset: str, params: str = "{}", window: int = 2000) -> Unit:
    return Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config=preset,
                preset=preset, params_json=params, prompt="", model="extractive", seed=0,
                context_window=window)


def _score(unit: Unit, conv: Conversation, trace: Trace, timing: str = "end",
           scorers: tuple[str, ...] = ("answer_retention",)) -> tuple[list[Any], scoring.Scores]:
    return scoring.score(ScoringPlan(scorers=scorers, timing=parse_timing(timing)), unit, conv, trace)


def _texts(items: list[Any]) -> str:
    return "\n".join(i.text for i in items)


def test_full_context_keeps_everything_and_records_every_turn() -> None:
    conv = _conv()
    trace = replay(_unit("full-context"), conv)
    assert [t.turn for t in trace.turns] == list(range(60))
    assert trace.turns[-1].context_tokens > trace.turns[0].context_tokens
    assert trace.turns[-1].composition == ((0, 60),)  # one range, no text stored
    assert not trace.texts and not trace.summaries
    assert "4417" in _texts(trace.context_at(59))
    assert all(i.verbatim and i.message_index == k for k, i in enumerate(trace.context_at(59)))


def test_probe_asked_n_turns_after_evidence_sees_the_context_of_that_turn() -> None:
    conv = _conv()
    unit = _unit("truncate", '{"keep": 5}')
    trace = replay(unit, conv)
    assert "4417" in _texts(trace.context_at(6)) and "4417" not in _texts(trace.context_at(59))
    soon_asks, soon = _score(unit, conv, trace, "after:2")
    end_asks, end = _score(unit, conv, trace, "end")
    assert [a.asked_turn for a in soon_asks] == [6] and [a.asked_turn for a in end_asks] == [59]
    assert soon.probes["p"]["retained"] is True and end.probes["p"]["retained"] is False


def test_summarizing_preset_records_events_and_summaries_with_turns() -> None:
    conv = _conv(120)
    trace = replay(_unit("since-last"), conv)
    assert trace.summaries, "since-last must summarize a 120-message conversation"
    assert len(trace.summary_turns) == len(trace.summaries)
    assert trace.summary_turns == sorted(trace.summary_turns)
    assert any(e["kind"] == "summary" for e in trace.events)
    assert trace.turns[-1].summary_tokens > 0
    last = trace.context_at(119)
    summaries = [i for i in last if i.message_index is None]
    assert len(summaries) == 1 and summaries[0].text_id in trace.texts
    assert trace.turns[-1].active_messages == sum(1 for i in last if i.verbatim)


def test_probe_ages_give_one_ask_per_age_that_fits_plus_the_end() -> None:
    conv = _conv()  # evidence at turn 4, last turn 59
    unit = _unit("truncate", '{"keep": 5}')
    asks, scores = _score(unit, conv, replay(unit, conv), "ages:2,20,60+end",
                          ("answer_retention", "fact_survival"))
    assert [(a.key, a.asked_turn, a.age_turns) for a in asks] == [
        ("p@6", 6, 2), ("p@24", 24, 20), ("p@59", 59, 55)]  # age 60 does not fit: skipped
    assert [scores.probes[k]["retained"] for k in ("p@6", "p@24", "p@59")] == [True, False, False]
    assert scores.probes["p@24"]["baseline_retained"] is True


def test_normalizing_message_by_message_equals_normalizing_the_whole_context() -> None:
    """The per-text normalization cache must agree with normalizing whole contexts."""
    conv = _conv(120)
    trace = replay(_unit("since-last"), conv)
    views = ContextViews(trace)
    for turn in (0, 5, 33, 80, 119):
        items = trace.context_at(turn)
        assert views.at(turn).context == normalize_text(_texts(items))
        assert views.at(turn).summary == normalize_text(_texts([i for i in items if i.message_index is None]))
        assert views.at(turn).prefix == normalize_text("\n".join(m.content for m in conv.messages[: turn + 1]))


def test_probe_without_evidence_is_asked_once_at_the_end() -> None:
    conv = _conv(30)
    conv = Conversation("c", conv.messages, (*conv.probes, Probe("q", "pet?", "none", category="adversarial")))
    unit = _unit("full-context")
    asks, _ = _score(unit, conv, replay(unit, conv), "ages:5")
    assert [(a.key, a.asked_turn) for a in asks] == [("p@9", 9), ("q@29", 29)]


# ----------------------------------------------------------------------------------------------
# rebuilt contexts are the live contexts


def _spy(live: list[list[Message]]) -> Callable[[Unit, Any, Callable[[SummaryEvent], None]], Engine]:
    """The default engine, with its context recorded after every message."""

    class Spy:
        def __init__(self, inner: Engine) -> None:
            self.inner = inner

        def add(self, message: Message) -> SummaryEvent | None:
            out = self.inner.add(message)
            live.append(list(self.inner.context()))
            return out

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    def factory(unit: Unit, model: Any, on_event: Callable[[SummaryEvent], None]) -> Engine:
        return Spy(default_engine(unit, model, on_event))

    return factory


PRESET_PARAMS = {"count-and-tokens": '{"token_threshold": 600}'}


@pytest.mark.parametrize("preset", presets.names())
def test_rebuilt_contexts_equal_the_live_contexts_turn_by_turn(preset: str) -> None:
    """Every preset, every turn: the context rebuilt from the dataset plus the stored trace
    (through its on-disk JSON form) is exactly what the engine would have sent. The window is
    small, so every trigger fires: evict-window's head/summary/tail, budget-rule-based's
    non-contiguous trims, token-ratio's emergency passes."""
    conv = load("synth:mixed?conversations=1&messages=260&seed=8")[0]
    unit = _unit(preset, PRESET_PARAMS.get(preset, "{}"), window=2500)
    live: list[list[Message]] = []
    trace = replay(unit, conv, engine_factory=_spy(live))
    record = json.loads(json.dumps(trace.to_record()))
    texts = {k: Text(**json.loads(json.dumps(v.to_dict()))) for k, v in trace.used_texts().items()}
    rebuilt = Trace.from_record(record, conv.messages, texts)
    assert len(live) == len(rebuilt.turns) == len(conv.messages)
    for turn, ctx in enumerate(live):
        got = [(i.role, i.name, i.text) for i in rebuilt.context_at(turn)]
        assert got == [(m.role, m.name, m.content) for m in ctx], f"{preset}: turn {turn}"
    if preset not in ("full-context", "truncate"):
        assert any(isinstance(s, TextRef) for t in rebuilt.turns for s in t.composition), preset
    if preset == "budget-rule-based":  # trims drop messages from the middle: several ranges
        assert any(sum(isinstance(s, tuple) for s in t.composition) > 1 for t in rebuilt.turns)
    codes = record["turns"]["context"]
    assert sum(map(len, codes)) / len(codes) < 32, "a turn's composition should cost a few characters"


def test_timing_is_not_part_of_the_replay() -> None:
    """One replay, any timing: the same trace answers 'end' and 'ages' without replaying."""
    conv = _conv()
    unit = _unit("truncate", '{"keep": 5}')
    trace = replay(unit, conv)
    for timing in ("end", "after:3", "ages:1,2,3+end", "sampled:2+end"):
        asks, scores = _score(unit, conv, trace, timing)
        assert set(scores.probes) == {a.key for a in asks}
    assert ProbeTiming().key == "sampled:1+end"
