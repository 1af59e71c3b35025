"""qa: a model answers each probe from the assembled context; scored by LoCoMo token F1.

Retention says whether the answer is *in* the context; QA says whether a model can *use* it
(a summary can keep the words but lose what they referred to). Adversarial probes are scored as
LoCoMo does: correct when the model says the information is not available.

What makes the model-graded numbers worth their cost (docs/scoring.md, "qa"):

- A call that fails (after retries) is not a wrong answer: the ask is excluded from `qa_f1`
  and `judge_accuracy` and counted (`qa_failed` per ask, `qa_failures` per Unit). Scoring it
  F1 0 would make a flaky API look like a forgetful summary.
- With ``judge``, a model grades each answer against the gold one (`judge_correct`), which
  forgives paraphrases that token F1 punishes. The judge is ``[qa] judge_model`` when set,
  else the answering model.
- A judge is only as good as its willingness to say WRONG, so each Unit also asks it to grade
  *negative controls* -- candidates that are wrong by construction for a few of its probes: a
  vague answer, the right answer attributed to the other speaker, and the gold answer negated.
  The share it accepts is `judge_false_accept` (a configuration whose judge accepts more than
  10 % is flagged ``judge-unreliable``). The controls depend only on the probe and the judge,
  so the cache answers them once per conversation, whatever the number of configurations.
- `judge_matcher_agreement`: on asks where both give a verdict, how often the judge agrees
  with the text matcher (the answer's content words, stemmed as the retention matcher stems
  them, all occur in the model's answer).
- With ``batch``, the QA calls and then the judge calls of a Unit go as one Message Batch each
  (`rollsum.models.batch`: half price; a killed run resumes its batch).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rollsum.errors import ConfigError, ModelError
from rollsum.models.base import CompletionRequest, Model
from rollsum.models.batch import BATCH_DISCOUNT, prefetch
from rollsum.models.retrying import RetryingModel
from rollsum.types import Message, Usage
from rollsum_evals.replay.trace import ContextItem
from rollsum_evals.scoring import support
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.cost import price
from rollsum_evals.scoring.text import locomo_f1

QA_RETRIES = 2
"""Retryable failures (connection, timeout, 429, 5xx) are retried twice with backoff
(`rollsum.models.RetryingModel`, docs/models.md); what still fails is excluded and counted."""
QA_BACKOFF_S = 0.5
QA_PROMPT_ID = "qa/v1"
JUDGE_PROMPT_ID = "qa-judge/v1"
CONTROL_ASKS = 8
"""Probes per Unit whose gold answer is turned into negative controls (up to three each). Chosen
by a hash of the probe id, so every configuration gets the same controls (cache hits)."""
MAX_JUDGE_FALSE_ACCEPT = 0.10
"""A judge that accepts more than one wrong-by-construction answer in ten is not grading."""
VAGUE_ANSWER = "Something related to what they talked about earlier."

_QA_SYSTEM = (
    "You are checking what a chat assistant can still recall. Below is everything it was given "
    "about an earlier conversation (a summary of older parts, then recent messages). Answer the "
    "question using only that material, in as few words as possible. If the material does not "
    "contain the answer, reply exactly: No information available."
)
_JUDGE_SYSTEM = (
    "You grade short answers. Given a question, the reference answer and a candidate answer, "
    "reply with one word: CORRECT if the candidate means the same as the reference (wording "
    "may differ), otherwise WRONG."
)


def _transcript(context: Sequence[ContextItem]) -> str:
    return "\n".join(f"[{m.role}{'/' + m.name if m.name else ''}] {m.text}" for m in context)


def judge_request(question: str, reference: str, candidate: str, *, purpose: str, unit: str,
                  key: str) -> CompletionRequest:
    return CompletionRequest(
        system=_JUDGE_SYSTEM,
        messages=[Message("user", f"Question: {question}\nReference: {reference}\nCandidate: {candidate}")],
        max_tokens=4, prompt_id=JUDGE_PROMPT_ID, metadata={"purpose": purpose, "unit": unit, "probe": key})


def _first_names(conversation_messages: Sequence[Any]) -> list[str]:
    names: dict[str, None] = {}
    for m in conversation_messages:
        name = str(getattr(m, "name", "") or "").strip()
        if name and name.lower() not in support.ROLE_NAMES:
            names.setdefault(name, None)
    return list(names)


def negative_controls(question: str, answer: str, speakers: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, candidate) pairs that are wrong answers to `question` by construction.

    ``vague``: says nothing checkable. ``other-speaker``: the gold answer, said to be about the
    other of two speakers (only when the question names exactly one of them). ``negated``: the
    gold answer denied."""
    gold = " ".join(answer.split()).rstrip(".")
    out = [("vague", VAGUE_ANSWER), ("negated", f"It was not {gold}.")]
    named = [s for s in speakers if re.search(rf"\b{re.escape(s.split()[0])}\b", question)]
    if len(speakers) == 2 and len(named) == 1:
        other = next(s for s in speakers if s != named[0])
        out.insert(1, ("other-speaker", f"That was {other}, not {named[0]}: {gold}."))
    return out


