"""The blind hand-check sheet (benchmarks/handcheck_sheet.py): the same draw as the rule writer's
sample, and nothing on the sheet that gives the scorer's verdict away."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import handcheck_sample as hs
import handcheck_sheet as sheet
from rollsum_evals import scoring
from rollsum_evals.data.synth import make_conversation
from rollsum_evals.replay import replay
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.units import Unit


def _pool() -> list[Any]:
    """Stub verdicts: per category 8 held by the matcher, 12 by verbatim evidence, 30 lost."""
    out = []
    for cat in hs.CATEGORIES:
        for kind, n in (("m", 8), ("v", 12), ("l", 30)):
            out += [SimpleNamespace(name=f"{cat}-{kind}{i}", probe=SimpleNamespace(category=cat),
                                    by_matcher=kind == "m", retained=kind != "l") for i in range(n)]
    return out


def test_the_draw_is_equal_allocation_by_category_and_stratum_and_fixed_by_the_seed() -> None:
    pool = _pool()
    picks = hs.draw(pool, seed=26, per=10)
    assert len(picks) == 80
    for cat in hs.CATEGORIES:
        strata = [s for s, v in picks if v.probe.category == cat]
        assert strata.count("non-verbatim retained") == 5
        assert strata.count("verbatim-evidence retained") == 5
        assert strata.count("lost") == 10
    for stratum, v in picks:  # each ask is drawn from the stratum it is labelled with
        assert (stratum == "lost") == (not v.retained)
        assert (stratum == "non-verbatim retained") == v.by_matcher
    names = [cast(Any, v).name for _, v in picks]
    assert names == [cast(Any, v).name for _, v in hs.draw(pool, seed=26, per=10)]
    assert names != [cast(Any, v).name for _, v in hs.draw(pool, seed=27, per=10)]
    assert len(set(names)) == 80


def test_a_sheet_entry_shows_the_ask_and_its_context_but_no_verdict_basis_or_config() -> None:
    conv = make_conversation("chat", n_messages=240, seed=3)
    unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config="since-last",
                preset="since-last", params_json="{}", prompt="", model="extractive", seed=0, context_window=2000)
    trace = replay(unit, conv)
    asks, scores = scoring.score(ScoringPlan(scorers=("answer_retention",), timing=parse_timing("end")),
                                 unit, conv, trace)
    shown = 0
    for a in asks:
        row = scores.probes[a.key]
        if not row["answerable"]:
            continue
        v = hs.Verdict("since-last", conv.id, trace, a.probe, a.asked_turn, row)
        text = sheet.render(7, v)
        assert text.startswith("## Ask 7\n")
        assert a.probe.question in text and str(a.probe.answer) in text
        last = trace.context_at(a.asked_turn)[-1]
        assert last.text in text  # the context is there, whole
        lowered = text.lower()
        for giveaway in ("since-last", "retained", "matcher", "verbatim", "stratum", "in context", "lost"):
            assert giveaway not in lowered.replace(a.probe.question.lower(), "").replace(
                last.text.lower(), ""), giveaway
        shown += 1
    assert shown
