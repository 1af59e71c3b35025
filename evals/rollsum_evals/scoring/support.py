"""Does a context *support* a probe's answer?

Containment ("the answer's words occur somewhere in the context") is matched by a bag of frequent
words and by one-word answers that happen to occur in an unrelated sentence. *Support* asks for
more, the way a reader would check it:

1. **The answer is stated.** The answer is split into the items it lists ("pottery, camping and
   swimming" is three items; a date is one item), each reduced to its content words (stemmed,
   stop words and hedges such as "likely" or "yes" removed, dates put in one canonical form so
   "7 May 2023", "May 7, 2023" and "2023-05-07" are the same token). An item is present where
   its words occur close together (all of them for items of up to three words, two thirds of
   them for longer ones, within a span of about twice the item's length). A single long answer
   joined by "and" or commas needs at least half of each of its parts (`Claim.parts`, v6):
   two thirds of the words taken from one half is half the answer.
2. **It is stated about what was asked.** Near the item (within `WINDOW` words, in the same
   context unit: one message, or one line of a summary) there must be words of the question
   that are not part of the answer (*anchors*). A single-word answer needs two anchors that are
   not names or light words ("go", "thing", "like"), or every such anchor the question has; a
   longer answer needs one; an item of a list needs any anchor, names included, because every
   item of the list must hold at once. The speaker of a message (its ``name``, or the
   ``Name:`` that starts a summary line) counts as a word of that unit. An item holding a date
   needs two strong anchors (or every one the question has) like a common word (v6): with
   times shown every unit carries a date, so a line sharing one topic word with the question
   ("[11 May 2023] Dancing is like second nature" for "When did Jon host a dance
   competition?") dates the line, not the event. A question that names a time ("… in July
   2023?") asks what happened then: one of its dates must be among the anchors (`_when_ok`,
   v6; a full date near the answer states its month).
3. **It is a statement.** The words between the answer and its anchor must contain a function
   word (or the unit must be code-like: paths, assignments, tool output). A bag of keywords
   links nothing.

4. **It is about the person asked about, and not negated** (v4). When the question names a
   speaker (or "the user" / "the assistant"), the unit must be spoken by that person or name
   them (`attributed`; a name only used to address someone, "Thanks, Melanie!", does not name
   them: `named`, v5); when the evidence was all said by one person, a summary line or clipped
   text spoken by someone else, or naming only others, does not state it (`by_source`, v5);
   in a two-person chat "you" in a unit without "I"/"we" is the other person (`addressed`,
   v6), except when the question asks what someone said (`SPEECH`): words addressed to
   them are not their words, and then verbatim messages too must be attributed to the
   evidence's speaker (`evidence.SupportIndex.at`);
   a negation cue before the answer or its anchor within their sentence
   kills the support (`NEGATION`, `clauses(scope=True)`); and the clauses from the anchor to
   the answer must hold a `LINK` word (a list of entities glued by commas or "and" states
   nothing).

Answers with no content words left ("Yes", "Likely no") cannot be checked by text and are
*not checkable*: the matcher never supports them (answer_retention counts them through their
evidence, `rollsum_evals.scoring.answerability`). Method, agreement with hand judgements and
blind spots: docs/scoring.md.

Over ~400 lines because the rules above are one judgement: normalisation (dates, numbers),
the claim, the units, and the per-occurrence checks (anchor, statement, attribution, negation)
share the prepared word arrays of a unit; split apart, each part would re-derive them and the
unit-by-unit form (`unit_strengths`, `holds`) that the scorer's index relies on would no longer
sit next to the rule it must equal.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

WINDOW = 20
"""How far (in words) an anchor may be from the answer in the same unit."""

# -- normalisation ------------------------------------------------------------------------------

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_MONTHS: dict[str, int] = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
_MONTHS.update({m[:3]: i for i, m in enumerate(_MONTH_NAMES, 1)})
_MONTHS["sept"] = 9
_MON = r"(january|february|march|april|may|june|july|august|september|october|november|december" \
       r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_ISO = re.compile(r"\b(\d{4})-(\d\d)-(\d\d)\b")
_DATE_DMY = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b")
_DATE_MDY = re.compile(rf"\b{_MON}\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})\b")
_DATE_MY = re.compile(rf"\b{_MON},?\s+(\d{{4}})\b")
_DATE_MD = re.compile(rf"\b{_MON}\s+(\d{{1,2}}){_ORD}\b")
_DATE_DM = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON}\b")
_NUM_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")
_WORD = re.compile(r"[a-z0-9]+")
_CODE_LIKE = re.compile(r"[=/_(){}<>]|\w\.\w|\w:\d")
_PROPER = re.compile(r"(?<=[a-z0-9,;:'\"] )([A-Z][a-z]*[A-Z0-9]?[A-Za-z0-9]*)")
_SPEAKER_PREFIX = re.compile(r"^\s*(\[[^\]\n]{1,40}\]\s*)?([A-Z][\w'’ .-]{0,40}?):\s")
_LIST_SPLIT = re.compile(r"\s*(?:,|;|&|\band\b)\s*")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")

_NUMBER_WORDS: dict[str, str] = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100"})

STOP = frozenset("""
a an the and or but if of to in on at by for with from into onto about as than then so nor
is are was were be been being am do does did done doing have has had having
i me my mine myself you your yours yourself he him his himself she her hers herself it its itself
we us our ours they them their theirs this that these those there here
what which who whom whose when where why how
not no yes just also very really too quite can could would should will shall might must may
some any all each every other another such own same more most much many few one ones
up down out over under again further once only both either neither off while during before after
above below between through until s t d ll m re ve
oh ok okay hey hi hmm yeah yep wow lol
""".split())
"""Function words: never content, never anchors; their presence is what makes text a statement."""

WEAK = frozenset("""
go goes went gone going get gets got getting make makes made making take takes took taking
like likes liked would could kind type sort thing things something anything someone somebody
people person time times day days week weeks month months year years ago new recent recently
first last ever still think thinks thought feel feels felt say says said tell told want wants wanted
way lot lots current currently
""".split())
"""Light words: content words, but too common in questions to tie an answer to one fact."""

LINK = STOP - frozenset("and or nor the a an of yes no not oh ok okay hey hi hmm yeah yep wow lol".split())
"""Function words that make a clause a statement: a list of entities glued by commas, "and" or
"of" (titles: "The Wheel of Time") has none of them."""

NEGATION = frozenset("not never no nor neither cannot false untrue nobody nothing none".split())
"""Cues that negate the clause after them (``n't`` is read from the split contraction)."""

HEDGES = frozenset("likely unlikely probably maybe perhaps possibly yes no not".split())
ROLE_NAMES = frozenset({"user", "assistant", "system", "tool"})
PEOPLE_ROLES = frozenset({"user", "assistant"})
"""Roles that are parties to a chat (a question about "the user's" code is about one of them;
"alarm system" is not about the system role)."""


def _canon_dates(s: str) -> str:
    """Dates as single tokens: ``d20230507`` (day), ``m202305`` (month), ``md0507`` (no year)."""
    s = _DATE_ISO.sub(lambda m: f" d{m[1]}{m[2]}{m[3]} ", s)
    s = _DATE_DMY.sub(lambda m: f" d{m[3]}{_MONTHS[m[2]]:02d}{int(m[1]):02d} ", s)
    s = _DATE_MDY.sub(lambda m: f" d{m[3]}{_MONTHS[m[1]]:02d}{int(m[2]):02d} ", s)
    s = _DATE_MY.sub(lambda m: f" m{m[2]}{_MONTHS[m[1]]:02d} ", s)
    s = _DATE_MD.sub(lambda m: f" md{_MONTHS[m[1]]:02d}{int(m[2]):02d} ", s)
    return _DATE_DM.sub(lambda m: f" md{_MONTHS[m[2]]:02d}{int(m[1]):02d} ", s)


def _is_date_token(w: str) -> bool:
    return w[0] in "dm" and w[-1].isdigit() and w.lstrip("dm").isdigit()


@lru_cache(maxsize=1)
def _stemmer() -> object:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=262_144)
def stem(word: str) -> str:
    if word[0].isdigit() or _is_date_token(word):
        return word
    out: str = _stemmer().stem(word)  # type: ignore[attr-defined]
    return out


