"""answer_retention v7: support, answerability (from evidence; the matcher only without it) and its
exclusions, on traces built by hand; and
the per-conversation index that makes it fast gives exactly the direct matcher's verdicts."""

from __future__ import annotations

import math
from typing import Any

import pytest
from rollsum_evals import scoring
from rollsum_evals.data import load
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay import replay
from rollsum_evals.replay.trace import Text, TextRef, Trace, TurnRecord
from rollsum_evals.scoring import support as sp
from rollsum_evals.scoring.answer_retention import asks_only, evidence_speaker, reactions, statements
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.evidence import SupportIndex
from rollsum_evals.units import Unit

from rollsum import presets
from rollsum.types import Message

NAMES = ("Caroline", "Melanie")
LINES = [
    ("Caroline", "Hey Mel! I finally joined a band last week."),                 # 0
    ("Melanie", "That is great! Which instrument?"),                               # 1
    ("Caroline", "I play the clarinet in the band, mostly jazz."),                # 2
    ("Melanie", "Lovely. My kids and I went camping at the beach."),              # 3
    ("Caroline", "The clarinet sounds happy. Did you paint lately?"),             # 4
    ("Melanie", "Yes, I painted a sunset last week for my living room."),         # 5
    ("Caroline", "My new job starts on 7 May 2023 at the library."),              # 6
    ("Melanie", "Congrats! We moved the picnic to Sunday."),                      # 7
    ("Caroline", "Actually the job starts on 14 May 2023 now."),                  # 8
    ("Melanie", "Good to know."),                                                 # 9
]
MSGS = tuple(Message("user" if i % 2 == 0 else "assistant", text, id=f"m{i}", name=name)
             for i, (name, text) in enumerate(LINES))
PROBES = (
    Probe("instrument", "Which instrument does Caroline play in her band?", "clarinet", evidence=("m2",)),
    Probe("counseling", "Would Caroline pursue counseling?", "Likely yes", evidence=("m0",)),
    Probe("pet", "What is Caroline's dog called?", "Not mentioned in the conversation", category="adversarial"),
    Probe("birthday", "When is Melanie's birthday?", "12 June"),  # no evidence, not in the chat
    Probe("beach", "Did Melanie go camping at the beach?", "Likely yes"),  # no evidence, nothing to state
    Probe("painting", "What did Melanie paint last week?", "sunset", evidence=("m5",)),
    Probe("job", "When does Caroline's new job start?", "14 May 2023", evidence=("m8",),
          category="superseded", stale_answers=("7 May 2023",)),
)
CONV = Conversation("c", MSGS, PROBES)
UNIT = Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="cfg",
            preset="since-last", params_json="{}", prompt="", model="extractive", seed=0, context_window=1000)


def _trace(contexts: dict[int, tuple[Text | tuple[int, int], ...]]) -> Trace:
    """Full context at every turn, except the turns given (texts and message ranges)."""
    trace = Trace(unit_id="u", messages=MSGS,
                  turns=[TurnRecord(i, m.role, 10 * (i + 1), 0, i + 1, 0, ((0, i + 1),)) for i, m in enumerate(MSGS)])
    for turn, items in contexts.items():
        comp: list[TextRef | tuple[int, int]] = []
        for item in items:
            if isinstance(item, Text):
                trace.texts[item.id] = item
                comp.append(TextRef(item.id))
            else:
                comp.append(item)
        old = trace.turns[turn]
        trace.turns[turn] = TurnRecord(turn, old.role, old.context_tokens, 0, 1, 0, tuple(comp))
    return trace


def _score(trace: Trace, timing: str = "end", conv: Conversation = CONV) -> scoring.Scores:
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing(timing))
    return scoring.score(plan, UNIT, conv, trace)[1]


