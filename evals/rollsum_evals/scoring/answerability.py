"""Which asks count: answerability from the data, one rule for the scorer and the validator.

A probe is *answerable* at an asking turn when it is not adversarial and its evidence (LoCoMo's
``evidence`` dia ids, a questions sidecar's evidence, a synthetic fact's planting message) has
been said by then: the data says the answer is in the conversation, so `full-context` holds it.
The matcher (`rollsum_evals.scoring.support`) no longer decides what is counted; it only decides
whether what is not verbatim (a summary, a clipped message) still states the answer. A probe
without evidence falls back to the matcher's word (the conversation so far must support the
answer, and the answer must have words a text can state), labelled ``answerable_by =
"matcher"``; the others are ``"evidence"``.

`data validate --questions` calls `judge` too, so its warnings say exactly what the scorer will
do (docs/scoring.md, "Answerability").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rollsum.types import Message
from rollsum_evals.data.types import Probe

UNANSWERABLE = frozenset({"adversarial"})
"""Categories whose gold answer is not in the conversation by design: never answerable."""

EXCLUDED = ("adversarial", "unsaid", "uncheckable", "unsupported")
"""Why an ask is not answerable (the ``excluded`` column; "" when it is): adversarial; its
evidence is not said yet at the asking turn; (no evidence) the answer has no words a text can
state; (no evidence) the conversation so far does not state it in the matcher's terms."""

BY = ("evidence", "matcher")
"""What made an ask answerable (the ``answerable_by`` column; "" when it is not)."""


@dataclass(frozen=True, slots=True)
class Answerability:
    answerable: bool
    by: str
    """"evidence" or "matcher" when answerable, else ""."""
    excluded: str
    """"" when answerable, else one of `EXCLUDED`."""


def evidence_positions(probe: Probe, index: Mapping[str, int]) -> tuple[int, ...]:
    """Positions of the probe's evidence messages in the conversation (`index`: message id ->
    position); ids that point nowhere are ignored (the loaders keep them in the probe's meta)."""
    return tuple(sorted({index[e] for e in probe.evidence if e in index}))


def judge(probe: Probe, evidence: Sequence[int], turn: int, *, checkable: bool,
          earliest: Callable[[], int | None]) -> Answerability:
    """The rule. `evidence`: the probe's evidence positions (`evidence_positions`); `turn`: the
    asking turn; `checkable`: the answer has words a text can state; `earliest`: the first turn
    at which the conversation supports the answer in the matcher's terms (called only for a
    probe without evidence)."""
    if probe.category in UNANSWERABLE or probe.meta.get("unanswerable"):
        return Answerability(False, "", "adversarial")
    if evidence:
        if max(evidence) <= turn:
            return Answerability(True, "evidence", "")
        return Answerability(False, "", "unsaid")
    if not checkable:
        return Answerability(False, "", "uncheckable")
    first = earliest()
    if first is None or first > turn:
        return Answerability(False, "", "unsupported")
    return Answerability(True, "matcher", "")


_DATE_WORDS = re.compile(
    r"\b((?:19|20)\d\d|january|february|march|april|may|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|yesterday|today|tomorrow"
    r"|(?:days?|weeks?|months?|years?) (?:ago|before|after|later|earlier))\b", re.IGNORECASE)


def is_date_answer(probe: Probe) -> bool:
    """The answer is a time (a date, a month, a year, "the week before ..."): verbatim evidence
    only gives it when the context shows when the evidence was said (or it says so itself)."""
    return probe.category in ("temporal", "date") or bool(_DATE_WORDS.search(probe.answer))


def describe(a: Answerability) -> str:
    """What answer_retention does with a probe (asked at the end), in one phrase: the
    validator's warning text."""
    if a.answerable:
        return ("counted: its evidence holds the answer" if a.by == "evidence"
                else "counted: no evidence, but the chat states the answer")
    return {
        "adversarial": "not counted: adversarial (no answer in the chat by design)",
        "unsaid": "not counted: its evidence comes after the asking turn",
        "uncheckable": ("not counted: it has no evidence and its answer has no words a text can state "
                        "(give the message that holds the answer as evidence)"),
        "unsupported": ("not counted: it has no evidence and the chat does not state the answer in "
                        "the words the scorer looks for (give the message that holds the answer as "
                        "evidence, or use the chat's own words)"),
    }[a.excluded]


def at_end(messages: Sequence[Message], probes: Sequence[Probe], timestamps: str = "session"
           ) -> list[tuple[Probe, Answerability, str]]:
    """Each probe's verdict where it is last asked (its own ``ask_at``, else the end), with what
    answer_retention will do, as `judge` decides it for the scorer — the validator's warnings
    (``data validate --questions``) come from here, so they cannot disagree with a run. The
    third element is "" or a caveat for a counted probe that full context still cannot hold (a
    time whose evidence carries no ``created_at``, or times not shown)."""
    from rollsum.context import stamp_day
    from rollsum_evals.scoring.asks import own_turn
    from rollsum_evals.scoring.evidence import SupportIndex

    index = SupportIndex(messages, timestamps)
    positions = {m.id: i for i, m in enumerate(messages) if m.id is not None}
    last = len(messages) - 1
    out = []
    for p in probes:
        own = own_turn(p, last)
        turn = last if own is None else own
        ev = evidence_positions(p, positions)
        verdict = judge(p, ev, turn, checkable=index.claim(p.question, p.answer) is not None,
                        earliest=lambda p=p: index.earliest(p.question, p.answer))  # type: ignore[misc]
        caveat = ""
        if verdict.by == "evidence" and is_date_answer(p):
            found = index.at_prefix(turn, p.question, p.answer)
            if not found and (timestamps == "none" or any(stamp_day(messages[e].created_at) is None for e in ev)):
                caveat = ("its answer is a time and the context cannot show when its evidence was said "
                          "(no created_at, or timestamps = \"none\"): even full context counts it lost")
        out.append((p, verdict, caveat))
    return out
