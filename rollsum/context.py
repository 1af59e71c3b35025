"""Context assembly: where the summary goes in the messages sent to the main model.

Each seed put its summary somewhere else (a bracketed assistant message, a markdown heading
before recent history, a system message after the system prompt, a tagged system message, an
assistant message between a preserved head and tail). The position and wording matter to the
main model, so they are part of a preset, not an afterthought: one `ContextFormat` per seed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from rollsum.errors import ConfigError
from rollsum.registry import Registry
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


FORMATS: Registry[ContextFormat] = Registry("context format", {
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
}, name_of=lambda f: f.name)
"""What a preset's `context_format`, the ``context_format=`` override and the engine read
(`get_format`): a `ContextFormat` registered here (``FORMATS.register(fmt.name, fmt)``) can be
named wherever a built-in one can."""


def get_format(name: str) -> ContextFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(f"unknown context format {name!r}; known: {', '.join(sorted(FORMATS))}") from None


OMITTED_SUMMARY = "[Summary omitted - insufficient budget]"


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
        return OMITTED_SUMMARY, note
    n = counter(text)
    if n <= budget_tokens:
        return text, None
    marker = "\n[Summary truncated]"
    keep_chars = max(0, int(len(text) * (budget_tokens - counter(marker)) / max(n, 1)))
    cut = text[:keep_chars]
    while cut and counter(cut + marker) > budget_tokens:
        cut = cut[: int(len(cut) * 0.95)]
    return cut + marker, f"summary truncated from {n} to {budget_tokens} tokens"


def summary_room(fmt: ContextFormat, budget_tokens: int, count: Callable[[str], int],
                 count_message: Callable[[Message], int]) -> int:
    """Tokens the summary message can take in a context at most, framing included."""
    return count_message(fmt.summary_message("", None)) + max(budget_tokens, count(OMITTED_SUMMARY)) + 2


def shown_summary(record: SummaryRecord, fmt: ContextFormat, budget_tokens: int, *, min_tokens: int,
                  count: Callable[[str], int]) -> tuple[Message, str | None]:
    """The summary message a context shows for `record`: rendered, fitted to its budget
    (`budget_summary`), in the format's framing; with the note saying what was cut, if anything."""
    text, note = budget_summary(record.render(), budget_tokens, min_tokens=min_tokens, count=count)
    return fmt.summary_message(text, record), note


CLIP_MARKER = "[…{n} chars clipped to fit the context window…]"
"""Shown in place of the middle of a message clipped by the window guard (the stored message
is never altered): the model sees that something was cut and how much."""
APPEND_MARKER = "[… earlier summary content truncated …]"


