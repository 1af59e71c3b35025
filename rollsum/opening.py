"""Reading a stored conversation back: what an engine resumes from when it opens one.

Why its own module: the engine (`rollsum.engine`) is the state machine; how much of the store an
open reads is a separate question with plain inputs (a store, a conversation id, a token counter)
and one answer (`Opened`). The docs endorse building an engine from its store for every request,
so an open must not grow with the conversation:

- **In O(window)** (`_window_open`), when the store keeps its totals (`WindowedStore`: every
  method present), they were made by this engine's token counter, and the conversation has a
  saved cadence: the active and pending rows, the totals (next sequence number, rows, drops,
  summaries, tokens) and the latest summary record. The earlier records are read when the
  engine's `history` is first asked for (`full_history`).
- **From every row** (`_full_open`) otherwise: a store with `Store` alone, a token total another
  counter made (counted again here, then kept, so the next open is the first kind), or no saved
  cadence (the rate limits are then rebuilt from every row, `Cadence.resumed`).

Then `reshow` shows what the last `add()` showed but the store does not keep. And the one write
that belongs with them: `store_aside` stores an id-less message under another id when the
application took its own (`counted_adder` gives the store's `add_counted`). Both ways give
the same engine (tests/rollsum/test_open_window.py); `benchmarks/bench_open.py`
measures them (docs/storage.md, "Opening costs the window, not the conversation").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from rollsum import cadence, guard
from rollsum.cadence import Cadence, Key
from rollsum.errors import DuplicateMessageId
from rollsum.redact import redacting_logger
from rollsum.settings import EngineSettings
from rollsum.store import claim
from rollsum.store.base import Store, StoreTotals
from rollsum.tokens import TokenCounter
from rollsum.types import Message, SummaryRecord
from rollsum.window import Window

log = redacting_logger(__name__)

Adder = Callable[[str, int, Message, int, str], None]
"""`WindowedStore.add_counted`: store a message and add its tokens to the running total."""


@dataclass(slots=True)
class Opened:
    """An engine's state as its store holds it (the fields the engine resumes)."""

    window: Window
    cadence: Cadence
    history: list[SummaryRecord]
    """The summary chain as read: all of it, or only the latest record (`earlier` before it)."""
    earlier: int
    """Records of the chain before `history`'s first, not read yet (`full_history` reads them)."""
    seq: int
    """The next message's sequence number."""
    added_tokens: int
    dropped: int
    saved_key: Key | None
    """The saved cadence's key (None: none was kept)."""


def claim_and_resume(store: Store, conversation_id: str, owner: str, takeover: bool, holder: object,
                     resume: Callable[[], None]) -> Callable[[], object] | None:
    """Claim the conversation for `owner` (`rollsum.store.claim`, released with `holder`), then
    `resume` it; returns the release. An open that fails after the claim (a damaged row, a read
    error, a bug) gives the claim back before its error goes on: it stayed while the half-built
    engine lived -- as long as the exception's traceback did -- so a retry in the handler, or
    every request while a logger kept the exception, was refused with "already open by another
    engine" instead of seeing the error."""
    release = claim(store, conversation_id, owner, takeover=takeover, holder=holder)
    try:
        resume()
    except BaseException:
        if release is not None:
            try:
                release()
            except Exception as err:  # the failed open's own error is the one to raise
                log.warning("conversation %r: a failed open could not give its claim back: %s", conversation_id, err)
        raise
    return release


def counted_adder(store: Store, token_key: str | None) -> Adder | None:
    """The store's `add_counted` when it keeps a token total and the counter has a key (else
    the engine stores with `Store.add_message`, and every open counts the rows again)."""
    add = getattr(store, "add_counted", None) if token_key is not None else None
    return add if callable(add) else None


def store_aside(store: Store, adder: Adder | None, cid: str, seq: int, message: Message, n: int,
                token_key: str | None, taken: DuplicateMessageId) -> Message:
    """An id-less message whose id (``<cid>/<seq>``) the application had given an earlier one
    ("x/1" at turn 0), stored as ``<cid>/<seq>/auto``: without another id every message added
    without one was refused from then on. An id the application gives twice is still refused
    (the engine re-raises). Returns the message as stored."""
    message = message.with_id(f"{cid}/{seq}/auto")
    try:
        if adder is not None:
            adder(cid, seq, message, n, cast(str, token_key))
        else:
            store.add_message(cid, seq, message)
    except DuplicateMessageId:
        raise taken from None  # (SQLite's row number taken too: another writer) the first word
    return message