def test_exclusions_each_have_their_reason_and_only_answerable_asks_count() -> None:
    s = _score(_trace({}))
    p = s.probes
    assert p["pet"]["excluded"] == "adversarial" and not p["pet"]["answerable"]
    # with evidence, the data says what is answerable, even an answer no text can state
    assert p["counseling"]["answerable"] and p["counseling"]["answerable_by"] == "evidence"
    assert not p["counseling"]["checkable"] and p["counseling"]["retained"]
    # without evidence: the matcher's rule, labelled
    assert p["beach"]["excluded"] == "uncheckable" and not p["beach"]["checkable"]
    assert p["birthday"]["excluded"] == "unsupported" and p["birthday"]["checkable"]
    assert p["birthday"]["baseline_retained"] is False and p["pet"]["baseline_retained"] is None
    for key in ("instrument", "painting", "job"):
        assert p[key]["answerable"] and p[key]["answerable_by"] == "evidence" and p[key]["retained"], key
    # full context holds every answerable ask by construction
    assert s.unit["retention"] == 1.0 and s.unit["n_answerable"] == 4 and s.unit["n_asks"] == 7
    assert (s.unit["n_excluded_adversarial"], s.unit["n_excluded_uncheckable"],
            s.unit["n_excluded_unsupported"], s.unit["n_answerable_by_matcher"]) == (1, 1, 1, 0)
    # an excluded ask is never retained, whatever the context holds
    assert not any(p[k]["retained"] for k in ("pet", "beach", "birthday"))


def test_without_evidence_answerable_means_supported_by_the_conversation_up_to_the_asking_turn() -> None:
    # the 14 May date is stated at message 8; the probe names no evidence: the matcher decides
    conv = Conversation("c", MSGS, (Probe("job", "When does Caroline's new job start?", "14 May 2023",
                                          meta={"ask_at": 7}),
                                    Probe("job2", "When does Caroline's new job start?", "14 May 2023"),))
    s = _score(_trace({}), "end", conv)
    assert s.probes["job"]["excluded"] == "unsupported" and not s.probes["job"]["retained"]
    assert s.probes["job2"]["answerable"] and s.probes["job2"]["answerable_by"] == "matcher"
    assert s.unit["n_answerable"] == 1 and s.unit["n_excluded_unsupported"] == 1
    assert s.unit["n_answerable_by_matcher"] == 1


def test_with_evidence_answerable_means_the_evidence_was_said_by_the_asking_turn() -> None:
    conv = Conversation("c", MSGS, (Probe("band", "What does Caroline play in the band?", "clarinet",
                                          evidence=("m2",), meta={"ask_at": 1}),
                                    Probe("band2", "What does Caroline play in the band?", "clarinet",
                                          evidence=("m2",), meta={"ask_at": 2})))
    s = _score(_trace({}), "end", conv)
    assert s.probes["band"]["excluded"] == "unsaid" and not s.probes["band"]["answerable"]
    assert s.probes["band2"]["answerable"] and s.probes["band2"]["retained"]
    assert s.unit["n_excluded_unsaid"] == 1


DATED = tuple(m.__class__(m.role, m.content, id=m.id, name=m.name, created_at=f"2023-05-{1 + i:02d}T10:00:00")
              for i, m in enumerate(MSGS))


def test_a_date_answer_is_held_by_its_evidence_only_where_the_context_shows_the_day() -> None:
    # "I finally joined a band last week": the answer is a time, which only the message's day gives
    conv = Conversation("c", DATED, (Probe("when", "When did Caroline join a band?", "The week before 1 May 2023",
                                           evidence=("m0",), category="temporal"),))
    for mode, want in (("session", True), ("message", True), ("none", False)):
        trace = _trace({})
        trace.messages, trace.timestamps = DATED, mode
        p = _score(trace, "end", conv).probes["when"]
        assert p["answerable"] and p["retained"] is want, mode
    # a summary line that anchored "last week" states it; one that did not, does not
    for text, want in (("Caroline: I finally joined a band last week (the week before 1 May 2023).", True),
                       ("Caroline: I finally joined a band last week.", False)):
        trace = _trace({9: (Text("system", None, text), (9, 10))})
        trace.messages = DATED
        p = _score(trace, "end", conv).probes["when"]
        assert p["retained"] is want and p["in_summary"] is want, text


def test_a_time_the_context_cannot_stamp_does_not_show_the_day() -> None:
    """One rule for "the day is shown" in the library and the scorer (`rollsum.context.stamp_day`):
    "2023-05-01 10:00:00 UTC" is not ISO 8601, so no context stamps it, and a date answer held
    only by its verbatim evidence is lost there even with times shown (version 11 read the
    first ten characters and credited a day the context never showed); a summary line that
    states the date still holds it."""
    from rollsum.context import shown_times, stamp_day

    utc = tuple(m.__class__(m.role, m.content, id=m.id, name=m.name, created_at=f"2023-05-{1 + i:02d} 10:00:00 UTC")
                for i, m in enumerate(MSGS))
    assert shown_times(list(utc), "message")[0] is None and stamp_day(utc[0].created_at) is None
    assert shown_times(list(DATED), "message")[0] is not None and stamp_day(DATED[0].created_at) is not None
    conv = Conversation("c", utc, (Probe("when", "When did Caroline join a band?", "The week before 1 May 2023",
                                         evidence=("m0",), category="temporal"),))
    for mode in ("session", "message"):
        trace = _trace({})
        trace.messages, trace.timestamps = utc, mode
        p = _score(trace, "end", conv).probes["when"]
        assert p["answerable"] and not p["retained"], mode
    trace = _trace({9: (Text("system", None, "Caroline: I finally joined a band last week (the week before 1 May "
                                             "2023)."), (9, 10))})
    trace.messages = utc
    assert _score(trace, "end", conv).probes["when"]["retained"]