def _normalised(text: str) -> str:
    s = _NUM_COMMA.sub("", text.lower()).replace("’", "'")
    s = re.sub(r"'s\b", "", s)
    return _canon_dates(s)


@lru_cache(maxsize=131_072)
def words(text: str) -> tuple[str, ...]:
    """Lower-cased words with dates canonical and small number words as digits."""
    return tuple(_NUMBER_WORDS.get(w, w) for w in _WORD.findall(_normalised(text)))


_CLAUSE_BREAK = re.compile(r"[,;:.!?\n]")
_SCOPE_BREAK = re.compile(r"[.!?](?=\s|$)|[;\n]")
_SCOPE_WORDS = frozenset({"but", "however", "although", "though"})
_SENTENCE_BREAK = re.compile(r"[.!?](?=\s|$)|[;\n\]]")
"""Ends a sentence for `named` (a ``]`` too: "[7 May 2023] Hey Caroline, ..." starts after it)."""


def clauses(text: str, *, scope: bool = False) -> tuple[int, ...]:
    """For each word of `words(text)`, the index of the clause it is in: punctuation (``, ; : .
    ! ?`` and line breaks) separates clauses; brackets and parentheses do not (a summary's
    "yesterday (7 May 2023)" is one clause). With `scope`: the stretch a negation reaches
    instead — a sentence (a ``.`` that ends one, ``!``, ``?``, ``;``, a line break), cut again
    before "but", "however", "although", "though" ("I'm not sure, but I went" is not negated;
    "It is not true that heads up: the window is on 26 August" is)."""
    s = _normalised(text)
    out: list[int] = []
    k, prev = 0, 0
    pattern = _SCOPE_BREAK if scope else _CLAUSE_BREAK
    for m in _WORD.finditer(s):
        if out and (pattern.search(s, prev, m.start()) or (scope and m[0] in _SCOPE_WORDS)):
            k += 1
        out.append(k)
        prev = m.end()
    return tuple(out)