def clip_text(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """`text` cut from the middle to at most `max_tokens` with `CLIP_MARKER` in the gap.

    The start (what the message is) and the end (its conclusion, the question asked) carry
    the most. Returns the marker alone (possibly over budget) when nothing else fits: callers
    size `max_tokens` from the marker's own cost (`RollingSummarizer._clip_floor`).
    """
    total = count(text)
    if total <= max_tokens:
        return text
    keep = int(len(text) * max_tokens / total)
    while keep > 0:
        head = keep - keep // 2
        tail = keep // 2
        out = text[:head] + CLIP_MARKER.format(n=len(text) - keep) + (text[len(text) - tail:] if tail else "")
        if count(out) <= max_tokens:
            return out
        keep = int(keep * 0.9) - 1
    return CLIP_MARKER.format(n=len(text))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _from_a_boundary(tail: str) -> str:
    """`tail` (the end of a longer text) from its first whole line, else its first whole
    sentence, else its first whole word: a cut never leaves half a statement behind."""
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        return tail[newline + 1:].lstrip("\n")
    sentence = _SENTENCE_END.search(tail)
    if sentence is not None and sentence.end() < len(tail):
        return tail[sentence.end():]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < 40 else tail


def append_summary(previous: str, new: str, budget_tokens: int,
                   count: Callable[[str], int]) -> tuple[str, str | None]:
    """`previous` + `new` within `budget_tokens`, cutting the *oldest* previous content first.

    Used past seed 003's depth cap, where the new summary is appended instead of folding the
    previous one in again: the newest content is what the conversation continues from, and the
    cut is marked in the text and reported (the note goes on the record).
    """
    previous, new = previous.strip(), new.strip()
    if not previous:
        return new, None
    sep = "\n\n"
    combined = previous + sep + new
    if count(combined) <= budget_tokens:
        return combined, None
    room = budget_tokens - count(new) - count(APPEND_MARKER + sep + sep)
    if room <= 0:
        return new, f"depth cap: dropped the previous summary ({len(previous)} chars) to fit {budget_tokens} tokens"
    keep = int(len(previous) * room / max(count(previous), 1))
    while keep > 0:
        cut = _from_a_boundary(previous[len(previous) - keep:])
        out = APPEND_MARKER + sep + cut + sep + new
        if count(out) <= budget_tokens:
            return out, (f"depth cap: cut the oldest {len(previous) - len(cut)} of {len(previous)} chars "
                         "of the previous summary")
        keep = int(keep * 0.9) - 1
    return new, f"depth cap: dropped the previous summary ({len(previous)} chars) to fit {budget_tokens} tokens"


# -- timestamps ---------------------------------------------------------------------------------

Timestamps = Literal["message", "session", "none"]
TIMESTAMPS: tuple[str, ...] = ("message", "session", "none")
"""How a context shows when its messages were written (`Message.created_at`), as a chat
application would: ``message`` stamps every message; ``session`` stamps the first message of
the context and every message after a gap (another day, or more than `SESSION_GAP_S` since the
previous message), so every message's day is visible from the stamp above it; ``none`` shows
nothing (the library's default: the context is exactly the stored messages)."""
SESSION_GAP_S = 3600
"""A pause longer than this starts a new sitting: a chat app shows a time header there."""


def _parse_time(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        # the wall-clock time as written (the speaker's day, as `rollsum.summarizers.dates`)
        return datetime.fromisoformat(ts.strip().replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        return None


def stamp_day(created_at: str | None) -> date | None:
    """The day a context's stamp shows for a message with this `created_at`, or None when a
    context never stamps it (no time, or a text `datetime.fromisoformat` cannot read, such as
    "2024-03-04 09:00:00 UTC"). The harness's scorer asks this, not a more lenient parse, so a
    day counts as shown exactly when the library would show it."""
    when = _parse_time(created_at)
    return None if when is None else when.date()


def format_stamp(when: datetime) -> str:
    """``[8 May 2023, 13:56]``: the written (wall-clock) date and time of the timestamp, in the
    date form the summarizers write (`rollsum.summarizers.dates.format_date`), so a reader and
    a matcher see the same calendar words in stamps and summaries."""
    from rollsum.summarizers.dates import format_date

    return f"[{format_date(when.date())}, {when.hour:02d}:{when.minute:02d}]"


def shown_times(messages: Sequence[Message], mode: str) -> list[str | None]:
    """The stamp shown before each message of a context under `mode` (None: no stamp). Items
    without a parseable `created_at` (summaries, engine text) never get one and do not break a
    sitting. A ValueError names an unknown mode."""
    if mode not in TIMESTAMPS:
        raise ValueError(f"timestamps {mode!r}: expected one of {', '.join(TIMESTAMPS)}")
    out: list[str | None] = []
    prev: datetime | None = None
    for m in messages:
        when = None if mode == "none" else _parse_time(m.created_at)
        if when is None:
            out.append(None)
            continue
        new_sitting = (prev is None or when.date() != prev.date()
                       or abs((when - prev).total_seconds()) > SESSION_GAP_S)
        out.append(format_stamp(when) if mode == "message" or new_sitting else None)
        prev = when
    return out


def fitted_times(messages: Sequence[Message], mode: str, *, room: int | None = None,
                 count_message: Callable[[Message], int] | None = None) -> list[str | None]:
    """The stamps `with_timestamps` shows (`shown_times`, less those the window has no room
    for): one rule for the library's `context(timestamps=...)` and for the harness, which
    rebuilds the stamped context of every turn from its trace and scores what it shows.

    `room` (with `count_message`): the tokens the stamps may add in all. The engine packs its
    window without them, so a context at its window would pass it by every stamp (~8 tokens
    each: under ``message`` on short messages, nearly double). Stamps that do not fit are left
    out, oldest first: the newest messages keep theirs (a reader resolves "yesterday" in what
    was just said), and no message's text is ever cut for a stamp. Oldest first also keeps a
    ``session`` context honest: the stamps left are the newest ones, so a message never sits
    under an older sitting's stamp whose own stamp was left out (it has none above it)."""
    import dataclasses

    shown = shown_times(messages, mode)
    if room is None or count_message is None:
        return shown
    cost = {i: count_message(dataclasses.replace(messages[i], content=f"{s} {messages[i].content}"))
               - count_message(messages[i]) for i, s in enumerate(shown) if s is not None}
    extra = sum(cost.values())
    for i, c in cost.items():  # oldest first
        if extra <= room:
            break
        shown[i] = None
        extra -= c
    return shown


def with_timestamps(messages: Sequence[Message], mode: str, *, room: int | None = None,
                    count_message: Callable[[Message], int] | None = None) -> list[Message]:
    """`messages` with their stamps (`fitted_times`: within `room` when it is given) written
    before the content. The stored messages are never altered: a stamped copy is what the
    main model is sent."""
    import dataclasses

    shown = fitted_times(messages, mode, room=room, count_message=count_message)
    return [m if s is None else dataclasses.replace(m, content=f"{s} {m.content}") for m, s in zip(messages, shown)]