def test_a_day_whose_stamp_the_window_had_no_room_for_is_not_shown() -> None:
    # the engine packs its window without stamps and the context leaves out, oldest first, the
    # ones that would pass it (`rollsum.context.fitted_times`): a message whose stamp is gone
    # is read without its day, so "last week" no longer says when
    conv = Conversation("c", DATED, (Probe("when", "When did Caroline join a band?", "The week before 1 May 2023",
                                           evidence=("m0",), category="temporal"),))
    for mode in ("session", "message"):
        for window, want in ((1000, True), (100, False)):  # the last context packs 100 tokens
            trace = _trace({})
            trace.messages, trace.timestamps = DATED, mode
            trace.engine_config = {"enforce_window": True, "context_window": window, "reserved_output_tokens": 0}
            assert bool(trace.undated_at(9)) is not want
            p = _score(trace, "end", conv).probes["when"]
            assert p["answerable"] and p["retained"] is want, (mode, window)
        # a reference keeps no window: every stamp is shown
        trace = _trace({})
        trace.messages, trace.timestamps = DATED, mode
        trace.engine_config = {"enforce_window": False, "context_window": 100}
        assert _score(trace, "end", conv).probes["when"]["retained"], mode


def test_support_is_more_than_containment() -> None:
    # the last context: a bag of keywords and a sentence where "sunset" is not what she painted
    bag = Text("system", None, "clarinet band instrument caroline jazz sunset paint week")
    unrelated = Text("system", None, "Melanie: the sunset was lovely yesterday.")  # anchored by a name only
    s = _score(_trace({9: (bag, unrelated, (9, 10))}))
    for key in ("instrument", "painting"):
        assert s.probes[key]["retained_containment"] and not s.probes[key]["retained"], key
    assert not s.probes["instrument"]["retained"] and not s.probes["painting"]["retained"]


def test_where_the_support_was_found() -> None:
    summary = Text("system", None, "Summary so far:\nCaroline: I play the clarinet in the band.\n"
                                   "Melanie: I painted a sunset last week.")
    s = _score(_trace({9: (summary, (5, 10))}))
    inst, paint = s.probes["instrument"], s.probes["painting"]
    assert inst["retained"] and inst["in_summary"] and not inst["in_verbatim"]
    assert inst["support_at"] == f"t:{summary.id}"
    # painting: both the summary and message 5 support it; the summary comes first in the context
    assert paint["in_summary"] and paint["in_verbatim"] and paint["support_at"] == f"t:{summary.id}"
    s2 = _score(_trace({9: ((5, 10), summary)}))
    assert s2.probes["painting"]["support_at"] == "m:5"
    job = s.probes["job"]  # message 8 in the tail
    assert job["in_verbatim"] and not job["in_summary"] and job["support_at"] == "m:8"


def test_a_context_with_only_the_superseded_value_is_stale() -> None:
    old = Text("system", None, "Caroline: my new job starts on 7 May 2023 at the library.")
    s = _score(_trace({9: (old, (9, 10))}))
    assert s.probes["job"]["stale"] and not s.probes["job"]["retained"]
    assert s.unit["stale_rate"] == 1.0
    bag = Text("system", None, "job caroline 7 May 2023 library")  # contains the old value, states nothing
    assert not _score(_trace({9: (bag, (9, 10))})).probes["job"]["stale"]
    both = _score(_trace({9: (old, (8, 10))}))
    assert not both.probes["job"]["stale"] and both.probes["job"]["retained"]
    assert both.unit["stale_rate"] == 0.0


LIST_MSGS = tuple(Message("user" if i % 2 == 0 else "assistant", text, id=f"m{i}", name=name) for i, (name, text) in
                  enumerate([("Melanie", "I play the clarinet every evening."), ("Caroline", "Nice, what else?"),
                             ("Melanie", "Violin too, since I was small."), ("Caroline", "Cool.")]))
