"""A scripted stand-in for the engine and for the QA model: scorer numbers that do not move
when the library's presets or summarizers change.

The scorer-parity test pins numbers computed before the replay → trace → score refactor. Had it
replayed the real presets, any later change to a policy or to the extractive summarizer would
break it for reasons that have nothing to do with scoring. So each preset name selects a fixed,
library-independent behaviour with the same *shapes* of context the real presets make: all
messages, a sliding window, a rolling summary before the verbatim tail (in three roles), a
head + summary + tail, and a non-contiguous trim with a summary of what was dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from rollsum.models.base import Completion, CompletionRequest
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage

QA_SPEC = "fake:stand-in-qa"
"""The QA model's spec string: a ``fake:`` spec, so the price table calls it free."""


def _gist(text: str) -> str:
    """The first sentence of a message, at most 12 words: what the stand-in 'summarizer' keeps."""
    first = text.split(". ")[0]
    return " ".join(first.split()[:12])


class StandInEngine:
    """Deterministic engine with one behaviour per preset name (see the module docstring)."""

    def __init__(self, unit: Any, model: Any, on_event: Callable[[SummaryEvent], None]) -> None:
        self.kind = unit.preset
        self.params = dict(unit.params)
        self.conversation_id = unit.conversation_id
        self.on_event = on_event
        self.model = model
        self._all: list[Message] = []
        self._active: list[Message] = []
        self._history: list[SummaryRecord] = []
        self._summary_msg: Message | None = None
        self._usage = Usage()
        self._head: list[Message] = []

    # -- the Engine protocol

    def add(self, message: Message) -> SummaryEvent | None:
        self._all.append(message)
        self._active.append(message)
        turn = len(self._all) - 1
        keep = int(self.params.get("keep", 6))
        every = int(self.params.get("every", 8))
        if self.kind == "truncate":
            del self._active[:-keep]
            return None
        if self.kind == "full-context":
            return None
        if self.kind == "evict-window":
            head = int(self.params.get("head", 2))
            if not self._head and len(self._active) >= head:
                self._head, self._active = self._active[:head], self._active[head:]
            if len(self._active) > keep + every:
                return self._summarize(self._active[:-keep], turn, drop=set())
            return None
        if self.kind == "budget-rule-based":
            if len(self._active) > keep + every:
                # drop every other old message (non-contiguous), summarize what was dropped
                old = self._active[:-keep]
                dropped = old[::2]
                return self._summarize(dropped, turn, drop={id(m) for m in dropped})
            return None
        # rolling summaries: since-last, token-ratio, count-and-tokens
        if len(self._active) > keep + every:
            if self.kind == "token-ratio" and turn % 3 == 0:
                ev = SummaryEvent(kind="failure", turn=turn, reason="scripted failure",
                                  error="stand-in", error_kind="server", attempts=1)
                self.on_event(ev)
                return ev
            return self._summarize(self._active[:-keep], turn, drop=set())
        return None

    def _summarize(self, span: Sequence[Message], turn: int, drop: set[int]) -> SummaryEvent:
        prev = self._history[-1] if self._history else None
        gists = [_gist(m.content) for m in span]
        text = ((prev.text + " | ") if prev else "") + "; ".join(g for g in gists if g)
        text = text[-1200:]  # a rolling summary forgets its oldest part
        if self.model is not None:
            c = self.model.complete(CompletionRequest(system="summarize", messages=[
                Message("user", text)], max_tokens=64, prompt_id="stand-in"))
            self._usage = self._usage + c.usage
        seq = len(self._history)
        rec = SummaryRecord(
            id=f"{self.conversation_id}/s{seq}", conversation_id=self.conversation_id, text=text,
            depth=seq, parent_id=prev.id if prev else None,
            key_points=tuple(gists[:2]), covered_ids=tuple(m.id or "" for m in span),
            start_id=span[0].id, end_id=span[-1].id, messages_covered=len(span),
            tokens=len(text) // 4, model="stand-in", created_at="2025-01-01T00:00:00Z", seq=seq)
        self._history.append(rec)
        ids = drop or {id(m) for m in span}
        self._active = [m for m in self._active if id(m) not in ids]
        role = {"count-and-tokens": "assistant", "evict-window": "assistant"}.get(self.kind, "system")
        self._summary_msg = Message(role, f"[{self.kind} summary]\n{rec.render()}",  # type: ignore[arg-type]
                                    id=f"summary:{rec.id}")
        ev = SummaryEvent(kind="summary", turn=turn, reason="scripted", record=rec, depth=seq,
                          messages=len(span), attempts=1)
        self.on_event(ev)
        return ev

    def context(self, system: str | None = None) -> list[Message]:
        out: list[Message] = []
        if self._summary_msg is not None and self.kind == "evict-window":
            return [*self._head, self._summary_msg, *self._active]
        out.extend(self._head)
        if self._summary_msg is not None:
            out.append(self._summary_msg)
        out.extend(self._active)
        return out

    def context_tokens(self) -> int:
        return sum(len(m.content) // 4 + 4 for m in self.context())

    def summary_text(self) -> str:
        return self._summary_msg.content if self._summary_msg is not None else ""

    @property
    def summary(self) -> SummaryRecord | None:
        return self._history[-1] if self._history else None

    @property
    def history(self) -> list[SummaryRecord]:
        return list(self._history)

    @property
    def messages(self) -> list[Message]:
        return [*self._head, *self._active]

    @property
    def pending(self) -> list[Message]:
        return []

    @property
    def usage(self) -> Usage:
        return self._usage

    def config(self) -> dict[str, Any]:
        return {"preset": self.kind, "stand_in": True, "params": self.params}


def stand_in_engine(unit: Any, model: Any, on_event: Callable[[SummaryEvent], None]) -> StandInEngine:
    return StandInEngine(unit, model, on_event)


class StandInQA:
    """Answers with the last words of the transcript line that shares most words with the
    question; judges CORRECT when candidate and reference share a word. Free, instant, fixed."""

    name = QA_SPEC
    context_window = 1_000_000

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = request.messages[-1].content
        if request.prompt_id.startswith("qa-judge"):
            ref = prompt.split("Reference: ", 1)[1].split("\n", 1)[0].lower().split()
            cand = prompt.split("Candidate: ", 1)[1].lower().split()
            text = "CORRECT" if set(ref) & set(cand) else "WRONG"
        else:
            transcript, _, question = prompt.rpartition("\n\nQuestion: ")
            words = {w for w in question.lower().rstrip("?").split() if len(w) > 3}
            lines = transcript.splitlines() or [""]
            best = max(lines, key=lambda line: (len(words & set(line.lower().split())), line))
            hits = len(words & set(best.lower().split()))
            text = " ".join(best.split()[-6:]) if hits else "No information available"
        digest = int(hashlib.sha256(prompt.encode()).hexdigest()[:4], 16)
        return Completion(text=text, input_tokens=len(prompt) // 4, output_tokens=1 + digest % 7,
                          model=self.name)


def stand_in_models(spec: str) -> Any:
    """The injected model builder: the stand-in model for every ``fake:`` spec (summarizer and
    QA), none for offline specs."""
    return StandInQA() if spec.startswith("fake:") else None


def write_parity_dataset(path: Any) -> None:
    """A canonical JSONL with reference summaries (so ``rouge_l`` is scored): two synthetic chat
    conversations whose first sessions get a human-style reference."""
    from rollsum_evals.data import load
    from rollsum_evals.data.jsonl import write_jsonl
    from rollsum_evals.data.types import Conversation, Reference

    convs = []
    for c in load("synth:chat?conversations=2&messages=60&seed=5"):
        ids = [m.id or "" for m in c.messages]
        refs = (Reference("r1", " ".join(_gist(m.content) for m in c.messages[:12]), tuple(ids[:12])),
                Reference("r2", " ".join(_gist(m.content) for m in c.messages[12:30:2]), tuple(ids[12:30])))
        convs.append(Conversation(c.id, c.messages, c.probes, refs, c.meta))
    write_jsonl(convs, path)
