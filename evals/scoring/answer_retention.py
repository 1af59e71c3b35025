"""answer_retention: is each probe's gold answer still recoverable from the assembled context?

Offline and deterministic: the gold answer and the context are normalized as LoCoMo does, and
the answer counts as retained when it appears in the context on word boundaries. The baseline is
the same check against the whole conversation up to the turn the probe is asked, which is
exactly what the `full-context` preset would send, so relative retention needs no extra Unit.
Method and blind spots: docs/scoring.md.
"""

from __future__ import annotations

import math
from typing import Any

from evals.scoring.base import ScoreContext, Scores
from evals.scoring.text import contains, normalize_answer

UNANSWERABLE = frozenset({"adversarial"})
"""Categories whose gold answer is not in the conversation by design: not counted in retention."""


class AnswerRetention:
    name = "answer_retention"
    version = "1"

    def score(self, ctx: ScoreContext) -> Scores:
        trace = ctx.trace
        norm_ctx: dict[int, tuple[str, str, str]] = {}
        norm_prefix: dict[int, str] = {}
        out = Scores()
        retained_n = baseline_n = 0
        stale_n = superseded_n = counted = 0
        for probe in ctx.conversation.probes:
            snap = trace.snapshot_for(probe.id)
            turn = snap.turn
            if turn not in norm_ctx:
                norm_ctx[turn] = (normalize_answer(snap.context_text),
                                  normalize_answer(snap.summary_text),
                                  normalize_answer(snap.verbatim_text))
            if turn not in norm_prefix:
                norm_prefix[turn] = normalize_answer(
                    "\n".join(m.content for m in trace.messages[: turn + 1]))
            whole, summ, verb = norm_ctx[turn]
            cols: dict[str, Any]
            if probe.category in UNANSWERABLE:
                cols = {"retained": False, "stale": False, "in_summary": False,
                        "in_verbatim": False, "baseline_retained": None}
            else:
                retained = contains(whole, probe.answer)
                base = contains(norm_prefix[turn], probe.answer)
                stale = (not retained) and any(contains(whole, s) for s in probe.stale_answers)
                cols = {"retained": retained, "stale": stale,
                        "in_summary": contains(summ, probe.answer),
                        "in_verbatim": contains(verb, probe.answer),
                        "baseline_retained": base}
                counted += 1
                retained_n += retained
                baseline_n += base
                if probe.stale_answers:
                    superseded_n += 1
                    stale_n += stale
            out.probes[probe.id] = cols
        out.unit = {
            "retention": retained_n / counted if counted else math.nan,
            "relative_retention": (retained_n / baseline_n) if baseline_n else math.nan,
            "stale_rate": stale_n / superseded_n if superseded_n else math.nan,
        }
        return out