LIST_CONV = Conversation("l", LIST_MSGS, (Probe("instruments", "What instruments does Melanie play?",
                                                "clarinet, violin", evidence=("m0", "m2")),))


def _list_trace(last: tuple[TextRef | tuple[int, int], ...] = (), texts: tuple[Text, ...] = ()) -> Trace:
    trace = Trace(unit_id="u", messages=LIST_MSGS, texts={t.id: t for t in texts},
                  turns=[TurnRecord(i, m.role, 10, 0, i + 1, 0, ((0, i + 1),)) for i, m in enumerate(LIST_MSGS)])
    if last:
        trace.turns[3] = TurnRecord(3, "assistant", 10, 0, 1, 0, last)
    return trace


def test_a_list_is_answerable_once_every_item_is_stated() -> None:
    # clarinet is stated strongly at 0, violin only at 2 (anchored by its speaker's name)
    conv = Conversation("l", LIST_MSGS, tuple(  # no evidence: the matcher's rule
        Probe(f"instruments@{t}", "What instruments does Melanie play?", "clarinet, violin", meta={"ask_at": t})
        for t in (1, 2, 3)))
    s = _score(_list_trace(), "end", conv)
    assert s.probes["instruments@1"]["excluded"] == "unsupported"
    assert s.probes["instruments@2"]["retained"] and s.probes["instruments@3"]["retained"]


def test_a_clipped_message_speaks_as_its_author() -> None:
    clipped = Text("assistant", "Melanie", "Violin too, since I was [... clipped ...]")
    trace = _list_trace(((0, 1), TextRef(clipped.id, 2), (3, 4)), (clipped,))
    p = _score(trace, "end", LIST_CONV).probes["instruments"]
    assert p["retained"] and p["support_at"] == "m:0"
    # the same words in a summary line with nobody's name: the violin item is anchored by nothing
    anonymous = Text("system", None, "Violin too, since I was [... clipped ...]")
    trace = _list_trace(((0, 1), TextRef(anonymous.id), (3, 4)), (anonymous,))
    assert not _score(trace, "end", LIST_CONV).probes["instruments"]["retained"]


def test_no_answerable_ask_gives_nan_not_zero() -> None:
    conv = Conversation("c", MSGS, PROBES[2:5])
    s = _score(_trace({}), conv=conv)
    assert math.isnan(s.unit["retention"]) and s.unit["n_answerable"] == 0


# -- the index gives the direct matcher's verdicts ---------------------------------------------------


def _direct(trace: Trace, turn: int, c: sp.Claim) -> tuple[bool, bool, bool]:
    """`support.support` over the context units, as the scorer's docstring defines them."""
    msg_units, text_units = [], []
    for item in trace.context_at(turn):
        if item.verbatim:
            msg_units.append(sp.Unit(item.text, item.name or item.role))
        else:
            default = (item.name or item.role) if item.message_index is not None else ""
            text_units += [u if u.speaker else sp.Unit(u.text, default) for u in sp.summary_units(item.text)]
    return (sp.support(c, msg_units + text_units) is not None, sp.support(c, text_units) is not None,
            sp.support(c, msg_units) is not None)


def _conversations() -> list[Conversation]:
    chat = load("synth:chat?conversations=1&messages=150&seed=7")
    agent = load("synth:agent?conversations=1&messages=120&seed=8")
    return [*chat, *agent, CONV]


@pytest.mark.parametrize("preset", [n for n in presets.names() if n != "full-context"])
def test_the_index_agrees_with_the_direct_matcher_on_real_replays(preset: str) -> None:
    checked = retained = 0
    for conv in _conversations():
        unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=preset,
                    preset=preset, params_json="{}", prompt="", model="extractive", seed=0, context_window=1500)
        trace = replay(unit, conv)
        index = SupportIndex(trace.messages)
        for probe in conv.probes:
            c = index.claim(probe.question, probe.answer)
            if c is None:
                continue
            for turn in range(0, len(trace.turns), 7):
                found = index.at(trace, turn, probe.question, probe.answer)
                assert found is not None
                assert (found.retained, found.in_summary, found.in_verbatim) == _direct(trace, turn, c), \
                    (preset, conv.id, probe.id, turn)
                checked += 1
                retained += found.retained
            # the earliest supported turn is where the growing prefix first supports the claim
            units = [sp.Unit(m.content, m.name or m.role) for m in trace.messages]
            first = next((t for t in range(len(units)) if sp.support(c, units[: t + 1]) is not None), None)
            assert index.earliest(probe.question, probe.answer) == first, (conv.id, probe.id)
    assert checked > 100 and 0 < retained < checked  # the comparison saw both verdicts


