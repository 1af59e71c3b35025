"""The persistence seam.

The engine keeps its working window in memory for speed and writes every change through a
`Store`. The store's contract is what makes "no message is ever lost" checkable: every message
ever added can be read back with its state, and a summary is committed together with the state
change of the messages it covers, in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rollsum.errors import ConfigError, ConversationBusy
from rollsum.safejson import has_surrogate
from rollsum.types import Message, MessageState, SummaryRecord


@dataclass(frozen=True, slots=True)
class StoredMessage:
    conversation_id: str
    seq: int
    """Insertion order within the conversation, from 0."""
    message: Message
    state: MessageState = "active"
    summary_id: str | None = None
    reason: str | None = None


@runtime_checkable
class Store(Protocol):
    def add_message(self, conversation_id: str, seq: int, message: Message) -> None:
        """Persist a new message in state ``active``. Its `id` is set and unique."""

    def commit_summary(self, record: SummaryRecord, covered_ids: Sequence[str]) -> None:
        """Insert `record` and mark `covered_ids` ``covered`` by it, atomically.

        Either both happen or neither: a crash in between leaves the messages as they were.
        """

    def set_state(self, conversation_id: str, ids: Sequence[str], state: MessageState,
                  reason: str | None = None) -> None:
        """Move messages to ``pending`` or ``dropped`` (evictions and baselines)."""

    def messages(self, conversation_id: str, state: MessageState | None = None
                 ) -> list[StoredMessage]:
        """All messages of a conversation in insertion order, optionally of one state."""

    def summaries(self, conversation_id: str) -> list[SummaryRecord]:
        """The summary chain in order (by `created_at`, then `seq`)."""

    def latest_summary(self, conversation_id: str) -> SummaryRecord | None:
        """Most recent by `created_at`, ties broken by `seq` (deterministic)."""

    def delete_conversation(self, conversation_id: str) -> None:
        """Remove the conversation with its messages and summaries (cascade). Refused
        (`ConversationBusy`, nothing deleted) while a live engine holds it (`claim`): that engine
        would go on showing the deleted messages to the model and storing new ones under them."""

    def conversations(self) -> list[str]: ...

    def save_cadence(self, conversation_id: str, cadence: Mapping[str, Any]) -> None:
        """Keep the engine's rate-limit state with the conversation (replacing the previous one).

        `cadence` is a flat JSON object of numbers (attempts so far, failures in a row and the
        message count their backoff lasts until, ...; `RollingSummarizer` owns its meaning). An
        application that rebuilds the engine for every request must not forget that the
        summarizer just failed: without this, a dead model was called on ~90 % of messages.
        Deleted with the conversation.
        """

    def cadence(self, conversation_id: str) -> dict[str, Any] | None:
        """The last `save_cadence` value of the conversation, or None if none was saved."""

    def claim(self, conversation_id: str, owner: str, *, takeover: bool = False) -> None:
        """Make `owner` (one engine) the only writer of the conversation, or raise `ConfigError`.

        Two engines on one conversation would each keep their own window and both write to the
        store (duplicate message ids, two summaries with one id, forever). So the second one is
        refused at open with one line naming the holder. A holder that is gone (its process
        died, or it released) is taken over; `takeover=True` takes over a live one too.
        """

    def release(self, conversation_id: str, owner: str) -> None:
        """Give the conversation up (no-op if `owner` does not hold it)."""

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StoreTotals:
    """A conversation's counts that an engine needs when it opens, kept by the store as rows
    are written (`WindowedStore.totals`), so opening does not read every row to count them.

    Why: the docs endorse building an engine from its store for every request; reading and
    decoding every row to get four numbers made an open cost O(conversation) (90 ms at 10k
    messages on `MemoryStore`, 224 ms on SQLite). Every field is exact and changes in the
    same transaction as the row it counts."""

    rows: int
    """Messages ever stored, in any state."""
    next_seq: int
    """One past the largest sequence number stored (0 for none): the next message's number."""
    dropped: int
    """Messages in state ``dropped`` now."""
    summaries: int
    """Summary records of the conversation."""
    tokens: int | None = None
    """The sum of `counter`'s count of every stored message; None when unknown (a message was
    stored without a count, or counted by another counter): the engine then counts again."""
    counter: str | None = None
    """Which token counter made `tokens` (`rollsum.tokens.counter_key`), None when unknown."""


