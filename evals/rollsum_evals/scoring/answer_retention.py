"""answer_retention: does the context at each asking turn still *support* the probe's answer?

Offline and deterministic. A probe counts as retained when the context states its answer about
what was asked (`rollsum_evals.scoring.support`: the answer's items, anchored by question
keywords in the same context unit, inside a statement), not when its words merely occur
somewhere. Context units: each conversation message in the context is one unit (its speaker is
the message's name, else its role); every other item (a summary, a clipped message, any text an
engine wrote) is split into lines (`support.summary_units`).

Only *answerable* asks count (`rollsum_evals.scoring.answerability`, v4): not adversarial and
the probe's evidence said by the asking turn — the data, not the matcher, says what there was to
keep (a probe without evidence falls back to the matcher: ``answerable_by``). An answerable ask
is *retained* when every evidence message is verbatim in the context (for an answer that is a
time, with its day shown: the trace's ``timestamps``), or — v7 — each is verbatim or its
sentences that bear on the ask are copied into a summary line or clipped text by the same
person, not negated (`rollsum_evals.scoring.copies`: the same statement counts the same), or
the context supports the answer through what is not verbatim (the matcher). An evidence
message that only asks is stood for by the other person's reply (v8, `statements`): the
question states nothing, the reply holds the answer. An evidence message that only reacts to the
one before it (v9, `reactions`: another person's reply to a labelled message of the person asked
about, holding no word of the answer) is not required: it states nothing the answer needs.
For an answer that is a time, a copy must also carry the message's sentence that dates it
relative to the day it was said (v10, `copies.informative`: "Last night was amazing!").
``retained_by``
says which. So full context with times shown scores 1.0 by
construction; what the matcher misses in a summary counts as lost (the hand check measures how
often). The rest are kept as rows with the reason in ``excluded``.

The old check (the normalized answer occurs in the normalized context) is kept as
``retained_containment`` and the unit's ``retention_containment``, over the same answerable asks.
Method, exclusions and blind spots: docs/scoring.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from rollsum.summarizers.extractive import split_sentences
from rollsum.types import Message
from rollsum_evals.replay.trace import TextRef, Trace
from rollsum_evals.scoring.answerability import EXCLUDED, UNANSWERABLE, evidence_positions, is_date_answer, judge
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.evidence import SupportIndex
from rollsum_evals.scoring.support import content
from rollsum_evals.scoring.text import contains
from rollsum_evals.scoring.views import ContextViews, Shared

__all__ = ["EXCLUDED", "UNANSWERABLE", "AnswerRetention", "asks_only", "evidence_speaker", "reactions",
           "statements"]


class AnswerRetention:
    name = "answer_retention"
    version = "12"
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
        Column("n_excluded_unsaid", "int", 0, "asks excluded: the evidence comes after the asking turn"),
        Column("n_answerable_by_matcher", "int", 0, "answerable asks of probes without evidence (matcher's rule)"),
    )
    probe_columns = (
        Column("checkable", "bool", False, "the answer has content a text can state"),
        Column("answerable", "bool", False, "not adversarial, evidence said by the asking turn (no evidence: "
               "checkable and supported by the conversation so far)"),
        Column("answerable_by", "str", "", "evidence / matcher (probe without evidence); \"\" when not answerable"),
        Column("retained", "bool", False, "the context supports the answer (False when not answerable)"),
        Column("retained_containment", "bool", False, "the answer's words occur in the context (v2 check)"),
        Column("in_summary", "bool", False, "the context items that are not conversation messages support it"),
        Column("in_verbatim", "bool", False, "the conversation messages in the context support it"),
        Column("support_at", "str", "", "m:<message index> or t:<text id> of the first supporting item"),
        Column("retained_by", "str", "", "evidence-verbatim / evidence-copied (v7: every evidence message "
               "verbatim or its sentences copied into a summary or clip) / matcher; \"\" when lost"),
        Column("stale", "bool", False, "the context supports a superseded value and not the current one"),
        Column("excluded", "str", "", "why not answerable: adversarial, unsaid, uncheckable, unsupported"),
        Column("baseline_retained", "boolean", None,
               "full context holds it at the asking turn (= answerable; NA: adversarial)"),
    )

    def score(self, inp: ScoreInput) -> Scores:
        views: ContextViews = inp.views if inp.views is not None else ContextViews(inp.trace)
        shared: Shared = inp.shared if inp.shared is not None else Shared()
        index = shared.support(inp.trace.messages, inp.trace.timestamps)
        positions = {m.id: i for i, m in enumerate(inp.trace.messages) if m.id is not None}
        out = Scores()
        counts = dict.fromkeys(EXCLUDED, 0)
        answerable = retained_n = contained_n = stale_n = superseded_n = by_matcher = 0
        for ask in inp.asks:
            cols = self._ask(index, views, inp, ask.probe, ask.asked_turn, positions)
            out.probes[ask.key] = cols
            if cols["excluded"]:
                counts[cols["excluded"]] += 1
                continue
            answerable += 1
            by_matcher += cols["answerable_by"] == "matcher"
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
            "n_answerable_by_matcher": by_matcher,
        }
        return out

    @staticmethod
    def _ask(index: SupportIndex, views: ContextViews, inp: ScoreInput, probe: Any, turn: int,
             positions: dict[str, int]) -> dict[str, Any]:
        cols: dict[str, Any] = {"checkable": False, "answerable": False, "answerable_by": "", "retained": False,
                                "retained_containment": False, "in_summary": False, "in_verbatim": False,
                                "support_at": "", "retained_by": "", "stale": False, "excluded": "",
                                "baseline_retained": None}
        checkable = index.claim(probe.question, probe.answer) is not None
        cols["checkable"] = checkable
        evidence = evidence_positions(probe, positions)
        verdict = judge(probe, evidence, turn, checkable=checkable,
                        earliest=lambda: index.earliest(probe.question, probe.answer))
        if verdict.excluded == "adversarial":
            cols["excluded"] = "adversarial"
            return cols
        cols["retained_containment"] = contains(views.at(turn).context, probe.answer)
        cols["baseline_retained"] = verdict.answerable
        if not verdict.answerable:
            cols["excluded"] = verdict.excluded
            return cols
        cols.update(answerable=True, answerable_by=verdict.by)
        evidence = reactions(inp.trace.messages, statements(inp.trace.messages, evidence, turn),
                             probe.question, probe.answer)
        source = evidence_speaker(inp.trace.messages, evidence)
        found = index.at(inp.trace, turn, probe.question, probe.answer, source) if checkable else None
        whole = bool(evidence) and _verbatim(inp.trace, turn, evidence) and (
            not is_date_answer(probe) or _day_shown(inp.trace, turn, evidence))
        matched = found is not None and found.retained
        copied = "" if whole else index.copied(inp.trace, turn, evidence, probe.question, probe.answer,
                                               is_date_answer(probe))
        held = whole or bool(copied)
        stale = (not held and not matched) and any(
            (s := index.at(inp.trace, turn, probe.question, a, source)) is not None and s.retained
            for a in probe.stale_answers)
        at = (found.at if found is not None and matched else f"m:{evidence[0]}" if whole else copied)
        copied_only = bool(copied) and not any(_verbatim(inp.trace, turn, (e,)) for e in evidence)
        cols.update(retained=held or matched,
                    retained_by=("evidence-verbatim" if whole else "evidence-copied" if copied
                                 else "matcher" if matched else ""),
                    in_summary=copied_only or (matched and found is not None and found.in_summary),
                    in_verbatim=whole or (matched and found is not None and found.in_verbatim),
                    support_at=at, stale=stale)
        return cols


def evidence_speaker(messages: Sequence[Message], evidence: Sequence[int]) -> str:
    """The one person who said every evidence message, or "" (several people, or any of them
    said by the assistant as a tool-using agent, a tool or the system). A person is a user (their
    name, else "user") or a named speaker (LoCoMo's two people are user and assistant by role,
    each with a name): a fact they said is theirs, and a summary must not put it in another
    mouth (`support.by_source`). An unnamed assistant is left out: what it says is often what a
    tool returned, and the synthetic agents' facts are not attributed to it by the questions."""
    people = {_person(messages[e]) for e in evidence}
    return people.pop() if len(people) == 1 and "" not in people else ""