def test_rows_do_not_depend_on_sharing_the_index_between_units() -> None:
    conv = _conversations()[0]
    shared = scoring.Shared()
    plan = ScoringPlan(scorers=("answer_retention",))
    for preset in ("since-last", "truncate"):
        unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=preset,
                    preset=preset, params_json="{}", prompt="", model="extractive", seed=0, context_window=1500)
        trace = replay(unit, conv)
        alone = scoring.score(plan, unit, conv, trace)[1]
        together = scoring.score(plan, unit, conv, trace, shared=shared)[1]
        assert _rows(alone) == _rows(together)


def _rows(s: scoring.Scores) -> Any:
    return {k: v for k, v in s.unit.items() if not (isinstance(v, float) and math.isnan(v))}, s.probes


def test_a_fact_only_in_a_cleared_tool_result_is_not_retained() -> None:
    """Tool-result clearing (issue #23) shows a placeholder: the trace must record that text, not
    the result it replaced, so the fact it carried is gone from the context."""
    big = " ".join(f"row {i} ok" for i in range(80))
    msgs: list[Message] = [Message("user", "Find the failing build.", id="x0")]
    for k in range(6):
        ident = "BUILD-48213 failed on the linker step" if k == 0 else "nothing relevant"
        msgs += [Message("assistant", f"Calling execute_bash(command='ci log {k}').", id=f"x{2 * k + 1}"),
                 Message("tool", f"{ident}\n{big}", id=f"x{2 * k + 2}", name="execute_bash")]
    conv = Conversation("cl", tuple(msgs), (Probe("build", "Which build failed?", "BUILD-48213", evidence=("x2",)),))
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing("end"))
    got = {}
    for preset, params in (("full-context", "{}"), ("clear-tool-results", '{"clear_trigger": 500, "clear_keep": 2}')):
        unit = Unit(unit_id="u", dataset="d", conversation_id="cl", dataset_hash="h", config=preset, preset=preset,
                    params_json=params, prompt="", model="extractive", seed=0, context_window=8000)
        trace = replay(unit, conv)
        items = trace.context_at(len(msgs) - 1)
        got[preset] = scoring.score(plan, unit, conv, trace)[1].probes["build"]["retained"]
        cleared = next(i for i in items if i.message_index == 2)
        assert cleared.verbatim == (preset == "full-context"), "a cleared result is a text made from its message"
    assert got == {"full-context": True, "clear-tool-results": False}


def test_the_evidence_speaker_is_one_person_or_nobody() -> None:
    msgs = [Message(role="user", content="a"), Message(role="assistant", content="b"),
            Message(role="user", content="c", name="Caroline"), Message(role="assistant", content="d", name="Melanie"),
            Message(role="tool", content="e", name="grep"), Message(role="user", content="f")]
    assert evidence_speaker(msgs, (0, 5)) == "user"
    assert evidence_speaker(msgs, (2,)) == "Caroline"
    assert evidence_speaker(msgs, (3,)) == "Melanie"                 # a named speaker in the assistant role
    assert evidence_speaker(msgs, (1,)) == ""                        # the assistant (often a tool's words)
    assert evidence_speaker(msgs, (4,)) == ""                        # tool output
    assert evidence_speaker(msgs, (2, 3)) == ""                      # two people
    assert evidence_speaker(msgs, (0, 1)) == ""
    assert evidence_speaker(msgs, ()) == ""


def test_a_question_about_what_someone_said_needs_their_words_even_verbatim() -> None:
    # Jon said it (the evidence, not in the context); Gina's message to him, verbatim, is not his words
    msgs = (Message("user", "Way to go, my hard work is paying off with the store!", id="j", name="Jon"),
            Message("assistant", "Hey Jon, your hard work is paying off with the store, congrats!", id="g",
                    name="Gina"))
    trace = Trace(unit_id="u", messages=msgs, turns=[TurnRecord(0, "user", 10, 0, 1, 0, ((0, 1),)),
                                                     TurnRecord(1, "assistant", 10, 0, 1, 0, ((1, 2),))])
    index = SupportIndex(msgs)
    a = "hard work is paying off"
    # the question names both: either may speak it (`attributed`), the evidence says whose words
    said = index.at(trace, 1, "What did Jon say about Gina's progress with the store?", a, source="Jon")
    about = index.at(trace, 1, "What is paying off for Jon at Gina's store?", a, source="Jon")
    assert said is not None and not said.retained                     # words addressed to Jon
    assert about is not None and about.retained                       # but they are about Jon ("your")


