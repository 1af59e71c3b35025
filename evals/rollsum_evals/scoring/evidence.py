"""Which parts of a context support a probe's answer, computed once per conversation.

`rollsum_evals.scoring.support` judges one list of context units. A scorer asks every probe of
a conversation at several turns of several Units, and those contexts share almost everything: a
message stays in the window for many turns, a summary for many asks, and every Unit of the
conversation holds the same messages. Whether a set of units supports a claim depends only on
the best strength each answer item reaches in any of them (`support.holds`), so this module
remembers what each unit states about each claim and combines:

- for the conversation's messages, one scan per claim (through an inverted index of the words
  each message holds) gives, per answer item, the few messages that state it and how strongly;
  this also gives the earliest turn at which the conversation so far supports the claim
  (support only grows with the prefix), so "would full context support it here?" is a
  comparison, not a scan;
- for a text (a summary, a clipped message), its lines are judged once per claim.

The combination gives exactly `support.support(claim, units) is not None` for the units of the
context (a test checks it against the direct call on real replays).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from rollsum.context import stamp_day
from rollsum.summarizers.dates import anchor_dates, format_date, parse_day
from rollsum.types import Message
from rollsum_evals.replay.trace import Segment, TextRef, Trace
from rollsum_evals.scoring import copies
from rollsum_evals.scoring import support as sp

Strengths = tuple[int, ...]
"""Per answer item: 0 not stated, 1 stated but anchored only by a name or a light word, 2 stated."""


@dataclass(frozen=True, slots=True)
class Found:
    """What the context at one turn says about one claim."""

    retained: bool
    in_summary: bool
    """The items that are not conversation messages alone support it."""
    in_verbatim: bool
    """The conversation messages in the context alone support it."""
    at: str
    """``m:<message index>`` or ``t:<text id>``: the first context item (in context order) that
    strongly states an answer item, else the first that states one; "" when not retained."""


@dataclass(slots=True)
class _ByMessage:
    hits: tuple[dict[int, int], ...]
    """Per answer item: message index -> strength (only messages that state it)."""
    earliest: int | None
    """The first turn at which messages 0..turn support the claim; None: never."""


@dataclass(frozen=True, slots=True)
class _Lines:
    units: list[sp.Unit]
    index: dict[str, list[int]]
    """token -> indices of the lines holding it."""


def _best(a: Strengths, b: Strengths) -> Strengths:
    return tuple(max(x, y) for x, y in zip(a, b))


class SupportIndex:
    """Claims and what every message and text states about them, for one conversation."""

    def __init__(self, messages: Sequence[Message], timestamps: str = "none") -> None:
        self.messages = tuple(messages)
        self.timestamps = timestamps
        self.names = tuple(sorted({m.name for m in messages if m.name}))
        self.frequency = sp.document_frequency(m.content for m in messages)
        self.units = [sp.Unit(dated(m.content, m.created_at, timestamps), m.name or m.role) for m in messages]
        self._claims: dict[tuple[str, str], sp.Claim | None] = {}
        self._by_message: dict[tuple[str, str], _ByMessage] = {}
        self._by_text: dict[tuple[tuple[str, str], str, str], Strengths] = {}
        self._texts: dict[tuple[str, str], _Lines] = {}
        self._index: dict[str, list[int]] | None = None
        self._copies: dict[tuple[int, frozenset[str], str, str, datetime.date | None], bool] = {}
        self._plain: SupportIndex | None = None
        chat = sp.claim("", "x", self.names)  # only its people and parties (`by_source` reads them)
        assert chat is not None
        self._chat = chat

    # -- claims -----------------------------------------------------------------------------

    def claim(self, question: str, answer: str) -> sp.Claim | None:
        key = (question, answer)
        if key not in self._claims:
            self._claims[key] = sp.claim(question, answer, self.names, self.frequency)
        return self._claims[key]

    # -- messages ---------------------------------------------------------------------------

    def _word_index(self) -> dict[str, list[int]]:
        """stem (and date alias) -> indices of the messages holding it, in order."""
        if self._index is None:
            index: dict[str, list[int]] = {}
            for i, u in enumerate(self.units):
                for token in sp.tokens(u.text):
                    index.setdefault(token, []).append(i)
            self._index = index
        return self._index

    def _messages(self, key: tuple[str, str], c: sp.Claim) -> _ByMessage:
        found = self._by_message.get(key)
        if found is not None:
            return found
        index = self._word_index()
        candidates = sorted({i for item in c.items for t in item for i in index.get(t, ())})
        hits: tuple[dict[int, int], ...] = tuple({} for _ in c.items)
        for i in candidates:
            for k, s in enumerate(sp.unit_strengths(c, self.units[i])):
                if s:
                    hits[k][i] = s
        found = self._by_message[key] = _ByMessage(hits, _earliest(c, hits))
        return found

    def earliest(self, question: str, answer: str) -> int | None:
        """The first turn at which the conversation so far supports the answer (None: never, or
        not checkable)."""
        c = self.claim(question, answer)
        return None if c is None else self._messages((question, answer), c).earliest

    def at_prefix(self, turn: int, question: str, answer: str) -> bool:
        """The conversation's messages up to `turn` support the answer (matcher's terms)."""
        first = self.earliest(question, answer)
        return first is not None and first <= turn

    # -- texts ------------------------------------------------------------------------------

    def _lines(self, text: str, speaker: str) -> _Lines:
        """A text's lines as units (`support.summary_units`; a line without a ``Name:`` prefix
        speaks as `speaker`, the author of a clipped message) and which lines hold each token."""
        found = self._texts.get((text, speaker))
        if found is None:
            units = [u if u.speaker else sp.Unit(u.text, speaker) for u in sp.summary_units(text)]
            index: dict[str, list[int]] = {}
            for k, u in enumerate(units):
                for token in sp.tokens(u.text):
                    index.setdefault(token, []).append(k)
            found = self._texts[(text, speaker)] = _Lines(units, index)
        return found

    def _text(self, key: tuple[str, str], c: sp.Claim, text: str, speaker: str) -> Strengths:
        """Best strength per item over the lines of a text; only lines holding a token of an
        item are judged (a line without any cannot state it)."""
        mkey = (key, text, speaker)
        found = self._by_text.get(mkey)
        if found is None:
            lines = self._lines(text, speaker)
            candidates = sorted({k for item in c.items for t in item for k in lines.index.get(t, ())})
            found = tuple(0 for _ in c.items)
            for k in candidates:
                found = _best(found, sp.unit_strengths(c, lines.units[k]))
            self._by_text[mkey] = found
        return found

    # -- one context ------------------------------------------------------------------------

    def at(self, trace: Trace, turn: int, question: str, answer: str, source: str = "") -> Found | None:
        """What the context of `trace` at `turn` says about the answer; None if not checkable.

        `source`: the one person who said every evidence message ("" when none is): what is not
        verbatim must be attributed to them (`support.by_source`); verbatim messages are judged
        as before (the evidence rule counts them), except for a question about what someone
        said (`Claim.speech`, v6): another person's message is not their words either."""
        c = self.claim(question, answer)
        if c is None:
            return None
        key = (question, answer)
        by_msg = self._messages(key, c)
        if source:
            c = dataclasses.replace(c, source=frozenset(sp.stem(w) for w in sp.words(source)))
            key = (question, answer + "\x00" + source)  # the texts' memo: judged with the source
            if c.speech:
                by_msg = self._messages(key, c)
        undated = trace.undated_at(turn)
        hits = by_msg.hits
        if undated:  # messages whose day the context does not show are read without it
            plain = self.plain()._messages(key, c).hits
            hits = tuple({**{i: v for i, v in h.items() if i not in undated},
                          **{i: v for i, v in p.items() if i in undated}} for h, p in zip(hits, plain, strict=True))
        zero = tuple(0 for _ in c.items)
        verbatim, summary = zero, zero
        first: tuple[int, str] | None = None  # (strength, where) of the first item that states one
        for seg in trace.turns[turn].composition if 0 <= turn < len(trace.turns) else ():
            if isinstance(seg, TextRef):
                s, where = self._text_ref(key, c, trace, seg, undated), f"t:{seg.text_id}"
                summary = _best(summary, s)
            else:
                s, where = _in_range(hits, seg)
                verbatim = _best(verbatim, s)
            top = max(s, default=0)
            if top and (first is None or top > first[0]):
                first = (top, where)
        retained = sp.holds(c, _best(verbatim, summary))
        return Found(retained=retained, in_summary=retained and sp.holds(c, summary),
                     in_verbatim=retained and sp.holds(c, verbatim),
                     at=first[1] if retained and first is not None else "")

    def plain(self) -> SupportIndex:
        """This conversation read without times (for the messages whose stamp a context left
        out), made when first needed."""
        if self._plain is None:
            self._plain = SupportIndex(self.messages, "none")
        return self._plain

    def _text_ref(self, key: tuple[str, str], c: sp.Claim, trace: Trace, ref: TextRef,
                  undated: frozenset[int] = frozenset()) -> Strengths:
        return self._text(key, c, *self._ref_text(trace, ref, undated))

    def _ref_text(self, trace: Trace, ref: TextRef, undated: frozenset[int] = frozenset()) -> tuple[str, str]:
        """A text of the context as a reader sees it, and who speaks a line without ``Name:``
        (a clipped message's author; "" for a summary). A clipped message is dated like the
        message it was clipped from (not when its stamp was left out: `undated`)."""
        t = trace.texts[ref.text_id]
        if ref.source is None:
            return t.content, ""
        created = self.messages[ref.source].created_at if ref.source < len(self.messages) else None
        return dated(t.content, created, "none" if ref.source in undated else self.timestamps), t.name or t.role

    # -- evidence copied (v7) -----------------------------------------------------------------

    def copied(self, trace: Trace, turn: int, evidence: Sequence[int], question: str, answer: str,
               date: bool) -> str:
        """Where (``t:<text id>``, the first text holding a copy) when every evidence message is
        in the context at `turn` verbatim or copied into a text that is not (`copies`), at least
        one copied; "" otherwise. `date`: the answer is a time, so a verbatim message needs its
        day shown (times shown and a parseable ``created_at``) and a copy its day on its line
        or as the text's one-day header."""
        if not evidence or not 0 <= turn < len(trace.turns):
            return ""
        composition = trace.turns[turn].composition
        ranges = [seg for seg in composition if not isinstance(seg, TextRef)]
        undated = trace.undated_at(turn)
        texts = [(f"t:{seg.text_id}", *self._ref_text(trace, seg, undated)) for seg in composition
                 if isinstance(seg, TextRef)]
        ask_keys = copies.keys(question, answer, self._chat.people)
        where = ""
        for e in evidence:
            created_at = self.messages[e].created_at
            if any(lo <= e < hi for lo, hi in ranges) and (not date or (
                    self.timestamps != "none" and stamp_day(created_at) is not None and e not in undated)):
                continue
            # a copy carries the day the summarizer read from the time (`parse_day`), which may
            # be one the context itself does not stamp
            day = parse_day(created_at)
            if date and day is None:
                return ""
            said_on = day if date else None
            hit = next((w for w, text, speaker in texts if self._copied(e, ask_keys, text, speaker, said_on)), "")
            if not hit:
                return ""
            where = where or hit
        return where

    def _copied(self, e: int, ask_keys: frozenset[str], text: str, speaker: str,
                said_on: datetime.date | None) -> bool:
        """Each informative sentence of message `e` is copied into one line of `text`; when the
        answer is a time, `said_on` is the day `e` was said: that day on the line or as the text's
        header, and its relative dates copied too (`copies.informative`)."""
        key = (e, ask_keys, text, speaker, said_on)
        found = self._copies.get(key)
        if found is None:
            m = self.messages[e]
            c = dataclasses.replace(self._chat, source=sp._speaker_stems(m.name or m.role))
            lines = self._lines(text, speaker)
            day = copies.day_token(format_date(said_on)) if said_on is not None else ""
            header = bool(day) and any(sp.words(u.text) == (day,) for u in lines.units)
            found = True
            for sentence in copies.informative(m.content, ask_keys, said_on):
                near = sorted({k for t in sp.content(sentence) for k in lines.index.get(t, ())})
                if not any(copies.copied_in(sentence, ask_keys, lines.units[k], c)
                           and (not day or header or day in sp.tokens(lines.units[k].text)) for k in near):
                    found = False
                    break
            self._copies[key] = found
        return found


