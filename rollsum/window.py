"""What the context holds and where each message is: pinned, active or pending (`Window`).

Why one object: the engine kept this as seven parallel lists plus three display maps, updated
in a dozen places; every place had to keep the lists the same length, the running totals equal
to their sums and the display versions (a clipped or cleared message) in step with removals.
`Window` owns those invariants:

- ``pinned`` / ``pinned_n`` / ``pinned_tokens``: system messages, kept out of every summary;
- ``active`` / ``active_seq`` / ``tokens`` / ``active_tokens``: the verbatim messages in the
  context, oldest first, with their store sequence numbers and what each takes *in the context*
  (clipped or cleared, when it is);
- ``pending`` / ``pending_seq``: messages moved out of the context (never lost), in
  conversation order, folded into the next summary;
- ``clips`` / ``cleared`` / ``omitted``: the display versions the window guard and tool-result
  clearing show instead of a stored message, and the pinned ids left out;
- ``summary`` / ``summary_tokens`` / ``summary_hidden``: the summary message the context shows
  (or, in the guard's last resort, leaves out).

The lists stay parallel rather than one list of records on purpose: a policy's `WindowState`
takes ``active`` and ``tokens`` as they are, without a copy per message, and an eviction deletes
runs of positions from each list in place (`remove_at`), so its cost is what it removes, not the
window's length; `keep_tool_pairs` looks only at the tool groups that hold a decided position
(`units_holding`). Both keep evict-window linear at a 200k window (issue #20, item 2).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any

from rollsum.cadence import Cadence
from rollsum.clearing import ClearQueue, ClearSettings, cleared_view, never_cleared
from rollsum.policies._util import units_holding
from rollsum.policies.base import WindowState
from rollsum.store.base import StoredMessage
from rollsum.types import Message, SummaryRecord

STATE_FIELDS = ("messages", "tokens", "active_tokens", "pinned_tokens", "summary_tokens", "summary", "chain_length",
                "messages_covered", "total_added", "since_summary", "pending", "pending_messages",
                "evicted_since_summary", "dropped", "min_tokens_since_summary", "context_window", "passes",
                "last_failed", "since_attempt", "attempts", "total_evicted", "summary_budget")
"""The order `policy_state` passes a `WindowState`'s values in (its field order)."""


_SEQ, _MESSAGE, _TOKENS, _ID = itemgetter(0), itemgetter(1), itemgetter(2), attrgetter("id")
"""`Window.span`'s (sequence number, message, tokens) fields, and a message's id, read in C."""