def open_conversation(store: Store, conversation_id: str, count: Callable[[Message], int],
                      token_key: str | None) -> Opened | None:
    """The conversation's state as stored, reading the least the store allows (module docstring);
    None when it holds no message of it."""
    totals = _window_open(store, conversation_id, count, token_key)
    if isinstance(totals, Opened):
        return totals
    return _full_open(store, conversation_id, count, token_key, totals)


def _window_open(store: Store, cid: str, count: Callable[[Message], int], key: str | None
                 ) -> Opened | StoreTotals | None:
    """An `Opened` read in O(window), or why not: the totals to correct (a token total that
    another counter made, or no cadence kept), or None (no totals kept: read every row)."""
    totals_of, rows_of = getattr(store, "totals", None), getattr(store, "window_rows", None)
    if key is None or not callable(totals_of) or not callable(rows_of) \
            or not callable(getattr(store, "set_token_total", None)):
        return None
    totals: StoreTotals | None = totals_of(cid)
    if totals is None or totals.rows == 0:  # none kept, or nothing stored: reading every row is cheap
        return totals
    if totals.tokens is None or totals.counter != key:
        return totals
    w, c = Window(), Cadence()
    w.load(rows_of(cid), count)
    c.total_added, c.attempts = totals.rows - len(w.pinned), totals.summaries  # as `Cadence.resumed`
    saved = cadence.load(store, cid, c)
    if saved is None:  # no cadence kept: the rate limits need every row
        return totals
    latest = store.latest_summary(cid) if totals.summaries else None
    history = [] if latest is None else [latest]
    return Opened(w, c, history, totals.summaries - len(history), totals.next_seq, totals.tokens,
                  totals.dropped, saved)


def _full_open(store: Store, cid: str, count: Callable[[Message], int], key: str | None,
               totals: StoreTotals | None) -> Opened | None:
    """Every row and summary record. A store that keeps a token total takes the one counted
    here, so the next open need not count."""
    rows = store.messages(cid)
    if not rows:
        return None
    w, c = Window(), Cadence()
    history = store.summaries(cid)
    seq, tokens, added, dropped = w.load(rows, count)
    # without a saved cadence (a store written before it was kept, or one that cannot keep
    # it), rate limits resume from the successful summaries and everything that left the window
    c.resumed(rows, added, len(history), len(w.pending))
    saved = cadence.load(store, cid, c)
    if totals is not None and key is not None and (totals.counter != key or totals.tokens != tokens):
        store.set_token_total(cid, key, tokens, len(rows))  # type: ignore[attr-defined]
    return Opened(w, c, history, 0, seq, tokens, dropped, saved)


def full_history(store: Store, conversation_id: str, history: list[SummaryRecord], earlier: int
                 ) -> list[SummaryRecord]:
    """The whole chain after an O(window) open (`earlier` records not read): the store's chain
    without the records the engine committed since, which follow in the order it committed them
    (what an engine that read them all at open holds: records sorted when it opened, then
    appended)."""
    if not earlier:
        return history
    opened, mine = history[:1], history[1:]
    ids = {r.id for r in mine}
    before = [r for r in store.summaries(conversation_id) if r.id not in ids]
    if len(before) != earlier + len(opened):
        log.warning("conversation %s: the store holds %d summary records before this engine's, expected %d",
                    conversation_id, len(before), earlier + len(opened))
    return before + mine


def reshow(w: Window, settings: EngineSettings, cleared_through: int | None, counter: TokenCounter, limit: int,
           enforce_window: bool, conversation_id: str) -> None:
    """Show in a resumed window what the last `add()` showed but the store does not keep
    (cleared tool results, the guard's clips; no model, no store write): else a resumed engine's
    `context()` was past the window until the next `add()`. Clearing is sticky: every result up
    to `cleared_through` (the newest the last engine cleared, kept with the cadence) is cleared
    again before anything else."""
    if settings.clear_tool_results:
        if cleared_through is not None:
            w.clear_through(settings.clearing, cleared_through, counter.count_message)
        w.clear_tool_results(settings.clearing, w.context_tokens(), counter.count_message)
    if enforce_window and w.context_tokens() > limit:
        guard.fit(w, counter, limit, settings, conversation_id)