@runtime_checkable
class WindowedStore(Protocol):
    """What a store adds to `Store` so an engine opens in O(window), not O(conversation).

    Optional, all or nothing: the engine uses these when a store has all four methods and
    falls back to reading every row (`Store.messages`, `Store.summaries`) otherwise, so a
    store written against `Store` alone keeps working unchanged (docs/storage.md)."""

    def add_counted(self, conversation_id: str, seq: int, message: Message, tokens: int, counter: str) -> None:
        """`Store.add_message`, and add `tokens` to the conversation's token total counted by
        `counter`, in the same transaction. A total made by another counter (or unknown)
        becomes unknown; the first message of a conversation starts it."""

    def totals(self, conversation_id: str) -> StoreTotals | None:
        """The conversation's `StoreTotals` (None: the store has no row of it), in O(1)."""

    def window_rows(self, conversation_id: str) -> list[StoredMessage]:
        """The rows in state ``active`` or ``pending``, in insertion order (as `Store.messages`
        orders them), without reading the covered and dropped ones."""

    def set_token_total(self, conversation_id: str, counter: str, tokens: int, rows: int) -> bool:
        """Make `tokens` (counted by `counter`) the conversation's token total, if it still has
        `rows` messages (an engine that counted them all again); False when it has not."""


# --- Shared rules (both stores enforce them identically, so they agree on every input) -------

COVERABLE_STATES: frozenset[str] = frozenset({"active", "pending"})
"""States a message may be in when a summary covers it. ``covered`` is final (it names its
summary) and ``dropped`` was deliberately left out of context; covering either would make a
message belong to two summaries, or resurrect one the policy discarded."""

SETTABLE_STATES: frozenset[str] = frozenset({"active", "pending", "dropped"})
"""States `Store.set_state` may move a message to. ``covered`` is reachable only through
`Store.commit_summary`, which records which summary covers it."""


def check_covered_ids(record: SummaryRecord, covered_ids: Sequence[str]) -> None:
    """Reject a covered list that would make one message count twice in the same summary."""
    if len(set(covered_ids)) == len(covered_ids):
        return  # the usual case, told in C
    seen: set[str] = set()
    dups: set[str] = set()
    for mid in covered_ids:
        (dups if mid in seen else seen).add(mid)
    if dups:
        raise ConfigError(f"summary {record.id!r} lists message ids twice: {sorted(set(dups))[:3]}")


_SCALARS = frozenset({int, bool, type(None)})