class Window:
    """Pinned, active and pending messages of one conversation, with their token counts."""

    __slots__ = ("active", "active_seq", "active_tokens", "cleared", "clearing", "clips", "omitted", "pending",
                 "pending_seq", "pinned", "pinned_n", "pinned_tokens", "summary", "summary_hidden", "summary_tokens",
                 "tokens")

    def __init__(self) -> None:
        self.pinned: list[Message] = []
        self.pinned_n: list[int] = []
        self.pinned_tokens = 0
        self.active: list[Message] = []
        self.active_seq: list[int] = []
        self.tokens: list[int] = []
        self.active_tokens = 0
        self.pending: list[Message] = []
        self.pending_seq: list[int] = []
        self.clips: dict[str, Message] = {}
        """The guard's last resort: display versions of clipped messages, by id."""
        self.cleared: dict[str, Message] = {}
        """Tool-result clearing (`rollsum.clearing`): display versions of cleared results, by id."""
        self.clearing: ClearQueue | None = None
        """What clearing would clear next, kept up to date as messages come and go (made on the
        first `clear_tool_results`: a window that never clears keeps none)."""
        self.omitted: set[str] = set()
        """Pinned messages the guard left out of the context."""
        self.summary: Message | None = None
        """The summary message as the context shows it (budgeted, in the preset's format)."""
        self.summary_tokens = 0
        self.summary_hidden = False
        """The guard's last resort left the summary out of the context."""

    def context_tokens(self) -> int:
        """What the context takes without a caller's system prompt: pinned, summary, active."""
        return self.pinned_tokens + (0 if self.summary_hidden else self.summary_tokens) + self.active_tokens

    def shown_summary(self) -> Message | None:
        return None if self.summary_hidden else self.summary

    # ------------------------------------------------------------------ adding

    def pin(self, message: Message, n: int) -> None:
        self.pinned.append(message)
        self.pinned_n.append(n)
        self.pinned_tokens += n

    def push(self, seq: int, message: Message, n: int) -> None:
        """A new active message (the newest)."""
        self.active.append(message)
        self.active_seq.append(seq)
        self.tokens.append(n)
        self.active_tokens += n
        if self.clearing is not None:
            self.clearing.push(seq, message, n)

    def park(self, seq: int, message: Message) -> None:
        """A pending message read back from the store (they come in conversation order)."""
        self.pending.append(message)
        self.pending_seq.append(seq)

    def load(self, rows: Iterable[StoredMessage], count: Callable[[Message], int]) -> tuple[int, int, int, int]:
        """Fill an empty window from a conversation's stored rows (an engine resuming it):
        (the next sequence number, tokens ever added, messages ever added except pinned ones,
        messages dropped)."""
        seq = tokens = added = dropped = 0
        for row in rows:
            m = row.message
            seq = max(seq, row.seq + 1)
            n = count(m)
            tokens += n
            if m.role == "system" and row.state == "active":
                self.pin(m, n)
                continue
            added += 1
            if row.state == "active":
                self.push(row.seq, m, n)
            elif row.state == "pending":
                self.park(row.seq, m)
            elif row.state == "dropped":
                dropped += 1
        return seq, tokens, added, dropped

    # ------------------------------------------------------------------ removing

    def remove(self, ids: set[str], at: Sequence[int] | None = None) -> list[tuple[int, Message]]:
        """Take messages out of the active window by id (they may not be contiguous).

        `at`, when the caller knows them, are the active positions of exactly those messages:
        they are cut out in runs, so an eviction costs what it removes, not the window's length
        (at a 200k window a rebuild per eviction made replay quadratic)."""
        if not ids:
            return []
        if at is not None:
            return self.remove_at(sorted(set(at)))
        flags = [m.id in ids for m in self.active]
        at = list(compress(range(len(flags)), flags))
        if not at:
            return []
        if at[-1] - at[0] == len(at) - 1:  # one run (a summary's span): cut out in place
            return self.remove_at(at)
        kept: list[Message] = []  # scattered: one rebuild, not a cut per run
        kept_seq: list[int] = []
        kept_tokens: list[int] = []
        removed: list[tuple[int, Message]] = []
        for m, s, n, gone in zip(self.active, self.active_seq, self.tokens, flags):
            if gone and m.id is not None:  # (gone: its id is in `ids`, so a str)
                removed.append((s, m))
                self.clips.pop(m.id, None)
                self.cleared.pop(m.id, None)
                if self.clearing is not None:
                    self.clearing.remove(s, m)
            else:
                kept.append(m)
                kept_seq.append(s)
                kept_tokens.append(n)
        self.active, self.active_seq, self.tokens = kept, kept_seq, kept_tokens
        self.active_tokens = sum(kept_tokens)
        return removed

    def discard(self, ids: AbstractSet[str], planned: Sequence[int]) -> None:
        """`remove` for a landing summary, which needs nothing back. Its active messages are
        usually still the run its job was planned on, from `planned[0]` on (a lag only appends
        after it): when the ids there are exactly `ids` (ids are unique in a window, so no
        other message has one of them), the run is cut in C -- no flag, position or tuple per
        message, ~4x cheaper for a since-last summary. Anything else, or display versions to
        forget, takes `remove`."""
        lo = planned[0] if planned else 0
        hi = lo + len(ids)
        active = self.active
        if ids and lo >= 0 and hi <= len(active) and not (self.clips or self.cleared or self.clearing is not None) \
                and ids == set(map(_ID, active[lo:hi])):
            freed = sum(self.tokens[lo:hi])
            del active[lo:hi], self.active_seq[lo:hi], self.tokens[lo:hi]
            self.active_tokens -= freed
            return
        self.remove(set(ids))

    def remove_at(self, positions: Sequence[int]) -> list[tuple[int, Message]]:
        """`remove` by ascending distinct active positions: runs deleted from the back, in place."""
        active, seqs, tokens = self.active, self.active_seq, self.tokens
        k = len(positions)
        run = k > 0 and positions[-1] - positions[0] == k - 1  # one run (a policy's span, a summary's)
        removed = [(seqs[i], active[i]) for i in positions]
        queue = self.clearing
        if self.clips or self.cleared or queue is not None:  # else there is no display version to forget
            for s, m in removed:
                if m.id is not None:
                    self.clips.pop(m.id, None)
                    self.cleared.pop(m.id, None)
                if queue is not None:
                    queue.remove(s, m)
        freed = 0
        while k > 0:
            stop = positions[k - 1] + 1
            k = 0 if run else k - 1
            while k > 0 and positions[k - 1] == positions[k] - 1:
                k -= 1
            start = positions[k]
            freed += sum(tokens[start:stop])
            del active[start:stop], seqs[start:stop], tokens[start:stop]
        self.active_tokens -= freed
        return removed

    def ids_at(self, indices: Sequence[int], pending: bool = False) -> list[str]:
        """The ids of the active messages at `indices` (and, with `pending`, of every pending
        one): what a removal tells the store before the window changes."""
        active = self.active
        ids = [m.id for i in indices if (m := active[i]).id is not None]
        if pending and self.pending:  # (no generator made for the usual empty pending)
            ids.extend(m.id for m in self.pending if m.id is not None)
        return ids

    def add_pending(self, removed: Sequence[tuple[int, Message]]) -> int:
        """Pending stays in conversation order whatever order evictions come in. Returns how
        many were added."""
        for s, m in removed:
            k = bisect.bisect(self.pending_seq, s)
            self.pending_seq.insert(k, s)
            self.pending.insert(k, m)
        return len(removed)

    def unpend(self, done: set[str]) -> None:
        """Pending messages a committed summary covered leave the window."""
        if self.pending:
            keep = [(s, m) for s, m in zip(self.pending_seq, self.pending) if m.id not in done]
            self.pending_seq = [s for s, _ in keep]
            self.pending = [m for _, m in keep]

    def clear_pending(self) -> int:
        """Every pending message leaves (dropped): how many there were."""
        n = len(self.pending)
        self.pending, self.pending_seq = [], []
        return n

    # ------------------------------------------------------------------ tool groups, head

    def keep_tool_pairs(self, indices: Sequence[int]) -> tuple[int, ...]:
        """Never split a tool call from its results across the summary boundary.

        Partial call/result groups are left out of the decision (the window keeps them whole);
        if that empties the decision, the groups are taken whole instead. Only the groups that
        hold a decided index are looked at (`units_holding`): the cost does not grow with the
        window.
        """
        if not indices:
            return ()
        lo, n = indices[0], len(indices)
        if lo >= 0 and lo + n <= len(self.active) and tuple(indices) == tuple(range(lo, lo + n)):
            return self._keep_tool_pairs_run(lo, lo + n)
        chosen = set(indices)
        shrunk: list[int] = []
        grown: list[int] = []
        for a, b in units_holding(self.active, chosen):
            g = range(a, b)
            grown.extend(g)
            if all(k in chosen for k in g):
                shrunk.extend(g)
        return tuple(shrunk) if shrunk else tuple(grown)

    def _keep_tool_pairs_run(self, lo: int, hi: int) -> tuple[int, ...]:
        """`keep_tool_pairs` for one run of positions ``lo .. hi-1`` (what policies decide almost
        always: `Decision.span`). The tool groups partition the window, so the groups holding a
        run are consecutive, and every one of them but the first and the last lies inside it:
        only those two are looked at, and the answer is a run again."""
        ((first, first_stop),) = units_holding(self.active, (lo,))
        ((last_start, last),) = units_holding(self.active, (hi - 1,))
        start = lo if first == lo else first_stop  # the first group, if it sticks out, stays
        stop = hi if last == hi else last_start  # and so does the last one
        return tuple(range(start, stop)) if start < stop else tuple(range(first, last))

    def span(self, indices: Sequence[int], include_pending: bool, count: Callable[[Message], int],
             max_tokens: int) -> tuple[tuple[Message, ...], frozenset[str]]:
        """What a summary of active `indices` (and the pending messages) covers, in conversation
        order, capped at `max_tokens` of messages (at least one; the rest waits for the next
        request), and the ids among them that are active now."""
        active, n = self.active, len(indices)
        lo = indices[0] if n else 0
        if n and not (include_pending and self.pending) and 0 <= lo <= len(active) - n \
                and tuple(indices) == tuple(range(lo, lo + n)):
            # one run of active positions and no pending (a since-last summary): already in
            # conversation order (`active` is), so slices and sums in C, not a tuple per message
            tokens = self.tokens[lo:lo + n]
            if sum(tokens) <= max_tokens and min(tokens) >= 0:
                run = tuple(active[lo:lo + n])
                return run, frozenset([m.id for m in run])  # type: ignore[misc]
        chosen = [(self.active_seq[i], active[i], self.tokens[i]) for i in indices]
        if include_pending:
            chosen += [(s, m, count(m)) for s, m in zip(self.pending_seq, self.pending)]
        chosen.sort(key=_SEQ)
        if sum(map(_TOKENS, chosen)) <= max_tokens and min(map(_TOKENS, chosen), default=0) >= 0:
            # all of it fits (the usual request): every active one in `indices` is taken
            return tuple(map(_MESSAGE, chosen)), frozenset(map(_ID, map(active.__getitem__, indices)))
        taken: list[Message] = []
        used = 0
        for _, m, n in chosen:
            if taken and used + n > max_tokens:
                break
            taken.append(m)
            used += n
        ids = frozenset(active[i].id for i in indices) & {m.id for m in taken}
        return tuple(taken), ids  # type: ignore[return-value]

    def head(self, policy: object) -> int:
        """Active messages kept before the summary (seed 004's head; the policy's `head_end`
        when it has one: a head that ends in a tool call keeps the call's results)."""
        end = getattr(policy, "head_end", None)
        return int(end(self.active)) if callable(end) else int(getattr(policy, "head", 0))

    # ------------------------------------------------------------------ display

    @property
    def altered(self) -> bool:
        """Some message is shown other than stored (clipped, cleared, or a pinned one left out)."""
        return bool(self.clips or self.omitted or self.cleared)

    def display(self, m: Message) -> Message:
        """What `m` looks like in the context: clipped, cleared, or as stored."""
        if m.id is None:
            return m
        return self.clips.get(m.id) or self.cleared.get(m.id, m)

    def shown_pinned(self) -> list[Message]:
        return [self.display(m) for m in self.pinned if m.id not in self.omitted]

    def shown_active(self) -> list[Message]:
        if not (self.clips or self.cleared or self.omitted):
            return list(self.active)
        return [self.display(m) for m in self.active if m.id not in self.omitted]

    def shown(self) -> tuple[Sequence[Message], Sequence[Message], Message | None]:
        """What a context shows: (pinned, active, summary), as display versions when the guard
        or clearing altered some (the lists themselves otherwise: no copy, do not change them)."""
        if self.altered:
            return self.shown_pinned(), self.shown_active(), self.shown_summary()
        return self.pinned, self.active, self.shown_summary()

    def clear_tool_results(self, rule: ClearSettings, context_tokens: int, count: Callable[[Message], int]
                           ) -> int | None:
        """Show old tool results as placeholders, as `rule` asks at this context size
        (`rollsum.clearing.ClearQueue`: O(1) a message, not a pass over the window). Returns
        the sequence number of the newest result cleared now (None: none)."""
        queue = self.clearing
        if queue is None or (queue.rule is not rule and queue.rule != rule) or queue.count != count:  # a new rule
            queue = self.clearing = ClearQueue(rule, count, self.cleared)
            for s, m in zip(self.active_seq, self.active):
                queue.push(s, m, count(m))
        found = queue.take(context_tokens)
        if not found:
            return None
        self.show_cleared({self._position(s): shown for s, shown in found.items()}, count)
        return max(found)

    def clear_through(self, rule: ClearSettings, seq: int, count: Callable[[Message], int]) -> None:
        """Clear again every result in the window up to sequence number `seq` that `rule` may
        clear (a resumed engine: the engine it resumes had cleared them, and clearing is sticky).

        Exact because a clearing clears every result older than the newest ``keep`` at once:
        after it, every clearable result up to the newest one it cleared is cleared, and stays
        so while in the window (`rollsum.clearing`)."""
        found: dict[int, Message] = {}
        for i, (s, m) in enumerate(zip(self.active_seq, self.active)):
            if s > seq:
                break
            if m.role != "tool" or m.id in self.cleared or never_cleared(rule, m):
                continue
            shown, saved = cleared_view(m, count(m), count)
            if saved > 0:  # as `ClearQueue` decides: a shorter result stays as it is
                found[i] = shown
        if found:
            self.show_cleared(found, count)

    def _position(self, seq: int) -> int:
        """Where the active message with sequence number `seq` is (they are in sequence order)."""
        i = bisect.bisect_left(self.active_seq, seq)
        return i if i < len(self.active_seq) and self.active_seq[i] == seq else self.active_seq.index(seq)

    def show_cleared(self, found: Mapping[int, Message], count: Callable[[Message], int]) -> None:
        """Tool results cleared now (active position -> placeholder)."""
        for i, shown in found.items():
            self.cleared[shown.id] = shown  # type: ignore[index]
            n = count(shown)
            self.active_tokens += n - self.tokens[i]
            self.tokens[i] = n

    def unclip(self, count: Callable[[Message], int]) -> None:
        """Back to the full messages (and the summary) before deciding again: the guard redoes
        clipping only if it is still needed."""
        if not (self.clips or self.omitted or self.summary_hidden):
            return
        self.clips.clear()
        self.omitted.clear()
        self.summary_hidden = False
        self.recount(count)

    def recount(self, count: Callable[[Message], int]) -> None:
        """Token lists from the display versions (after clipping or unclipping)."""
        self.pinned_n = [0 if m.id in self.omitted else count(self.display(m)) for m in self.pinned]
        self.pinned_tokens = sum(self.pinned_n)
        self.tokens = [0 if m.id in self.omitted else count(self.display(m)) for m in self.active]
        self.active_tokens = sum(self.tokens)



