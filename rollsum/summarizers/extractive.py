"""Offline, deterministic summaries by selection (seed 002's rule-based mode and more).

No model. Every span becomes candidate lines:

- user/assistant text is split into whole sentences; relative dates are anchored to the
  message's day ("yesterday (7 May 2023)", `dates`); trailing clauses that name nothing
  specific are dropped and a sentence too long for a line is cut at a clause boundary, both
  marked with "…"; each line is said by its speaker's name (`Message.name`, else User/Assistant);
- a tool result becomes seed 002's one-line form (`tools`);
- the previous summary's lines are read back (day, speaker, sentences) and compete again.

`selection.select` keeps the lines worth the most information per token (`salience` weights
scaled by how specific each word is to the whole conversation, `corpus`), with a redundancy
penalty and coverage across the conversation's time, and they are rendered in conversation
order. When kept lines fall on more than one day each line carries its day (``[8 May 2023]
Caroline: ...``); when they share one, a single ``[8 May 2023]`` header line does. Candidates
with the same words (any case or punctuation) are kept once. docs/summarizers.md has the whole
design.

Incremental merge:

- ``select`` (default): the previous summary's lines and the span's sentences are one pool,
  scored with the same statistics, and the best that fit the budget are kept. Previous lines
  sit at the place in the conversation they came from (remembered with the statistics), so
  coverage neither freezes the summary on early sessions nor lets them be crowded out. The
  previous lines that did not survive are recorded: ``meta["dropped"]`` (count),
  ``meta["dropped_lines"]`` and a note. The result never exceeds the budget.
- ``append`` (seed 002's behaviour): previous text + ``[Update N]`` + a block for the new span.
  Before that would pass the budget (the engine cuts a summary at its share, which would hide
  the newest updates), the whole history is condensed: the best lines of the previous text and
  the span are re-selected into 2/3 of the budget under ``[Condensed history]`` (seed 002 kept
  only the newest block, which collapsed hundreds of messages into a few tokens).

State: the per-conversation statistics follow the summary chain (`corpus`), so replays are
byte-identical and a retried call equals a clean one; after a restart they are rebuilt from the
previous summary. It is on the replay hot path (a summary every ~10 messages), so each
distinct sentence is processed once (shortened, dates anchored, tail trimmed, features: cached
by its text, and by its day only when it holds a relative date), each previous summary line is
parsed once (cached by the line), token classes are cached, a day's sort key and a line
prefix's token count are kept across calls, and word factors are computed only for candidates
that can be chosen. The caches are bounded and never change an output
(`benchmarks/check_summaries.py` compares every preset's summaries with an older copy).
"""

from __future__ import annotations

import math
import re
import threading
from array import array
from base64 import b64decode, b64encode
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise, repeat
from operator import add, mul, xor
from typing import Any, Literal

from rollsum.capabilities import OFFLINE_SCRIPTED
from rollsum.errors import ConfigError, ErrorKind, SummarizeError
from rollsum.summarizers import dates, salience
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.summarizers.corpus import Corpus, Counts, FactorTable
from rollsum.summarizers.selection import Columns, select_columns
from rollsum.summarizers.tools import format_tool_summary, summarize_dropped, summarize_tool_result
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, SummaryRecord, Usage

Merge = Literal["select", "append"]

MAX_SENTENCE_CHARS = 280
CONDENSED_HEADER = "[Condensed history]"
CONDENSED_SHARE = 2 / 3
"""Append mode condenses its history into this share of the budget; new blocks get the rest."""
TOOL_ERROR_BONUS = 1.5
TOOL_PRIORITY = 0.5
"""A tool result's gain when competing for the budget, relative to a line somebody said (only
when the conversation has voices, `conversational`): a file, a command's output or a search can
be read or run again, what a person said (a decision, a constraint, a date) cannot. Eligibility
is unchanged: a tool line is still kept when there is room and it is worth a line."""
MUST_KEEP_BONUS = 5.0
MAX_DROPPED_IN_NOTE = 3
POSITIONS_META = "positions"
"""The record meta key of where each sentence of the summary was said (message index, NaN when
unknown), in the order the summary's sentences read back: what a restarted summarizer needs
besides the covered messages to continue the chain exactly (`_rebuilt`). Stored as the base64
of the float64 values (exact, ~40 characters per 3 sentences): a list of floats in the record's
meta cost 2.7 % of a since-last replay's instructions (the stores check every value of a meta)
and their reprs 1.7 %."""
_NAN = math.nan
_REBUILD_CHUNK = 2_000
"""Covered messages processed at a time when a chain is rebuilt (bounds what one pass holds)."""
_CACHE_LIMIT = 20_000
_SPECIFIC = salience.W_NUMBER
"""Base weights at or above this are names, numbers and dates."""

_SENTENCE_END_RE = re.compile(r"([.!?…])\s+(?=[\"'“‘(\[]?[A-Z0-9\[])")
"""Where a sentence ends within a line: after end punctuation, before a capital, digit or quote.
The punctuation is captured (and given back to its sentence) rather than looked behind for: a
pattern that starts with a character class lets the regex engine skip to the candidates, 2.5×
faster than testing a lookbehind at every position."""
_SENTENCE_END_DOT_RE = re.compile(r"(\.)\s+(?=[\"'“‘(\[]?[A-Z0-9\[])")
"""`_SENTENCE_END_RE` for a text whose only end mark is ".", most messages: the same splits
(no other mark can match), and a pattern that starts with one literal lets the regex engine
scan for that character instead of testing a character class at every position (which
was a quarter of the sentence split's instructions)."""
_ABBREVIATION_RE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|No|Fig|approx)\.|\b[A-Z]\.)$")
_ABBREVIATION_ENDS = ("Mr.", "Mrs.", "Ms.", "Dr.", "St.", "Jr.", "Sr.", "Prof.", "vs.", "etc.", "No.", "Fig.",
                      "approx.")
"""The words `_ABBREVIATION_RE` knows besides single capitals: a sentence that ends with none of
them (nor with a capital and a full stop) cannot end with an abbreviation, and most sentences
end with "." after a common letter ("test.", "for."), so this string test spares the regex."""


def _abbreviation_behind(after: str) -> str:
    """Look-behinds (of fixed width) for `_ABBREVIATION_RE`'s alternatives ending just before
    `after` (a literal): a capital and a full stop, or one of its words; the two letters before
    the full stop, tested first, rule most sentence ends out."""
    return (r"(?:(?<=[A-Z]\." + after + r")(?<=\b[A-Z]\." + after + r")|(?<=["
            + "".join(sorted({w[-3] for w in _ABBREVIATION_ENDS})) + "]["
            + "".join(sorted({w[-2] for w in _ABBREVIATION_ENDS})) + r"]\." + after + ")(?:"
            + "|".join(rf"(?<=\b{re.escape(w)}{after})" for w in _ABBREVIATION_ENDS) + "))")