# -- evidence copied into a summary or a clip (v7) ------------------------------------------------

JAZZ = Conversation("c", MSGS, (Probe("jazz", "Would Caroline enjoy a jazz concert?", "Likely yes",
                                      evidence=("m2",), category="open-domain"),))


@pytest.mark.parametrize(("line", "want"), [
    # the evidence sentence as the extractive summarizer copies it: the speaker's line, a tail cut
    ("Caroline: I play the clarinet in the band, mostly jazz.", True),
    ("[3 May 2023] Caroline: I play the clarinet in the band …", False),  # "jazz" (the question's word) cut
    ("Caroline: I play the clarinet in the band, mostly …", False),
    # its words in another order are not the sentence (a bag of its words would be)
    ("Caroline: Jazz mostly, in the band the clarinet I play.", False),
    # the same words in another mouth, or negated, are another statement
    ("Melanie: I play the clarinet in the band, mostly jazz.", False),
    ("Caroline: It is not true that I play the clarinet in the band, mostly jazz.", False),
    # a line nobody speaks that names her is about her
    ("Caroline plays the clarinet in the band, mostly jazz.", True),
])
def test_an_evidence_sentence_copied_into_a_summary_counts_like_the_verbatim_message(line: str, want: bool) -> None:
    # "Likely yes": the matcher has nothing to look for; the evidence message (2) holds the answer
    # and is out of the window at the end — only its copy in the summary can hold it
    text = Text("system", None, f"Melanie: Lovely. My kids and I went camping at the beach.\n{line}")
    p = _score(_trace({9: (text, (9, 10))}), "end", JAZZ).probes["jazz"]
    assert p["answerable"] and not p["checkable"]
    assert p["retained"] is want, line
    assert p["retained_by"] == ("evidence-copied" if want else ""), line
    assert p["in_summary"] is want and p["support_at"] == (f"t:{text.id}" if want else ""), line


def test_only_the_sentences_that_bear_on_the_ask_must_be_copied() -> None:
    # message 0 is "Hey Mel! I finally joined a band last week.": the greeting need not be copied
    conv = Conversation("c", MSGS, (Probe("band", "Would Caroline enjoy playing with her band?", "Likely yes",
                                          evidence=("m0",), category="open-domain"),))
    for line, want in (("Caroline: I finally joined a band last week.", True),
                       ("Caroline: Hey Mel!", False)):
        p = _score(_trace({9: (Text("system", None, line), (9, 10))}), "end", conv).probes["band"]
        assert p["retained"] is want, line


def test_a_copied_date_answer_needs_the_day_it_was_said() -> None:
    # "I finally joined a band last week", said 1 May 2023: the copy gives the time only with its day
    conv = Conversation("c", DATED, (Probe("when", "When did Caroline join a band?", "The week before 1 May 2023",
                                           evidence=("m0",), category="temporal"),))
    for text, want in (("[1 May 2023] Caroline: I finally joined a band last week.", True),
                       ("[1 May 2023]\nCaroline: I finally joined a band last week.", True),   # one-day header
                       ("[3 May 2023] Caroline: I finally joined a band last week.", False),   # another day
                       ("Caroline: I finally joined a band last week.", False)):
        trace = _trace({9: (Text("system", None, text), (9, 10))})
        trace.messages = DATED
        p = _score(trace, "end", conv).probes["when"]
        assert p["retained"] is want and p["retained_by"] == ("evidence-copied" if want else ""), text


