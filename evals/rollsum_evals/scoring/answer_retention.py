"""answer_retention: is each probe's gold answer still recoverable from the assembled context?

Offline and deterministic: the gold answer and the context are normalized as LoCoMo does, and
the answer counts as retained when it appears in the context on word boundaries. The baseline is
the same check against the whole conversation up to the turn the probe is asked, which is
exactly what the `full-context` preset would send, so relative retention needs no extra Unit.
A probe asked at several ages is several rows, each scored against the context of its own
asking turn (observed during the replay, see `rollsum_evals.replay`). Method and blind spots:
docs/scoring.md.
"""

from __future__ import annotations

import math
from typing import Any

from rollsum_evals.scoring.base import ScoreContext, Scores

UNANSWERABLE = frozenset({"adversarial"})
"""Categories whose gold answer is not in the conversation by design: not counted in retention."""


class AnswerRetention:
    name = "answer_retention"
    version = "2"

    def score(self, ctx: ScoreContext) -> Scores:
        trace = ctx.trace
        out = Scores()
        retained_n = baseline_n = 0
        stale_n = superseded_n = counted = 0
        for ask in trace.asks_for(ctx.conversation.probes):
            probe = ask.probe
            cols: dict[str, Any]
            if probe.category in UNANSWERABLE:
                cols = {"retained": False, "stale": False, "in_summary": False,
                        "in_verbatim": False, "baseline_retained": None}
            else:
                obs = trace.observation(ask)
                retained, base = obs.in_context, obs.in_prefix
                stale = (not retained) and obs.stale_in_context
                cols = {"retained": retained, "stale": stale, "in_summary": obs.in_summary,
                        "in_verbatim": obs.in_verbatim, "baseline_retained": base}
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
