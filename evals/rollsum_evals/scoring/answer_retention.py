"""answer_retention: is each probe's gold answer still recoverable from the assembled context?

Offline and deterministic: the gold answer and the context are normalized as LoCoMo does, and
the answer counts as retained when it appears in the context on word boundaries. The baseline is
the same check against the whole conversation up to the turn the probe is asked, which is
exactly what the `full-context` preset would send, so relative retention needs no extra Unit.
A probe asked at several ages is several rows, each scored against the context rebuilt at its
own asking turn (`Trace.context_at`). Method and blind spots: docs/scoring.md.
"""

from __future__ import annotations

import math
from typing import Any

from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.text import contains
from rollsum_evals.scoring.views import ContextViews

UNANSWERABLE = frozenset({"adversarial"})
"""Categories whose gold answer is not in the conversation by design: not counted in retention."""


class AnswerRetention:
    name = "answer_retention"
    version = "2"
    needs = frozenset({"contexts"})
    unit_columns = (
        Column("retention", "float", math.nan, "mean over answerable probes of `retained`"),
        Column("relative_retention", "float", math.nan, "retained / retained by full context"),
        Column("stale_rate", "float", math.nan, "share of superseded-fact probes answered stale"),
    )
    probe_columns = (
        Column("retained", "bool", False, "gold answer in the context at the asking turn"),
        Column("stale", "bool", False, "a superseded value present, the current one absent"),
        Column("in_summary", "bool", False, "found in the items that are not conversation messages"),
        Column("in_verbatim", "bool", False, "found in the items made from conversation messages"),
        Column("baseline_retained", "boolean", None, "found in the conversation up to the asking turn"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        views: ContextViews = inp.views if inp.views is not None else ContextViews(inp.trace)
        out = Scores()
        retained_n = baseline_n = 0
        stale_n = superseded_n = counted = 0
        for ask in inp.asks:
            probe = ask.probe
            cols: dict[str, Any]
            if probe.category in UNANSWERABLE:
                cols = {"retained": False, "stale": False, "in_summary": False,
                        "in_verbatim": False, "baseline_retained": None}
            else:
                view = views.at(ask.asked_turn)
                retained = contains(view.context, probe.answer)
                base = contains(view.prefix, probe.answer)
                stale = (not retained) and any(contains(view.context, a) for a in probe.stale_answers)
                cols = {"retained": retained, "stale": stale,
                        "in_summary": contains(view.summary, probe.answer),
                        "in_verbatim": contains(view.verbatim, probe.answer), "baseline_retained": base}
                counted += 1
                retained_n += retained
                baseline_n += base
                if probe.stale_answers:
                    superseded_n += 1
                    stale_n += stale
            out.probes[ask.key] = cols
        out.unit = {
            "retention": retained_n / counted if counted else math.nan,
            "relative_retention": (retained_n / baseline_n) if baseline_n else math.nan,
            "stale_rate": stale_n / superseded_n if superseded_n else math.nan,
        }
        return out
