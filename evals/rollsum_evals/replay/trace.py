"""The trace of one replay: what the main model would have been sent at every turn, compactly.

For every turn the trace keeps the context's size (tokens, against the window), the summary's
size, the active and pending counts, and the context's *composition*: which items, in order.
An item that is verbatim a conversation message (same id and same role, name and content) is a
reference to its index; consecutive indices are stored as one range. Any other item (a summary
message, a message the engine clipped, text a third-party memory produced) is a reference to a
content-addressed text (`Text`, id = sha256 of role, name and content), stored once per run in
``texts.jsonl``. Nothing here depends on how the library words or identifies its summary
messages: a text is whatever the engine put in the context.

So the context at any turn can be rebuilt exactly from the hash-pinned dataset plus the run
directory (`Trace.context_at`), which is what makes probe timing a scoring choice and a finished
run re-scorable. On disk (`to_record`) each turn's composition is a short string: ``"+"`` =
the previous turn's plus this turn's message, ``"="`` = unchanged, otherwise comma-separated
items ``A`` / ``A-B`` (message index / inclusive range), ``#K`` (the unit's K-th text) and
``#K@I`` (a text made from message I, e.g. clipped).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollsum.context import TIMESTAMPS, fitted_times
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord, Usage

DEFAULT_TIMESTAMPS = "session"
"""The harness's default: a chat application shows when a sitting started (docs/scoring.md,
"Time in the context"); a config sets ``timestamps`` in its params. A trace written before
the mode was recorded is read with this default (its stamps are rebuilt from the messages)."""
assert DEFAULT_TIMESTAMPS in TIMESTAMPS
_COUNTER = HeuristicCounter()
"""The counter of every engine the harness builds: a stamp is counted as its context was."""


@dataclass(frozen=True, slots=True)
class Text:
    """A context item that is not verbatim a conversation message."""

    role: str
    name: str | None
    content: str

    @property
    def id(self) -> str:
        return text_id(self.role, self.name, self.content)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "name": self.name, "content": self.content}


def text_id(role: str, name: str | None, content: str) -> str:
    return hashlib.sha256(json.dumps([role, name, content], ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TextRef:
    """A composition item that is a stored text; `source` is the message it was made from
    (same id as a conversation message, different content), if any."""

    text_id: str
    source: int | None = None


Segment = tuple[int, int] | TextRef
"""``(start, stop)``: conversation messages ``start .. stop-1``, verbatim; or a text."""


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One message of the context at some turn, as a scorer sees it."""

    role: str
    name: str | None
    text: str
    message_index: int | None
    """The conversation message this item is (or, for a clipped one, was made from)."""
    text_id: str | None
    """Set when the item is a stored text rather than the message itself."""
    shown_time: str | None = None
    """The stamp shown before this item (`rollsum.context.shown_times` under the trace's
    ``timestamps``), e.g. ``[8 May 2023, 13:56]``; None when none was shown."""

    @property
    def verbatim(self) -> bool:
        """Exactly a conversation message (not a summary, not a clipped copy)."""
        return self.text_id is None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    turn: int
    role: str
    """Role of the message added at this turn."""
    context_tokens: int
    summary_tokens: int
    active_messages: int
    pending_messages: int
    composition: tuple[Segment, ...] = ()


