"""Records that cross module boundaries: messages, summary records and summary events.

They are plain dataclasses with `to_dict` / `from_dict` so that stores, run directories and
cassettes can persist them without pickling, and so a logged run can be re-read by a later
version of the tool.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import date
from typing import Any, ClassVar, Literal, TypeVar

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

MessageState = Literal["active", "pending", "covered", "dropped"]
"""Where a message is in its life cycle.

- ``active``: in the window, sent verbatim to the main model.
- ``pending``: taken out of the window by an eviction policy, waiting to be summarized.
- ``covered``: replaced by exactly one summary record (``summary_id``).
- ``dropped``: out of context with no summary, by the policy's own design (a truncation
  baseline, an eviction that the seed says must not be summarized). Never because a
  summarizer failed, unless the preset's documented fallback is plain eviction.

Whatever the state, the store keeps the message: nothing is ever deleted but by
`Store.delete_conversation`.
"""

_T = TypeVar("_T")


class _Factory:
    """The default of a field with a default factory, as `inspect.signature` shows it (the
    generated ``__init__`` shows the same word)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def quick_init(cls: type[_T]) -> type[_T]:
    """Give a frozen slots dataclass an ``__init__`` that stores its fields ~3x cheaper.

    Why: the generated ``__init__`` of a frozen dataclass stores each field through
    ``object.__setattr__(self, name, value)``, ~1.9k instructions a field: a `SummaryEvent`
    (20 fields and a `Usage`) cost ~38k to make (now ~13k), and the engine makes one for every
    eviction, drop and summary (truncate: a fifth of a message's cost). This one makes the
    instance a slot twin of the class for the stores (the same ``__slots__``: the ``__class__``
    assignment checks the layouts match and raises TypeError otherwise), then gives it its
    class back. Same signature, defaults, default factories and ``__post_init__`` as the
    generated one (`tests/rollsum/test_types.py` compares the two on every class that uses it)."""
    twin = type(f"_{cls.__name__}Fields", (), {"__slots__": cls.__dict__["__slots__"], "__module__": cls.__module__})
    ns: dict[str, Any] = {"_twin": twin, "_cls": cls, "_FACTORY": _FACTORY, "_set": object.__setattr__,
                          "_generated": cls.__init__}
    params: list[str] = []
    generated = inspect.signature(cls.__init__).parameters
    ns["_unset"] = next((p.default for p in generated.values() if repr(p.default) == "<factory>"), None)
    names = ", ".join(f"_unset if {f.name} is _FACTORY else {f.name}" if f.default_factory is not MISSING
                      else f.name for f in fields(cls))  # type: ignore[arg-type]
    # a subclass is laid out otherwise (and must stay what it is): the generated __init__ builds it
    body = [f"if type(self) is not _cls: return _generated(self, {names})", "_set(self, '__class__', _twin)"]
    for f in fields(cls):  # type: ignore[arg-type]
        if f.default is not MISSING:
            ns[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            ns[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"self.{f.name} = _f_{f.name}() if {f.name} is _FACTORY else {f.name}")
            continue
        else:
            params.append(f.name)
        body.append(f"self.{f.name} = {f.name}")
    body.append("self.__class__ = _cls")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body), ns)
    ns["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    ns["__init__"].__annotations__ = dict(cls.__init__.__annotations__)  # the generated one's, for readers
    setattr(cls, "__init__", ns["__init__"])  # noqa: B010 (mypy: a method is not assigned)
    setattr(cls, "_twin", twin)  # noqa: B010 (for a class's own cheaper maker, `SummaryEvent.removal`)
    return cls


def new_id(prefix: str = "") -> str:
    """A random, unique id. Records carry ids, so tests compare them structurally instead."""
    return f"{prefix}{uuid.uuid4().hex[:16]}"


@quick_init
@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.

    Tool messages carry the tool's name in `name` and its details (``path``, ``command``,
    ``pattern``, ``exit_code``) in `meta`. An assistant message that *calls* tools can list the
    call ids in ``meta["tool_calls"]``; a tool result names its call in ``meta["tool_call_id"]``.
    Context assembly never separates a call from its results.
    """

    role: Role
    content: str
    id: str | None = None
    name: str | None = None
    created_at: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise TypeError(f"content must be str, got {type(self.content).__name__}")
        # the usual message (str or None fields, a dict meta) passes this one cheap test
        if (type(self.meta) is not dict or (self.created_at is not None and type(self.created_at) is not str)
                or (self.name is not None and type(self.name) is not str)
                or (self.id is not None and type(self.id) is not str)):
            self._check_fields()

    def _check_fields(self) -> None:
        """Take what an application has at hand, refuse the rest with a TypeError naming it.

        Why: a message is stored, restored and sent as text. A `datetime` in `created_at` made
        ``context(timestamps=...)`` raise AttributeError and came back from a SQLite store as a
        string (a restarted engine's messages differed), so it is kept as its ISO 8601 text; a
        None `meta` broke tool pairing and clearing deep inside ``add()``, so it is ``{}``; a
        non-str `name` broke ``to_anthropic()``."""
        if self.meta is None:
            object.__setattr__(self, "meta", {})
        elif not isinstance(self.meta, Mapping):
            raise TypeError(f"meta must be a mapping or None, got {type(self.meta).__name__}")
        if isinstance(self.created_at, date):  # a datetime (naive or aware) or a date
            object.__setattr__(self, "created_at", self.created_at.isoformat())
        elif self.created_at is not None and not isinstance(self.created_at, str):
            raise TypeError("created_at must be an ISO 8601 string, a datetime or None, "
                            f"got {type(self.created_at).__name__}")
        for name, value in (("id", self.id), ("name", self.name)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be str or None, got {type(value).__name__}")

    def with_id(self, message_id: str) -> Message:
        """This message under `message_id` (the engine names every message stored without an
        id): every field passed on directly, since `dataclasses.replace` costs ~2.5× as much on
        each `add()` of such a message (`tests/rollsum/test_types.py` holds the field list)."""
        return Message(self.role, self.content, message_id, self.name, self.created_at, self.meta)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.id is not None:
            d["id"] = self.id
        if self.name is not None:
            d["name"] = self.name
        if self.created_at is not None:
            d["created_at"] = self.created_at
        if self.meta:
            d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        return cls(
            role=d["role"],
            content=d["content"],
            id=None if d.get("id") is None else str(d["id"]),
            name=d.get("name"),
            created_at=d.get("created_at"),
            meta=dict(d.get("meta") or {}),
        )


@quick_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a model call consumed, as the provider reported them (or estimated offline)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not (other.input_tokens or other.output_tokens or other.cache_read_tokens or other.cache_write_tokens
                or other.calls):  # nothing to add (an offline summarizer's draft): no new value (~5k to make)
            return self
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.calls + other.calls,
        )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Usage:
        if not d:
            return cls()
        return cls(**{k: int(v) for k, v in d.items() if k in cls.__dataclass_fields__})


FACET_NAMES: tuple[str, ...] = ("participants", "decisions", "action_items", "unresolved", "entities")


@quick_init
@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """One link of a conversation's summary chain (append-only lineage).

    `covered_ids` lists only the messages *this* record replaced; earlier messages are covered
    by the ancestors reachable through `parent_id`, so every message is covered by exactly one
    record. `messages_covered` is cumulative over the chain (seed 001's column meaning), and
    `text` is the rolling summary of everything up to `end_id`.
    """

    id: str
    conversation_id: str
    text: str
    depth: int = 0
    parent_id: str | None = None
    key_points: tuple[str, ...] = ()
    facets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pinned_facts: tuple[str, ...] = ()
    covered_ids: tuple[str, ...] = ()
    start_id: str | None = None
    end_id: str | None = None
    messages_covered: int = 0
    tokens: int = 0
    model: str = ""
    prompt_id: str = ""
    prompt_hash: str = ""
    usage: Usage = field(default_factory=Usage)
    created_at: str = ""
    seq: int = 0
    """Position in the chain (0, 1, 2, ...): the deterministic tie-break when two records
    share a `created_at`."""
    fallback: str | None = None
    """Set when this record came from a fallback path (e.g. ``"extractive"``), never silent."""
    notes: tuple[str, ...] = ()
    """Anything lossy that happened while making it: transcript truncated, chunked, summary
    cut to its budget."""
    facts: tuple[str, ...] = ()
    """The fact ledger's tracked facts up to this record (see `rollsum.ledger`)."""
    ledger: Mapping[str, int] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "text": self.text,
            "depth": self.depth,
            "parent_id": self.parent_id,
            "key_points": list(self.key_points),
            "facets": {k: list(v) for k, v in self.facets.items()},
            "pinned_facts": list(self.pinned_facts),
            "covered_ids": list(self.covered_ids),
            "start_id": self.start_id,
            "end_id": self.end_id,
            "messages_covered": self.messages_covered,
            "tokens": self.tokens,
            "model": self.model,
            "prompt_id": self.prompt_id,
            "prompt_hash": self.prompt_hash,
            "usage": self.usage.to_dict(),
            "created_at": self.created_at,
            "seq": self.seq,
            "fallback": self.fallback,
            "notes": list(self.notes),
            "facts": list(self.facts),
            "ledger": dict(self.ledger),
            "meta": dict(self.meta),
        }
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SummaryRecord:
        return cls(
            id=d["id"],
            conversation_id=d["conversation_id"],
            text=d["text"],
            depth=int(d.get("depth", 0)),
            parent_id=d.get("parent_id"),
            key_points=tuple(d.get("key_points") or ()),
            facets={k: tuple(v) for k, v in (d.get("facets") or {}).items()},
            pinned_facts=tuple(d.get("pinned_facts") or ()),
            covered_ids=tuple(d.get("covered_ids") or ()),
            start_id=d.get("start_id"),
            end_id=d.get("end_id"),
            messages_covered=int(d.get("messages_covered", 0)),
            tokens=int(d.get("tokens", 0)),
            model=d.get("model") or "",
            prompt_id=d.get("prompt_id") or "",
            prompt_hash=d.get("prompt_hash") or "",
            usage=Usage.from_dict(d.get("usage")),
            created_at=d.get("created_at") or "",
            seq=int(d.get("seq", 0)),
            fallback=d.get("fallback"),
            notes=tuple(d.get("notes") or ()),
            facts=tuple(d.get("facts") or ()),
            ledger=dict(d.get("ledger") or {}),
            meta=dict(d.get("meta") or {}),
        )

    def render(self) -> str:
        """The text that goes into the context: narrative, key points and pinned facts."""
        parts = [self.text.strip()]
        if self.key_points:
            parts.append("Key points:\n" + "\n".join(f"- {p}" for p in self.key_points))
        if self.pinned_facts:
            parts.append("Facts:\n" + "\n".join(f"- {f}" for f in self.pinned_facts))
        return "\n\n".join(p for p in parts if p)


EventKind = Literal["summary", "failure", "evict", "drop", "skip", "clip"]


NO_USAGE = Usage()
"""No tokens, no call: one value serves every event and outcome that made no model call (a
`Usage` is frozen)."""


@quick_init
@dataclass(frozen=True, slots=True)
class SummaryEvent:
    """What `RollingSummarizer.add` did beyond appending the message.

    Emitted for every summary made, every failed attempt (with nothing lost), and every
    eviction or drop, so a replay trace can say exactly what happened at which turn.

    ``clip`` is the window guard's last resort: something that must stay in the context (the
    newest message, the pinned system messages) is larger than the window on its own, so its
    content is clipped *in the context* with a visible marker (the stored message is never
    altered); `messages` counts the clipped or omitted messages. `guard` is True for events
    the engine's window guard caused rather than the preset's own trigger.
    """

    kind: EventKind
    turn: int
    reason: str
    record: SummaryRecord | None = None
    depth: int = 0
    messages: int = 0
    """How many messages this event moved out of the active window."""
    tokens_before: int = 0
    tokens_after: int = 0
    lag_turns: int = 0
    """Turns between the trigger and the moment the summary took effect (async mode)."""
    error: str | None = None
    error_kind: str | None = None
    attempts: int = 0
    facts_found: int = 0
    facts_kept: int = 0
    facts_pinned: int = 0
    facts_lost: int = 0
    usage: Usage = NO_USAGE
    """Shared when no model was called (a drop, an eviction): a `Usage` is frozen, and making
    one per event was a quarter of an event's cost (clear-tool-results drops on half its messages)."""
    fallback: str | None = None
    guard: bool = False
    """Caused by the engine's window guard (see `RollingSummarizer`), not the preset's trigger."""
    _twin: ClassVar[type]  # `quick_init`'s slot twin

    @classmethod
    def removal(cls, kind: EventKind, turn: int, reason: str, messages: int, tokens_before: int,
                tokens_after: int, guard: bool = False) -> SummaryEvent:
        """The event of an eviction or a drop (no model, no record): equal to the one
        ``__init__`` makes, at half its cost (~4k instructions, not ~8.5k: no keywords to
        match, one class swap, not two). clear-tool-results makes one on half its messages."""
        self: Any = object.__new__(cls._twin)  # a twin: plain slot stores (as `quick_init`)
        self.kind, self.turn, self.reason, self.record, self.depth = kind, turn, reason, None, 0
        self.messages, self.tokens_before, self.tokens_after = messages, tokens_before, tokens_after
        self.lag_turns, self.error, self.error_kind, self.attempts = 0, None, None, 0
        self.facts_found = self.facts_kept = self.facts_pinned = self.facts_lost = 0
        self.usage, self.fallback, self.guard = NO_USAGE, None, guard
        self.__class__ = cls
        return self

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "turn": self.turn,
            "reason": self.reason,
            "record_id": self.record.id if self.record else None,
            "depth": self.depth,
            "messages": self.messages,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "lag_turns": self.lag_turns,
            "error": self.error,
            "error_kind": self.error_kind,
            "attempts": self.attempts,
            "facts_found": self.facts_found,
            "facts_kept": self.facts_kept,
            "facts_pinned": self.facts_pinned,
            "facts_lost": self.facts_lost,
            "usage": self.usage.to_dict(),
            "fallback": self.fallback,
            "guard": self.guard,
        }
        return d