def statements(messages: Sequence[Message], evidence: Sequence[int], turn: int) -> tuple[int, ...]:
    """The evidence messages that state what there was to keep (v8): an evidence message that
    only asks (`asks_only`: "What got you into running?") states nothing; when the next message
    is the other person's and said by `turn`, that reply — where the answer is — stands in its
    place. A question is not a fact: with it verbatim and the reply gone, a reader has nothing to
    answer from; with the reply there, they have the answer. Only between two people (each a
    user or a named speaker, `_person`): an unnamed assistant's next message is often a tool
    call, not a reply. Every other message is kept as it is."""
    out = set()
    for e in evidence:
        r = e + 1
        if (r <= turn and r < len(messages) and asks_only(messages[e].content)
                and _person(messages[e]) and _person(messages[r]) and _person(messages[r]) != _person(messages[e])):
            out.add(r)
        else:
            out.add(e)
    return tuple(sorted(out))


def reactions(messages: Sequence[Message], evidence: Sequence[int], question: str,
              answer: str) -> tuple[int, ...]:
    """The evidence messages without the reactions (v9). A reaction is an evidence message said by
    a person the question does not name, right after a labelled message of a person it does name
    (the message it answers), holding none of the answer's content words: "I bet they were
    thrilled to hear about your marriage!" after Evan's "… telling my work friends about getting
    married", for "Who did Evan tell about his marriage?". It states nothing the answer needs — the
    message it answers does, and that one stays required — so losing it loses nothing. A reply
    that holds a word of the answer, one by a person the question names, or one after a message
    that is not evidence is kept; an answer with no content words (yes / no) keeps every message:
    nothing tells what it needs."""
    said = set(content(answer))
    asked = {p for p in {_person(m) for m in messages} - {""}
             if re.search(rf"(?<![\w]){re.escape(p)}(?![\w])", question, re.IGNORECASE)}
    if not said or not asked:
        return tuple(evidence)
    labelled = set(evidence)
    kept = tuple(e for e in evidence if not (
        0 < e < len(messages) and e - 1 in labelled
        and _person(messages[e]) and _person(messages[e]) not in asked and _person(messages[e - 1]) in asked
        and not said & set(content(messages[e].content))))
    return kept or tuple(evidence)