def dated(text: str, created_at: str | None, timestamps: str) -> str:
    """A message's text as a reader of the context sees it: when the context shows times
    (`timestamps` not "none": the message's day is visible, on it or on the stamp above it),
    the day first (``[7 May 2023]``, the summarizers' form) and each relative date resolved
    against it ("yesterday (6 May 2023)", `rollsum.summarizers.dates.anchor_dates`, the same
    reading the summarizers write)."""
    if timestamps == "none":
        return text
    day = stamp_day(created_at)  # what the context's stamp shows: nothing for a time it cannot read
    if day is None:
        return text
    return f"[{format_date(day)}] {anchor_dates(text, day)[0]}"


def _in_range(hits: tuple[dict[int, int], ...], seg: Segment) -> tuple[Strengths, str]:
    """Best strength per item over messages ``seg[0] .. seg[1]-1``, and the first message there
    that reaches the segment's top strength."""
    assert not isinstance(seg, TextRef)
    lo, hi = seg
    best = [0] * len(hits)
    where: tuple[int, int] | None = None  # (−strength, index): strongest, then earliest
    for k, h in enumerate(hits):
        for i, s in h.items():
            if lo <= i < hi:
                best[k] = max(best[k], s)
                if where is None or (-s, i) < where:
                    where = (-s, i)
    return tuple(best), (f"m:{where[1]}" if where is not None else "")


def _earliest(c: sp.Claim, hits: tuple[dict[int, int], ...]) -> int | None:
    """The first prefix 0..T of the messages that supports `c`: every item stated by then and
    (one item of a list / the single answer) strongly (`support.holds` over a growing prefix)."""
    any_at = [min(h) if h else None for h in hits]
    strong_at = [min((i for i, s in h.items() if s == 2), default=None) for h in hits]
    if c.is_list:
        if any(a is None for a in any_at):
            return None
        strong = [s for s in strong_at if s is not None]
        if not strong:
            return None
        return max(max(a for a in any_at if a is not None), min(strong))
    return strong_at[0]