def matcher_correct(question: str, answer: str, prediction: str) -> bool | None:
    """The text matcher's verdict on an answer: every content word of the gold answer (stemmed,
    dates canonical, as the retention matcher reads them) occurs in it; None when the gold answer
    has nothing a text can state."""
    c = support.claim(question, answer)
    if c is None:
        return None
    found = support.tokens(prediction)
    return all(all(t in found for t in item) for item in c.items)


def _control_rank(probe_id: str) -> str:
    return hashlib.sha256(probe_id.encode("utf-8")).hexdigest()


@dataclass
class _Calls:
    """One model's calls within a Unit: usage, failures."""

    model: Model
    usage: Usage
    failures: int = 0

    def complete(self, request: CompletionRequest) -> str | None:
        try:
            c = self.model.complete(request)
        except ModelError:
            self.failures += 1
            return None
        self.usage = self.usage + c.usage
        return c.text.strip()


class QA:
    name = "qa"
    version = "2"
    needs = frozenset({"contexts", "model"})
    unit_columns = (
        Column("qa_f1", "float", math.nan, "mean LoCoMo token F1 of the model's answers (failed calls excluded)"),
        Column("qa_failures", "int", 0, "asks whose QA call failed after retries (excluded, not scored 0)"),
        Column("judge_accuracy", "float", math.nan, "share of answers the judge graded correct"),
        Column("judge_failures", "int", 0, "judge calls that failed after retries (answer left ungraded)"),
        Column("judge_controls", "int", 0, "negative controls the judge graded"),
        Column("judge_controls_accepted", "int", 0, "negative controls the judge graded CORRECT"),
        Column("judge_false_accept", "float", math.nan, "judge_controls_accepted / judge_controls"),
        Column("judge_matcher_n", "int", 0, "asks both the judge and the text matcher gave a verdict on"),
        Column("judge_matcher_agreement", "float", math.nan, "share of those where they agree"),
        Column("judge_input_tokens", "int", 0, "QA and judge usage"),
        Column("judge_output_tokens", "int", 0, ""),
        Column("cost_judge_usd", "float", 0.0, "QA and judge usage at the models' prices (batch price "
                                                "when [qa] batch = true)"),
        Column("cost_judge_list_usd", "float", 0.0, "the same usage at list price"),
    )
    probe_columns = (
        Column("qa_f1", "float", math.nan, "LoCoMo token F1 of the answer (NaN when the call failed)"),
        Column("qa_failed", "bool", False, "the QA call failed after retries: excluded from qa_f1"),
        Column("prediction", "str", "", "the model's answer"),
        Column("judge_correct", "boolean", None, "the judge's grade (NA when not judged)"),
        Column("matcher_correct", "boolean", None, "the text matcher's grade of the answer (NA when "
                                                   "not judged or the gold answer has no content)"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        if inp.model is None:
            raise ConfigError("the 'qa' scorer needs a model: set [qa] model = \"...\" in the spec")
        plan = inp.plan
        unit_id = inp.unit.unit_id
        # the SDK does not retry (the engine owns summarizer retries); a direct caller wraps.
        # A batch retries its own failed requests: a retry here would be a list-price call.
        wrap = (lambda m: m) if plan.batch else (
            lambda m: RetryingModel(m, retries=QA_RETRIES, backoff_s=QA_BACKOFF_S))
        answerer = _Calls(wrap(inp.model), Usage())
        judge_raw = inp.judge_model if inp.judge_model is not None else inp.model
        grader = answerer if inp.judge_model is None else _Calls(wrap(judge_raw), Usage())

        qa_reqs = []
        for ask in inp.asks:
            context = inp.trace.context_at(ask.asked_turn)
            qa_reqs.append(CompletionRequest(
                system=_QA_SYSTEM,
                messages=[Message("user", f"{_transcript(context)}\n\nQuestion: {ask.probe.question}")],
                max_tokens=64, prompt_id=QA_PROMPT_ID,
                metadata={"purpose": "qa", "unit": unit_id, "probe": ask.key}))
        if plan.batch:
            prefetch(inp.model, qa_reqs)
        out = Scores()
        f1s: list[float] = []
        failures = 0
        for ask, req in zip(inp.asks, qa_reqs, strict=True):
            prediction = answerer.complete(req)
            if prediction is None:
                failures += 1
                out.probes[ask.key] = {"qa_f1": math.nan, "qa_failed": True, "prediction": ""}
                continue
            f1 = locomo_f1(prediction, ask.probe.answer, ask.probe.category)
            f1s.append(f1)
            out.probes[ask.key] = {"qa_f1": f1, "qa_failed": False, "prediction": prediction}

        judged: list[bool] = []
        agree: list[bool] = []
        controls: list[bool] = []
        judge_failures = 0
        if plan.judge:
            to_judge = [(ask, out.probes[ask.key]["prediction"]) for ask in inp.asks
                        if ask.probe.category != "adversarial" and out.probes[ask.key]["prediction"]]
            jreqs = [judge_request(a.probe.question, a.probe.answer, pred, purpose="judge", unit=unit_id,
                                   key=a.key) for a, pred in to_judge]
            creqs = self._control_requests(inp)
            if plan.batch:
                prefetch(judge_raw, jreqs + creqs)
            before = grader.failures
            for (ask, pred), jreq in zip(to_judge, jreqs, strict=True):
                text = grader.complete(jreq)
                if text is None:
                    continue
                verdict = text.upper().startswith("CORRECT")
                cols = out.probes[ask.key]
                cols["judge_correct"] = verdict
                judged.append(verdict)
                matched = matcher_correct(ask.probe.question, ask.probe.answer, pred)
                if matched is not None:
                    cols["matcher_correct"] = matched
                    agree.append(matched == verdict)
            for creq in creqs:
                text = grader.complete(creq)
                if text is not None:
                    controls.append(text.upper().startswith("CORRECT"))
            judge_failures = grader.failures - before
        usage_by_model = [(plan.model, answerer.usage)]
        if grader is not answerer:
            usage_by_model.append((plan.grader, grader.usage))
        total = Usage()
        list_usd = 0.0
        for spec, usage in usage_by_model:
            total = total + usage
            list_usd += price(spec, usage)
        out.unit.update({
            "qa_f1": sum(f1s) / len(f1s) if f1s else math.nan,
            "qa_failures": failures,
            "judge_accuracy": sum(judged) / len(judged) if judged else math.nan,
            "judge_failures": judge_failures,
            "judge_controls": len(controls),
            "judge_controls_accepted": sum(controls),
            "judge_false_accept": sum(controls) / len(controls) if controls else math.nan,
            "judge_matcher_n": len(agree),
            "judge_matcher_agreement": sum(agree) / len(agree) if agree else math.nan,
            "judge_input_tokens": total.input_tokens,
            "judge_output_tokens": total.output_tokens,
            "cost_judge_usd": list_usd * (BATCH_DISCOUNT if plan.batch else 1.0),
            "cost_judge_list_usd": list_usd,
        })
        return out

    @staticmethod
    def _control_requests(inp: ScoreInput) -> list[CompletionRequest]:
        """Negative controls for up to `CONTROL_ASKS` of the Unit's probes (see the module doc)."""
        speakers = _first_names(inp.conversation.messages)
        probes = {a.probe.id: a.probe for a in inp.asks
                  if a.probe.category != "adversarial" and a.probe.answer.strip()}
        chosen = sorted(probes.values(), key=lambda p: _control_rank(p.id))[:CONTROL_ASKS]
        return [judge_request(p.question, p.answer, candidate, purpose=f"judge-control:{kind}",
                              unit=inp.unit.unit_id, key=p.id)
                for p in chosen for kind, candidate in negative_controls(p.question, p.answer, speakers)]
