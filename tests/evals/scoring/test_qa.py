"""The model-graded path: failed calls excluded and counted, a separate judge, negative controls,
judge-matcher agreement, the Message Batches path (real SDK on a MockTransport), the flag."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pandas as pd
import pytest
import rollsum_evals
from rollsum_evals import scoring
from rollsum_evals.analysis import config_table
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay.trace import Trace, TurnRecord
from rollsum_evals.report import write_report
from rollsum_evals.run import run_sweep
from rollsum_evals.scoring import qa
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import Scores, ScoringPlan
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.units import Unit
from rollsum_evals.verdicts import Health, judge

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models import FakeModel
from rollsum.models.anthropic_model import AnthropicModel
from rollsum.models.base import Completion, CompletionRequest
from rollsum.types import Message, Usage
from tests.support.batch_server import BatchServer, message_json

UNIT = Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="cfg",
            preset="since-last", params_json="{}", prompt="", model="extractive", seed=0, context_window=1000)
FACTS = [("Caroline", "adoption agencies", "What did Caroline research?"),
         ("Melanie", "pottery", "What does Melanie make?"),
         ("Caroline", "Sweden", "Where is Caroline from?"),
         ("Melanie", "camping", "What did Melanie do last weekend?"),
         ("Caroline", "counseling", "What career is Caroline pursuing?"),
         ("Melanie", "violin", "What instrument does Melanie play?")]


def _case() -> tuple[Conversation, Trace]:
    msgs = tuple(Message("user" if i % 2 == 0 else "assistant", f"I love {fact}.", name=who, id=f"m{i}")
                 for i, (who, fact, _q) in enumerate(FACTS))
    probes = tuple(Probe(f"p{i}", q, fact, evidence=(f"m{i}",), category="single-hop")
                   for i, (_who, fact, q) in enumerate(FACTS))
    conv = Conversation("c", msgs, probes)
    trace = Trace(unit_id="u", messages=msgs, summaries=[], summary_turns=[],
                  turns=[TurnRecord(i, m.role, 10, 0, 1, 0, ((0, i + 1),)) for i, m in enumerate(msgs)],
                  usage=Usage())
    return conv, trace


def _gold(request: CompletionRequest) -> str:
    question = request.messages[-1].content.rsplit("Question: ", 1)[-1]
    return next(fact for _w, fact, q in FACTS if q == question)


class Answerer:
    """Answers with the gold fact; every call whose index is in `fail` raises a non-retryable error."""

    name = "fake:answerer"
    context_window = 100_000

    def __init__(self, fail: set[int] = frozenset(), kind: ErrorKind = ErrorKind.MALFORMED) -> None:  # type: ignore[assignment]
        self.fail = fail
        self.kind = kind
        self.calls = 0

    def complete(self, request: CompletionRequest) -> Completion:
        index = self.calls
        self.calls += 1
        if index in self.fail:
            raise ModelError("injected", self.kind)
        if request.prompt_id == qa.QA_PROMPT_ID:
            return Completion(f"I think {_gold(request)}", input_tokens=50, output_tokens=3)
        return Completion("CORRECT", input_tokens=20, output_tokens=1)


class HonestJudge:
    """CORRECT only when the candidate states the reference and nothing else around it."""

    name = "fake:honest"
    context_window = 100_000

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        text = request.messages[-1].content
        ref = re.search(r"Reference: (.*)", text)
        cand = re.search(r"Candidate: (.*)", text)
        assert ref is not None and cand is not None
        ok = cand.group(1).strip() == f"I think {ref.group(1).strip()}"
        return Completion("CORRECT" if ok else "WRONG", input_tokens=20, output_tokens=1)


def _score(model: Any, *, judge: bool = True, judge_model: Any = None, plan_judge_model: str = "",
           batch: bool = False) -> Scores:
    conv, trace = _case()
    plan = ScoringPlan(scorers=("qa",), timing=parse_timing("end"), model="fake:answerer", judge=judge,
                       judge_model=plan_judge_model, batch=batch)
    return scoring.score(plan, UNIT, conv, trace, model, judge_model=judge_model)[1]


def test_a_failed_call_is_excluded_and_counted_never_scored_zero() -> None:
    s = _score(Answerer(fail={1, 3, 5}), judge=False)  # half of the six QA calls fail
    failed = [k for k, cols in s.probes.items() if cols["qa_failed"]]
    assert failed == ["p1", "p3", "p5"]
    assert all(math.isnan(s.probes[k]["qa_f1"]) for k in failed)
    assert s.unit["qa_failures"] == 3
    ok = [s.probes[k]["qa_f1"] for k in ("p0", "p2", "p4")]
    assert s.unit["qa_f1"] == pytest.approx(sum(ok) / 3)  # not diluted by zeros
    assert s.unit["qa_f1"] > 0.5


def test_fake_model_failing_half_its_calls_through_the_spec_string() -> None:
    model = FakeModel.from_options("mode=echo,fail_rate=0.5,fail_kind=malformed,seed=3")
    s = _score(model, judge=False)
    n_failed = sum(bool(c["qa_failed"]) for c in s.probes.values())
    assert n_failed == model.failures == 3 and s.unit["qa_failures"] == n_failed
    assert not math.isnan(s.unit["qa_f1"])


def test_the_judge_model_grades_and_the_answering_model_only_answers() -> None:
    answerer, honest = Answerer(), HonestJudge()
    s = _score(answerer, judge_model=honest, plan_judge_model="fake:honest")
    assert answerer.calls == len(FACTS)  # QA only
    graded = [r for r in honest.requests if r.metadata["purpose"] == "judge"]
    assert len(graded) == len(FACTS)
    assert s.unit["judge_accuracy"] == 1.0
    assert s.unit["judge_controls"] > 0 and s.unit["judge_false_accept"] == 0.0


def test_a_judge_that_says_correct_to_everything_accepts_every_control() -> None:
    s = _score(Answerer(), judge_model=FakeModel.from_options("script=CORRECT"), plan_judge_model="fake:script=CORRECT")
    assert s.unit["judge_controls"] >= 2 * len(FACTS)
    assert s.unit["judge_controls_accepted"] == s.unit["judge_controls"]
    assert s.unit["judge_false_accept"] == 1.0


def test_controls_are_vague_other_speaker_and_negated() -> None:
    kinds = dict(qa.negative_controls("What did Caroline research?", "adoption agencies", ["Caroline", "Melanie"]))
    assert set(kinds) == {"vague", "other-speaker", "negated"}
    assert "Melanie" in kinds["other-speaker"] and "adoption agencies" in kinds["other-speaker"]
    assert kinds["negated"] == "It was not adoption agencies."
    # a question about nobody in particular has no other speaker to swap in
    assert "other-speaker" not in dict(qa.negative_controls("What year?", "2022", ["Caroline", "Melanie"]))


def test_controls_are_the_same_for_every_configuration_of_a_conversation() -> None:
    first, second = HonestJudge(), HonestJudge()
    _score(Answerer(), judge_model=first, plan_judge_model="fake:honest")
    _score(Answerer(fail={0}), judge_model=second, plan_judge_model="fake:honest")
    def controls(j: HonestJudge) -> list[str]:
        return [r.messages[-1].content for r in j.requests if r.metadata["purpose"].startswith("judge-control")]
    assert controls(first) == controls(second)  # so the cache answers them once


def test_judge_and_matcher_agreement_counts_the_asks_both_grade() -> None:
    s = _score(Answerer(), judge_model=FakeModel.from_options("script=CORRECT|WRONG"),
               plan_judge_model="fake:script=CORRECT|WRONG")
    # the matcher accepts every answer (each states the gold fact); the judge alternates
    matched = [c.get("matcher_correct") for c in s.probes.values()]
    assert matched == [True] * len(FACTS)
    verdicts = [c["judge_correct"] for c in s.probes.values()]
    assert s.unit["judge_matcher_n"] == len(FACTS)
    assert s.unit["judge_matcher_agreement"] == pytest.approx(sum(verdicts) / len(FACTS))
    assert 0 < s.unit["judge_matcher_agreement"] < 1


def test_matcher_verdict() -> None:
    assert qa.matcher_correct("What does Melanie make?", "pottery", "She makes pottery.") is True
    assert qa.matcher_correct("What does Melanie make?", "pottery", "She paints.") is False
    assert qa.matcher_correct("Is it?", "yes", "yes") is None


def test_a_failed_judge_call_leaves_the_answer_ungraded() -> None:
    # calls 0-5 answer, 6 is the first judge call
    s = _score(Answerer(fail={6}))
    assert s.probes["p0"].get("judge_correct") is None
    assert s.unit["judge_failures"] == 1 and s.unit["qa_failures"] == 0


# -- the verdict rule --------------------------------------------------------------------------


def test_judge_unreliable_flag_above_ten_percent() -> None:
    def health(controls: float = 0.0, accepted: float = 0.0) -> Health:
        return Health(baseline=False, units=5, units_unfinished=0, conversations=5, asks=10, answerable=10,
                      attempts=10.0, failures=0.0, messages=100.0, judge_controls=controls,
                      judge_controls_accepted=accepted)

    flagged = judge(health(20, 3))
    assert "judge-unreliable" in flagged.flags and "15 %" in flagged.reason
    assert "judge-unreliable" not in judge(health(20, 2)).flags  # 10 % exactly is the limit
    assert "judge-unreliable" not in judge(health()).flags  # no controls: nothing to say


# -- batches through the scorer ------------------------------------------------------------------


def test_batch_mode_sends_qa_then_judge_as_two_batches_at_half_price(tmp_path: Path) -> None:
    server = BatchServer()

    def outcome(cid: str, _n: int) -> dict[str, Any]:
        params = server.params[cid]
        text = params["messages"][-1]["content"]
        if params["max_tokens"] == 64:  # a QA request
            q = text.rsplit("Question: ", 1)[-1]
            answer = next(f"I think {fact}" for _w, fact, qq in FACTS if qq == q)
        else:
            answer = "WRONG" if "Candidate: I think" not in text else "CORRECT"
        return {"type": "succeeded", "message": message_json(answer, input_tokens=1000, output_tokens=10)}

    server.outcome = outcome
    http = httpx2.Client(transport=httpx2.MockTransport(server))
    try:
        model = AnthropicModel(anthropic.Anthropic(api_key="sk-ant-test", http_client=http, max_retries=0),
                               "claude-haiku-4-5")
        conv, trace = _case()
        plan = ScoringPlan(scorers=("qa",), timing=parse_timing("end"), model="anthropic:claude-haiku-4-5",
                           judge=True, batch=True)
        s = scoring.score(plan, UNIT, conv, trace, model)[1]
    finally:
        http.close()
    assert server.creates == 2
    assert not any(path == "/v1/messages" for _m, path in server.log)  # nothing at list price
    assert s.unit["qa_failures"] == 0 and s.unit["judge_accuracy"] == 1.0
    assert s.unit["judge_false_accept"] == 0.0
    assert s.unit["cost_judge_usd"] == pytest.approx(s.unit["cost_judge_list_usd"] / 2)
    assert s.unit["cost_judge_usd"] > 0


# -- a sweep: flag, columns, report --------------------------------------------------------------

SPEC = """
name = "qa-trust"
context_window = 3000
models = ["fake:mode=extractive"]
scorers = ["answer_retention", "qa"]
cache = "off"
[qa]
model = "fake:mode=echo,fail_rate=0.5,fail_kind=malformed,seed=1"
judge = true
judge_model = "{judge}"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=40&seed=6"
[[configs]]
preset = "since-last"
"""


@pytest.mark.parametrize(("judge_spec", "flagged"), [("fake:script=CORRECT", True), ("fake:script=WRONG", False)])
def test_sweep_flags_a_lenient_judge_and_counts_failed_asks(tmp_path: Path, judge_spec: str, flagged: bool) -> None:
    spec = parse_spec(SPEC.format(judge=judge_spec), "qa.toml")
    assert spec.scoring.judge_model == judge_spec
    run_sweep(spec, tmp_path / "run", progress=False)
    run = rollsum_evals.load_run(tmp_path / "run")
    assert run.manifest["scoring"]["judge_model"] == judge_spec
    probes = run.probes
    failed = probes[probes["qa_failed"].astype(bool)]
    # seed 1: each Unit's fresh model fails the first of its two QA calls
    assert len(failed) == len(probes) // 2 and failed["qa_f1"].isna().all()
    assert int(run.units["qa_failures"].sum()) == len(failed)
    table = config_table(run, n_resamples=50)
    assert ("judge-unreliable" in table["flags"].iloc[0]) is flagged
    assert table["judge_false_accept"].iloc[0] == (1.0 if flagged else 0.0)
    write_report(tmp_path / "run", tmp_path / "report", n_resamples=50)
    csv = pd.read_csv(tmp_path / "report" / "configs.csv")
    assert {"qa_failures", "judge_false_accept", "judge_matcher_agreement", "cost_judge_list_usd"} <= set(csv.columns)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Model-graded answers" in md
    assert ("The QA judge is unreliable" in md) is flagged


@pytest.mark.parametrize(("line", "message"), [
    ("judge_model = 3", "field 'qa.judge_model': expected a model spec string"),
    ('judge_model = "claude-haiku-4-5"', "field 'qa.judge_model': expected a model spec"),
    ('batch = "yes"', "field 'qa.batch': expected true or false"),
])
def test_spec_qa_keys_are_checked(line: str, message: str) -> None:
    text = SPEC.format(judge="fake").replace('judge_model = "fake"', line)
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_spec(text, "qa.toml")


def test_spec_batch_reaches_the_plan() -> None:
    spec = parse_spec(SPEC.format(judge="fake").replace("judge = true", "judge = true\nbatch = true"), "qa.toml")
    assert spec.scoring.batch and spec.scoring.to_dict()["batch"] is True
    plain = parse_spec(SPEC.format(judge="fake").replace('judge_model = "fake"', ""), "qa.toml").scoring
    assert "batch" not in plain.to_dict() and "judge_model" not in plain.to_dict()  # old plans hash the same

