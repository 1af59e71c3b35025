"""An in-process store: the default for replays, tests and benchmarks.

It enforces exactly the rules `SQLiteStore` enforces (the contract tests run against both), so
a replay that passes on memory cannot fail on disk for a reason other than I/O.

Rows are kept by column (`_Rows`), not as one `StoredMessage` per message, and the messages
themselves as untracked tuples (`_Messages`): a replay keeps every message it ever saw, and a
million row objects cost ~90 bytes each and, worse, are a million more objects every full
garbage collection of the process walks (issue #20, item 2: that walk
made a 1M-message replay ~1.3x dearer per message than a 10k one). `messages()` builds the
`StoredMessage` rows when they are read, which only a resume, `rebuild_from_raw` and a reader do.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from rollsum.errors import ConfigError, DuplicateMessageId
from rollsum.store.base import (
    SETTABLE_STATES,
    StoredMessage,
    StoreTotals,
    check_covered_ids,
    check_meta,
    check_settable,
    delete_busy_error,
    owner_error,
    uncoverable_error,
)
from rollsum.types import Message, MessageState, Role, SummaryRecord

_Row = tuple[Role, str, str, str | None, str | None] | tuple[Role, str, str, str | None, str | None, tuple[Any, ...]]
"""A stored message: ``(role, content, id, name, created_at)`` and its metadata if it has any
(`_pack_meta`)."""
_CHUNK_BITS = 12
_CHUNK = 1 << _CHUNK_BITS
_IN_CHUNK = _CHUNK - 1

_STATES: tuple[MessageState, ...] = ("active", "pending", "covered", "dropped")
_CODE = {s: i for i, s in enumerate(_STATES)}
_ACTIVE, _PENDING, _COVERED, _DROPPED = _CODE["active"], _CODE["pending"], _CODE["covered"], _CODE["dropped"]


def _in_window(states: bytearray) -> list[int]:
    """Positions of the active and pending rows, ascending: `bytearray.find` (memchr) from one
    to the next, so the cost is the window's rows plus a C scan of the states at memory speed
    (~10 us at 100k rows; a regular expression's scan was 1 ms)."""
    found: list[int] = []
    find = states.find
    for code in (_ACTIVE, _PENDING):
        pos = find(code)
        while pos >= 0:
            found.append(pos)
            pos = find(code, pos + 1)
    found.sort()
    return found


_SETTABLE: dict[str, int] = {s: i for i, s in enumerate(_STATES) if s in SETTABLE_STATES}


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _pack_meta(meta: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """`meta` as a tuple of ``(key, value)`` pairs, a list value as a tuple (the tool call ids),
    which the collector untracks when what they hold is atomic; None when a value is of
    another type (a tuple would come back as a list; the message is kept as given). A list is
    not looked into: whatever it holds comes back the same, only untracked or not."""
    items: list[tuple[str, Any]] = []
    append = items.append
    for k, v in meta.items():
        t = type(v)
        if t in _PLAIN:
            append((k, v))
        elif t is list:
            append((k, tuple(v)))
        else:
            return None
    return tuple(items)


def _row_id(row: _Row | Message) -> str | None:
    return row[2] if type(row) is tuple else row.id  # type: ignore[union-attr]


class _Messages:
    """The rows' messages, in insertion order, kept so that a full garbage collection does not
    walk them (issue #20, item 2).

    A replay keeps every message it saw. Kept as the caller's `Message` objects (an application
    makes each one when it arrives), a million of them are a million tracked objects, plus their
    `meta` dicts and lists, that every full collection of the process visits: a budget-rule-based
    replay then spent 6.8 us a message in full collections at 300k messages, and cost 1.45x per
    message at 1M what it cost at 10k. So a message whose `meta` is plain (`_pack_meta`: every
    tool message of an agent's transcript) is kept as a tuple of its fields, which CPython
    untracks once a collection has seen it, and every `_CHUNK` rows are sealed into one tuple,
    untracked in turn: a full collection visits one entry per chunk, not one per message
    (2.1 us a message at 300k; 1M/10k 1.18x; docs/storage.md). A read builds an equal `Message`
    again (frozen, compared by value; lists come back as lists); any other message is kept as
    it is. Storing costs the tuples: ~+1 % of since-last's instructions on the mixed stream
    (docs/storage.md)."""

    __slots__ = ("sealed", "tail")

    def __init__(self) -> None:
        self.sealed: list[tuple[_Row | Message, ...]] = []
        self.tail: list[_Row | Message] = []

    def __len__(self) -> int:
        return (len(self.sealed) << _CHUNK_BITS) + len(self.tail)

    def seal(self) -> None:
        """The tail is a whole chunk: keep it as one tuple (`add_message` appends to the tail
        itself, and calls this when the tail is full)."""
        self.sealed.append(tuple(self.tail))
        self.tail = []

    def raw(self, pos: int) -> _Row | Message:
        c = pos >> _CHUNK_BITS
        sealed = self.sealed
        return sealed[c][pos & _IN_CHUNK] if c < len(sealed) else self.tail[pos - (len(sealed) << _CHUNK_BITS)]

    def __getitem__(self, pos: int) -> Message:
        row = self.raw(pos)
        if type(row) is not tuple:
            return row  # type: ignore[return-value]
        if len(row) == 5:
            return Message(*row)
        role, content, mid, name, created_at, meta = row
        return Message(role, content, mid, name, created_at, {k: list(v) if type(v) is tuple else v for k, v in meta})

    def id_at(self, pos: int) -> str | None:
        return _row_id(self.raw(pos))

    def ids(self, lo: int, hi: int) -> list[str | None]:
        """The ids of rows ``lo`` to ``hi - 1`` (fewer at the end), by chunk slices."""
        hi = min(hi, len(self))
        rows: list[_Row | Message] = []
        sealed, n_sealed = self.sealed, len(self.sealed)
        while lo < hi:
            c = lo >> _CHUNK_BITS
            base = c << _CHUNK_BITS
            end = min(hi, base + _CHUNK)
            rows += (sealed[c] if c < n_sealed else self.tail)[lo - base:end - base]
            lo = end
        return list(map(_row_id, rows))

    def all_ids(self) -> list[str | None]:
        return self.ids(0, len(self))


class _Rows:
    """One conversation's messages by column, in insertion order: no object per message
    beyond its row in `_Messages` (states are bytes, sequence numbers machine integers, the
    covering summary a position in the conversation's summary list).

    Only `messages`, `states` and, for ids that do not number their rows (`prefix`), `index`
    grow with every message. The other columns are
    written when they first say something: `seqs` while every row's sequence number is its
    position (the engine numbers a conversation's messages 0, 1, 2, ...) stays None, and
    `summary_of` is filled up to the newest row (`fill`) only when a summary writes it, `reasons`
    (`fill_reasons`) only when a state change does; a row past their end has none. Appending to an int64 array
    parses the value (~190 instructions): two such appends were a tenth of what storing a
    message cost."""

    __slots__ = ("base", "counter", "cut", "index", "messages", "prefix", "reasons", "seqs", "states", "summary_of",
                 "tokens")

    def __init__(self) -> None:
        self.messages = _Messages()
        self.seqs: array[int] | list[int] | None = None
        """Sequence numbers by row; None while each is its row's position."""
        self.states = bytearray()
        self.summary_of: array[int] = array("q")
        """Position of the covering record in the conversation's summary list, -1 for none."""
        self.reasons: list[str | None] = []
        self.index: dict[str, int] = {}
        """Message id -> row position; empty while the ids number the rows (`prefix`)."""
        self.prefix: str | None = None
        """While not None, row k's id is `prefix + str(base + k)` (the engine names the messages
        it stores `conversation/seq`; streams number theirs the same way), so a position is read
        off the id and `index` holds nothing. A million-entry dict cost a random probe of a
        ~16 MB table per stored message, ~0.4 us more per message at 1M than at 10k (issue #20,
        item 2); this costs an `str` of an int and a compare, the same at every size."""
        self.base = 0
        self.cut = 0  # len(prefix)
        self.tokens = 0
        """The sum of `counter`'s count of every row (`MemoryStore.add_counted`)."""
        self.counter: str | None = None
        """Which counter made `tokens`; None: unknown (a row came without a count)."""

    def number_from(self, message_id: str) -> bool:
        """Start numbered mode at row 0 when `message_id` ends in a plain decimal number
        (no sign, no leading zero: the spelling `str` gives, so the next id can be built)."""
        if not isinstance(message_id, str):
            return False
        digits = message_id[len(message_id.rstrip("0123456789")):]
        if not digits or len(digits) > 18 or (digits[0] == "0" and len(digits) > 1):
            return False
        self.prefix, self.base = message_id[:-len(digits)], int(digits)
        self.cut = len(self.prefix)
        return True

    def unnumber(self) -> dict[str, int]:
        """Leave numbered mode (a row whose id breaks the numbering is being added): index
        every row so far, once, and index each later row as it comes."""
        self.index = {mid: k for k, mid in enumerate(self.messages.all_ids())}  # type: ignore[misc]
        self.prefix = None
        return self.index

    def find(self, message_id: object) -> int | None:
        """Row position of `message_id` in numbered mode (None: unknown). The position is parsed
        from the id and the row's id compared whole, so only the exact id finds its row
        ("c/01", "c/+1", "c/1_0", "d/1" do not find "c/1")."""
        try:
            k = int(message_id[self.cut:]) - self.base  # type: ignore[index]
        except (TypeError, ValueError):
            return None
        return k if 0 <= k < len(self.messages) and self.messages.id_at(k) == message_id else None

    def finder(self) -> Callable[[str], int | None]:
        """Row position of an id (None: unknown), by the mode the rows are in: the index, or
        the number read off the id (`find`)."""
        return self.index.get if self.prefix is None else self.find

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Row position of each id (None: unknown)."""
        return list(map(self.finder(), ids))  # (C loop)

    def run_start(self, ids: Sequence[str]) -> int | None:
        """First row of `ids` when they are the rows k, k+1, ... in that order (the usual
        summary), else None: one id looked up and the id lists compared in C, not a lookup per id."""
        if not ids:
            return None
        k = self.finder()(ids[0])
        if k is None or self.messages.ids(k, k + len(ids)) != (ids if type(ids) is list else list(ids)):
            return None
        return k

    def add_seq(self, seq: int) -> None:
        """The sequence number of the row being appended, when it is not its position."""
        n = len(self.messages)
        seqs = array("q", range(n)) if self.seqs is None else self.seqs
        try:
            seqs.append(seq)
        except (OverflowError, TypeError):  # outside int64 (or an int-like): keep Python ints
            seqs = [*seqs, seq]
        self.seqs = seqs

    def fill(self) -> None:
        """`summary_of` up to the newest row, before a summary writes it. Not `reasons`: a
        covered row's reason is None, which a row past the column's end already reads as, so
        a summary only clears the reasons the column holds. Filling it here made a preset that
        never sets a state with a reason (budget-rule-based) keep a list of a million Nones at
        1M messages, walked by every full garbage collection (issue #20, item 2)."""
        gap = len(self.messages) - len(self.summary_of)
        if gap:
            self.summary_of.extend(array("q", (-1,)) * gap)

    def fill_reasons(self) -> None:
        """`reasons` up to the newest row, before a state change writes them (truncate drops
        a message each turn: one append, not a list of one)."""
        gap = len(self.messages) - len(self.reasons)
        if gap == 1:
            self.reasons.append(None)
        elif gap:
            self.reasons.extend([None] * gap)

    def row(self, pos: int, conversation_id: str, summaries: Sequence[SummaryRecord]) -> StoredMessage:
        k = self.summary_of[pos] if pos < len(self.summary_of) else -1
        return StoredMessage(conversation_id, pos if self.seqs is None else self.seqs[pos], self.messages[pos],
                             _STATES[self.states[pos]], summaries[k].id if k >= 0 else None,
                             self.reasons[pos] if pos < len(self.reasons) else None)


class MemoryStore:
    """Dict-backed `Store`. O(1) appends and state changes so replays stay linear."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, _Rows] = {}
        self._summaries: dict[str, list[SummaryRecord]] = {}
        self._summary_ids: dict[str, str] = {}  # summary id -> conversation id (ids are global)
        self._unordered: set[str] = set()
        """Conversations whose chain was not committed in `summaries`' order (created_at, seq)."""
        self._owners: dict[str, str] = {}  # conversation id -> the engine that writes it
        self._cadence: dict[str, dict[str, Any]] = {}

    def add_message(self, conversation_id: str, seq: int, message: Message) -> None:
        self.add_counted(conversation_id, seq, message, 0, None)  # no count: the token total is unknown now

    def add_counted(self, conversation_id: str, seq: int, message: Message, tokens: int, counter: str | None
                    ) -> None:
        """Store a message and count its `tokens` in the conversation's total, under one lock
        (`WindowedStore.add_counted`; `counter` None: no count, `add_message`). The engine's
        path, so written out in one function: a call of a shared helper was ~1k instructions
        per message."""
        mid = message.id
        if mid is None:
            raise ConfigError("a stored message needs an id")
        if message.meta:  # what SQLiteStore could not store is refused here too (one shared rule)
            check_meta(message.meta, "message", mid)
        lock = self._lock  # taken by hand, not `with`: that makes two bound methods per message
        lock.acquire()
        try:
            rows = self._rows.get(conversation_id)
            if rows is None:
                rows = self._rows[conversation_id] = _Rows()
            # the row's columns filled here, not by a method of `_Rows`: one call per message, not two
            msgs = rows.messages
            tail = msgs.tail
            n = (len(msgs.sealed) << _CHUNK_BITS) + len(tail)
            prefix = rows.prefix
            # a numbered id is new (rows 0..n-1 hold the ones before it) and needs no index entry;
            # an f-string, not `prefix + str(...)`: no call of `str` (since-last's instructions)
            if prefix is None or mid != f"{prefix}{rows.base + n}":
                index = rows.index if prefix is None else rows.unnumber()
                if mid in index:
                    raise DuplicateMessageId(f"duplicate message id {mid!r} in {conversation_id!r}")
                if n or not rows.number_from(mid):
                    index[mid] = n
            if seq != n or type(seq) is not int or rows.seqs is not None:
                rows.add_seq(seq)
            # a message as a tuple of its fields where it can be one (`_Messages`), not by a call
            meta = message.meta
            if type(meta) is not dict or type(message) is not Message:
                tail.append(message)
            elif not meta:
                tail.append((message.role, message.content, mid, message.name, message.created_at))
            elif (packed := _pack_meta(meta)) is not None:
                tail.append((message.role, message.content, mid, message.name, message.created_at, packed))
            else:
                tail.append(message)
            if len(tail) == _CHUNK:
                msgs.seal()
            rows.states.append(_ACTIVE)
            if counter is None or counter != rows.counter:
                # the first row starts the total; another counter's count (or none) makes it unknown
                rows.counter, rows.tokens = (counter, tokens) if n == 0 else (None, 0)
            else:
                rows.tokens += tokens
        finally:
            lock.release()

    def commit_summary(self, record: SummaryRecord, covered_ids: Sequence[str]) -> None:
        check_covered_ids(record, covered_ids)
        check_meta(record.meta, "summary", record.id)
        cid = record.conversation_id
        with self._lock:
            if record.id in self._summary_ids:
                raise ConfigError(f"summary id {record.id!r} already exists; nothing was committed")
            rows = self._rows.get(cid) or _Rows()
            states = rows.states
            n = len(covered_ids)
            lo = rows.run_start(covered_ids)
            if lo is None or max(states[lo:lo + n]) > _PENDING:  # not one run of coverable rows
                found = rows.positions(covered_ids)
                if None in found or max(map(states.__getitem__, cast("list[int]", found)),
                                        default=_ACTIVE) > _PENDING:
                    raise uncoverable_error(record, [(mid, None if pos is None else _STATES[states[pos]])
                                                     for mid, pos in zip(covered_ids, found)
                                                     if pos is None or states[pos] > _PENDING])
                at = cast("list[int]", found)
                lo = min(at, default=0)
                run = n > 0 and max(at) - lo == n - 1  # (ids are distinct: n of them span n rows)
            else:
                run = True
            chain = self._summaries.setdefault(cid, [])
            k = len(chain)
            rows.fill()
            summary_of, reasons = rows.summary_of, rows.reasons
            if run:  # one run of rows (the usual summary)
                states[lo:lo + n] = bytes((_COVERED,)) * n
                summary_of[lo:lo + n] = array("q", (k,)) * n
                if lo < len(reasons):  # the rows the reasons column holds (the rest read None)
                    hi = min(lo + n, len(reasons))
                    reasons[lo:hi] = [None] * (hi - lo)
            else:
                held = len(reasons)
                for pos in at:
                    states[pos] = _COVERED
                    summary_of[pos] = k
                    if pos < held:
                        reasons[pos] = None
            if chain and (record.created_at, record.seq) < (chain[-1].created_at, chain[-1].seq):
                self._unordered.add(cid)
            chain.append(record)
            self._summary_ids[record.id] = cid

    def set_state(self, conversation_id: str, ids: Sequence[str], state: MessageState,
                  reason: str | None = None) -> None:
        """Every id checked (known, not covered) before any row changes. Written for the
        steady state of a dropping preset (clear-tool-results, truncate: one call per drop, with
        one or two ids): a plain loop, ~3x cheaper for so few ids than mapping them in C into a
        list and a `bytes` to search (issue #20 item 2)."""
        if state not in _SETTABLE:
            check_settable(state)  # raises: not a state a caller may set
        code = _SETTABLE[state]
        lock = self._lock  # by hand, not `with` (as add_message)
        lock.acquire()
        try:
            rows = self._rows.get(conversation_id) or _Rows()
            states, find = rows.states, rows.finder()
            found: list[int] = []
            for mid in ids:
                pos = find(mid)
                if pos is None or states[pos] == _COVERED:
                    break
                found.append(pos)
            if len(found) < len(ids):  # one is unknown or covered: say which, change nothing
                where = list(map(find, ids))
                unknown = [mid for mid, at in zip(ids, where) if at is None]
                if unknown:
                    raise ConfigError(f"set_state: unknown message ids in {conversation_id!r}: "
                                      f"{unknown[:5]}; nothing was changed")
                covered = [mid for mid, at in zip(ids, where) if states[cast(int, at)] == _COVERED]
                raise ConfigError(f"set_state: messages {covered[:5]} are covered by a summary "
                                  "and cannot change state; nothing was changed")
            rows.fill_reasons()
            reasons = rows.reasons
            for pos in found:  # (no call per row: `code` is an int already)
                states[pos] = code
                reasons[pos] = reason
        finally:
            lock.release()

    def messages(self, conversation_id: str, state: MessageState | None = None
                 ) -> list[StoredMessage]:
        with self._lock:
            rows = self._rows.get(conversation_id)
            if rows is None:
                return []
            chain = self._summaries.get(conversation_id, [])
            want = None if state is None else _CODE.get(state, -1)
            out = [rows.row(pos, conversation_id, chain) for pos in range(len(rows.messages))
                   if want is None or rows.states[pos] == want]
        out.sort(key=lambda r: r.seq)  # stable: ties keep insertion order, as in SQLite
        return out

    def totals(self, conversation_id: str) -> StoreTotals | None:
        """`WindowedStore.totals`. Counted from the columns when asked, in C (`bytearray.count`,
        `max` of the sequence array, kept only when the numbers are not the positions), not on
        every write: a million states are counted in ~0.1 ms, and the add path stays as it was."""
        with self._lock:
            rows = self._rows.get(conversation_id)
            if rows is None:  # no message (as SQLiteStore: a summary alone keeps no totals)
                return None
            n = len(rows.messages)
            seqs = rows.seqs
            next_seq = n if seqs is None else max(0, max(seqs, default=-1) + 1)
            return StoreTotals(rows=n, next_seq=next_seq, dropped=rows.states.count(_DROPPED),
                               summaries=len(self._summaries.get(conversation_id, ())),
                               tokens=rows.tokens if rows.counter is not None else None, counter=rows.counter)

    def window_rows(self, conversation_id: str) -> list[StoredMessage]:
        """`WindowedStore.window_rows`: the active and pending rows, found in the state bytes
        in C (`_in_window`), so only they are made into `StoredMessage` rows."""
        with self._lock:
            rows = self._rows.get(conversation_id)
            if rows is None:
                return []
            chain = self._summaries.get(conversation_id, [])
            out = [rows.row(pos, conversation_id, chain) for pos in _in_window(rows.states)]
        out.sort(key=lambda r: r.seq)  # stable, as `messages`
        return out

    def set_token_total(self, conversation_id: str, counter: str, tokens: int, rows: int) -> bool:
        with self._lock:
            found = self._rows.get(conversation_id)
            if found is None or len(found.messages) != rows:
                return False
            found.counter, found.tokens = counter, tokens
            return True

    def summaries(self, conversation_id: str) -> list[SummaryRecord]:
        with self._lock:
            recs = list(self._summaries.get(conversation_id, []))
        return sorted(recs, key=lambda r: (r.created_at, r.seq))

    def latest_summary(self, conversation_id: str) -> SummaryRecord | None:
        """The last record of `summaries`' order. The chain's last when it was committed in that
        order (the engine's clock does not go back): an engine opens in O(window), not by
        sorting thousands of records (`_unordered` names the chains that were not)."""
        with self._lock:
            chain = self._summaries.get(conversation_id)
            if not chain:
                return None
            if conversation_id not in self._unordered:
                return chain[-1]
        return self.summaries(conversation_id)[-1]

    def delete_conversation(self, conversation_id: str) -> None:
        with self._lock:
            holder = self._owners.get(conversation_id)
            if holder is not None:
                raise delete_busy_error("memory store", conversation_id, f"engine {holder} in this process")
            self._rows.pop(conversation_id, None)
            self._unordered.discard(conversation_id)
            for rec in self._summaries.pop(conversation_id, []):
                self._summary_ids.pop(rec.id, None)
            self._cadence.pop(conversation_id, None)

    def save_cadence(self, conversation_id: str, cadence: Mapping[str, Any]) -> None:
        check_meta(cadence, "conversation", conversation_id, "cadence")
        with self._lock:
            self._cadence[conversation_id] = dict(cadence)

    def cadence(self, conversation_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._cadence.get(conversation_id)
            return dict(found) if found is not None else None

    def conversations(self) -> list[str]:
        with self._lock:
            return sorted(set(self._rows) | set(self._summaries))

    def claim(self, conversation_id: str, owner: str, *, takeover: bool = False) -> None:
        with self._lock:
            holder = self._owners.get(conversation_id)
            if holder is not None and holder != owner and not takeover:
                raise owner_error("memory store", conversation_id, f"engine {holder} in this process")
            self._owners[conversation_id] = owner

    def release(self, conversation_id: str, owner: str) -> None:
        with self._lock:
            if self._owners.get(conversation_id) == owner:
                del self._owners[conversation_id]

    def close(self) -> None:
        with self._lock:
            self._owners.clear()