class _Filling:
    """`WindowState`'s slots in its order, without its frozen ``__setattr__``: `policy_state`
    fills one with plain attribute stores, then makes it the `WindowState` it is laid out as.

    Why: the policy's snapshot is built on every message, and a frozen dataclass's generated
    ``__init__`` stores each of its 22 fields through ``object.__setattr__(self, name, value)``
    -- most of what `policy_state` cost (2.0 µs against 0.35). ``__class__`` assignment
    checks that the two layouts are the same (same slots, same order) and raises TypeError
    otherwise, so a field added to `WindowState` without `STATE_FIELDS` following fails on the
    first call, never silently. WindowState has no ``__post_init__`` and no default factory:
    nothing its ``__init__`` does is skipped. `tests/rollsum/test_window.py` compares the
    result with the keyword-built state."""

    __slots__ = STATE_FIELDS


def policy_state(w: Window, c: Cadence, history: Sequence[SummaryRecord], dropped: int, context_window: int,
                 passes: int, summary_room: int, earlier: int = 0) -> WindowState:
    """The policy's snapshot of a window and its counts (built on every message: see `_Filling`).
    `earlier`: records of the chain before `history`'s first, not read (an O(window) open)."""
    summary = history[-1] if history else None
    s: Any = _Filling()
    s.messages = w.active
    s.tokens = w.tokens
    s.active_tokens = w.active_tokens
    s.pinned_tokens = w.pinned_tokens
    s.summary_tokens = 0 if w.summary_hidden else w.summary_tokens
    s.summary = summary
    s.chain_length = len(history) + earlier
    s.messages_covered = summary.messages_covered if summary is not None else 0
    s.total_added = c.total_added
    s.since_summary = c.since_summary
    s.pending = len(w.pending)
    s.pending_messages = w.pending
    s.evicted_since_summary = c.evicted_since
    s.dropped = dropped
    s.min_tokens_since_summary = c.min_tokens_since
    s.context_window = context_window
    s.passes = passes
    s.last_failed = c.in_backoff()
    s.since_attempt = c.since_attempt
    s.attempts = c.attempts
    s.total_evicted = c.total_evicted
    s.summary_budget = summary_room
    s.__class__ = WindowState
    state: WindowState = s
    return state


__all__ = ["STATE_FIELDS", "Window", "policy_state"]
