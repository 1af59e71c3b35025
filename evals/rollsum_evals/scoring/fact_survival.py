"""fact_survival: for every probe, the summary generation that lost its answer.

"Where facts die": walking the chain in order, a fact is *in play* once a record covered its
evidence or mentioned its answer; the first record after that which does not mention the answer
is where it died. A fact still only in verbatim messages never dies here (-1).
"""

from __future__ import annotations

from rollsum_evals.scoring.answer_retention import UNANSWERABLE
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.text import contains, normalize_text


class FactSurvival:
    name = "fact_survival"
    version = "2"
    needs: frozenset[str] = frozenset()
    unit_columns = ()
    probe_columns = (
        Column("died_at_generation", "int", -1,
               "index in the summary chain of the first record that lost the answer; -1: never"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        trace = inp.trace
        rendered = [normalize_text(r.render()) for r in trace.summaries]
        covered_by: dict[str, int] = {}
        for gen, rec in enumerate(trace.summaries):
            for mid in rec.covered_ids:
                covered_by.setdefault(mid, gen)
        out = Scores()
        for ask in inp.asks:
            probe, asked = ask.probe, ask.asked_turn
            first_cover = min((covered_by[e] for e in probe.evidence if e in covered_by),
                              default=None)
            died = -1
            in_play = False
            if probe.category in UNANSWERABLE:
                out.probes[ask.key] = {"died_at_generation": died}
                continue
            for gen, text in enumerate(rendered):
                if trace.summary_turns[gen] > asked:
                    break
                present = contains(text, probe.answer)
                if present:
                    in_play = True
                    continue
                if in_play or (first_cover is not None and gen >= first_cover):
                    died = gen
                    break
            out.probes[ask.key] = {"died_at_generation": died}
        return out