def with_ids(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Evidence is matched by message id; data without ids get positional ones."""
    return tuple(m if m.id is not None else m.with_id(f"m{i}") for i, m in enumerate(messages))


@dataclass(slots=True)
class Trace:
    """One replay. Built live by `rollsum_evals.replay.replay`, or decoded from a run directory
    (`from_record`); scorers cannot tell the two apart."""

    unit_id: str
    messages: tuple[Message, ...]
    """The conversation as replayed (ids filled in where the data had none)."""
    context_window: int = 0
    turns: list[TurnRecord] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """`SummaryEvent.to_dict()` of every event, ``turn`` = message index at which it happened,
    ``engine_turn`` = the engine's own counter."""
    summaries: list[SummaryRecord] = field(default_factory=list)
    summary_turns: list[int] = field(default_factory=list)
    texts: dict[str, Text] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    cached_calls: int = 0
    latency_s: float = 0.0
    paid_usage: Usage = field(default_factory=Usage)
    cassette_misses: int = 0
    """Summarizer calls a ``replay:`` cassette had no answer for (`rollsum.models.ReplayMissError`)."""
    engine_config: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    status: str = "ok"
    error: str = ""
    timestamps: str = DEFAULT_TIMESTAMPS
    """How the context showed when messages were said (`rollsum.context.TIMESTAMPS`): the stamps
    are a pure function of the composition, the messages' ``created_at``, this mode and the
    room the window left (the engine's config and the turn's context tokens), so the trace
    records the mode and `context_at` rebuilds them."""
    _undated: dict[int, frozenset[int]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def failures(self) -> int:
        return sum(1 for e in self.events if e.get("kind") == "failure")

    def context_at(self, turn: int) -> list[ContextItem]:
        """The context the main model would have been sent after message `turn` was added: the
        library's ``context(timestamps=...)`` of that turn, stamps within what the window left."""
        if not 0 <= turn < len(self.turns):
            return []
        items = self._items_at(turn)
        if self.timestamps == "none":
            return items
        stamps = self._stamps(turn, items)
        return [i if s is None else dataclasses.replace(i, shown_time=s) for i, s in zip(items, stamps)]

    def undated_at(self, turn: int) -> frozenset[int]:
        """The messages in the context at `turn` whose day it does not show although it shows
        times: those above the first stamp shown, when the window had no room for the oldest
        stamps (`rollsum.context.fitted_times`). The scorer reads them without their day. Empty
        at most turns (LoCoMo dev, 8,000 tokens: not at 88 of evict-window's 360 asking turns)."""
        if self.timestamps == "none" or not 0 <= turn < len(self.turns):
            return frozenset()
        hit = self._undated.get(turn)
        if hit is None:
            items = self._items_at(turn)
            msgs = self._stamp_messages(items)
            kept = fitted_times(msgs, self.timestamps, room=self._stamp_room(turn),
                                count_message=_COUNTER.count_message)
            hit = frozenset()
            if kept != fitted_times(msgs, self.timestamps):  # some left out: the oldest, above the first shown
                first = next((k for k, s in enumerate(kept) if s is not None), len(items))
                hit = frozenset(i.message_index for i in items[:first] if i.message_index is not None)
            self._undated[turn] = hit
        return hit

    def _stamps(self, turn: int, items: Sequence[ContextItem]) -> list[str | None]:
        return fitted_times(self._stamp_messages(items), self.timestamps, room=self._stamp_room(turn),
                            count_message=_COUNTER.count_message)

    def _stamp_messages(self, items: Sequence[ContextItem]) -> list[Message]:
        """The items as the messages the engine sent (a stamp is written on and counted with them)."""
        return [Message(i.role, i.text, name=i.name, created_at=self._created(i)) for i in items]  # type: ignore[arg-type]

    def _stamp_room(self, turn: int) -> int | None:
        """The tokens the window left the stamps at `turn`, by the engine's own rule
        (`RollingSummarizer.context`: its limit less the context it packed); None when the
        engine kept no window (full context, a truncation curve's point, a peer's memory)."""
        config = self.engine_config
        if not config.get("enforce_window"):
            return None
        window = int(config.get("context_window") or self.context_window)
        limit = window - int(config.get("reserved_output_tokens") or 0)
        return max(0, limit - self.turns[turn].context_tokens)

    def _created(self, item: ContextItem) -> str | None:
        """A verbatim or clipped message's ``created_at`` (a clipped copy was said when its
        source was); None for summaries and engine text."""
        return self.messages[item.message_index].created_at if item.message_index is not None else None

    def _items_at(self, turn: int) -> list[ContextItem]:
        out: list[ContextItem] = []
        for seg in self.turns[turn].composition:
            if isinstance(seg, TextRef):
                t = self.texts[seg.text_id]
                out.append(ContextItem(t.role, t.name, t.content, seg.source, seg.text_id))
            else:
                msgs = self.messages
                out.extend(ContextItem(msgs[i].role, msgs[i].name, msgs[i].content, i, None)
                           for i in range(seg[0], seg[1]))
        return out

    # ---------------------------------------------------------------------------------------
    # on disk

    def to_record(self) -> dict[str, Any]:
        """The ``traces.jsonl`` line (without the Unit, which the caller adds): numbers per turn
        as columns, compositions as strings, texts by their index in ``text_ids``."""
        ids: dict[str, int] = {}
        codes: list[str] = []
        prev: tuple[Segment, ...] = ()
        for t in self.turns:
            codes.append(_encode(t.composition, prev, t.turn, ids))
            prev = t.composition
        return {
            "unit_id": self.unit_id, "status": self.status, "error": self.error,
            "wall_s": self.wall_s, "context_window": self.context_window,
            "n_messages": len(self.messages),
            "usage": self.usage.to_dict(), "paid_usage": self.paid_usage.to_dict(),
            "model_calls": self.model_calls, "cached_calls": self.cached_calls,
            "cassette_misses": self.cassette_misses, "latency_s": self.latency_s, "engine_config": self.engine_config,
            "text_ids": list(ids), "timestamps": self.timestamps,
            "turns": {
                "context_tokens": [t.context_tokens for t in self.turns],
                "summary_tokens": [t.summary_tokens for t in self.turns],
                "active": [t.active_messages for t in self.turns],
                "pending": [t.pending_messages for t in self.turns],
                "context": codes,
            },
        }

    def used_texts(self) -> dict[str, Text]:
        """The texts this trace's compositions refer to (what ``texts.jsonl`` must hold)."""
        used = {seg.text_id for t in self.turns for seg in t.composition if isinstance(seg, TextRef)}
        return {k: v for k, v in self.texts.items() if k in used}

    @classmethod
    def from_record(cls, record: Mapping[str, Any], messages: Sequence[Message],
                    texts: Mapping[str, Text], summary_rows: Sequence[Mapping[str, Any]] = (),
                    event_rows: Sequence[Mapping[str, Any]] = (), *, summary_records: bool = True) -> Trace:
        """Decode a ``traces.jsonl`` line with its Unit's ``summaries``/``events`` lines.
        `messages` is the conversation (ids as replayed: see `with_ids`). `summary_records`
        False leaves `summaries` empty (`summary_turns` is still set): a reader of contexts
        (`Run.load_trace` ``contexts_only``) finds the summary texts in `texts`."""
        msgs = with_ids(messages)
        cols = record.get("turns") or {}
        text_ids: list[str] = list(record.get("text_ids") or [])
        turns: list[TurnRecord] = []
        prev: tuple[Segment, ...] = ()
        for i, code in enumerate(cols.get("context") or []):
            comp = _decode(code, prev, i, text_ids)
            turns.append(TurnRecord(
                turn=i, role=msgs[i].role, context_tokens=int(cols["context_tokens"][i]),
                summary_tokens=int(cols["summary_tokens"][i]), active_messages=int(cols["active"][i]),
                pending_messages=int(cols["pending"][i]), composition=comp))
            prev = comp
        missing = [t for t in text_ids if t not in texts]
        if missing:
            raise ValueError(f"trace {record.get('unit_id')}: text {missing[0][:12]}… is not in texts.jsonl")
        rows = sorted(summary_rows, key=lambda r: int(r.get("generation", 0)))
        events = [{k: v for k, v in r.items() if k not in _IDENTITY} for r in event_rows]
        return cls(
            unit_id=str(record["unit_id"]), messages=msgs,
            context_window=int(record.get("context_window") or 0), turns=turns, events=events,
            summaries=[SummaryRecord.from_dict(r["record"]) for r in rows] if summary_records else [],
            summary_turns=[int(r["turn"]) for r in rows],
            texts={t: texts[t] for t in text_ids},
            usage=Usage.from_dict(record.get("usage")), model_calls=int(record.get("model_calls") or 0),
            cached_calls=int(record.get("cached_calls") or 0),
            cassette_misses=int(record.get("cassette_misses") or 0),
            latency_s=float(record.get("latency_s") or 0.0),
            paid_usage=Usage.from_dict(record.get("paid_usage")),
            engine_config=dict(record.get("engine_config") or {}),
            wall_s=float(record.get("wall_s") or 0.0), status=str(record.get("status") or "ok"),
            error=str(record.get("error") or ""),
            timestamps=str(record.get("timestamps") or DEFAULT_TIMESTAMPS))


_IDENTITY = frozenset({"unit_id", "conversation_id", "config"})


def extend(prev: tuple[Segment, ...], index: int) -> tuple[Segment, ...]:
    """`prev` with message `index` appended (merged into a final range ending just before it)."""
    if prev:
        last = prev[-1]
        if isinstance(last, tuple) and last[1] == index:
            return (*prev[:-1], (last[0], index + 1))
    return (*prev, (index, index + 1))


def _encode(comp: tuple[Segment, ...], prev: tuple[Segment, ...], turn: int, ids: dict[str, int]) -> str:
    for seg in comp:  # register texts in first-appearance order even for "+"/"=" turns
        if isinstance(seg, TextRef) and seg.text_id not in ids:
            ids[seg.text_id] = len(ids)
    if comp == prev:
        return "="
    if comp == extend(prev, turn):
        return "+"
    parts = []
    for seg in comp:
        if isinstance(seg, TextRef):
            parts.append(f"#{ids[seg.text_id]}" + ("" if seg.source is None else f"@{seg.source}"))
        elif seg[1] - seg[0] == 1:
            parts.append(str(seg[0]))
        else:
            parts.append(f"{seg[0]}-{seg[1] - 1}")
    return ",".join(parts)


def _decode(code: str, prev: tuple[Segment, ...], turn: int, text_ids: Sequence[str]) -> tuple[Segment, ...]:
    if code == "=":
        return prev
    if code == "+":
        return extend(prev, turn)
    out: list[Segment] = []
    for part in code.split(",") if code else []:
        if part.startswith("#"):
            k, _, src = part[1:].partition("@")
            out.append(TextRef(text_ids[int(k)], int(src) if src else None))
        else:
            a, _, b = part.partition("-")
            out.append((int(a), int(b or a) + 1))
    return tuple(out)


class ContextEncoder:
    """Turns the live context (a list of `Message`) into a composition, turn after turn.

    Verbatim messages are recognised by id (identity first, then role/name/content), so the
    cost per turn is one dictionary lookup per context item; texts are hashed once each.
    An item without an id (a memory that rebuilds its messages) is matched by role, name and
    content to the latest such message so far: the rebuilt context is identical either way.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.index: dict[str, int] = {}
        for i, m in enumerate(messages):
            if m.id is not None:
                self.index.setdefault(m.id, i)
        self._by_content: dict[tuple[str, str | None, str], list[int]] = {}
        self._content_upto = 0
        self.texts: dict[str, Text] = {}
        self._ids: dict[tuple[str, str | None, str], str] = {}

    def _text(self, m: Message, source: int | None) -> TextRef:
        key = (m.role, m.name, m.content)
        tid = self._ids.get(key)
        if tid is None:
            tid = self._ids[key] = text_id(*key)
            self.texts[tid] = Text(m.role, m.name, m.content)
        return TextRef(tid, source)

    def _by_value(self, m: Message, turn: int) -> int | None:
        while self._content_upto <= turn and self._content_upto < len(self.messages):
            c = self.messages[self._content_upto]
            self._by_content.setdefault((c.role, c.name, c.content), []).append(self._content_upto)
            self._content_upto += 1
        found = self._by_content.get((m.role, m.name, m.content))
        return found[-1] if found else None

    def encode(self, context: Sequence[Message], turn: int) -> tuple[Segment, ...]:
        out: list[Segment] = []
        start = stop = -1
        msgs = self.messages
        for m in context:
            j = self.index.get(m.id) if m.id is not None else self._by_value(m, turn)
            if j is not None:
                orig = msgs[j]
                if m is orig or (m.content == orig.content and m.role == orig.role and m.name == orig.name):
                    if j == stop:
                        stop += 1
                        continue
                    if stop >= 0:
                        out.append((start, stop))
                    start, stop = j, j + 1
                    continue
            if stop >= 0:
                out.append((start, stop))
                start = stop = -1
            out.append(self._text(m, j))
        if stop >= 0:
            out.append((start, stop))
        return tuple(out)