_ABBREVIATION_SPLIT_RE = re.compile(r"\x00" + _abbreviation_behind(r"\x00"))
"""In a text whose sentence ends are NULs (`split_sentences`), one where the sentence before ends
with what `_ABBREVIATION_RE` takes for an abbreviation: only there is a piece joined to the
next. The NUL first lets the regex engine scan for the ends; a look-behind for the two letters
before the full stop rules most out; then `_ABBREVIATION_RE`'s alternatives, as look-behinds
of fixed width (the word boundary in the piece is the one in the text: a piece starts after
whitespace, a NUL or at the text's start)."""
_DOT_END_SUB = re.compile(r"\.\s+(?=[\"'“‘(\[]?[A-Z0-9\[])").sub
_MARK_SUBS = tuple((mark, re.compile(re.escape(mark) + r"\s+(?=[\"'“‘(\[]?[A-Z0-9\[])").sub) for mark in ".!?…")
"""Each end mark's sentence ends as `_SENTENCE_END_RE` finds them (a mark, whitespace, and a
capital, digit or quote next): its matches never overlap, so one pattern per mark finds the
same ends, and each starts with a literal (scanned for, not tested at every position)."""
_SENTENCE_START = r"[\"'“‘(\[]?[A-Z0-9\[]"
_ODD_DOT_END_RE = re.compile(r"\.(?:[^\S ]| (?!" + _SENTENCE_START + ")|" + _abbreviation_behind("") + " )")
_ODD_MARK_END_RE = re.compile(r"[.!?…](?:[^\S ]| (?!" + _SENTENCE_START + ")|" + _abbreviation_behind("") + " )")
"""Where a one-line text's sentence ends are not simply its "<mark> " strings: an end mark
followed by whitespace other than one space, by a space and then no sentence start (a
capital, digit or quote, as `_SENTENCE_END_RE` looks ahead for), or a full stop that ends an
abbreviation, then a space. Where neither pattern finds one (for a text whose only mark is
".", or any marks), each "<mark> " is a sentence end (`\\s+` takes the one space, and the
character after it is a sentence start) and no sentence ends with an abbreviation: a string
replace marks the ends, and the regex substitutions and the abbreviation search are spared.
The first pattern starts with a literal, which the regex engine scans for."""
_CLAUSE_RE = re.compile(r"[,;:]\s|\s[-–—]\s")
_HEADER_LINE_RE = re.compile(
    r"^(?:\[Update \d+\]|\[Condensed history\]|--- Summarized Context .*---|\[\d+ messages with no "
    r"extractable content\]|## .*)$")
_DAY_RE = re.compile(r"^\[(\d{1,2} [A-Z][a-z]+ \d{4})\](?: (.*))?$")
_SPEAKER_RE = re.compile(r"^([^\s:\[\]][^:\[\]]{0,40}?): (.+)$")
_TOOL_LINE_RE = re.compile(r"^\[(?:✓|❌) ([^:\]]*): (.*)\]$")
_TOOL_LABELS = tuple(f"{label}: " for label in ("File", "Command", "Pattern", "Top files", "Exports", "Defines",
                                                 "Error", "Changes", "Sets", "Action"))
