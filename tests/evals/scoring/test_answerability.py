"""The validator's question warnings say exactly what answer_retention does: one rule
(`scoring.answerability`) for both, checked here against the scorer's rows on a full-context
replay (issue #18: the old warning said "will count it lost" for 85 probes, of which the run
counted 41 as answerable and retained)."""

from __future__ import annotations

from rollsum_evals import scoring
from rollsum_evals.cli.data_cmd import unfindable_answers
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay import replay
from rollsum_evals.scoring.answerability import Answerability, describe, is_date_answer, judge
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.units import Unit

from rollsum.types import Message

TEXTS = ["My locker code is 4417, easy to remember.", "Noted: locker code 4417.",
         "We moved the picnic to Sunday.", "Sounds good!",
         "I joined a band last week.", "Cool, which instrument?"]


def _conv(dated: bool) -> Conversation:
    msgs = tuple(Message("user" if i % 2 == 0 else "assistant", t, id=f"m{i}",
                         created_at=f"2023-05-{8 + i:02d}T10:00:00" if dated else None)
                 for i, t in enumerate(TEXTS))
    probes = (
        Probe("code", "What is the user's locker code?", "4417", evidence=("m0",)),          # evidence
        Probe("code2", "What is the user's locker code?", "4417"),                           # stated, no evidence
        Probe("paraphrase", "When is the picnic?", "on the weekend"),                        # not stated, no evidence
        Probe("yes", "Did the user move the picnic?", "Yes"),                                # nothing to state
        Probe("odd", "What is the user's locker code?", "locker 9999", evidence=("m0",)),    # evidence says so
        Probe("band", "When did the user join a band?", "The week before 12 May 2023", evidence=("m4",),
              category="temporal"),                                                        # a time
        Probe("adv", "What is the user's dog called?", "Not mentioned", category="adversarial"),
    )
    return Conversation("c", msgs, probes)


def _scored(conv: Conversation) -> dict[str, dict[str, object]]:
    unit = Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="full-context",
                preset="full-context", params_json="{}", prompt="", model="extractive", seed=0, context_window=100_000)
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing("end"))
    return scoring.score(plan, unit, conv, replay(unit, conv))[1].probes


def test_the_validator_warns_exactly_for_the_probes_the_scorer_does_not_count_or_cannot_hold() -> None:
    for dated in (True, False):
        conv = _conv(dated)
        rows = _scored(conv)
        warned = {i.field.removeprefix("probe "): i.expected for i in unfindable_answers([conv], "q.jsonl")}
        for p in conv.probes:
            row = rows[p.id]
            lost_in_full = bool(row["answerable"]) and not row["retained"]
            should_warn = (not row["answerable"] and row["excluded"] != "adversarial") or lost_in_full
            assert (p.id in warned) is should_warn, (dated, p.id, row, warned.get(p.id))
            if p.id in warned:
                assert ("not counted" in warned[p.id]) is (not row["answerable"]), warned[p.id]
        assert rows["odd"]["answerable"] and rows["odd"]["answerable_by"] == "evidence"
        assert rows["code2"]["answerable_by"] == "matcher"
        assert rows["paraphrase"]["excluded"] == "unsupported" and rows["yes"]["excluded"] == "uncheckable"
        # a time held by its evidence only when the context can show when it was said
        assert rows["band"]["retained"] is dated
        assert ("band" in warned) is (not dated)


def test_the_rule() -> None:
    p = Probe("p", "q?", "a", evidence=("m1",))
    never = lambda: None  # noqa: E731
    assert judge(p, (1,), 0, checkable=True, earliest=never) == Answerability(False, "", "unsaid")
    assert judge(p, (1,), 1, checkable=False, earliest=never) == Answerability(True, "evidence", "")
    bare = Probe("p", "q?", "a")
    assert judge(bare, (), 5, checkable=True, earliest=lambda: 3) == Answerability(True, "matcher", "")
    assert judge(bare, (), 2, checkable=True, earliest=lambda: 3).excluded == "unsupported"
    assert judge(bare, (), 2, checkable=False, earliest=lambda: 0).excluded == "uncheckable"
    adv = Probe("p", "q?", "a", evidence=("m1",), category="adversarial")
    assert judge(adv, (1,), 5, checkable=True, earliest=never).excluded == "adversarial"
    assert describe(Answerability(True, "evidence", "")).startswith("counted")


def test_what_counts_as_a_time() -> None:
    for answer in ("7 May 2023", "2022", "The week before 9 June 2023", "10 years ago", "last Saturday"):
        assert is_date_answer(Probe("p", "q?", answer)), answer
    for answer in ("4417", "2939", "clarinet", "4 years"):  # a code is not a year
        assert not is_date_answer(Probe("p", "q?", answer)), answer
    assert is_date_answer(Probe("p", "q?", "4417", category="date"))