def _sentences(text: str) -> tuple[int, ...]:
    """For each word of `words(text)`, the index of its sentence (`_SENTENCE_BREAK`)."""
    s = _normalised(text)
    out: list[int] = []
    k, prev = 0, 0
    for m in _WORD.finditer(s):
        if out and _SENTENCE_BREAK.search(s, prev, m.start()):
            k += 1
        out.append(k)
        prev = m.end()
    return tuple(out)


def _starts(ids: tuple[int, ...]) -> tuple[int, ...]:
    """Per word: the first word of its segment (`ids` from `clauses`)."""
    lo: list[int] = []
    for i, k in enumerate(ids):
        lo.append(i if i == 0 or ids[i - 1] != k else lo[-1])
    return tuple(lo)


def content(text: str, *, drop: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Stems of the content words of `text`, in order, without repeats."""
    return tuple(dict.fromkeys(stem(w) for w in words(text) if w not in STOP and w not in drop))


def _aliases(token: str) -> tuple[str, ...]:
    """A full date also states its month and its month-day."""
    if token.startswith("d") and len(token) == 9 and token[1:].isdigit():
        return (token, "m" + token[1:7], "md" + token[5:])
    return (token,)


# -- the answer ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """What a context must state for a probe to count as retained."""

    items: tuple[tuple[str, ...], ...]
    """Content stems of each answer item; every item must be supported."""
    keywords: frozenset[str]
    """Content stems of the question that are not part of the answer."""
    strong: frozenset[str]
    """Keywords that are neither names nor light words."""
    rare: frozenset[str] = frozenset()
    """Answer words that few messages of the conversation use: unlikely to occur by chance."""
    persons: frozenset[str] = frozenset()
    """Stems of the people the question is about (conversation speakers' names, "user",
    "assistant" written in the question): a unit supports it only when one of them speaks it or
    is named in it."""
    people: frozenset[str] = frozenset()
    """Stems of everyone who can be named (speakers' names, role names): a unit with no speaker
    that names only others is about them."""
    source: frozenset[str] = frozenset()
    """Stems of the one person who said every evidence message (empty: several people, the
    assistant, a tool, or no evidence). Set for what is not verbatim (`by_source`), and for
    every unit when the question asks what someone said (`speech`)."""
    parts: tuple[tuple[str, ...], ...] = ()
    """A single long answer joined by "and" or commas ("try flavored seltzer water and dark
    chocolate with high cocoa content"): the content stems of each part; at least half of every
    part must be stated (v6), not two thirds of the whole from one part."""
    speech: bool = False
    """The question asks what someone said, told, suggested, … (`SPEECH`): their words, so only
    a unit they speak or one that reports them states it — not one addressed to them (v6)."""
    parties: tuple[frozenset[str], ...] = ()
    """The stems of each of the chat's two parties (its two named speakers, else user and
    assistant); empty for any other number. In a two-party chat "you" is the other party."""

    @property
    def is_list(self) -> bool:
        return len(self.items) > 1


SPEECH = frozenset("""say says said saying tell tells told telling mention mentions mentioned suggest
suggests suggested suggestion suggestions recommend recommends recommended recommendation
recommendations advise advises advised advice tip tips ask asks asked reply replied respond responded
describe describes described share shares shared offer offers offered""".split())
"""Words by which a question asks for what someone *said* ("What did Jon say about …", "What advice
did Evan give …"): a statement addressed to that person is not their words."""


RARE_MESSAGES = 3
"""A word used by at most this many messages of a conversation is rare there."""


def document_frequency(texts: Iterable[str]) -> collections.Counter[str]:
    """In how many texts each content stem occurs (for `claim`'s notion of a rare word)."""
    df: collections.Counter[str] = collections.Counter()
    for t in texts:
        df.update({stem(w) for w in words(t) if w not in STOP})
    return df


def claim(question: str, answer: str, names: Iterable[str] = (),
          frequency: Mapping[str, int] | None = None) -> Claim | None:
    """The claim a probe makes, or None when its answer has nothing a text can state.

    `frequency` (from `document_frequency` over the conversation's messages) lets a rare answer
    word stand with one strong anchor; without it every single word needs two."""
    canon = _canon_dates(_NUM_COMMA.sub("", answer.lower()))
    parts = [p for p in _LIST_SPLIT.split(canon) if p.strip()]
    short = all(len(p.split()) <= 4 for p in parts)
    raw_items = parts if len(parts) > 1 and short else [canon]
    items = [c for c in (content(p, drop=HEDGES) for p in raw_items) if c]
    if not items:
        return None
    joined = () if short else tuple(c for c in (content(p, drop=HEDGES) for p in parts) if c)
    in_answer = {t for it in items for t in it}
    name_stems = {stem(w) for n in names for w in words(n)} | {stem(r) for r in ROLE_NAMES}
    weak = {stem(w) for w in WEAK}
    q = [t for t in content(question) if t not in in_answer]
    rare = frozenset(t for t in in_answer if frequency is not None and 0 < frequency.get(t, 0) <= RARE_MESSAGES)
    people = {stem(w) for n in names for w in words(n)} | {stem(r) for r in PEOPLE_ROLES}
    persons = frozenset(t for t in content(question) if t in people and t not in in_answer)
    named_parties = [frozenset(stem(w) for w in words(n)) for n in dict.fromkeys(names)]
    parties = named_parties if named_parties else [frozenset({"user"}), frozenset({"assistant"})]
    return Claim(tuple(items), frozenset(q), frozenset(t for t in q if t not in weak and t not in name_stems), rare,
                 persons, frozenset(people), parts=joined if len(joined) > 1 else (),
                 speech=any(w in SPEECH for w in words(question)),
                 parties=tuple(parties) if len(parties) == 2 else ())


# -- context units ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    """One piece of context that states things on its own: a message, or a line of a summary."""

    text: str
    speaker: str = ""


@dataclass(frozen=True, slots=True)
class _Prepared:
    stems: tuple[str, ...]
    function: tuple[bool, ...]
    positions: dict[str, tuple[int, ...]]
    code_like: bool
    proper: frozenset[str]
    """Stems written capitalised inside a sentence (names, places, products): rarely there by chance."""
    clause_lo: tuple[int, ...] = ()
    """Per word: the first word of its clause (`clauses`)."""
    clause_hi: tuple[int, ...] = ()
    """Per word: the last word of its clause."""
    link: tuple[bool, ...] = ()
    """Per word: a `LINK` word."""
    negation: tuple[bool, ...] = ()
    """Per word: a `NEGATION` cue (or the ``t`` of a split ``n't``)."""
    scope_lo: tuple[int, ...] = ()
    """Per word: the first word a negation before it could reach from (`clauses` with scope)."""
    sentence: tuple[int, ...] = ()
    """Per word: its sentence (`_sentences`)."""


@lru_cache(maxsize=65_536)
def _prepare(text: str) -> _Prepared:
    ws = words(text)
    stems = tuple(stem(w) for w in ws)
    positions: dict[str, list[int]] = {}
    for i, s in enumerate(stems):
        for a in _aliases(s):
            positions.setdefault(a, []).append(i)
    proper = frozenset(stem(w.lower()) for w in _PROPER.findall(text))
    cl = clauses(text)
    lo = _starts(cl)
    hi = [0] * len(cl)
    for i in range(len(cl) - 1, -1, -1):
        hi[i] = i if i == len(cl) - 1 or cl[i + 1] != cl[i] else hi[i + 1]
    neg = tuple(w in NEGATION or (w == "t" and i > 0 and ws[i - 1].endswith("n")) for i, w in enumerate(ws))
    return _Prepared(stems, tuple(w in STOP for w in ws), {k: tuple(v) for k, v in positions.items()},
                     bool(_CODE_LIKE.search(text)), proper, lo, tuple(hi),
                     tuple(w in LINK for w in ws), neg, _starts(clauses(text, scope=True)), _sentences(text))


def summary_units(text: str) -> list[Unit]:
    """A summary's lines as units (a ``Name:`` prefix is the line's speaker)."""
    out: list[Unit] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _SPEAKER_PREFIX.match(line)  # "Name: ..." or "[8 May 2023] Name: ..." (the dated form)
        out.append(Unit((m.group(1) or "") + line[m.end():], m.group(2)) if m else Unit(line))
    return out


def _need(n: int) -> int:
    return n if n <= 3 else -(-2 * n // 3)


def _linked(p: _Prepared, a: int, b: int) -> tuple[bool, bool]:
    """(stated, negated) for the answer at word `b` (its start) and an anchor at word `a` (or
    the answer's own clause when `a` == `b`): *stated* when the clauses from the earlier to the
    later hold a `LINK` word (a list of entities glued by commas or "and" holds none), or the
    unit is code-like; *negated* when a `NEGATION` cue stands before the later of the two within
    the negation's reach of the earlier (its sentence, up to a "but": `clauses` with scope):
    "It is not true that I went yesterday"."""
    lo, hi = p.clause_lo[min(a, b)], p.clause_hi[max(a, b)]
    stated = p.code_like or any(p.link[lo:hi + 1])
    return stated, any(p.negation[p.scope_lo[min(a, b)]:max(a, b)])


ADDRESS = tuple("""hey hi hello dear oh ah thanks thank you congrats
congratulations wow woah whoa aw aww yes yeah no ok okay well sorry bye goodbye good morning night great awesome
cool nice haha lol omg gosh""".split())
"""Words that go with a name used to address someone ("Hey Caroline", "Thanks, Melanie")."""


@lru_cache(maxsize=1)
def address_words() -> frozenset[str]:
    """`ADDRESS` stemmed, on first use: stemming at import pulled in nltk (~0.5 s) for every
    command importing the scorer registry, the report and compare included, which never stem."""
    return frozenset(stem(w) for w in ADDRESS)


def named(p: _Prepared, stems: Iterable[str], people: frozenset[str]) -> bool:
    """Whether the unit names one of `stems` as someone it talks *about*. A name used only to
    address someone is a vocative, not a subject: its clause holds nothing but names and
    greeting words (`address_words`), and so does everything from it to one end of its
    sentence — "Hey Caroline, ...", "Woah, Evan, that ...", "Caroline, did you ...", "Thanks,
    Melanie!". An opening run followed by "and" or another name is a list ("Jon, Gina and
    Caroline went"), not an address. `people`: every nameable stem."""
    def plain(k: int) -> bool:
        return p.stems[k] in people or p.stems[k] in address_words()

    n = len(p.stems)
    for t in stems:
        for i in p.positions.get(t, ()):
            first = next(k for k in range(i, -1, -1) if k == 0 or p.sentence[k - 1] != p.sentence[i])
            last = next(k for k in range(i, n) if k == n - 1 or p.sentence[k + 1] != p.sentence[i])
            lo, hi = max(p.clause_lo[i], first), min(p.clause_hi[i], last)
            after = hi + 1 if hi < last else None
            opening = all(plain(k) for k in range(first, hi + 1)) and (
                after is None or (p.stems[after] not in people and p.stems[after] not in ("and", "or")))
            closing = all(plain(k) for k in range(lo, last + 1))
            if not (opening or closing):
                return True
    return False


@lru_cache(maxsize=1)
def _persons_words() -> tuple[frozenset[str], frozenset[str]]:
    """Stems of the second-person and first-person pronouns."""
    return (frozenset(stem(w) for w in "you your yours yourself yourselves".split()),
            frozenset(stem(w) for w in "i me my mine myself we us our ours ourselves".split()))


def addressed(c: Claim, p: _Prepared, speaker: frozenset[str]) -> frozenset[str]:
    """Whom the unit talks about as "you": in a chat between two parties (`Claim.parties`), a unit
    one of them speaks that says "you"/"your" and nothing in the first person is about the other
    ("Mel, what made you paint it?" is about Melanie); a unit with "I" or "we" as well leaves open
    who did what, and a question about what someone *said* (`Claim.speech`) asks for their words,
    not words addressed to them (v6). Empty when nobody is."""
    if c.speech or len(c.parties) != 2 or not speaker:
        return frozenset()
    you, me = _persons_words()
    if not any(t in p.positions for t in you) or any(t in p.positions for t in me):
        return frozenset()
    a, b = c.parties
    if speaker & a and not speaker & b:
        return b
    return a if speaker & b and not speaker & a else frozenset()


def attributed(c: Claim, p: _Prepared, speaker: frozenset[str]) -> bool:
    """A unit can state something about the people the question names only when one of them
    speaks it, is named in it, or is the "you" it addresses (`addressed`; a question naming
    nobody: any unit). A unit nobody speaks (a summary line without ``Name:``) that names nobody
    cannot be attributed either way and counts; one that names only others is about them."""
    if not c.persons or c.persons & speaker or named(p, c.persons, c.people):
        return True
    if c.persons & addressed(c, p, speaker):
        return True
    return not speaker and not named(p, c.people, c.people)


def by_source(c: Claim, p: _Prepared, speaker: frozenset[str]) -> bool:
    """A unit that is not verbatim (a summary line, clipped text) states the evidence's fact only
    when it is attributed to the person who said the evidence (`Claim.source`): spoken by them,
    or naming them; a unit spoken by someone else, or nobody's unit naming only others, puts the
    fact in another mouth ("Assistant: my pickup time is 7:30" when the user said it), even when
    the question names nobody. A unit nobody speaks that names nobody still counts; one
    addressed to them as "you" counts (`addressed`)."""
    if not c.source or c.source & speaker or named(p, c.source, c.people):
        return True
    if c.source & addressed(c, p, speaker):
        return True
    return not speaker and not named(p, c.people, c.people)


def _when_ok(c: Claim, near: set[str]) -> bool:
    """A question that names a time ("… in July 2023?") asks what happened then: one of its
    dates must stand near the answer (v6)."""
    when = [t for t in c.keywords if _is_date_token(t)]
    return not when or any(t in near for t in when)


def _item_in(item: tuple[str, ...], c: Claim, p: _Prepared, speaker: frozenset[str]) -> int:
    """0: not stated here; 1: stated, anchored to the question only by a name or a light word
    (enough for one item of a list); 2: stated and anchored by a strong keyword."""
    present = [t for t in item if t in p.positions]
    need = _need(len(item))
    if not attributed(c, p, speaker) or not by_source(c, p, speaker):
        return 0
    if len(present) < need:
        return 0
    best = 0
    span_max = 2 * len(item) + 2
    parts = () if c.is_list else c.parts

    def whole(seen: set[str]) -> bool:  # every part of a joined answer at least half stated
        return all(2 * len(seen.intersection(part)) >= len(part) for part in parts)

    dated = any(_is_date_token(t) for t in item)
    occ = sorted((pos, t) for t in present for pos in p.positions[t])
    n = len(p.stems)
    for i, (start, _) in enumerate(occ):
        seen: set[str] = set()
        end = start
        for pos, t in occ[i:]:
            if pos - start > span_max:
                break
            seen.add(t)
            end = pos
            if len(seen) >= need and whole(seen):
                break
        if len(seen) < need or not whole(seen):
            continue
        lo, hi = max(0, start - WINDOW), min(n - 1, end + WINDOW)
        near: set[str] = set()
        for k in range(lo, hi + 1):
            for t in _aliases(p.stems[k]):  # a full date near the answer also states its month
                if t in c.keywords and t not in near:
                    stated, negated = _linked(p, k, start)
                    if stated and not negated:
                        near.add(t)
        if speaker & c.keywords:
            stated, negated = _linked(p, start, start)
            if stated and not negated:
                near |= speaker & c.keywords
        strong = near & c.strong
        if not near or not _when_ok(c, near):
            continue
        if len(item) == 1 and not c.is_list:
            specific = item[0][0].isdigit() or _is_date_token(item[0]) or item[0] in p.proper
            specific = specific or item[0] in c.rare
            ok = bool(strong) and (specific or len(strong) >= min(2, len(c.strong)))
        else:
            ok = bool(strong)
        if dated:  # with times shown every unit carries a date: the unit must state the event
            ok = ok and len(strong) >= min(2, len(c.strong))
        if ok:
            return 2
        best = 1
    return best


@lru_cache(maxsize=4096)
def _speaker_stems(speaker: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words(speaker)) if speaker else frozenset()


def item_support(item: tuple[str, ...], c: Claim, units: Sequence[Unit]) -> tuple[int, int] | None:
    """(index of the unit that best supports `item`, strength 1 or 2), or None.

    The first strongly anchored unit wins; otherwise the first weakly anchored one."""
    weak: tuple[int, int] | None = None
    for k, u in enumerate(units):
        p = _prepare(u.text)
        if not any(t in p.positions for t in item):
            continue
        strength = _item_in(item, c, p, _speaker_stems(u.speaker))
        if strength == 2:
            return (k, 2)
        if strength == 1 and weak is None:
            weak = (k, 1)
    return weak


def support(c: Claim, units: Sequence[Unit]) -> tuple[int, ...] | None:
    """For each item, the index of a unit that supports it; None when the context does not
    support the claim. Every item must be stated; a single answer must be strongly anchored, a
    list needs at least one strongly anchored item (the rest may lean on names)."""
    found: list[int] = []
    strong = False
    for item in c.items:
        hit = item_support(item, c, units)
        if hit is None or (hit[1] < 2 and not c.is_list):
            return None
        found.append(hit[0])
        strong = strong or hit[1] == 2
    return tuple(found) if strong else None


# -- the same rule, unit by unit ------------------------------------------------------------------
#
# `support` answers for one list of units. A scorer asks the same claim of many contexts that
# share most of their units (a message stays in the window for many turns, a summary for many
# asks), so it can remember what each unit states and combine: whether a set of units supports
# a claim depends only on the best strength each item reaches in any of them (`holds`), which
# is also why support only grows as units are added (a conversation's prefix, for instance).


def tokens(text: str) -> frozenset[str]:
    """Every token an answer item can match in `text` (stems and date aliases): a message that
    holds none of an item's tokens cannot state it."""
    return frozenset(_prepare(text).positions)


def unit_strengths(c: Claim, unit: Unit) -> tuple[int, ...]:
    """How strongly `unit` states each item of `c`: 0 (not at all), 1 (anchored only by a name or
    a light word), 2 (anchored by a strong keyword), exactly as `support` judges that unit."""
    p = _prepare(unit.text)
    speaker = _speaker_stems(unit.speaker)
    return tuple(_item_in(item, c, p, speaker) if any(t in p.positions for t in item) else 0
                 for item in c.items)


def holds(c: Claim, best: Sequence[int]) -> bool:
    """Whether units in which the items of `c` reach at best the strengths `best` support `c`:
    `support(c, units) is not None` exactly when ``holds(c, [max strength of each item over
    the units])``."""
    if not best or min(best) == 0:
        return False
    return max(best) == 2 if c.is_list else best[0] == 2