ASKING = frozenset("""
what what's whats who who's whom whose which where where's when why how how's do does did is are
was were am have has had can could would will should shall may might any anything ever
""".split())
"""The words a question opens with: a wh-word or an auxiliary. A sentence that ends with "?" but
opens otherwise states something and asks after it ("Got married last week - how about you?")."""


def asks_only(text: str) -> bool:
    """Every sentence of `text` that has a content word is a question: it ends with "?" and opens
    with a wh-word or an auxiliary (`ASKING`). A greeting or an exclamation without content words
    does not count ("Wow! Did you see that band?" asks only; "These figurines I bought yesterday
    ... What's your vision?" states; so does "Got married last week - how about you?")."""
    sentences = [s for s in split_sentences(text) if content(s)]
    return bool(sentences) and all(_asks(s) for s in sentences)


def _asks(sentence: str) -> bool:
    s = sentence.strip()
    first = s.split(maxsplit=1)[0].strip("\"'“”‘’([").lower().replace("’", "'") if s else ""
    return s.endswith("?") and first in ASKING


def _person(m: Message) -> str:
    if m.role == "user":
        return m.name or "user"
    return m.name if m.role == "assistant" and m.name else ""


def _verbatim(trace: Trace, turn: int, evidence: tuple[int, ...]) -> bool:
    """Every evidence message is verbatim in the context at `turn` (a clipped copy is not)."""
    if not 0 <= turn < len(trace.turns):
        return False
    ranges = [seg for seg in trace.turns[turn].composition if not isinstance(seg, TextRef)]
    return all(any(lo <= e < hi for lo, hi in ranges) for e in evidence)


def _day_shown(trace: Trace, turn: int, evidence: tuple[int, ...]) -> bool:
    """The context at `turn` shows the day each evidence message was said (times shown, the
    message carries a ``created_at`` the context stamps, `rollsum.context.stamp_day`, and the
    window had room for its stamp: `rollsum.context.fitted_times`, `Trace.undated_at`)."""
    from rollsum.context import stamp_day

    return (trace.timestamps != "none" and trace.undated_at(turn).isdisjoint(evidence)
            and all(stamp_day(trace.messages[e].created_at) is not None for e in evidence))
