"""How a span of messages is shown to a summarizer model, and how it is cut when it cannot fit.

Kept apart from the summarizers so the prompted and structured summarizers render and chunk a
span the same way, and so the cutting rules (always visible, always reported) live in one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rollsum.tokens import TokenCounter
from rollsum.types import Message

NO_PREVIOUS = "None (start of conversation)"
TRUNCATION_MARKER = "\n[... {n} characters omitted ...]\n"
CAP_MARKER = " [... {n} more characters cut]"
TRIM_MARKER = "[... {n} earlier messages trimmed from this transcript ...]"
NOISE_DIGEST = "[tool output filtered: {lines} lines, {chars} chars]"
_ERROR_RE = re.compile(r"error|failed|failure|exception|traceback|fatal", re.I)

_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System"}


def speaker(m: Message) -> str:
    if m.role == "tool":
        return f"Tool ({m.name})" if m.name else "Tool"
    return _SPEAKERS[m.role]


def render_line(m: Message, max_chars: int | None = None) -> str:
    """One transcript line; with `max_chars`, the content is capped there with a visible marker
    (seed 002's LLM mode sends at most 1,000 characters of each message)."""
    text = m.content.strip()
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + CAP_MARKER.format(n=len(text) - max_chars)
    return f"{speaker(m)}: {text}"


def filter_noise(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Seed 003: "filter out purely mechanical/tool/system noise unless essential".

    System messages (instructions, not conversation) are left out; a tool result is reduced to a
    one-line digest that keeps what is essential: its first line (what ran) and the first line
    reporting an error. What the user and assistant said is untouched. Returns the messages and
    how many were filtered.
    """
    out: list[Message] = []
    changed = 0
    for m in messages:
        if m.role == "system":
            changed += 1
            continue
        if m.role != "tool":
            out.append(m)
            continue
        lines = m.content.strip().splitlines() or [""]
        digest = NOISE_DIGEST.format(lines=len(lines), chars=len(m.content))
        first = lines[0].strip()[:160]
        error = next((ln.strip()[:200] for ln in lines[1:] if _ERROR_RE.search(ln)), None)
        text = " ".join(p for p in (first, digest, f"error: {error}" if error else "") if p)
        if len(text) < len(m.content):
            out.append(replace(m, content=text))
            changed += 1
        else:
            out.append(m)
    return out, changed


def trim_oldest(lines: Sequence[str], budget: int, counter: TokenCounter) -> tuple[tuple[str, ...], str | None]:
    """Keep the newest lines that fit `budget` tokens, with a marker line for the rest.

    Seed 003's transcript cap ("cap at 8K, trimming oldest"): the previous summary carries the
    older story, the newest messages are what the summary must not miss. A newest line that
    alone is over the budget is cut from the middle. Returns (lines, note or None).
    """
    total = sum(counter.count(ln) + 1 for ln in lines)
    if total <= budget:
        return tuple(lines), None
    kept: list[str] = []
    used = counter.count(TRIM_MARKER.format(n=len(lines))) + 1
    for ln in reversed(lines):
        n = counter.count(ln) + 1
        if used + n > budget:
            if not kept:
                kept.append(truncate_middle(ln, max(1, budget - used - 1), counter))
            break
        kept.append(ln)
        used += n
    dropped = len(lines) - len(kept)
    kept.reverse()
    if dropped:
        kept.insert(0, TRIM_MARKER.format(n=dropped))
    return tuple(kept), (f"transcript trimmed to {budget} tokens: the oldest {dropped} of {len(lines)} "
                         "messages left out")


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


def chunk_lines(messages: Sequence[Message], budget: int, counter: TokenCounter,
                lines: Sequence[str] | None = None) -> Chunking:
    """Pack rendered lines into consecutive chunks of at most `budget` tokens each.

    `lines` are the messages already rendered (default: `render_line` of each). A line that
    alone exceeds the budget is truncated from the middle (and noted); lines are never
    reordered or split across chunks.
    """
    notes: list[str] = []
    chunks: list[tuple[str, ...]] = []
    current: list[str] = []
    used = 0
    rendered = list(lines) if lines is not None else [render_line(m) for m in messages]
    for i, (m, line) in enumerate(zip(messages, rendered)):
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