def test_a_copied_date_answer_needs_the_sentence_that_dates_it_too() -> None:
    # v10: "Last night was amazing! We celebrated my daughter's birthday …", said 1 May 2023: a copy
    # of the birthday sentence under its day reads 1 May; the answer (30 April) is in "last night"
    said = ("Hey Caroline! Last night was amazing! We celebrated my daughter's birthday with a concert "
            "on the beach.")
    msgs = (DATED[0].__class__(DATED[0].role, said, id="m0", name="Melanie", created_at=DATED[0].created_at),
            *DATED[1:])
    conv = Conversation("c", msgs, (Probe("bday", "When is Melanie's daughter's birthday?", "30 April",
                                          evidence=("m0",), category="temporal"),))
    for text, want in (
            ("[1 May 2023] Melanie: We celebrated my daughter's birthday with a concert on the beach.", False),
            ("[1 May 2023] Melanie: Last night (30 April 2023) was amazing! We celebrated my daughter's "
             "birthday with a concert on the beach.", True),
            ("[1 May 2023] Melanie: Last night (30 April 2023) was amazing!", False)):  # and the birthday?
        trace = _trace({9: (Text("system", None, text), (9, 10))})
        trace.messages = msgs
        p = _score(trace, "end", conv).probes["bday"]
        assert p["retained"] is want and p["retained_by"] == ("evidence-copied" if want else ""), text


def test_every_evidence_message_must_be_verbatim_or_copied() -> None:
    conv = Conversation("c", MSGS, (Probe("both", "Would Caroline enjoy a jazz concert at a new job?", "Likely yes",
                                          evidence=("m2", "m6"), category="open-domain"),))
    copy = "Caroline: I play the clarinet in the band, mostly jazz."
    for items, want in (((Text("system", None, copy), (6, 10)), True),     # m6 verbatim, m2 copied
                        ((Text("system", None, copy), (7, 10)), False)):   # m6 neither
        p = _score(_trace({9: items}), "end", conv).probes["both"]
        assert p["retained"] is want, items
        # with one message verbatim, the summary alone does not hold it
        assert not p["in_summary"]


# -- an evidence message that only asks (v8) ------------------------------------------------------

ASKED = tuple(Message("user" if i % 2 == 0 else "assistant", text, id=f"q{i}", name=name) for i, (name, text) in
              enumerate([("Caroline", "Wow! What got you into running?"),                           # 0: asks only
                         ("Melanie", "I've been running farther to de-stress and clear my mind."),  # 1: the reply
                         ("Caroline", "Cool, Melanie! Running can really boost your mood."),        # 2
                         ("Melanie", "Thanks! See you soon.")]))                                     # 3


def _asked(composition: tuple[TextRef | tuple[int, int], ...], texts: tuple[Text, ...] = ()) -> dict[str, Any]:
    """The running question, labelled (as LoCoMo sometimes does) with the question, not the reply."""
    conv = Conversation("c", ASKED, (Probe("run", "What is Melanie's reason for getting into running?",
                                           "Likely to unwind", evidence=("q0",), category="single-hop"),))
    trace = Trace(unit_id="u", messages=ASKED, turns=[
        TurnRecord(i, m.role, 10, 0, i + 1, 0, ((0, i + 1),)) for i, m in enumerate(ASKED)])
    for t in texts:
        trace.texts[t.id] = t
    trace.turns[3] = TurnRecord(3, "assistant", 10, 0, 1, 0, composition)
    row: dict[str, Any] = _score(trace, "end", conv).probes["run"]
    return row


def test_a_question_labelled_as_evidence_is_stood_for_by_its_reply() -> None:
    # "Likely to unwind" is not in the chat: only the evidence rule can hold it
    # the question verbatim, its reply gone: nothing to answer from
    p = _asked(((0, 1), (2, 4)))
    assert p["answerable"] and not p["retained"], p
    # the reply verbatim, the question gone: the answer is there
    p = _asked(((1, 4),))
    assert p["retained"] and p["retained_by"] == "evidence-verbatim" and p["support_at"] == "m:1", p
    # the reply copied into a summary counts like the verbatim reply, by its speaker
    copy = Text("system", None, "Melanie: I've been running farther to de-stress and clear my mind.")
    assert _asked((TextRef(copy.id), (2, 4)), (copy,))["retained_by"] == "evidence-copied"
    wrong = Text("system", None, "Caroline: I've been running farther to de-stress and clear my mind.")
    assert not _asked((TextRef(wrong.id), (2, 4)), (wrong,))["retained"]


