"""Is an evidence message's statement copied into the context's other text (v7)?

answer_retention counts an ask whose evidence messages are all verbatim in the context as
retained without asking the matcher: the data says those messages hold the answer. The same
sentences copied into a summary line, or kept in a clipped message, are the same information
and count the same (*consistency*): an evidence message is *copied* when each of its
informative sentences (`informative`) stands in one non-verbatim line (`copied_in`):

- **the same words in order**: the line holds the sentence's content words in their order, all
  of them for up to three, at least two thirds of a longer one (the matcher's measure of a long
  answer item, `support._need`), and every word it shares with the question or the answer; and
  so its words with the function words (a keyword bag, an entity list or an "and"-chain has the
  content words without them), within a stretch at most twice the sentence's length. That
  is what the extractive summarizer's copy keeps (`rollsum.summarizers.extractive`): it drops the
  ``Name:`` prefix into the line's speaker, inserts dates after relative ones ("yesterday (7 May
  2023)": insertions are allowed), cuts a sentence over 280 characters at a clause, and trims a
  tail that names nothing specific (", which was really rewarding …"): the head, subject and
  verb stay. A paraphrase (an LLM summary) is not a copy; the matcher judges it;
- **by the same person**: the line is the evidence speaker's, names them, or addresses them as
  "you" (`support.by_source`); "Melanie: I'm a fan of classical" for Caroline's sentence puts it
  in another mouth;
- **with the same polarity**: the line holds no more negation cues from the matched words' reach
  (their sentence, `support.clauses` with scope) to the last of them than the sentence itself
  ("It is not true that …" is another statement);
- **with its day** when the answer is a time: the line carries the day the message was said (or
  the summary's one-day header does), as the verbatim rule asks the context to show it; and a
  sentence of the message that dates something relative to that day ("Last night was
  amazing!") must be copied too (v10, `informative`), since the day alone is not the answer.

Pure functions over `support`'s prepared word arrays; `evidence.SupportIndex.copied` applies
them to a trace's context and remembers the answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from functools import lru_cache

from rollsum.summarizers.dates import anchor_dates
from rollsum.summarizers.extractive import split_sentences
from rollsum_evals.scoring import support as sp


@lru_cache(maxsize=1)
def _weak() -> frozenset[str]:
    """`support.WEAK` stemmed, on first use (not at import: that pulled in nltk, see
    `support.address_words`)."""
    return frozenset(sp.stem(w) for w in sp.WEAK)


SLACK = 8
"""Words a copy may add inside the sentence beyond doubling it: the dates the summarizer
anchors ("yesterday (7 May 2023)", "last week (the week before 9 June 2023)")."""


def keys(question: str, answer: str, people: Iterable[str]) -> frozenset[str]:
    """The question's and answer's content stems that can tie a sentence to the ask: not names
    (every line of a chat is someone's) and not light words ("go", "time")."""
    drop = frozenset(people) | _weak()
    return frozenset(t for t in sp.content(f"{question} . {answer}", drop=sp.HEDGES) if t not in drop)


def informative(message: str, ask_keys: frozenset[str], said_on: date | None = None) -> tuple[str, ...]:
    """The sentences of an evidence message that bear on the ask: those sharing a content word
    with the question or the answer (`keys`); all of them when none does (the message is the
    evidence as a whole). Sentences without content words ("Wow!") state nothing to copy.

    `said_on`: the answer is a time and the message was said that day. Then a sentence that
    dates something relative to it ("Last night was amazing!" before "We celebrated my
    daughter's birthday …") bears on the ask too (v10), whatever its words: the day the message
    was said is not the answer, the relative date is what turns it into one, and a copy of the
    other sentence under the message's day reads one day off."""
    sentences = [s for s in split_sentences(message) if sp.content(s)]
    hit = [s for s in sentences if ask_keys & set(sp.content(s))]
    if hit and said_on is not None:  # (with no keyed sentence every sentence is asked already)
        hit += [s for s in sentences if s not in hit and anchor_dates(s, said_on)[1]]
    return tuple(hit or sentences)


def _in_order(want: tuple[str, ...], have: tuple[str, ...]) -> tuple[int, int, int]:
    """(how many of `want` occur in `have` in the same order — the longest common subsequence —,
    the first and the last position in `have` of one such alignment; -1 when none)."""
    n, m = len(want), len(have)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = dp[i], dp[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if want[i] == have[j] else max(below[j], row[j + 1])
    i = j = 0
    first = last = -1
    while i < n and j < m:
        if want[i] == have[j]:
            first = j if first < 0 else first
            last = j
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return dp[0][0], first, last


def copied_in(sentence: str, ask_keys: frozenset[str], unit: sp.Unit, c: sp.Claim) -> bool:
    """`sentence` (of an evidence message said by `c.source`) is stated by `unit` (a line that is
    not verbatim): the same content words in order, attributed to the same person, not negated
    (module docstring). `c`: a claim carrying the evidence speaker (`Claim.source`) and the
    chat's people and parties (`by_source` reads only those)."""
    want = sp.content(sentence)
    if not want:
        return False
    p = sp._prepare(unit.text)
    if any(t not in p.positions for t in want if t in ask_keys):
        return False
    n, first, last = _in_order(want, p.stems)
    if n < sp._need(len(want)):
        return False
    # a copy is the sentence, function words included: a bag or a list of its words is not
    said = sp._prepare(sentence).stems
    n, first, last = _in_order(said, p.stems)
    if n < sp._need(len(said)) or last - first + 1 > 2 * len(said) + SLACK:
        return False
    if sum(p.negation[p.scope_lo[first]:last + 1]) > sum(sp._prepare(sentence).negation):
        return False
    return sp.by_source(c, p, sp._speaker_stems(unit.speaker))


def day_token(day_text: str) -> str:
    """The canonical token of a day ("7 May 2023" -> ``d20230507``)."""
    return next(t for t in sp.words(day_text) if t.startswith("d"))
