"""qa: a model answers each probe from the assembled context; scored by LoCoMo token F1.

Retention says whether the answer is *in* the context; QA says whether a model can *use* it
(a summary can keep the words but lose what they referred to). Adversarial probes are scored as
LoCoMo does: correct when the model says the information is not available. With ``judge``, the
same model also grades each answer against the gold one (``judge_correct``), which forgives
paraphrases that token F1 punishes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rollsum.errors import ConfigError, ModelError
from rollsum.models.base import CompletionRequest
from rollsum.models.retrying import RetryingModel
from rollsum.types import Message, Usage
from rollsum_evals.replay.trace import ContextItem
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.cost import price
from rollsum_evals.scoring.text import locomo_f1

QA_RETRIES = 2
"""Retryable failures (connection, timeout, 429, 5xx) are retried twice with backoff
(`rollsum.models.RetryingModel`, docs/models.md); others count as no answer."""
QA_BACKOFF_S = 0.5
QA_PROMPT_ID = "qa/v1"
JUDGE_PROMPT_ID = "qa-judge/v1"

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


class QA:
    name = "qa"
    version = "1"
    needs = frozenset({"contexts", "model"})
    unit_columns = (
        Column("qa_f1", "float", math.nan, "mean LoCoMo token F1 of the model's answers"),
        Column("judge_accuracy", "float", math.nan, "share of answers the judge graded correct"),
        Column("judge_input_tokens", "int", 0, "QA and judge usage"),
        Column("judge_output_tokens", "int", 0, ""),
        Column("cost_judge_usd", "float", 0.0, "QA and judge usage at the model's prices"),
    )
    probe_columns = (
        Column("qa_f1", "float", math.nan, "LoCoMo token F1 of the answer"),
        Column("prediction", "str", "", "the model's answer"),
        Column("judge_correct", "boolean", None, "the judge's grade (NA when not judged)"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        if inp.model is None:
            raise ConfigError("the 'qa' scorer needs a model: set [qa] model = \"...\" in the spec")
        # the SDK does not retry (the engine owns summarizer retries); a direct caller wraps
        model = RetryingModel(inp.model, retries=QA_RETRIES, backoff_s=QA_BACKOFF_S)
        usage = Usage()
        out = Scores()
        f1s: list[float] = []
        judged: list[bool] = []
        for ask in inp.asks:
            probe = ask.probe
            context = inp.trace.context_at(ask.asked_turn)
            req = CompletionRequest(
                system=_QA_SYSTEM,
                messages=[Message("user", f"{_transcript(context)}\n\nQuestion: {probe.question}")],
                max_tokens=64, prompt_id=QA_PROMPT_ID,
                metadata={"purpose": "qa", "unit": inp.unit.unit_id, "probe": ask.key})
            try:
                c = model.complete(req)
                prediction = c.text.strip()
                usage = usage + c.usage
            except ModelError:
                prediction = ""
            f1 = locomo_f1(prediction, probe.answer, probe.category)
            f1s.append(f1)
            cols: dict[str, Any] = {"qa_f1": f1, "prediction": prediction}
            if inp.plan.judge and probe.category != "adversarial" and prediction:
                jreq = CompletionRequest(
                    system=_JUDGE_SYSTEM,
                    messages=[Message("user", f"Question: {probe.question}\nReference: {probe.answer}\n"
                                              f"Candidate: {prediction}")],
                    max_tokens=4, prompt_id=JUDGE_PROMPT_ID,
                    metadata={"purpose": "judge", "unit": inp.unit.unit_id, "probe": ask.key})
                try:
                    jc = model.complete(jreq)
                    usage = usage + jc.usage
                    verdict = jc.text.strip().upper().startswith("CORRECT")
                    cols["judge_correct"] = verdict
                    judged.append(verdict)
                except ModelError:
                    pass
            out.probes[ask.key] = cols
        out.unit.update({
            "qa_f1": sum(f1s) / len(f1s) if f1s else math.nan,
            "judge_accuracy": sum(judged) / len(judged) if judged else math.nan,
            "judge_input_tokens": usage.input_tokens,
            "judge_output_tokens": usage.output_tokens,
            "cost_judge_usd": price(inp.plan.model, usage),
        })
        return out