def check_meta(value: Mapping[str, Any], owner: str, ident: str, name: str = "meta") -> None:
    """Refuse a ``meta`` (a message's, a summary's) or cadence that a JSON column cannot hold
    as given: a key that is not a string (``json.dumps`` would turn ``1`` into ``"1"``, or
    refuse a tuple), a value that is not JSON (an object, a set, bytes), a float that is not
    finite, a string with a lone surrogate. `SQLiteStore` stores these as JSON, so
    `MemoryStore` refuses the same values through this one function: a replay that passes on
    memory must not fail on disk, or come back changed. Tuples are arrays (lists from disk).

    The error names the owner, its id and the field (``message 'm3': meta``), put together only
    when there is one. Plain values are checked inline and
    containers through an explicit stack, so a meta of a few scalars costs one loop over its
    items (the memory store's hot path) and a deep one cannot overflow the Python stack."""
    if type(value) is dict and _plain(value):
        return
    what = f"{owner} {ident!r}: {name}"
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, at = stack.pop()
        t = type(item)
        if t is list or t is tuple:
            for i, v in enumerate(item):
                vt = type(v)
                if vt not in _SCALARS and (vt is not str or not v.isascii()):  # plain: nothing to look at
                    stack.append((v, f"{at}[{i}]"))
        elif t is float:
            if not math.isfinite(item):
                raise ConfigError(f"{what} is not JSON-serialisable: {_where(what, at)} is {item!r} "
                                  "(expected a finite number)")
        elif t is str:
            if not item.isascii() and has_surrogate(item):
                raise ConfigError(f"{what} is not JSON-serialisable: {_where(what, at)} holds a lone surrogate "
                                  "(expected valid Unicode text)")
        elif t is dict or isinstance(item, Mapping):  # a dict first: no ABC lookup on the hot path
            for k, v in item.items():
                if type(k) is not str:
                    raise ConfigError(f"{what} is not JSON-serialisable: key {k!r} of {_where(what, at)} is "
                                      f"{_a(k)} (expected string keys)")
                vt = type(v)
                if vt not in _SCALARS and (vt is not str or not v.isascii()):
                    stack.append((v, f"{at}.{k}"))
        elif not (item is None or isinstance(item, int | float | str | list | tuple)):
            raise ConfigError(f"{what} is not JSON-serialisable: {_where(what, at)} is {_a(item)} "
                              "(expected a string, number, boolean, null, list or object)")


def _plain(meta: dict[Any, Any]) -> bool:
    """Every key a string, every value a scalar, ASCII text or a list of ASCII strings (a
    message's usual meta: tool call ids, a path, an exit code): nothing more to look at."""
    for k, v in meta.items():
        if type(k) is not str:
            return False
        t = type(v)
        if t is str:
            if not v.isascii():
                return False
        elif t is list:
            for x in v:
                if type(x) is not str or not x.isascii():
                    return False
        elif t not in _SCALARS:
            return False
    return True


def _where(what: str, at: str) -> str:
    """``meta.k[0]``: where in the value a problem is (made only for an error message)."""
    return f"{what.rpartition(' ')[2]}{at}"


def _a(value: object) -> str:
    name = type(value).__name__
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def check_settable(state: str) -> None:
    if state not in SETTABLE_STATES:
        hint = " (use commit_summary to cover messages)" if state == "covered" else ""
        raise ConfigError(f"set_state: state must be one of {sorted(SETTABLE_STATES)}, "
                          f"got {state!r}{hint}")


def uncoverable_error(record: SummaryRecord, problems: Sequence[tuple[str, str | None]]) -> ConfigError:
    """One message for both stores: which ids could not be covered and why."""
    shown = ", ".join(f"{mid!r} ({state or 'unknown'})" for mid, state in problems[:5])
    more = f" and {len(problems) - 5} more" if len(problems) > 5 else ""
    return ConfigError(
        f"summary {record.id!r} of conversation {record.conversation_id!r} covers messages "
        f"that are not active or pending: {shown}{more}; nothing was committed")


def delete_busy_error(where: str, conversation_id: str, holder: str) -> ConversationBusy:
    """A conversation deleted under a live engine: the engine kept its window (the deleted
    messages went on to the model), every summary was refused, and its next messages were stored
    under the deleted ones, resurrecting the conversation. So the delete waits for the engine."""
    return ConversationBusy(
        f"{where}: cannot delete conversation {conversation_id!r}: an engine has it open ({holder}) and would go "
        "on sending what was deleted to the model and storing new messages under it; close that engine first "
        "(RollingSummarizer.close()), then delete; nothing was deleted")


def owner_error(where: str, conversation_id: str, holder: str) -> ConversationBusy:
    return ConversationBusy(
        f"{where}: conversation {conversation_id!r} is already open by another engine ({holder}); a request on it "
        "still being served: retry when it is done (rollsum.errors.ConversationBusy); an engine left open: close it "
        "first (RollingSummarizer.close()); or use another conversation id, or pass takeover=True if that engine is "
        "gone")
