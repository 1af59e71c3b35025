from __future__ import annotations

import math
import random
from typing import Any

import pytest
from rollsum_evals import scoring
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay.trace import Text, TextRef, Trace, TurnRecord
from rollsum_evals.scoring import qa
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import Scores, ScoringPlan
from rollsum_evals.scoring.rouge import rouge_l
from rollsum_evals.scoring.text import contains, locomo_f1, normalize_answer, token_f1
from rollsum_evals.units import Unit
from rouge_score import rouge_scorer

from rollsum.errors import ErrorKind, ModelError
from rollsum.models.base import Completion
from rollsum.types import Message, SummaryRecord, Usage


def test_normalize_follows_locomo() -> None:
    assert normalize_answer("The  Copper-Pot, and a Bar!") == "copperpot bar"


def test_contains_respects_word_boundaries() -> None:
    hay = normalize_answer("my code is 12345 and the room is 12")
    assert contains(hay, "12")
    assert not contains(normalize_answer("my code is 12345"), "1234")
    assert not contains(hay, "")


def test_token_f1_and_adversarial_rule() -> None:
    assert token_f1("in Paris, France", "Paris") == pytest.approx(0.5)  # P=1/3, R=1
    assert locomo_f1("No information available.", "x", "adversarial") == 1.0
    assert locomo_f1("It was Paris", "x", "adversarial") == 0.0
    assert locomo_f1("apples, pears", "pears, apples", "multi-hop") == 1.0


def test_rouge_l_matches_rouge_score_exactly() -> None:
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    words = ["the", "cat", "sat", "on", "a", "mat", "running", "runs", "dog", "jumped", "over",
             "lazy", "fox", "42", "ORD-1"]
    rng = random.Random(3)
    for _ in range(200):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 80)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 80)))
        assert rouge_l(a, b) == pytest.approx(scorer.score(a, b)["rougeL"].fmeasure, abs=1e-12)


UNIT = Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="cfg",
            preset="since-last", params_json="{}", prompt="", model="extractive", seed=0,
            context_window=1000)


def _score(scorers: tuple[str, ...], conv: Conversation, trace: Trace) -> Scores:
    return scoring.score(ScoringPlan(scorers=scorers, timing=parse_timing("end")), UNIT, conv, trace)[1]


def _with_context_at_7(trace: Trace, items: tuple[Text | tuple[int, int], ...]) -> None:
    """Make the last turn's context `items` (texts or message ranges)."""
    comp: list[TextRef | tuple[int, int]] = []
    for item in items:
        if isinstance(item, Text):
            trace.texts[item.id] = item
            comp.append(TextRef(item.id))
        else:
            comp.append(item)
    last = trace.turns[7]
    trace.turns[7] = TurnRecord(7, last.role, last.context_tokens, 0, 1, 0, tuple(comp))


def _case() -> tuple[Conversation, Trace]:
    msgs = tuple(Message("user" if i % 2 == 0 else "assistant", t, id=f"m{i}") for i, t in enumerate([
        "my locker code is 4417", "noted", "the venue is The Copper Pot", "ok",
        "meeting moved to May 8", "fine", "actually the meeting is June 17", "got it"]))
    probes = (
        Probe("p-code", "locker code?", "4417", evidence=("m0",), category="number"),
        Probe("p-venue", "venue?", "Copper Pot", evidence=("m2",)),
        Probe("p-meet", "meeting?", "June 17", evidence=("m6",), category="superseded",
              stale_answers=("May 8",)),
        Probe("p-adv", "pet name?", "none", category="adversarial"),
    )
    conv = Conversation("c", msgs, probes)
    r0 = SummaryRecord(id="r0", conversation_id="c", text="User's locker code is 4417.",
                       covered_ids=("m0", "m1", "m2", "m3"), seq=0)
    r1 = SummaryRecord(id="r1", conversation_id="c", text="Meeting on May 8.",
                       covered_ids=("m4", "m5"), seq=1)
    trace = Trace(unit_id="u", messages=msgs, summaries=[r0, r1], summary_turns=[4, 6],
                  turns=[TurnRecord(i, m.role, 10 * (i + 1), 0, 1, 0, ((0, i + 1),)) for i, m in enumerate(msgs)],
                  usage=Usage(100, 20, calls=2))
    _with_context_at_7(trace, (Text("assistant", None, r1.render()), (6, 8)))
    return conv, trace


def test_retention_stale_and_where_facts_die() -> None:
    conv, trace = _case()
    s = _score(("answer_retention", "fact_survival", "cost"), conv, trace)
    p = s.probes
    assert p["p-code"]["retained"] is False and p["p-code"]["baseline_retained"] is True
    assert p["p-code"]["died_at_generation"] == 1  # in r0, lost by r1
    assert p["p-venue"]["died_at_generation"] == 0  # covered by r0, never in it
    assert p["p-meet"] == {**p["p-meet"], "retained": True, "stale": False, "in_verbatim": True,
                           "in_summary": False, "died_at_generation": -1}
    assert p["p-adv"]["baseline_retained"] is None
    assert s.unit["retention"] == pytest.approx(1 / 3)
    assert s.unit["relative_retention"] == pytest.approx(1 / 3)
    assert s.unit["stale_rate"] == 0.0
    # one main-model call per assistant message, sent the context after the message before it
    assert s.unit["main_input_tokens"] == 10 + 30 + 50 + 70
    assert s.unit["max_context_tokens"] == 80
    assert s.unit["cost_summarizer_usd"] == 0.0 and s.unit["cost_main_usd"] > 0


def test_stale_value_counts_when_the_current_one_is_gone() -> None:
    conv, trace = _case()
    _with_context_at_7(trace, (Text("assistant", None, "Meeting on May 8."),))
    s = _score(("answer_retention",), conv, trace)
    assert s.probes["p-meet"]["stale"] is True
    assert s.unit["stale_rate"] == 1.0


def test_rouge_without_references_is_nan_and_span_is_scored() -> None:
    conv, trace = _case()
    s = _score(("rouge",), conv, trace)
    assert math.isnan(s.unit["rouge_l"])
    assert 0 < s.unit["rouge_l_span"] <= 1


class _Flaky:
    """Fails the first `fails` calls with a retryable 500, then answers."""

    name = "fake:flaky"
    context_window = 100_000

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.calls = 0

    def complete(self, request: Any) -> Completion:
        self.calls += 1
        if self.calls <= self.fails:
            raise ModelError("HTTP 500", ErrorKind.SERVER, status=500)
        return Completion("4417", input_tokens=10, output_tokens=1, model="fake")


@pytest.mark.parametrize(("fails", "answered"), [(2, True), (3, False)])
def test_the_qa_scorer_retries_a_retryable_failure_twice(monkeypatch: pytest.MonkeyPatch, fails: int,
                                                         answered: bool) -> None:
    monkeypatch.setattr(qa, "QA_BACKOFF_S", 0.0)
    conv, trace = _case()
    conv = Conversation(conv.id, conv.messages, conv.probes[:1])
    model = _Flaky(fails)
    plan = ScoringPlan(scorers=("qa",), timing=parse_timing("end"), model="fake:flaky")
    s = scoring.score(plan, UNIT, conv, trace, model)[1]
    assert (s.probes["p-code"]["prediction"] == "4417") is answered
    assert model.calls == 3
