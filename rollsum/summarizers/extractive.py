"""Offline, deterministic summaries by selection (seed 002's rule-based mode and more).

No model: tool results become seed 002's one-line form (see `tools`), and user/assistant text
is split into sentences that are scored for what a later turn is likely to ask about (names,
numbers, dates, identifiers, decisions, commitments, constraints). The best sentences that fit
the token budget are kept in their original order, each with its speaker.

Incremental merge:

- ``select`` (default): the previous summary's lines compete with the new ones and the best
  that fit ``max_tokens`` are kept. Ties go to the higher score, then to the *older* line: an
  early fact that survived so far is not displaced by an equally good newer one, which is what
  keeps first-span identifiers alive across many summaries. The result never exceeds the budget.
- ``append`` (seed 002's behaviour): previous text + ``[Update N]`` + new block; when the
  estimate passes 2 × ``max_tokens`` the history is replaced by ``[Condensed history]`` and the
  new block. It can exceed ``max_tokens`` (up to 2×) by design; the engine's share cap applies.

It is on the replay hot path (a summary every ~20 messages at ≥ 20,000 messages/s), so all
regexes are compiled once, scoring is one regex pass per sentence, and the previous summary's
line scores are cached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from rollsum.errors import ConfigError, ErrorKind, SummarizeError
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.summarizers.tools import format_tool_summary, summarize_dropped, summarize_tool_result
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, Usage

Merge = Literal["select", "append"]

MAX_SENTENCE_CHARS = 300
CONDENSED_HEADER = "[Condensed history]"
_CACHE_LIMIT = 20_000

_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_HEADER_LINE_RE = re.compile(r"^(?:\[Update \d+\]|\[Condensed history\]|--- Summarized Context .*---)$")
_SPEAKER_RE = re.compile(r"^(User|Assistant|System):\s")

# Scoring works on words, not one big regex: Python's regex engine tries every alternative at
# every position, which cost ~150 µs per sentence; set look-ups on the split words cost ~5 µs.
_PUNCT = str.maketrans({c: " " for c in ".,;:!?()[]{}\"*`"})
_DATE_WORDS = frozenset([
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "tomorrow", "tonight",
    "yesterday"
])
_MONTHS = frozenset([
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december"
])
_DECISION = frozenset([
    "decided", "decision", "decide", "agreed", "chose", "chosen", "settled", "picked", "conclusion",
    "we'll"
])
_COMMIT = frozenset([
    "deadline", "due", "todo", "to-do", "promise", "remember", "remind", "i'll", "reminder"
])
_CONSTRAINT = frozenset([
    "must", "mustn't", "never", "always", "don't", "dont", "can't", "cannot", "allergic", "allergy",
    "prefer", "prefers", "avoid", "only", "required"
])
_DIGIT_RE = re.compile(r"\d")
_ISO_DATE_RE = re.compile(r"\d{4}-\d\d-\d\d")
_IDENT_RE = re.compile(r"[a-z][A-Z]|\w\.[a-z]{2,4}\b|[A-Z]{2,}-\d")
_NAME_RE = re.compile(r"[a-z,] [A-Z][a-z]")
_W_DATE, _W_IDENT, _W_NUMBER, _W_DECISION, _W_COMMIT, _W_CONSTRAINT, _W_NAME = 3.0, 3.0, 2.0, 3.0, 3.0, 3.0, 2.0
TOOL_SCORE = 2.5
TOOL_ERROR_SCORE = 4.0
USER_BONUS = 0.5


def score_sentence(sentence: str, *, user: bool = False) -> float:
    """How likely a sentence is to carry something a later turn will ask about (0 = filler).

    Each kind of signal counts once: date, identifier, number, decision, commitment,
    constraint, proper name.
    """
    low = sentence.lower()
    words = set(low.translate(_PUNCT).split())
    s = 0.0
    if _DIGIT_RE.search(sentence):
        s += _W_NUMBER
        if not words.isdisjoint(_MONTHS) or ("-" in sentence and _ISO_DATE_RE.search(sentence)):
            s += _W_DATE
    if not words.isdisjoint(_DATE_WORDS):
        s += _W_DATE
    if not words.isdisjoint(_DECISION) or "let's go with" in low or "going with" in low or "we will" in low:
        s += _W_DECISION
    if not words.isdisjoint(_COMMIT) or "i will" in low or "follow up" in low or "need to" in low:
        s += _W_COMMIT
    if not words.isdisjoint(_CONSTRAINT) or "do not" in low:
        s += _W_CONSTRAINT
    if "_" in sentence or "/" in sentence or _IDENT_RE.search(sentence):
        s += _W_IDENT
    if _NAME_RE.search(sentence):
        s += _W_NAME
    if len(words) >= 5:
        s += 1.0
    elif s == 0.0:
        return 0.0
    if user:
        s += USER_BONUS
    return s


class ExtractiveSummarizer:
    """Rule-based summary within a token budget; see the module docstring for the merge modes."""

    name = "extractive"

    def __init__(self, *, max_tokens: int = 500, counter: TokenCounter | None = None,
                 merge: Merge = "select", conversational: bool = True) -> None:
        if max_tokens <= 0:
            raise ConfigError(f"max_tokens: expected a positive integer, got {max_tokens}")
        if merge not in ("select", "append"):
            raise ConfigError(f"merge: expected 'select' or 'append', got {merge!r}")
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter or HeuristicCounter()
        self.merge: Merge = merge
        self.conversational = conversational
        self._scores: dict[str, float] = {}

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "merge": self.merge, "conversational": self.conversational}

    def __repr__(self) -> str:
        return (f"ExtractiveSummarizer(max_tokens={self.max_tokens}, merge={self.merge!r}, "
                f"conversational={self.conversational})")

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        if not request.messages:
            raise SummarizeError("nothing to summarize: the span is empty", transport=False,
                                 kind=ErrorKind.EMPTY)
        budget = min(self.max_tokens, request.max_tokens) if request.max_tokens > 0 else self.max_tokens
        if self.merge == "append":
            return self._append(request, budget)
        return self._select(request, budget)

    # -- candidates ------------------------------------------------------------------------

    def _new_candidates(self, messages: Sequence[Message]) -> list[tuple[float, str]]:
        out: list[tuple[float, str]] = []
        conversational = self.conversational
        for m in messages:
            role = m.role
            if role == "tool" or not conversational:
                ts = summarize_tool_result(m)
                out.append((TOOL_ERROR_SCORE if ts.status == "error" else TOOL_SCORE,
                            format_tool_summary(ts)))
                continue
            prefix = "User: " if role == "user" else ("Assistant: " if role == "assistant" else "System: ")
            user = role == "user"
            for sentence in _SPLIT_RE.split(m.content):
                sentence = sentence.strip()
                if not sentence:
                    continue
                if len(sentence) > MAX_SENTENCE_CHARS:
                    sentence = sentence[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"
                s = score_sentence(sentence, user=user)
                if s > 0:
                    out.append((s, prefix + sentence))
        return out

    def _previous_candidates(self, text: str) -> list[tuple[float, str]]:
        out: list[tuple[float, str]] = []
        cache = self._scores
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        for line in text.split("\n"):
            line = line.strip()
            if not line or _HEADER_LINE_RE.match(line):
                continue
            pieces = [line] if len(line) <= MAX_SENTENCE_CHARS else [
                p.strip()[:MAX_SENTENCE_CHARS] for p in _SPLIT_RE.split(line) if p.strip()]
            for piece in pieces:
                s = cache.get(piece)
                if s is None:
                    if piece.startswith("["):
                        s = TOOL_ERROR_SCORE if piece.startswith("[❌") else TOOL_SCORE
                    else:
                        sp = _SPEAKER_RE.match(piece)
                        body = piece[sp.end():] if sp else piece
                        s = max(score_sentence(body, user=bool(sp and sp.group(1) == "User")), 0.5)
                    cache[piece] = s
                out.append((s, piece))
        return out

    def _fit(self, cands: Sequence[tuple[float, str]], budget: int) -> tuple[list[str], int]:
        """The best candidates within `budget` tokens, in original order; and how many were left out."""
        count = self.counter.count
        costs = [count(line) + 1 for _, line in cands]
        if sum(costs) <= budget:
            return [line for _, line in cands], 0
        order = sorted(range(len(cands)), key=lambda i: (-cands[i][0], i))
        keep: list[int] = []
        used = 0
        for i in order:
            c = costs[i]
            if used + c <= budget:
                keep.append(i)
                used += c
        keep.sort()
        return [cands[i][1] for i in keep], len(cands) - len(keep)

    # -- merge modes -----------------------------------------------------------------------

    def _select(self, request: SummaryRequest, budget: int) -> SummaryDraft:
        prev = request.previous.text if request.previous is not None else ""
        old = self._previous_candidates(prev) if prev.strip() else []
        new = self._new_candidates(request.messages)
        lines, left_out = self._fit(old + new, budget)
        notes: list[str] = []
        if left_out:
            notes.append(f"kept {len(lines)} of {len(lines) + left_out} lines to fit {budget} tokens")
        text = "\n".join(lines)
        if not text:
            text = f"[{len(request.messages)} messages with no extractable content]"
            notes.append("no salient sentences found")
        return self._draft(text, notes, len(request.messages))

    def _append(self, request: SummaryRequest, budget: int) -> SummaryDraft:
        notes: list[str] = []
        if self.conversational:
            lines, left_out = self._fit(self._new_candidates(request.messages), budget)
            if left_out:
                notes.append(f"kept {len(lines)} of {len(lines) + left_out} lines to fit {budget} tokens")
            block = f"--- Summarized Context ({len(request.messages)} items) ---\n" + "\n".join(lines)
        else:
            block = summarize_dropped(request.messages)
        previous = request.previous
        if previous is None or not previous.text.strip():
            return self._draft(block, notes, len(request.messages))
        update = previous.seq + 2
        combined = f"{previous.text}\n\n[Update {update}]\n{block}"
        if self.counter.count(combined) > 2 * budget:
            notes.append(f"earlier summary condensed away: update {update} exceeded 2 × {budget} tokens")
            return self._draft(f"{CONDENSED_HEADER}\n{block}", notes, len(request.messages))
        return self._draft(combined, notes, len(request.messages))

    def _draft(self, text: str, notes: list[str], n: int) -> SummaryDraft:
        return SummaryDraft(text=text, model="extractive", prompt_id=f"extractive/{self.merge}",
                            usage=Usage(), notes=tuple(notes), meta={"messages": n})