"""The labels `tool_features` drops from a fact's start. None holds ": ", so a fact that starts
with one loses exactly the text up to its first ": " and that ": "."""
_TOOL_TRIVIA = ("Lines:", "Type:", "Output:", "Imports:", "Matches:", "Files:", "Exit: 0", "Exit: ?")
_NORM_TABLE = str.maketrans({c: " " for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~“”‘’–—…"})
_GENERIC_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System"}


@dataclass(slots=True)
class _Text:
    """A candidate's body processed once, with what scoring needs from it at every call
    (carried from call to call: a kept sentence comes back as a previous line). Never changed
    once made (a slots dataclass rather than a named tuple: its fields are read ~1,000 times
    per summary, and the interpreter reads a slot faster than a named tuple's field)."""

    body: str
    feat: salience.Features
    cost: int
    """Tokens of the body as a line's text (and the space or newline before it)."""
    content: bool
    """Names something beyond common words (else it is never worth a line, unless a bonus)."""
    names: tuple[str, ...]
    """The keys it holds as a name, number or date (their factor is not a plain word's)."""
    short: str = ""
    """A said sentence: itself cut to a line's length, before dates are anchored (the
    per-sentence cache's entries are these texts: one object per sentence, not two)."""
    relative: bool | None = None
    """A said sentence: whether anchoring dates changes it (None: not asked yet)."""
    scaled: tuple[float, ...] = ()
    """Each key's base weight times the sentence factor: the first product of its weight in
    the pool (``w * factor * key factor``), so the same float."""
    signs: tuple[int, ...] = ()
    """Per key, -1 for a name, number or date and 0 for a word: ``frequency ^ sign`` is the
    key's code in `Counts.factor_table`; () when it holds no name."""
    keys: tuple[str, ...] = ()
    """``feat[0]``, the keys of `feat`."""

    def but(self, body: str, cost: int, relative: bool | None) -> _Text:
        """This text with another body, cost or `relative` (a tool line over the same facts;
        a sentence once asked whether it holds a relative date): every other field is kept,
        and this is the one place that lists them."""
        return _Text(body, self.feat, cost, self.content, self.names, self.short, relative, self.scaled, self.signs,
                     self.keys)


def _text(body: str, feat: salience.Features, cost: int, short: str = "", relative: bool | None = None) -> _Text:
    keys, weights, factor = feat
    top = max(weights) if weights else 0.0
    names: tuple[str, ...] = ()
    signs: tuple[int, ...] = ()
    if top >= _SPECIFIC:
        names = tuple([k for k, w in zip(keys, weights) if w >= _SPECIFIC])
        signs = tuple([-1 if w >= _SPECIFIC else 0 for w in weights])
    # times 1.0 (a whole statement: most sentences) every weight is itself, the same float
    scaled = weights if factor == 1.0 else tuple([w * factor for w in weights])
    return _Text(body, feat, cost, top >= salience.W_CONTENT, names, short, relative, scaled, signs, keys)


@dataclass(slots=True)
class _Piece:
    """One candidate as shown: a sentence (or tool line) with who said it and on which day."""

    text: _Text
    speaker: str
    day: str
    group: int
    """Pieces of one group (a message, or a previous summary line) are joined into one line.
    Previous lines are groups 0, 1, ...; new messages are -1, -2, ..."""
    bonus: float = 0.0
    source: str | None = None
    """The previous summary's line this piece came from (None for new messages)."""
    tool: bool = False
    """A tool result (re-derivable: it competes at `TOOL_PRIORITY`)."""

    @property
    def body(self) -> str:
        return self.text.body

    @property
    def feat(self) -> salience.Features:
        return self.text.feat


_new_object = object.__new__
"""For `_new_pieces`' loop, which makes one `_Piece` per sentence a span says (~3 a message)
and sets its fields itself: calling the class runs ``__init__`` in a nested run of the
interpreter (the type's C call), a quarter of the loop's own cost; this is 40 % cheaper.
`test_the_span_pieces_made_field_by_field_equal_the_class_call` checks every field is set."""


@dataclass(slots=True)
class _Span:
    """The span read into pieces, and what the statistics and the order need from all of it."""

    pieces: list[_Piece]
    """Its pieces in order (groups -1, -2, ... by message), without a sentence said again on a
    day it was already said in the span: `_distinct` would drop that one (same text, and the
    first is always before it, in message order or by day), and a long span repeats greetings
    and preambles hundreds of times."""
    docs: list[tuple[str, ...]]
    """Every sentence's word keys, repeats included (each is a document for the statistics)."""
    day_runs: list[str]
    """The day of each run of consecutive pieces on one day, repeats included (to see whether
    they are in order; equal neighbours never are out of it, so runs tell what every piece would)."""


@dataclass(slots=True)
class _Old:
    """A previous summary read back, and what every call that meets it again needs from it."""

    pieces: list[_Piece]
    speakers: frozenset[str]
    days: set[str]
    day_runs: list[str]
    """The day of each run of consecutive pieces on one day (to see whether they are in order)."""
    rank: dict[int, int]
    """Each group's rank among the groups, in piece order."""
    lines: dict[int, str]
    """Every line by group (to report what is dropped)."""


@dataclass(slots=True)
class _Pool:
    pieces: list[_Piece]
    cands: Columns
    header_cost: int
    previous_lines: dict[int, str]
    """Every line of the previous summary by group, candidate or not (to report what is dropped)."""


class _Ordinals(dict[str, int]):
    """Sort key of a display day ("8 May 2023") by the day, 0 for none; computed when first
    asked (`_pool` looks every day of its pieces up by ``__getitem__``, in C, not by a call of
    a method per distinct day: ~18 a summary)."""

    __slots__ = ()

    def __missing__(self, day: str) -> int:
        d = dates.parse_formatted(day) if day else None
        hit = self[day] = d.toordinal() if d else 0
        return hit


class _PrefixCosts(dict[tuple[str, str], int]):
    """Tokens of a line's prefix (``"[8 May 2023] Caroline: "``) by its (day, speaker), day ""
    when lines carry none; counted by `counter` when first asked. Kept across calls: a
    conversation has few days and speakers, and the same prefixes come back at every
    summary (~21 distinct ones a summary on a mixed stream, each an f-string and a count)."""

    __slots__ = ("counter",)

    def __init__(self, counter: TokenCounter) -> None:
        super().__init__()
        self.counter = counter

    def __missing__(self, key: tuple[str, str]) -> int:
        day, speaker = key
        prefix = (f"[{day}] " if day else "") + (f"{speaker}: " if speaker else "")
        hit = self[key] = self.counter.count(prefix) if prefix else 0
        return hit


def _norm(text: str) -> str:
    """The words of `text` without case or punctuation: two lines with the same key are duplicates."""
    return " ".join(text.lower().translate(_NORM_TABLE).split())


def _content(feat: salience.Features) -> bool:
    """Whether `feat` names something beyond common words (else the sentence is never worth a line)."""
    weights = feat[1]
    return bool(weights) and max(weights) >= salience.W_CONTENT


def _distinct(pieces: Iterable[_Piece],
              norm: Callable[[str], str]) -> tuple[list[_Piece], Collection[tuple[str, ...]]]:
    """The pieces worth a line, each said once: without those naming nothing specific (unless
    a bonus makes them worth it), and without a later piece whose words are an earlier kept
    one's (any case or punctuation: the same `norm` and the same word keys).

    Duplicates have the same key tuple, so the tuple finds candidates and `norm` decides. Per key
    tuple: the first kept piece, and the normalized texts of the kept ones once a second body has
    those keys (a set, not a scan of the kept bodies: a long span repeats a sentence hundreds
    of times). Also gives the kept pieces' distinct key tuples (their union is the vocabulary
    that needs factors).

    Each of `pieces` is its own object (the pool makes one per sentence and line): a key tuple
    met for the first time is the one whose entry is the piece itself, which tells it without
    counting the entries before and after (pieces may share a `_Text`, so the text would not).
    """
    out: list[_Piece] = []
    seen: dict[tuple[str, ...], _Piece] = {}
    kept_norms: dict[tuple[str, ...], set[str]] = {}
    setdefault = seen.setdefault
    for piece in pieces:
        text = piece.text
        if not text.content and piece.bonus <= 0.0:
            continue  # names nothing specific (only common words): never worth a line
        keys = text.keys
        first = setdefault(keys, piece)  # one hash of the key tuple; the piece itself when new
        if first is not piece:
            body = text.body
            if body == first.text.body:
                continue  # the same sentence again
            norms = kept_norms.get(keys)
            if norms is None:
                norms = kept_norms[keys] = {norm(first.text.body)}
            key = norm(body)
            if key in norms:
                continue
            norms.add(key)
        out.append(piece)
    return out, seen.keys()


def _day_key(timestamp: str) -> str:
    """What of `timestamp` decides its day for `dates.parse_day`: the date of an ISO-8601
    extended timestamp ("2024-03-04T09:03:22Z" -> "2024-03-04"), else all of it.

    Why the first ten characters decide when the fifth and eighth are "-": `datetime.fromisoformat`
    reads them as the date (a week date has "W" sixth and a digit eighth, an ordinal or basic
    one no "-" eighth, and leading spaces would put a digit fifth), whatever the time after it
    is; and when the whole does not parse, `parse_day` falls back to exactly these characters.
    """
    if len(timestamp) >= 10 and timestamp[4] == "-" and timestamp[7] == "-":
        return timestamp[:10]
    return timestamp


def _participant_keys(speakers: Iterable[str]) -> tuple[set[str], set[str]]:
    """Word keys that name a participant, demoted to common words when scoring: each word of
    their names, and (only where written as a name) its short forms, "Mel" for Melanie."""
    full: set[str] = set()
    short: set[str] = set()
    for s in speakers:
        if s in _GENERIC_SPEAKERS.values():
            continue
        for w in s.lower().split():
            full.add(salience.stem(w))
            short.update(w[:k] for k in range(3, len(w)))
    return full, short


def _looks_like_speaker(name: str) -> bool:
    """"Caroline", "Dr. Amy Ellis", "User": one to four capitalized words."""
    words = name.split()
    return 0 < len(words) <= 4 and all(w[:1].isupper() for w in words)


def split_sentences(text: str) -> list[str]:
    """Whole sentences (and lines) of `text`; an abbreviation ("Dr.", "J.") does not end one.

    Lines first (a string split), then sentence ends within each line: the same pieces as one
    regex over the whole text with a line-break alternative, at a third of the cost (it runs
    on every message).

    A text of one line where no abbreviation ends a sentence (nearly every message) is split
    without a Python loop over its sentences: each end mark's pattern replaces its sentence
    ends (the mark kept, the whitespace after it dropped) by a NUL, and a string split cuts
    there. The same pieces as the loop (`_split_lines`): a piece after a sentence end starts
    with the character the end's lookahead saw (never whitespace) and a piece before one ends
    with its mark, so only the text's own ends need stripping, and no piece is empty.
    """
    if not ("\n" in text or ". " in text or "! " in text or "? " in text or "… " in text):
        stripped = text.strip()
        return [stripped] if stripped else []
    if "\n" in text or "\x00" in text:
        return _split_lines(text)
    ends = text
    if "!" in text or "?" in text or "…" in text:
        if _ODD_MARK_END_RE.search(text):
            for mark, sub in _MARK_SUBS:
                if mark in text:
                    ends = sub(mark + "\x00", ends)
            if _ABBREVIATION_SPLIT_RE.search(ends):
                return _split_lines(text)
        else:
            for mark in ".!?…":
                if mark in text:
                    ends = ends.replace(mark + " ", mark + "\x00")
    elif _ODD_DOT_END_RE.search(text):
        ends = _DOT_END_SUB(".\x00", text)
        if _ABBREVIATION_SPLIT_RE.search(ends):
            return _split_lines(text)
    else:
        ends = text.replace(". ", ".\x00")
    out = ends.split("\x00")
    if len(out) == 1:
        stripped = ends.strip()
        return [stripped] if stripped else []
    out[0] = out[0].lstrip()
    out[-1] = out[-1].rstrip()
    return out


def _split_lines(text: str) -> list[str]:
    """`split_sentences` of any text: line by line, an abbreviation's sentence end joined to
    the next piece."""
    out: list[str] = []
    split = (_SENTENCE_END_RE if "!" in text or "?" in text or "…" in text else _SENTENCE_END_DOT_RE).split
    abbreviation = _ABBREVIATION_RE.search
    for line in text.split("\n"):
        parts = split(line)  # sentence, its end mark, sentence, end mark, ..., last sentence
        n = len(parts)
        for j in range(0, n, 2):
            piece = (parts[j] + parts[j + 1]).strip() if j + 1 < n else parts[j].strip()
            if not piece:
                continue
            if out:
                last = out[-1]
                # an abbreviation is one of a few words or a capital, then "." (the regex checks
                # the word boundary before it); it is at most 7 characters (and the one before
                # them, for that boundary): search only the end
                if (last[-1] == "." and (last.endswith(_ABBREVIATION_ENDS) or "A" <= last[-2:-1] <= "Z")
                        and abbreviation(last, max(0, len(last) - 8))):
                    out[-1] = f"{last} {piece}"
                    continue
            out.append(piece)
    return out


def shorten(sentence: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    """`sentence` if it fits `limit` characters, else cut at its last clause boundary (", ",
    "; ", " - ") in the limit, or at a word when there is none, and marked with "…"."""
    if len(sentence) <= limit:
        return sentence
    head = sentence[: limit - 2]
    cut = -1
    for m in _CLAUSE_RE.finditer(head):
        cut = m.start()
    if cut < limit * 0.4:
        cut = head.rfind(" ")
    if cut <= 0:
        cut = limit - 2
    return head[:cut].rstrip(" ,;:-–—") + " …"


def trim_tail(sentence: str, feats: Callable[[str], salience.Features] = salience.features) -> str:
    """`sentence` without trailing clauses that name nothing specific (", which is pretty
    exciting!", " – it was really rewarding."), marked with "…"; unchanged when there are none.

    Only the end is trimmed: the head of a sentence carries its subject and verb, and a line
    must still read as a sentence. `feats`: `salience.features`, or the caller's memo of it.
    """
    if len(sentence) < 40 or (", " not in sentence and "; " not in sentence and " – " not in sentence
                              and " - " not in sentence and " — " not in sentence):
        return sentence
    end = len(sentence)
    for m in reversed(list(_CLAUSE_RE.finditer(sentence))):
        cut = m.start()
        if cut < 20:
            break
        _, tail, _ = feats(sentence[cut:end])
        if any(w >= salience.W_CONTENT for w in tail):
            break
        end = cut
    if end == len(sentence):
        return sentence
    return sentence[:end].rstrip(" ,;:-–—") + " …"


def tool_features(line_body: str, feats: Callable[[str], salience.Features] = salience.features
                  ) -> salience.Features:
    """Features of a tool line's facts, without its boilerplate (labels, line counts, exit 0).
    `feats`: `salience.features`, or the caller's memo of it."""
    facts = " ; ".join([p[p.index(": ") + 2:] if p.startswith(_TOOL_LABELS) else p
                        for p in line_body.split(" | ") if not p.startswith(_TOOL_TRIVIA)])
    return feats(facts)


DEFAULT_MAX_TOKENS = 500
"""The budget when neither the summarizer nor the request sets one (seed 002's default)."""


def _budget(own: int | None, requested: int) -> int:
    if requested > 0:
        return requested if own is None else min(own, requested)
    return own if own is not None else DEFAULT_MAX_TOKENS


class ExtractiveSummarizer:
    """Selection summary within a token budget; see the module docstring for the merge modes."""

    name = "extractive"
    capabilities = OFFLINE_SCRIPTED
    """No model: offline, free, deterministic, and blind to prompt templates."""
    rewrites_previous = False
    """A merge keeps each previous line verbatim or drops it (both modes): folding a summary
    into the next cannot drift, so past seed 003's depth cap the engine still lets the old
    lines compete with the span's instead of cutting the oldest text (`depth_cap_merge`)."""

    def __init__(self, *, max_tokens: int | None = None, counter: TokenCounter | None = None,
                 merge: Merge = "select", conversational: bool = True) -> None:
        """`max_tokens` caps the summary below the engine's budget; None (default) lets the
        request's budget (the engine's room for the summary) govern alone, so one parameter
        (the window, the summary share) means the same for an offline and a model summary."""
        if max_tokens is not None and max_tokens <= 0:
            raise ConfigError(f"max_tokens: expected a positive integer, got {max_tokens}")
        if merge not in ("select", "append"):
            raise ConfigError(f"merge: expected 'select' or 'append', got {merge!r}")
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter or HeuristicCounter()
        self.merge: Merge = merge
        self.conversational = conversational
        # features of the sentences seen by this call and the last one: a sentence kept in a
        # summary comes back as a previous line at the next call (two generations, so the
        # cache stays the size of a summary and a span, however long the conversation)
        self._features: dict[str, _Text] = {}
        self._features_before: dict[str, _Text] = {}
        self._tokens: salience.TokenCache = {}
        self._feature_memo: dict[str, salience.Features] = {}
        self._days: dict[str, tuple[str, date | None]] = {}
        self._ordinals = _Ordinals()
        self._prefix_costs = _PrefixCosts(self.counter)
        self._corpus = Corpus()
        self._old_memo: dict[str, _Old] = {}
        self._norms: dict[str, str] = {}
        self._old_lines: dict[str, tuple[str, tuple[_Text, ...], bool]] = {}
        self._old_read: dict[str, tuple[str | None, str | None, str, tuple[_Text, ...], int]] = {}
        self._sentences: dict[str | tuple[str, date], _Text] = {}
        self._lock = threading.Lock()
        """One summary at a time: the caches above are the instance's, and a process may share
        one summarizer among its engines (`rollsum.presets.summarizer_for`), the asyncio
        engine calling it from worker threads."""

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "merge": self.merge, "conversational": self.conversational}

    def __repr__(self) -> str:
        return (f"ExtractiveSummarizer(max_tokens={self.max_tokens}, merge={self.merge!r}, "
                f"conversational={self.conversational})")

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        with self._lock:
            return self._summarize(request)

    def _summarize(self, request: SummaryRequest) -> SummaryDraft:
        if not request.messages:
            raise SummarizeError("nothing to summarize: the span is empty", transport=False,
                                 kind=ErrorKind.EMPTY)
        budget = _budget(self.max_tokens, request.max_tokens)
        self._features_before, self._features = self._features, {}
        if len(self._ordinals) > _CACHE_LIMIT:
            self._ordinals.clear()
        prev = request.previous.text.strip() if request.previous is not None else ""
        speakers: set[str] = set()
        new = self._new_pieces(request.messages, speakers)
        docs = new.docs
        counts, _ = self._corpus.checkout(request.conversation_id, prev, lambda: self._rebuilt(request, prev))
        counts.add(docs)
        previous_positions = counts.positions
        if self.merge == "append":
            draft, positions = self._append(request, new, speakers, counts, budget)
        else:
            draft, positions = self._select(request, new, speakers, counts, budget)
        counts.positions = positions
        self._corpus.commit(request.conversation_id, prev, previous_positions, counts, docs, draft.text.strip())
        return draft

    def _rebuilt(self, request: SummaryRequest, prev: str) -> Counts:
        """The statistics of a chain this summarizer has not followed: a restart, or an engine
        rebuilt for every request. When the previous record is this summarizer's own (it saved
        its positions), they are the word frequencies of every message the chain covers,
        processed as their spans were (`SummaryRequest.covered`), and those positions: what an
        uninterrupted chain holds, so its summaries come out the same.

        Otherwise -- a previous summary from another summarizer (a model this one stands in for
        as the fallback), or no covered messages -- the previous summary's lines stand in for
        the conversation, as an uninterrupted chain does at that point too. Counting every
        covered message there would make each fallback after a model's summary a pass over the
        whole conversation (3.7x the per-message time at 3,000 messages, half the calls failing)."""
        counts = Counts()
        previous = request.previous
        covered = None
        if previous is not None and POSITIONS_META in previous.meta and request.covered is not None:
            covered = request.covered()
            if len(covered) != previous.messages_covered:
                covered = None  # not the chain the record describes: its lines are what there is
        if covered is not None:
            carried = self._features
            try:
                for start in range(0, len(covered), _REBUILD_CHUNK):
                    self._features = {}  # what a span carries to the next call: not these
                    counts.add(self._new_pieces(covered[start:start + _REBUILD_CHUNK], set()).docs)
            finally:
                self._features = carried
        else:
            counts.add([p.text.keys for p in self._old_pieces(prev).pieces])
        counts.positions = self._saved_positions(previous, prev)
        return counts

    def _saved_positions(self, previous: SummaryRecord | None, prev: str) -> dict[str, float]:
        """The positions `previous` saved (`POSITIONS_META`) for the sentences of its text, as
        they read back; {} when it saved none or they do not line up (another summarizer's
        record, an edited text)."""
        saved = previous.meta.get(POSITIONS_META) if previous is not None else None
        if not isinstance(saved, str):
            return {}
        values = array("d")
        try:
            values.frombytes(b64decode(saved, validate=True))
        except ValueError:  # (binascii.Error is one)
            return {}
        pieces = self._old_pieces(prev).pieces
        if len(values) != len(pieces):
            return {}
        return {p.text.body: pos for p, pos in zip(pieces, values) if pos == pos}  # NaN: not known

    # -- candidates ------------------------------------------------------------------------

    def _tool_text(self, line: str, facts: str) -> _Text:
        """A tool line as a candidate, its features read from its facts; carried like `_carried`."""
        key = "\x00" + facts  # the features depend on the facts alone: the line is not the key
        t = self._features.get(key)
        if t is None:
            t = self._features_before.get(key)
            if t is None:
                t = _text(facts, tool_features(facts, feats=self._features_of), 0)
            self._features[key] = t
        # what `_text` derives from the features (content, names, weights) is the facts' already
        return t.but(line, self.counter.count(line) + 1, t.relative)

    def _carried(self, sentence: str) -> _Text:
        """A previous summary's sentence as a candidate: the one the span made of it when it was
        said (the last call's or the one before: a kept sentence comes back as a previous line
        at the next call), else processed now."""
        t = self._features.get(sentence)
        if t is None:
            t = self._features_before.get(sentence)
            if t is None:
                t = _text(sentence, self._features_of(sentence), self.counter.count(sentence) + 1)
            self._features[sentence] = t
        return t

    def _day(self, timestamp: str | None) -> tuple[str, date | None]:
        """The display day ("8 May 2023") and date of a message timestamp; ("", None) without one.
        Cached by `_day_key`: timestamps are mostly unique, their days are not (a cache by the
        whole timestamp would miss at every message and hold one entry per message)."""
        if not timestamp:
            return "", None
        key = _day_key(timestamp)
        hit = self._days.get(key)
        if hit is None:
            if len(self._days) > _CACHE_LIMIT:
                self._days.clear()
            d = dates.parse_day(timestamp)
            hit = self._days[key] = ("", None) if d is None else (dates.format_date(d), d)
        return hit

    def _new_pieces(self, messages: Sequence[Message], speakers: set[str]) -> _Span:
        """The span as pieces (`_Span`); `speakers` collects names."""
        out: list[_Piece] = []
        append = out.append
        docs: list[tuple[str, ...]] = []
        runs: list[str] = []
        run_day: str | None = None
        # each sentence said in the span, by its day: its word keys (a repeat adds only those)
        said_here: dict[str, dict[str, tuple[str, ...]]] = {}
        said_today: dict[str, tuple[str, ...]] = {}
        today: str | None = None
        conversational = self.conversational
        feats = self._features
        said = self._sentences
        known_days = self._days
        for i, m in enumerate(messages):
            group = -1 - i
            stamp = m.created_at
            if stamp:
                dated = known_days.get(_day_key(stamp))
                day, anchor = dated if dated is not None else self._day(stamp)
            else:
                day, anchor = "", None
            if m.role == "tool" or not conversational:
                ts = summarize_tool_result(m)
                body = format_tool_summary(ts)
                text = self._tool_text(body, " | ".join(ts.key_facts))
                append(_Piece(text, "", day, group, TOOL_ERROR_BONUS if ts.status == "error" else 0.0,
                              tool=conversational and m.role == "tool"))
                docs.append(text.keys)
                if day != run_day:
                    runs.append(run_day := day)
                continue
            speaker = (m.name or "").strip() if m.role != "system" else ""
            if speaker and len(speaker) <= 40 and ":" not in speaker and "\n" not in speaker:
                speakers.add(speaker)
            else:
                speaker = _GENERIC_SPEAKERS[m.role]
            sentences = split_sentences(m.content)
            if sentences and day != run_day:
                runs.append(run_day := day)
            if day != today:
                today = day
                said_today = said_here.setdefault(day, {})
            for sentence in sentences:
                again = said_today.get(sentence)
                if again is not None:
                    docs.append(again)
                    continue
                hit = said.get(sentence)
                if hit is None or (anchor is not None and hit.relative is not False):
                    hit = self._sentence(sentence, anchor)
                feats[hit.body] = hit
                p = _new_object(_Piece)  # _Piece(hit, speaker, day, group), field by field
                p.text = hit
                p.speaker = speaker
                p.day = day
                p.group = group
                p.bonus = 0.0
                p.source = None
                p.tool = False
                append(p)
                keys = said_today[sentence] = hit.keys
                docs.append(keys)
        return _Span(out, docs, runs)

    def _sentence(self, sentence: str, anchor: date | None) -> _Text:
        """A said sentence as a candidate's body (shortened, dates anchored, empty tail trimmed)
        with its features and cost: one pass per distinct sentence, then a lookup.

        Cached by the sentence, and by the sentence and its day only when it holds a relative
        date (the only part that depends on the day); it never changes an output. Real traffic
        repeats more than it seems (greetings, tool preambles, "Calling read_file(...)").

        A sentence met first with a day (every sentence of a timestamped chat) is anchored to
        that day at once: whether anchoring changes it is whether it holds a relative date
        (`dates.holds_relative`: which expressions are anchored depends on the text alone), so
        its entry is made with `relative` set, without a probe anchoring and a second entry.
        """
        cache = self._sentences
        hit = cache.get(sentence)
        if hit is None:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            short = shorten(sentence) if len(sentence) > MAX_SENTENCE_CHARS else sentence
            feats = self._features_of
            if anchor is not None:
                anchored, _ = dates.anchor_dates(short, anchor)
                relative = anchored != short
                hit = cache[sentence] = self._said(short, relative, trim_tail(short, feats=feats))
                if not relative:
                    return hit
                hit = cache[sentence, anchor] = self._said(short, True, trim_tail(anchored, feats=feats))
                return hit
            hit = cache[sentence] = self._said(short, None, trim_tail(short, feats=feats))
        if anchor is None:
            return hit
        if hit.relative is None:  # asked only when there is a day to anchor to
            hit = cache[sentence] = hit.but(hit.body, hit.cost, dates.holds_relative(hit.short))
        if not hit.relative:
            return hit
        key = (sentence, anchor)
        dated = cache.get(key)
        if dated is None:
            anchored, _ = dates.anchor_dates(hit.short, anchor)
            dated = hit
            if anchored != hit.short:  # else the sentence's own entry (already asked: relative)
                dated = self._said(hit.short, True, trim_tail(anchored, feats=self._features_of))
            cache[key] = dated
        return dated

    def _said(self, short: str, relative: bool | None, body: str) -> _Text:
        return _text(body, self._features_of(body), self.counter.count(body) + 1, short, relative)

    def _features_of(self, text: str) -> salience.Features:
        """`salience.features` of `text`, memoized by the text (bounded): texts repeat beyond
        the per-sentence caches' reach: a trimmed tail (", we laughed a lot.") recurs under
        many sentences, and a tool line's facts without their line counts ("git status") recur
        in lines that differ; on the mixed stream 271 of 1,887 texts are repeats. Features
        depend on the text alone, so a hit is the same value."""
        memo = self._feature_memo
        hit = memo.get(text)
        if hit is None:
            if len(memo) > _CACHE_LIMIT:
                memo.clear()
            hit = memo[text] = salience.features(text, self._tokens)
        return hit

    def _old_pieces(self, text: str) -> _Old:
        """The previous summary read back into pieces (one group per line, sentences split),
        with the speakers named in it and its days. Memoized by text: in a chain it is the last
        call's output (and the same summary is met again by a retry or a condensing append).

        Each line is read once (`_old_read`, cached by the line as written: most of a summary's
        lines come back at the next call, and only their group, and the day of a line under a
        day header, change); a line's rank among the lines with pieces and the runs of days are
        counted here, line by line (every piece of a line shares its group and day)."""
        hit = self._old_memo.get(text)
        if hit is not None:
            return hit
        out: list[_Piece] = []
        append = out.append
        speakers: set[str] = set()
        lines: dict[int, str] = {}
        rank: dict[int, int] = {}
        runs: list[str] = []
        run_day: str | None = None
        day = ""
        group = 0
        tool_flag = self.conversational
        read = self._old_read
        for raw in text.split("\n"):
            line, own_day, speaker, parts, tool = read.get(raw) or self._read_old(raw)
            if line is None:  # blank, a header, or a day header (which sets the day of the lines under it)
                if own_day is not None:
                    day = own_day
                continue
            line_day = day if own_day is None else own_day
            if tool:
                append(_Piece(parts[0], "", line_day, group, TOOL_ERROR_BONUS if tool < 0 else 0.0, line, tool_flag))
            else:
                if speaker:
                    speakers.add(speaker)
                if not parts:
                    group += 1
                    continue
                for part in parts:
                    append(_Piece(part, speaker, line_day, group, 0.0, line))
            lines[group] = line
            rank[group] = len(rank)
            if line_day != run_day:
                runs.append(run_day := line_day)
            group += 1
        if len(self._old_memo) >= 4:
            self._old_memo.clear()
        result = self._old_memo[text] = _Old(out, frozenset(speakers), set(runs), runs, rank, lines)
        return result

    def _read_old(self, raw: str) -> tuple[str | None, str | None, str, tuple[_Text, ...], int]:
        """One line of a previous summary as written, read (cached in `_old_read`): (the line
        stripped, or None for a blank, a header or a day header; its own day, or None for the
        day above it; its speaker; its sentences as candidates; 1 for a tool line, -1 for a
        failed one, 0 for said text)."""
        cache = self._old_read
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        line = raw.strip()
        hit: tuple[str | None, str | None, str, tuple[_Text, ...], int]
        if not line or _HEADER_LINE_RE.match(line):
            hit = (None, None, "", (), 0)
        else:
            dm = _DAY_RE.match(line)
            own_day: str | None = None
            rest = line
            if dm:
                if dm.group(2) is None:
                    cache[raw] = hit = (None, dm.group(1), "", (), 0)
                    return hit
                own_day, rest = dm.group(1), dm.group(2)
            speaker, parts, tool = self._old_line(rest)
            hit = (line, own_day, speaker, parts, (-1 if rest.startswith("[❌") else 1) if tool else 0)
        cache[raw] = hit
        return hit

    def _old_line(self, rest: str) -> tuple[str, tuple[_Text, ...], bool]:
        """One previous summary line (without its day) read back: (speaker, its sentences with
        what scoring needs from them, whether it is a tool line).
        Cached by the line: most of a summary's lines come back unchanged at the next call, so
        each is parsed once."""
        hit = self._old_lines.get(rest)
        if hit is not None:
            return hit
        if len(self._old_lines) > _CACHE_LIMIT:
            self._old_lines.clear()
        tm = _TOOL_LINE_RE.match(rest)
        if tm:
            hit = ("", (self._tool_text(rest, tm.group(2)),), True)
        else:
            speaker, said = "", rest
            sm = _SPEAKER_RE.match(rest)
            if sm and _looks_like_speaker(sm.group(1)):
                speaker, said = sm.group(1), sm.group(2)
            hit = (speaker, tuple(map(self._carried, map(shorten, split_sentences(said)))), False)
        self._old_lines[rest] = hit
        return hit

    def _pool(self, request: SummaryRequest, new: _Span, old_text: str, speakers: set[str],
              counts: Counts) -> tuple[_Pool, float]:
        """Candidates from the previous text and the span, weighted; and the span's end position."""
        prior = self._old_pieces(old_text) if old_text else _Old([], frozenset(), set(), [], {}, {})
        old = prior.pieces
        if prior.speakers:
            speakers = speakers | prior.speakers
        n_old = (old[-1].group + 1) if old else 0
        covered = request.previous.messages_covered if request.previous is not None else 0
        p0 = float(max(covered, n_old))
        new_days = new.day_runs
        days = prior.days.union(new_days)
        # conversation order: by day where lines have one (an append-mode history is in the order
        # messages were dropped, not said), then previous lines before the span's
        pieces_in: Sequence[_Piece] = [*old, *new.pieces]
        rank = prior.rank
        if len(days) > 1:
            ordinal = self._ordinals
            order = list(map(ordinal.__getitem__, prior.day_runs))
            order += map(ordinal.__getitem__, new_days)
            if any(a > b for a, b in pairwise(order)):
                pieces_in = sorted(pieces_in, key=lambda p: (ordinal[p.day], p.group < 0, abs(p.group)))
                rank = {}
                for p in pieces_in:
                    if p.group >= 0 and p.group not in rank:
                        rank[p.group] = len(rank)
        days.discard("")
        per_line = len(days) > 1
        count = self.counter.count
        header_cost = 0 if per_line or not days else count(f"[{min(days)}]") + 1
        participants = _participant_keys(speakers)
        must_keep = [f for f in request.must_keep if f]
        pieces, _ = _distinct(pieces_in, self._norm)
        texts = [p.text for p in pieces]
        weights = self._weights(texts, counts, participants)
        known_pos = counts.positions.get
        groups = [p.group for p in pieces]
        pos = [p0 - g - 0.5 if g < 0 else (known if (known := known_pos(t.body)) is not None
                                          else (rank[g] + 0.5) * p0 / n_old)
               for g, t in zip(groups, texts)]
        # a line's prefix ("[8 May 2023] Caroline: ") costs the same for every piece that shares it
        prefix_cost = self._prefix_costs
        if prefix_cost.counter is not self.counter or len(prefix_cost) > _CACHE_LIMIT:
            prefix_cost = self._prefix_costs = _PrefixCosts(self.counter)
        prefixes = zip([p.day for p in pieces] if per_line else repeat("", len(pieces)), [p.speaker for p in pieces])
        join = [t.cost for t in texts]
        cost = list(map(add, join, map(prefix_cost.__getitem__, prefixes)))
        bonus = [p.bonus for p in pieces]
        if must_keep:
            bonus = [b + MUST_KEEP_BONUS * sum(1 for f in must_keep if f in t.body) for b, t in zip(bonus, texts)]
        cols = Columns([t.keys for t in texts], weights, cost, join, groups, pos, bonus,
                       [TOOL_PRIORITY if p.tool else 1.0 for p in pieces])
        return _Pool(pieces, cols, header_cost, prior.lines), p0 + len(request.messages)

    def _norm(self, body: str) -> str:
        """`_norm` of a candidate's body, cached: the same sentences meet again at every call."""
        hit = self._norms.get(body)
        if hit is None:
            if len(self._norms) > _CACHE_LIMIT:
                self._norms.clear()
            hit = self._norms[body] = _norm(body)
        return hit

    @staticmethod
    def _weights(texts: Sequence[_Text], counts: Counts,
                 participants: tuple[set[str], set[str]]) -> list[tuple[float, ...]]:
        """Each candidate's key weights: ``w × sentence factor × the key's factor``, as a word
        or as a name/number/date.

        Words weigh by how specific they are to the conversation (inverse document frequency);
        names, numbers and dates keep their weight, gain a little when they recur and lose some
        when they are everywhere (boilerplate paths, tool names). A participant's own name
        counts as a common word ("Thanks, Caroline!" says nothing about Caroline).

        Both factors depend on a key only through its document frequency (`Counts.factor_table`):
        each candidate's frequencies are looked up (a name's as its code ``~d``), the factor of
        each distinct code is computed when first asked, and the weights are products of
        lookups, in C. The factors are for the conversation's size rounded down (`table_size`):
        the table, kept with the statistics, then serves many summaries in a row, and only the
        frequencies it has not met yet cost a computation.
        A candidate holding a participant's name is weighed key by key (`_key_weights`).
        """
        df = counts.df.__getitem__  # 0 for a key no sentence holds (a Counter)
        table = counts.factor_table(rounded=True)
        factor = table.__getitem__
        weights = [tuple(map(mul, t.scaled, map(factor, map(xor, t.signs, map(df, t.keys))))) if t.signs
                   else tuple(map(mul, t.scaled, map(factor, map(df, t.keys)))) for t in texts]
        full, short = participants
        if full or short:
            named = full | short
            for i, t in enumerate(texts):
                if not named.isdisjoint(t.keys):
                    weights[i] = ExtractiveSummarizer._key_weights(t, counts, participants, table)
        return weights

    @staticmethod
    def _key_weights(t: _Text, counts: Counts, participants: tuple[set[str], set[str]],
                     table: FactorTable) -> tuple[float, ...]:
        """The weights of one candidate that holds a participant's name, key by key: the
        participant's full name weighs as a common word, and a short form of it written as a
        name ("Mel" for Melanie) as a common word too. `table`: the summary's factor table
        (shared by every candidate, so no factor is computed twice)."""
        full, short = participants
        keys = t.keys
        word, name = counts.factors(keys, table=table)
        low = salience.W_COMMON / salience.W_NAME
        for k in keys:
            if k in full:
                spec = word[k]
                word[k] = salience.W_COMMON * spec
                name[k] = low * spec
            elif k in short:
                name[k] = low * word[k]
        specific = _SPECIFIC
        return tuple([s * (name[k] if w >= specific else word[k]) for k, w, s in zip(keys, t.feat[1], t.scaled)])

    # -- selection and rendering -----------------------------------------------------------

    def _choose(self, pool: _Pool, budget: int, span_end: float) -> tuple[list[int], str]:
        """The kept candidates and their rendered text."""
        room = budget - pool.header_cost
        chosen = list(select_columns(pool.cands, room, span_end=span_end).chosen)
        text = self._render(pool, chosen)
        # a counter that is not additive over lines (a real BPE) may still overshoot: drop the
        # least valuable line until the rendered text fits
        while chosen and self.counter.count(text) > budget:
            worst = min(chosen, key=lambda i: (sum(pool.cands.weights[i]) / pool.cands.cost[i], -i))
            chosen.remove(worst)
            text = self._render(pool, chosen)
        return chosen, text

    def _render(self, pool: _Pool, chosen: Sequence[int]) -> str:
        pieces = pool.pieces
        days = {pieces[i].day for i in chosen}
        days.discard("")
        per_line = len(days) > 1
        lines: list[str] = []
        header_done = False
        last_group: int | None = None
        for i in chosen:
            p = pieces[i]
            if p.group == last_group and lines:
                lines[-1] += " " + p.text.body
                continue
            last_group = p.group
            if not per_line and p.day and not header_done:
                lines.append(f"[{p.day}]")
                header_done = True
            prefix = f"[{p.day}] " if per_line and p.day else ""
            lines.append(prefix + (f"{p.speaker}: " if p.speaker else "") + p.text.body)
        return "\n".join(lines)

    def _dropped(self, pool: _Pool, chosen: Sequence[int]) -> list[str]:
        """The previous summary's lines none of whose sentences survived, in order."""
        kept = {pool.pieces[i].group for i in chosen}
        return [line for group, line in pool.previous_lines.items() if group not in kept]

    def _summary(self, request: SummaryRequest, new: _Span, old_text: str, speakers: set[str],
                 counts: Counts, budget: int,
                 header: str = "") -> tuple[str, list[str], dict[str, Any], dict[str, float]]:
        """Select and render; returns (text, notes, meta, position of each kept sentence)."""
        pool, span_end = self._pool(request, new, old_text, speakers, counts)
        room = budget - (self.counter.count(header) + 1 if header else 0)
        chosen, text = self._choose(pool, room, span_end) if room > 0 else ([], "")
        if header:
            text = f"{header}\n{text}" if text else header
        dropped = self._dropped(pool, chosen)
        n_old = len(pool.previous_lines)
        notes: list[str] = []
        if len(chosen) < len(pool.pieces):
            notes.append(f"kept {len(chosen)} of {len(pool.pieces)} candidate sentences within {budget} tokens")
        if dropped:
            shown = "; ".join(d if len(d) <= 90 else d[:89] + "…" for d in dropped[:MAX_DROPPED_IN_NOTE])
            more = f" (+{len(dropped) - MAX_DROPPED_IN_NOTE} more)" if len(dropped) > MAX_DROPPED_IN_NOTE else ""
            notes.append(f"dropped {len(dropped)} earlier summary line(s): {shown}{more}")
        meta = {"messages": len(request.messages), "candidates": len(pool.pieces), "kept": len(chosen),
                "previous_lines": n_old, "dropped": len(dropped), "dropped_lines": list(dropped)}
        return text, notes, meta, {pool.pieces[i].text.body: pool.cands.pos[i] for i in chosen}

    # -- merge modes -----------------------------------------------------------------------

    def _select(self, request: SummaryRequest, new: _Span, speakers: set[str], counts: Counts,
                budget: int) -> tuple[SummaryDraft, dict[str, float]]:
        prev = request.previous.text.strip() if request.previous is not None else ""
        text, notes, meta, positions = self._summary(request, new, prev, speakers, counts, budget)
        if not text:
            text = f"[{len(request.messages)} messages with no extractable content]"
            notes.append("no salient sentences found")
        return self._draft(text, notes, meta, positions)

    def _append(self, request: SummaryRequest, new: _Span, speakers: set[str], counts: Counts,
                budget: int) -> tuple[SummaryDraft, dict[str, float]]:
        """Seed 002's versioned history: previous text + ``[Update N]`` + a block for the span.

        Seed 002 condensed at 2 × maxSummaryTokens and kept only the newest block. Here the
        engine shows at most `budget` tokens of a summary and cuts the rest, which would hide
        exactly the newest updates, so the history is condensed before it passes the budget:
        the best lines of the whole history (previous text and span) are re-selected into
        `CONDENSED_SHARE` of it, which leaves room for the next updates.
        """
        n = len(request.messages)
        header = f"--- Summarized Context ({n} items) ---"
        block_budget = max(1, budget - int(budget * CONDENSED_SHARE))
        notes: list[str] = []
        meta: dict[str, Any] = {"messages": n}
        positions: dict[str, float] = {}
        if self.conversational:
            block, notes, meta, positions = self._summary(request, new, "", speakers, counts, block_budget,
                                                          header=header)
        else:
            block = summarize_dropped(request.messages)
        previous = request.previous
        if previous is None or not previous.text.strip():
            if self.counter.count(block) <= budget:
                return self._draft(block, notes, meta, positions)
            previous_text = ""
            update = 1
        else:
            previous_text = previous.text.strip()
            update = previous.seq + 2
            combined = f"{previous_text}\n\n[Update {update}]\n{block}"
            if self.counter.count(combined) <= budget:
                return self._draft(combined, notes, meta, {**counts.positions, **positions})
        target = max(1, int(budget * CONDENSED_SHARE))
        text, notes, meta, positions = self._summary(request, new, previous_text, speakers, counts, target,
                                                     header=CONDENSED_HEADER)
        notes.insert(0, f"history condensed at update {update}: the best lines of the whole history were "
                        f"re-selected into {target} of {budget} tokens")
        return self._draft(text, notes, meta, positions)

    def _draft(self, text: str, notes: list[str], meta: dict[str, Any],
               positions: dict[str, float]) -> tuple[SummaryDraft, dict[str, float]]:
        """The draft of `text`, and `positions` (where each kept sentence was said). They are
        also saved in the draft's meta (`POSITIONS_META`), in the order the text's sentences
        read back: the one part of the statistics a restarted summarizer cannot count again
        (`_rebuilt`, `_saved_positions`)."""
        get = positions.get
        pieces = self._old_pieces(text.strip()).pieces
        meta[POSITIONS_META] = b64encode(array("d", [get(p.text.body, _NAN) for p in pieces]).tobytes()).decode()
        return SummaryDraft(text=text, model="extractive", prompt_id=f"extractive/{self.merge}",
                            usage=Usage(), notes=tuple(notes), meta=meta), positions
