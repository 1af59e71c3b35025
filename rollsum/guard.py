"""The window guard's arithmetic: which messages a guard step takes, and how far clipping cuts.

Why apart from the engine: these are the numbers behind the engine's promise
``context_tokens() <= context_window − reserved_output_tokens`` after every `add()`, and they
are easier to read (and to test) as functions of plain values -- token lists, a target, a
window -- than as methods reading a dozen engine fields. The engine decides *when* the guard
runs and applies what these return (`RollingSummarizer._guard`); nothing here changes state.

The three steps, in the order the engine tries them:

1. **compact** (`compaction`): summarize the oldest messages until the context is projected at
   the low-water mark (`target`), keeping the newest `min_tail`; at most one such summary per
   `gap` tokens added;
2. **evict** (`eviction`): move the oldest messages to pending until the context fits; never the
   newest;
3. **clip** (`clip_plan`, `clip_message`): only when what must stay is larger than the window on
   its own -- water-filling, every item above a common cap is cut to it.

Both 1 and 2 take messages in `order`: oldest first, a preserved head (seed 004's task
statement) last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rollsum.context import CLIP_MARKER, clip_text
from rollsum.policies.base import Decision, Policy, fold_allowed
from rollsum.redact import redacting_logger
from rollsum.settings import EngineSettings
from rollsum.tokens import TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord
from rollsum.window import Window

log = redacting_logger("rollsum.engine")  # the engine's logger: a clip is the engine's last resort


def gap(low_water: float, limit: int) -> int:
    """Tokens that must be added between two guard summaries: ``(1 − low_water) × limit``."""
    return max(1, int((1 - low_water) * limit))


def limit_name(context_window: int, reserved_output_tokens: int) -> str:
    """The limit as a reason names it: the window, or the budget left after the reserved room."""
    if reserved_output_tokens:
        return (f"budget {context_window - reserved_output_tokens} (window {context_window} − "
                f"{reserved_output_tokens} reserved)")
    return f"window {context_window}"


def _named(s: EngineSettings) -> str:
    return limit_name(s.context_window, s.reserved_output_tokens)


def order(head: int, limit: int) -> list[int]:
    """Active indices below `limit` in the order the guard takes them: oldest first, a
    preserved head (the first `head` messages) last."""
    head = min(head, limit)
    return list(range(head, limit)) + list(range(head))


def target(low_water: float, limit: int, pinned_tokens: int, summary_room: int) -> int:
    """Active tokens a compaction aims at: the low-water mark of the limit, minus what the
    pinned messages and a summary at its full share take."""
    return int(low_water * limit) - pinned_tokens - summary_room


def compaction(tokens: Sequence[int], active_tokens: int, head: int, min_tail: int, aim: int) -> list[int]:
    """Indices (in `order`) a compaction summarizes: taken until the active tokens left are at
    most `aim`, never the newest `min_tail`."""
    n = len(tokens)
    remaining = active_tokens
    picked: list[int] = []
    for i in order(head, n - min(min_tail, n)):
        if remaining <= aim:
            break
        picked.append(i)
        remaining -= tokens[i]
    return picked


def eviction(tokens: Sequence[int], head: int, over: int) -> list[int]:
    """Indices (in `order`) moved to pending to free `over` tokens; never the newest message."""
    picked: list[int] = []
    freed = 0
    for i in order(head, len(tokens) - 1):
        if freed >= over:
            break
        picked.append(i)
        freed += tokens[i]
    return picked


def compaction_decision(w: Window, s: EngineSettings, head: int, summary_room: int, context_tokens: int,
                        policy: Policy, summary: SummaryRecord | None) -> Decision | None:
    """Step 1 as the decision the engine plans: the oldest messages down to the low-water mark
    (whole tool groups, never the newest message), folded unless the depth cap says not."""
    n = len(w.active)
    aim = target(s.guard_low_water, s.limit, w.pinned_tokens, summary_room)
    picked = compaction(w.tokens, w.active_tokens, head, s.guard_min_tail, aim)
    indices = tuple(i for i in w.keep_tool_pairs(sorted(picked)) if i < n - 1)
    if not indices and not w.pending:
        return None
    depth = summary.depth + 1 if summary is not None else 0
    fold = fold_allowed(policy, depth)
    return Decision("summarize", indices,
                    f"window guard: context {context_tokens} > {_named(s)}; "
                    f"compacting to {s.guard_low_water:g} of it" + ("" if fold else " (depth cap: not folded)"),
                    fold=fold)


def eviction_decision(w: Window, s: EngineSettings, head: int, context_tokens: int) -> Decision | None:
    """Step 2 as the engine applies it: the oldest messages to pending until the context fits."""
    picked = eviction(w.tokens, head, context_tokens - s.limit)
    if not picked:
        return None
    reason = (f"window guard: context {context_tokens} > {_named(s)}; "
              f"moved {len(picked)} oldest messages out of the context until the next summary")
    return Decision("evict", tuple(sorted(picked)), reason, include_pending=False)


def clip_reason(s: EngineSettings, clipped: int, omitted: int, summary_hidden: bool) -> str:
    """What a clip event says it did."""
    what = [f"{clipped} message(s) clipped in the context"]
    if omitted:
        what.append(f"{omitted} message(s) left out, oldest (pinned) first")
    if summary_hidden:
        what.append("the summary left out")
    return (f"window guard: what must stay is larger than the {_named(s)} "
            "on its own: " + ", ".join(what) + "; stored messages unchanged")


@dataclass(frozen=True, slots=True)
class ClipPlan:
    """What the last resort does: cut every item above `cap`, leave pinned messages `omitted`
    out, and hide the summary when even markers cannot fit otherwise."""

    cap: float
    omitted: tuple[str, ...]
    hide_summary: bool


def clip_plan(items: Sequence[tuple[bool, str, int]], floors: Mapping[str, int], window: int,
              summary_tokens: int) -> ClipPlan:
    """Water-filling over `items` (pinned?, id, tokens), pinned ones first: the common cap every
    item above it is cut to, so small messages stay whole and the largest give up the most. An
    item cannot go below its `floors` (its clip marker). If no cap is feasible the summary is
    left out, then the oldest pinned messages, one at a time, then the oldest active ones (never
    the newest): when the store refused the guard's evictions, the markers of every message kept
    active could alone be past the window (62 messages' markers in a 976-token budget)."""
    omitted: list[str] = []

    def level(avail: int) -> float:
        """The common cap: every item above it is cut to it, the rest fit whole."""
        sizes = sorted(n for _, key, n in items if key not in omitted)
        left = avail
        for k, s in enumerate(sizes):
            share = left / (len(sizes) - k)
            if s > share:
                return share
            left -= s
        return float("inf")

    def feasible(c: float) -> bool:
        return all(n <= c or c >= floors[key] for _, key, n in items if key not in omitted)

    hide = False
    summary = summary_tokens
    cap = level(window - summary)
    if not feasible(cap) and summary:
        hide, summary = True, 0
        cap = level(window)
    newest = next((key for pinned, key, _ in reversed(items) if not pinned), None)
    for _, key, _ in items:  # pinned first, then the active ones, oldest first
        if feasible(cap) or key == newest:
            break
        omitted.append(key)
        cap = level(window - summary)
    return ClipPlan(cap, tuple(omitted), hide)


def clip(w: Window, counter: TokenCounter, window: int) -> tuple[int, int]:
    """Clip the window's display versions so what must stay fits `window` (`clip_plan`; the
    summary is left out if even markers cannot fit otherwise), and recount: (messages clipped,
    pinned messages left out)."""
    items: list[tuple[bool, Message, int]] = [(True, m, n) for m, n in zip(w.pinned, w.pinned_n)]
    items += [(False, w.cleared.get(m.id, m) if m.id is not None else m, n) for m, n in zip(w.active, w.tokens)]
    floors = {m.id or "": clip_floor(counter, m) for _, m, _ in items}
    plan = clip_plan([(p, m.id or "", n) for p, m, n in items], floors, window, w.summary_tokens)
    if plan.hide_summary:
        w.summary_hidden = True
    omitted = set(plan.omitted)
    clipped = 0
    for _, m, n in items:
        if m.id in omitted:
            continue
        if n > plan.cap:
            w.clips[m.id] = clip_message(counter, m, int(plan.cap))  # type: ignore[index]
            clipped += 1
    w.omitted = omitted
    w.recount(counter.count_message)
    return clipped, len(omitted)


def may_compact(guard_at: int | None, added_tokens: int, settings: EngineSettings, window: int,
                kept_tokens: int) -> bool:
    """Whether the guard's token bound allows a compaction now (at least `gap` tokens added
    since the last one, at `guard_at`) and one can help at all (what a compaction keeps -- the
    pinned messages and the summary's room, `kept_tokens` -- is under the window)."""
    if guard_at is not None and added_tokens - guard_at < gap(settings.guard_low_water, window):
        return False
    return kept_tokens < window


def fit(w: Window, counter: TokenCounter, window: int, settings: EngineSettings, conversation_id: str
        ) -> tuple[int, str]:
    """The impossible case: what must stay (the newest message, pinned system messages) is
    larger than the window on its own. Clip it in the context, never in the store (`clip`:
    water-filling; then the summary, then the oldest pinned left out) and say so: (messages
    clipped or left out, the clip event's reason)."""
    clipped, omitted = clip(w, counter, window)
    if w.context_tokens() > window:
        w.summary_hidden = True
    if w.context_tokens() > window:
        log.error("window guard could not fit %s into %d tokens", conversation_id, window)
    reason = clip_reason(settings, clipped, omitted, w.summary_hidden)
    log.warning("%s (conversation %s)", reason, conversation_id)
    return clipped + omitted, reason


def clip_event(w: Window, counter: TokenCounter, window: int, settings: EngineSettings, conversation_id: str,
               turn: int) -> SummaryEvent:
    """`fit` as the engine reports it: the ``clip`` event of `turn`, with the context's tokens
    before and after."""
    before = w.context_tokens()
    messages, reason = fit(w, counter, window, settings, conversation_id)
    return SummaryEvent("clip", turn, reason, messages=messages, tokens_before=before,
                        tokens_after=w.context_tokens(), guard=True)


def clip_floor(counter: TokenCounter, m: Message) -> int:
    """The least a clipped message can take: its marker alone."""
    return counter.count_message(Message(m.role, CLIP_MARKER.format(n=len(m.content)), id=f"{m.id}#f"))


def clip_message(counter: TokenCounter, m: Message, max_tokens: int) -> Message:
    """`m`'s display version cut to at most `max_tokens` (marker included); the stored message
    is never touched."""
    overhead = counter.count_message(Message(m.role, "", id=f"{m.id}#o"))
    room = max(0, max_tokens - overhead)
    while True:
        text = clip_text(m.content, room, counter.count)
        shown = replace(m, content=text, meta={**m.meta, "clipped_chars": len(m.content) - len(text)})
        if room <= 0 or counter.count_message(shown) <= max_tokens:
            return shown
        room -= 1  # a counter whose message framing is not constant: tighten and retry


__all__ = [
    "ClipPlan",
    "clip",
    "clip_floor",
    "clip_message",
    "clip_plan",
    "clip_reason",
    "compaction",
    "compaction_decision",
    "eviction",
    "eviction_decision",
    "fit",
    "gap",
    "limit_name",
    "may_compact",
    "order",
    "target",
]
