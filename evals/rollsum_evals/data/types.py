"""The harness's canonical conversation records.

One conversation per JSONL line: ``{id, messages, probes, references, meta}``. A probe is a
question whose gold answer is known, with the ids of the messages that hold the evidence; a
reference is a human summary of part of the conversation (LoCoMo session summaries).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rollsum.types import Message

PROBE_CATEGORIES: tuple[str, ...] = (
    # synthetic kinds
    "fact", "number", "identifier", "date", "decision", "superseded",
    # synthetic agent kinds (what an agent asks after a compaction; issue #23)
    "file-changed", "failed-approach", "current-task", "tool-identifier",
    # LoCoMo categories 1-5
    "multi-hop", "temporal", "open-domain", "single-hop", "adversarial",
)


@dataclass(frozen=True, slots=True)
class Probe:
    id: str
    question: str
    answer: str
    evidence: tuple[str, ...] = ()
    """Message ids that carry the answer; the last one in conversation order sets the fact's age."""
    category: str = "fact"
    stale_answers: tuple[str, ...] = ()
    """For superseded facts: earlier values that are now wrong. Finding one is 'stale'."""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "question": self.question, "answer": self.answer,
                             "evidence": list(self.evidence), "category": self.category}
        if self.stale_answers:
            d["stale_answers"] = list(self.stale_answers)
        if self.meta:
            d["meta"] = dict(self.meta)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Probe:
        return cls(id=str(d["id"]), question=d["question"], answer=str(d["answer"]),
                   evidence=tuple(str(e) for e in d.get("evidence") or ()),
                   category=d.get("category") or "fact",
                   stale_answers=tuple(str(s) for s in d.get("stale_answers") or ()),
                   meta=dict(d.get("meta") or {}))


@dataclass(frozen=True, slots=True)
class Reference:
    id: str
    text: str
    covers: tuple[str, ...] = ()
    """Message ids the reference summarizes (e.g. one LoCoMo session)."""
    kind: str = "session_summary"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "covers": list(self.covers), "kind": self.kind}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reference:
        return cls(id=str(d["id"]), text=d["text"], covers=tuple(str(c) for c in d.get("covers") or ()),
                   kind=d.get("kind") or "session_summary")


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    messages: tuple[Message, ...]
    probes: tuple[Probe, ...] = ()
    references: tuple[Reference, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "messages": [m.to_dict() for m in self.messages],
                "probes": [p.to_dict() for p in self.probes],
                "references": [r.to_dict() for r in self.references], "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Conversation:
        return cls(id=str(d["id"]),
                   messages=tuple(Message.from_dict(m) for m in d["messages"]),
                   probes=tuple(Probe.from_dict(p) for p in d.get("probes") or ()),
                   references=tuple(Reference.from_dict(r) for r in d.get("references") or ()),
                   meta=dict(d.get("meta") or {}))
