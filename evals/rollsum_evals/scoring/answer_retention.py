"""answer_retention: does the context at each asking turn still *support* the probe's answer?

Offline and deterministic. A probe counts as retained when the context states its answer about
what was asked (`rollsum_evals.scoring.support`: the answer's items, anchored by question
keywords in the same context unit, inside a statement), not when its words merely occur
somewhere. Context units: each conversation message in the context is one unit (its speaker is
the message's name, else its role); every other item (a summary, a clipped message, any text an
engine wrote) is split into lines (`support.summary_units`).

Only *answerable* asks count: not adversarial (no answer in the conversation by design), checkable
(the answer has content a text can state: "Yes" or "Likely no" has none), and supported by the
conversation up to the asking turn, which is exactly what the `full-context` preset sends. So
full context scores 1.0 by construction, and every other configuration is measured against what
was there to keep. The rest are kept as rows with the reason in ``excluded``.

The old check (the normalized answer occurs in the normalized context) is kept as
``retained_containment`` and the unit's ``retention_containment``, over the same answerable asks.
Method, exclusions and blind spots: docs/scoring.md.
"""

from __future__ import annotations

import math
from typing import Any

from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.evidence import SupportIndex
from rollsum_evals.scoring.text import contains
from rollsum_evals.scoring.views import ContextViews, Shared

UNANSWERABLE = frozenset({"adversarial"})
"""Categories whose gold answer is not in the conversation by design: never answerable."""

EXCLUDED = ("adversarial", "uncheckable", "unsupported")
"""Why an ask is not answerable (the ``excluded`` column; "" when it is)."""


class AnswerRetention:
    name = "answer_retention"
    version = "3"
    needs = frozenset({"contexts"})
    unit_columns = (
        Column("retention", "float", math.nan, "mean `retained` over answerable asks"),
        Column("retention_containment", "float", math.nan,
               "mean `retained_containment` over the same answerable asks (the v2 metric)"),
        Column("relative_retention", "float", math.nan,
               "retained / supported by full context over the same asks (= retention since v3)"),
        Column("stale_rate", "float", math.nan, "share of answerable superseded-fact asks answered stale"),
        Column("n_asks", "int", 0, "asks (probe rows)"),
        Column("n_answerable", "int", 0, "asks that count in retention"),
        Column("n_excluded_adversarial", "int", 0, "asks excluded: adversarial probe"),
        Column("n_excluded_uncheckable", "int", 0, "asks excluded: nothing a text can state (yes/no)"),
        Column("n_excluded_unsupported", "int", 0, "asks excluded: the conversation so far does not support it"),
    )
    probe_columns = (
        Column("checkable", "bool", False, "the answer has content a text can state"),
        Column("answerable", "bool", False, "not adversarial, checkable, supported by the conversation so far"),
        Column("retained", "bool", False, "the context supports the answer (False when not answerable)"),
        Column("retained_containment", "bool", False, "the answer's words occur in the context (v2 check)"),
        Column("in_summary", "bool", False, "the context items that are not conversation messages support it"),
        Column("in_verbatim", "bool", False, "the conversation messages in the context support it"),
        Column("support_at", "str", "", "m:<message index> or t:<text id> of the first supporting item"),
        Column("stale", "bool", False, "the context supports a superseded value and not the current one"),
        Column("excluded", "str", "", "why not answerable: adversarial, uncheckable, unsupported"),
        Column("baseline_retained", "boolean", None,
               "the conversation up to the asking turn supports it (NA: adversarial or not checkable)"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        views: ContextViews = inp.views if inp.views is not None else ContextViews(inp.trace)
        shared: Shared = inp.shared if inp.shared is not None else Shared()
        index = shared.support(inp.trace.messages)
        out = Scores()
        counts = dict.fromkeys(EXCLUDED, 0)
        answerable = retained_n = contained_n = stale_n = superseded_n = 0
        for ask in inp.asks:
            cols = self._ask(index, views, inp, ask.probe, ask.asked_turn)
            out.probes[ask.key] = cols
            if cols["excluded"]:
                counts[cols["excluded"]] += 1
                continue
            answerable += 1
            retained_n += cols["retained"]
            contained_n += cols["retained_containment"]
            if ask.probe.stale_answers:
                superseded_n += 1
                stale_n += cols["stale"]
        rate = (retained_n / answerable) if answerable else math.nan
        out.unit = {
            "retention": rate,
            "retention_containment": contained_n / answerable if answerable else math.nan,
            "relative_retention": rate,
            "stale_rate": stale_n / superseded_n if superseded_n else math.nan,
            "n_asks": len(inp.asks), "n_answerable": answerable,
            **{f"n_excluded_{k}": v for k, v in counts.items()},
        }
        return out

    @staticmethod
    def _ask(index: SupportIndex, views: ContextViews, inp: ScoreInput, probe: Any, turn: int) -> dict[str, Any]:
        cols: dict[str, Any] = {"checkable": False, "answerable": False, "retained": False,
                                "retained_containment": False, "in_summary": False, "in_verbatim": False,
                                "support_at": "", "stale": False, "excluded": "", "baseline_retained": None}
        checkable = index.claim(probe.question, probe.answer) is not None
        cols["checkable"] = checkable
        if probe.category in UNANSWERABLE:
            cols["excluded"] = "adversarial"
            return cols
        cols["retained_containment"] = contains(views.at(turn).context, probe.answer)
        if not checkable:
            cols["excluded"] = "uncheckable"
            return cols
        earliest = index.earliest(probe.question, probe.answer)
        supported = earliest is not None and earliest <= turn
        cols["baseline_retained"] = supported
        if not supported:
            cols["excluded"] = "unsupported"
            return cols
        found = index.at(inp.trace, turn, probe.question, probe.answer)
        assert found is not None  # checkable
        stale = (not found.retained) and any(
            (s := index.at(inp.trace, turn, probe.question, a)) is not None and s.retained
            for a in probe.stale_answers)
        cols.update(answerable=True, retained=found.retained, in_summary=found.in_summary,
                    in_verbatim=found.in_verbatim, support_at=found.at, stale=stale)
        return cols
