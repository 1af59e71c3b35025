"""Context assembly: where the summary goes in the messages sent to the main model.

Each seed put its summary somewhere else (a bracketed assistant message, a markdown heading
before recent history, a system message after the system prompt, a tagged system message, an
assistant message between a preserved head and tail). The position and wording matter to the
main model, so they are part of a preset, not an afterthought: one `ContextFormat` per seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rollsum.types import Message, Role, SummaryRecord

Position = Literal["after-system", "after-head"]


@dataclass(frozen=True, slots=True)
class ContextFormat:
    """How the rolling summary is rendered into the context.

    `template` receives ``{summary}`` (the budgeted summary text) and ``{depth}``.
    ``after-head`` places the summary after the first `head` active messages (seed 004's
    preserved head zone); ``after-system`` places it right after any system messages.
    """

    name: str
    role: Role
    template: str
    position: Position = "after-system"
    tag: str | None = None

    def summary_message(self, text: str, record: SummaryRecord | None) -> Message:
        depth = record.depth if record is not None else 0
        meta = {"rollsum": "summary"}
        if self.tag:
            meta["tag"] = self.tag.format(depth=depth)
        if record is not None:
            meta["summary_id"] = record.id
        return Message(role=self.role, content=self.template.format(summary=text, depth=depth),
                       id=f"summary:{record.id}" if record is not None else None, meta=meta)

    def assemble(self, *, system: str | None, pinned: Sequence[Message], active: Sequence[Message],
                 summary: Message | None, head: int = 0) -> list[Message]:
        out: list[Message] = []
        if system:
            out.append(Message(role="system", content=system))
        out.extend(pinned)
        if summary is None:
            out.extend(active)
        elif self.position == "after-head":
            out.extend(active[:head])
            out.append(summary)
            out.extend(active[head:])
        else:
            out.append(summary)
            out.extend(active)
        return out


FORMATS: dict[str, ContextFormat] = {
    f.name: f
    for f in (
        # seed 000: the rolling summary rides in the history as a bracketed assistant turn.
        ContextFormat("bracketed-assistant", "assistant", "[Summary of the earlier conversation: {summary}]"),
        # seed 001: a clearly headed section that comes before the recent verbatim history.
        ContextFormat("earlier-heading", "system", "## Earlier in this conversation\n{summary}"),
        # seed 002: a system message right after the system prompt.
        ContextFormat("system-summary", "system", "[Previous Conversation Summary]\n{summary}"),
        # seed 003: a synthetic system message tagged with the chain depth.
        ContextFormat("tagged-system", "system", "<summary depth=\"{depth}\">\n{summary}\n</summary>",
                      tag="summary-depth:{depth}"),
        # seed 004: an assistant message between the preserved head and the tail.
        ContextFormat("head-summary-tail", "assistant", "[Conversation Summary]\n{summary}",
                      position="after-head"),
        # baselines: nothing to render, but a format is still needed for assembly.
        ContextFormat("plain", "system", "{summary}"),
    )
}


def get_format(name: str) -> ContextFormat:
    from rollsum.errors import ConfigError

    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(f"unknown context format {name!r}; known: {', '.join(sorted(FORMATS))}") from None


def budget_summary(text: str, budget_tokens: int, *, min_tokens: int,
                   count: Callable[[str], int]) -> tuple[str, str | None]:
    """Fit a rendered summary into its share of the budget; say so when it had to cut.

    Seed 002's recursive-overflow rule: never more than the share; below `min_tokens` of room
    the summary is omitted with a marker rather than squeezed into something useless.
    Returns (text, note) where note is None when nothing was cut.
    """
    counter = count
    if budget_tokens < min_tokens:
        note = f"summary omitted: budget {budget_tokens} < {min_tokens} tokens"
        return "[Summary omitted - insufficient budget]", note
    n = counter(text)
    if n <= budget_tokens:
        return text, None
    marker = "\n[Summary truncated]"
    keep_chars = max(0, int(len(text) * (budget_tokens - counter(marker)) / max(n, 1)))
    cut = text[:keep_chars]
    while cut and counter(cut + marker) > budget_tokens:
        cut = cut[: int(len(cut) * 0.95)]
    return cut + marker, f"summary truncated from {n} to {budget_tokens} tokens"
