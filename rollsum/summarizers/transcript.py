"""How a span of messages is shown to a summarizer model, and how it is cut when it cannot fit.

Kept apart from the summarizers so the prompted and structured summarizers render and chunk a
span the same way, and so the cutting rules (always visible, always reported) live in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rollsum.tokens import TokenCounter
from rollsum.types import Message

NO_PREVIOUS = "None (start of conversation)"
TRUNCATION_MARKER = "\n[... {n} characters omitted ...]\n"

_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System"}


def speaker(m: Message) -> str:
    if m.role == "tool":
        return f"Tool ({m.name})" if m.name else "Tool"
    return _SPEAKERS[m.role]


def render_line(m: Message) -> str:
    return f"{speaker(m)}: {m.content.strip()}"


def render_must_keep(facts: Sequence[str]) -> str:
    if not facts:
        return ""
    return "\nKeep these verbatim if still relevant:\n" + "\n".join(f"- {f}" for f in facts) + "\n"


def truncate_middle(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """`text` cut from the middle to at most `max_tokens`, with a marker saying how much went.

    The middle goes because the start of a message (what it is) and its end (the outcome, the
    error) carry the most.
    """
    total = counter.count(text)
    if total <= max_tokens:
        return text
    keep = int(len(text) * max_tokens / max(total, 1))
    while keep > 0:
        omitted = len(text) - keep
        head = keep - keep // 2
        out = text[:head] + TRUNCATION_MARKER.format(n=omitted) + text[len(text) - keep // 2:]
        if counter.count(out) <= max_tokens:
            return out
        keep = int(keep * 0.9) - 1
    return TRUNCATION_MARKER.format(n=len(text)).strip()[: max(max_tokens, 0) * 2]


@dataclass(frozen=True, slots=True)
class Chunking:
    chunks: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]


def chunk_lines(messages: Sequence[Message], budget: int, counter: TokenCounter) -> Chunking:
    """Pack rendered lines into consecutive chunks of at most `budget` tokens each.

    A line that alone exceeds the budget is truncated from the middle (and noted); lines are
    never reordered or split across chunks.
    """
    notes: list[str] = []
    chunks: list[tuple[str, ...]] = []
    current: list[str] = []
    used = 0
    for i, m in enumerate(messages):
        line = render_line(m)
        n = counter.count(line) + 1
        if n > budget:
            cut = truncate_middle(line, budget - 1, counter)
            notes.append(f"truncated message {m.id or f'#{i}'} from {len(line)} to {len(cut)} chars")
            line, n = cut, counter.count(cut) + 1
        if current and used + n > budget:
            chunks.append(tuple(current))
            current, used = [], 0
        current.append(line)
        used += n
    if current:
        chunks.append(tuple(current))
    return Chunking(tuple(chunks), tuple(notes))