def test_only_a_message_that_only_asks_is_replaced() -> None:
    assert not asks_only("Love those shoes! Wow! What got you into running?")  # it states something too
    assert asks_only("Wow! Did you see that band?")
    assert not asks_only("These figurines I bought yesterday remind me of love. What's your vision?")
    # a sentence that ends with "?" but does not open as a question states, then asks after it
    assert not asks_only("Got married last week - how about you?")
    assert asks_only("Wow! Have you been to the lake this summer?")
    q = ASKED
    said = (Message("user", "Love those shoes! Wow! What got you into running?", name="Caroline"), *q[1:])
    assert statements(said, (0,), 3) == (0,)
    assert statements(q, (0,), 3) == (1,)
    assert statements(q, (0,), 0) == (0,)      # the reply is not said yet at turn 0
    assert statements(q, (0, 1), 3) == (1,)    # labelled with both: the reply once
    # an unnamed assistant's next message may be a tool call, not a reply
    agent = (Message("user", "What is the weather in Paris?"), Message("assistant", "Let me check."))
    assert statements(agent, (0,), 1) == (0,)
    # the same person going on is not a reply
    same = (q[0], Message("user", "I started last year.", name="Caroline"))
    assert statements(same, (0,), 1) == (0,)


# -- an evidence message that only reacts (v9) ----------------------------------------------------

TOLD = tuple(Message("user" if i % 2 == 0 else "assistant", text, id=f"r{i}", name=name) for i, (name, text) in
             enumerate([("Evan", "Told my work friends about getting married - a minor accident put a damper on it."),
                         ("Sam", "I bet they were thrilled to hear about your marriage, despite the mishap!"),
                         ("Evan", "They were. How was your week?"),
                         ("Sam", "Quiet, thanks.")]))


def _told(composition: tuple[tuple[int, int], ...], answer: str = "his colleagues",
          question: str = "Who did Evan tell about his marriage?") -> dict[str, Any]:
    """Evan's message and Sam's reaction to it, both labelled; "colleagues" is in no message, so
    only the evidence rule can hold it."""
    conv = Conversation("c", TOLD, (Probe("told", question, answer, evidence=("r0", "r1"), category="multi-hop"),))
    trace = Trace(unit_id="u", messages=TOLD, turns=[
        TurnRecord(i, m.role, 10, 0, i + 1, 0, ((0, i + 1),)) for i, m in enumerate(TOLD)])
    trace.turns[3] = TurnRecord(3, "assistant", 10, 0, 1, 0, composition)
    row: dict[str, Any] = _score(trace, "end", conv).probes["told"]
    return row


def test_a_reaction_labelled_as_evidence_is_not_required() -> None:
    # the message reacted to verbatim, the reaction gone: nothing the answer needs is lost
    p = _told(((0, 1), (2, 4)))
    assert p["answerable"] and p["retained"] and p["retained_by"] == "evidence-verbatim", p
    # the message reacted to gone, the reaction verbatim: lost (the reaction states nothing)
    assert not _told(((1, 4),))["retained"]
    # a reply that holds a word of the answer is not a mere reaction: still required
    p = _told(((0, 1), (2, 4)), answer="friends from work who were thrilled")
    assert p["answerable"] and not p["retained"], p


def test_only_a_reply_by_someone_not_asked_about_to_a_labelled_message_is_a_reaction() -> None:
    assert reactions(TOLD, (0, 1), "Who did Evan tell about his marriage?", "his colleagues") == (0,)
    # the replier is named in the question: the question is about them too
    assert reactions(TOLD, (0, 1), "Who did Evan and Sam tell about the marriage?", "his colleagues") == (0, 1)
    # the message before it is not labelled: nothing says it answers the evidence
    assert reactions(TOLD, (1, 2), "Who did Evan tell about his marriage?", "his colleagues") == (1, 2)
    # the message before it is said by someone the question does not name: a reply to them
    assert reactions(TOLD, (0, 1), "Who did Sam congratulate?", "his colleagues") == (0, 1)
    three = (Message("user", "Evan told his work friends about the wedding.", id="t0", name="Maria"),
             Message("assistant", "I bet they were thrilled!", id="t1", name="Sam"),
             Message("user", "Hi all.", id="t2", name="Evan"))
    assert reactions(three, (0, 1), "Who did Evan tell about his marriage?", "his colleagues") == (0, 1)
    # no content word in the answer (yes / no): nothing tells what it needs
    assert reactions(TOLD, (0, 1), "Did Evan tell his work friends?", "Yes") == (0, 1)
    # a name is matched as a word, not inside another ("Evangeline")
    assert reactions(TOLD, (0, 1), "Who did Evangeline tell about her marriage?", "her colleagues") == (0, 1)
    # an unnamed assistant is no person: its message after the user's is kept
    agent = (Message("user", "I told my work friends I got married.", id="a0"),
             Message("assistant", "They must have been thrilled!", id="a1"))
    assert reactions(agent, (0, 1), "Who did the user tell about the marriage?", "colleagues") == (0, 1)
