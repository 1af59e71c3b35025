"""What both peer adapters share: the budget split and turning a peer's summary into events."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Sequence

from rollsum.capabilities import Capabilities
from rollsum.errors import ConfigError
from rollsum.settings import EngineSettings
from rollsum.tokens import TokenCounter
from rollsum.types import Message, Role, SummaryEvent, SummaryRecord

SUMMARY_SHARE: float = EngineSettings().summary_share
"""The presets' share of the window for the summary: what a peer's summary may take too."""

ADAPTER = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)
"""The adapter itself calls nothing but the sweep's model (which answers for itself) and uses
its own prompts (the sweep's ``prompts`` do not reach it)."""

EXTRA_HINT = "install the peers extra: pip install 'rollsum[peers]' (nox -s peers)"


def versions(*distributions: str) -> str:
    """The installed versions of the adapted packages (part of the component's fingerprint)."""
    parts = []
    for d in distributions:
        try:
            parts.append(f"{d}=={importlib.metadata.version(d)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{d}==?")
    return ",".join(parts)


def split_budget(context_window: int, summary_share: float) -> tuple[int, int]:
    """(buffer tokens, summary tokens): together exactly the window."""
    if not 0 < summary_share < 1:
        raise ConfigError(f"summary_share must be in (0, 1), got {summary_share}")
    summary = max(1, int(context_window * summary_share))
    if context_window - summary < 1:
        raise ConfigError(f"context_window {context_window} leaves no room for messages")
    return context_window - summary, summary


def answer_tokens(summary_tokens: int, counter: TokenCounter) -> int:
    """The LLM's ``max_tokens``: the summary's share less the per-message overhead the counter
    adds when the summary sits in the context as a message."""
    return max(1, summary_tokens - int(getattr(counter, "overhead", 0)))


class SummaryLog:
    """Reports each new summary a peer writes as a rollsum ``summary`` event, with the messages
    it replaced (those that left the peer's buffer since the previous one), so the harness scores
    a peer's summary chain like a preset's (fact survival, ROUGE against what it covered)."""

    def __init__(self, prefix: str, counter: TokenCounter, model_name: str,
                 on_event: Callable[[SummaryEvent], None] | None) -> None:
        self.prefix = prefix
        self.counter = counter
        self.model_name = model_name
        self.on_event = on_event
        self.text = ""
        self.records: list[SummaryRecord] = []
        self._covered: set[str] = set()

    def update(self, text: str, added: Sequence[str], kept: Iterable[str], turn: int) -> None:
        """`text`: the peer's summary now; `added`: ids of every message added so far, in order;
        `kept`: ids still verbatim in the peer's buffer. A summary was made when messages left
        the buffer (both peers summarize exactly what they prune) or its text changed."""
        kept_set = set(kept)
        covered = tuple(i for i in added if i not in kept_set and i not in self._covered)
        if not text or (not covered and text == self.text):
            return
        self._covered.update(covered)
        previous = self.records[-1] if self.records else None
        record = SummaryRecord(
            id=f"{self.prefix}-{len(self.records)}", conversation_id="", text=text,
            parent_id=previous.id if previous else None, covered_ids=covered,
            start_id=covered[0] if covered else None, end_id=covered[-1] if covered else None,
            messages_covered=len(self._covered), tokens=self.counter.count(text), model=self.model_name,
            seq=len(self.records))
        self.text = text
        self.records.append(record)
        if self.on_event is not None:
            self.on_event(SummaryEvent(kind="summary", turn=turn, reason=f"{self.prefix} summarized",
                                       record=record, messages=len(covered)))


def rebuild(buffer: Iterable[tuple[str | None, str]], by_id: dict[str, Message], added: Sequence[str],
            log: SummaryLog, summary_role: Role) -> list[Message]:
    """The context a peer sends, from its buffer as (message id or None, content) pairs: a message
    it still holds word for word is the conversation's own (same id, so scorers see it verbatim);
    anything else is the peer's summary, as one `summary_role` message. Reports a new summary to
    `log`. Shared by every peer whose buffer mixes kept messages with its own summary text."""
    out: list[Message] = []
    summary = ""
    for mid, content in buffer:
        original = by_id.get(str(mid)) if mid is not None else None
        if original is not None and original.content == content:
            out.append(original)
        else:
            summary = str(content)
            out.append(Message(summary_role, summary))
    kept = [m.id for m in out if m.id is not None]
    log.update(summary, added, kept, len(added) - 1)
    return out

