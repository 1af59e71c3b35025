"""Normalized text of a trace's context at asking turns, computed once per Unit.

Containment scorers look for an answer in the whole context, in its summary part (items that
are not conversation messages) and in its verbatim part (items made from conversation
messages), and in the conversation so far (what `full-context` would send). A long conversation
probed at many turns would re-normalize the same texts at every turn, so each distinct text is
normalized once; `normalize_text` only maps characters, drops whole words and collapses
whitespace, so normalized parts joined with a space equal the normalized joined text (a test
checks it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from rollsum.types import Message
from rollsum_evals.replay.trace import TextRef, Trace
from rollsum_evals.scoring.evidence import SupportIndex
from rollsum_evals.scoring.text import normalize_text


@dataclass(slots=True)
class Shared:
    """What the Units of one conversation share while they are scored: normalized texts (for
    containment) and the support index (claims, and what each message and text states). A
    caller scoring several Units of a conversation passes the same object to each; a fresh one
    is always correct, only slower."""

    normalized: dict[str, str] = field(default_factory=dict)
    _index: SupportIndex | None = None

    def support(self, messages: Sequence[Message], timestamps: str = "none") -> SupportIndex:
        if (self._index is None or self._index.messages != tuple(messages)
                or self._index.timestamps != timestamps):
            self._index = SupportIndex(messages, timestamps)
        return self._index


class View:
    """The normalized context at one turn, split into its parts; each part is joined only when
    a scorer reads it (answer_retention reads only `context`). Read straight from the turn's
    composition: no `ContextItem` is built (that was most of the cost on long contexts)."""

    def __init__(self, views: ContextViews, turn: int) -> None:
        self._views = views
        self._turn = turn
        trace = views.trace
        self._composition = trace.turns[turn].composition if 0 <= turn < len(trace.turns) else ()

    def _texts(self, *, verbatim: bool = True, other: bool = True) -> Iterator[str]:
        """Item texts in context order: `verbatim` = items made from conversation messages (a
        clipped message included), `other` = the rest (summaries, whatever the engine wrote)."""
        trace = self._views.trace
        for seg in self._composition:
            if isinstance(seg, TextRef):
                if verbatim if seg.source is not None else other:
                    yield trace.texts[seg.text_id].content
            elif verbatim:
                yield from (m.content for m in trace.messages[seg[0]:seg[1]])

    @cached_property
    def context(self) -> str:
        return self._views._join(self._texts())

    @cached_property
    def summary(self) -> str:
        """Items that are not conversation messages (summaries, whatever the engine wrote)."""
        return self._views._join(self._texts(verbatim=False))

    @cached_property
    def verbatim(self) -> str:
        """Items made from conversation messages."""
        return self._views._join(self._texts(other=False))

    @cached_property
    def prefix(self) -> str:
        """Every conversation message up to the turn: what `full-context` would have sent."""
        return self._views._prefix_at(self._turn)


class ContextViews:
    def __init__(self, trace: Trace, normalized: dict[str, str] | None = None) -> None:
        """`normalized`: text -> normalized text, shared by the Units of one conversation when
        the caller scores several (their contexts are mostly the same messages)."""
        self.trace = trace
        self._norm: dict[str, str] = {} if normalized is None else normalized
        self._views: dict[int, View] = {}
        self._prefix: list[str] = []

    def norm(self, text: str) -> str:
        out = self._norm.get(text)
        if out is None:
            out = self._norm[text] = normalize_text(text)
        return out

    def _join(self, texts: Iterable[str]) -> str:
        return " ".join(n for n in map(self.norm, texts) if n)

    def _prefix_at(self, turn: int) -> str:
        msgs = self.trace.messages
        while len(self._prefix) <= min(turn, len(msgs) - 1):
            self._prefix.append(self.norm(msgs[len(self._prefix)].content))
        return " ".join(n for n in self._prefix[: turn + 1] if n)

    def at(self, turn: int) -> View:
        view = self._views.get(turn)
        if view is None:
            view = self._views[turn] = View(self, turn)
        return view
