"""A SQLite `Store`: conversations, messages and the summary chain in one file.

Why SQLite: summaries must outlive the process (seed 001, US-303: "summaries can be reused
across sessions"), several processes may read the same file, and the one guarantee that
matters -- a summary and the state change of the messages it covers happen together or not at
all -- is exactly a SQLite transaction. The schema and the guarantees are in docs/storage.md.

Design notes:

- One connection per store, guarded by a lock. The async engine's background thread and the
  caller's thread share it; every operation is a few statements, so serialising them costs
  less than the extra connections would, and in-process writers can never deadlock on
  SQLite's file lock. Other *processes* coordinate through WAL and ``busy_timeout``.
- Autocommit mode with explicit ``BEGIN IMMEDIATE``: a write takes the write lock up front, so
  two processes never both read-then-try-to-upgrade (the classic ``SQLITE_BUSY`` deadlock).
- The file carries ``application_id`` and ``user_version``: opening a foreign database, or one
  written by a newer rollsum, is a `ConfigError` instead of silent corruption. Version 1 to 3
  files are upgraded in place when opened (added tables, an index and triggers; version 4's
  totals are counted once from the rows, in the upgrading transaction).
- An engine opens a conversation in O(window) (`totals`, `window_rows`): the counts it needs
  besides the window's rows are kept in ``conversation_totals``, written in the transaction of
  the row they count (a killed process cannot leave them behind), and a partial index holds
  the active and pending rows.
- One writer per conversation: an engine `claim`s its conversation in ``conversation_owners``
  (owner token, pid, process start time, host); a second engine is refused with one line, and
  a claim whose process is gone (killed, crashed; a reused pid is told apart by its start
  time) is taken over in the same transaction that checks it.
- The engine's rate-limit state (attempts, failures in a row, backoff) is kept per
  conversation in ``conversation_cadence``, so an engine rebuilt for every request keeps the
  cadence of one long-lived engine (a dead summarizer is not called on every message).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from rollsum.errors import ConfigError, DuplicateMessageId, StoreUnavailable
from rollsum.redact import redacting_logger
from rollsum.store.base import (
    COVERABLE_STATES,
    StoredMessage,
    StoreTotals,
    check_covered_ids,
    check_meta,
    check_settable,
    delete_busy_error,
    owner_error,
    uncoverable_error,
)
from rollsum.types import Message, MessageState, SummaryRecord

log = redacting_logger(__name__)

_INHERITED: list[sqlite3.Connection] = []
"""Connections a forked child got from its parent (`SQLiteStore._here`), kept referenced so the
child never closes them: closing one runs SQLite's close on the parent's file state, which its
documentation forbids in a child. Only ever appended to in a child, once per store."""

SCHEMA_VERSION = 4
APPLICATION_ID = 0x726F6C6C  # "roll": marks a file as a rollsum store
Synchronous = Literal["NORMAL", "FULL"]

_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE conversations (
        id          TEXT PRIMARY KEY,
        created_at  TEXT NOT NULL
    )""",
    # Seed 001's columns first (id .. created_at), then the chain columns that make a
    # SummaryRecord round-trip exactly. JSON columns hold to_dict() values.
    """CREATE TABLE conversation_summaries (
        id                TEXT PRIMARY KEY,
        conversation_id   TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        summary_text      TEXT NOT NULL,
        messages_covered  INTEGER NOT NULL,
        start_message_id  TEXT,
        end_message_id    TEXT,
        created_at        TEXT NOT NULL,
        parent_id         TEXT,
        depth             INTEGER NOT NULL DEFAULT 0,
        seq               INTEGER NOT NULL DEFAULT 0,
        key_points        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(key_points)),
        facets            TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(facets)),
        pinned_facts      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(pinned_facts)),
        covered_ids       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(covered_ids)),
        tokens            INTEGER NOT NULL DEFAULT 0,
        model             TEXT NOT NULL DEFAULT '',
        prompt_id         TEXT NOT NULL DEFAULT '',
        prompt_hash       TEXT NOT NULL DEFAULT '',
        usage             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage)),
        fallback          TEXT,
        notes             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(notes)),
        facts             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(facts)),
        ledger            TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(ledger)),
        meta              TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta))
    )""",
    """CREATE INDEX conversation_summaries_latest
        ON conversation_summaries(conversation_id, created_at, seq)""",
    # summary_id references the summary table so a covered message can never name a summary
    # that does not exist; deferred so a conversation's cascade delete is order-independent.
    """CREATE TABLE messages (
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        seq             INTEGER NOT NULL,
        id              TEXT NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content         TEXT NOT NULL,
        name            TEXT,
        created_at      TEXT,
        meta            TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(meta)),
        state           TEXT NOT NULL DEFAULT 'active'
                        CHECK (state IN ('active', 'pending', 'covered', 'dropped')),
        summary_id      TEXT REFERENCES conversation_summaries(id) DEFERRABLE INITIALLY DEFERRED,
        reason          TEXT,
        PRIMARY KEY (conversation_id, id),
        CHECK ((state = 'covered') = (summary_id IS NOT NULL))
    )""",
    "CREATE INDEX messages_by_seq ON messages(conversation_id, seq)",
    "CREATE INDEX messages_by_summary ON messages(summary_id)",
)
# version 2: which engine writes each conversation (see `SQLiteStore.claim`)
_OWNERS = """CREATE TABLE IF NOT EXISTS conversation_owners (
        conversation_id TEXT PRIMARY KEY,
        owner           TEXT NOT NULL,
        pid             INTEGER NOT NULL,
        process_start   TEXT NOT NULL,
        host            TEXT NOT NULL,
        claimed_at      TEXT NOT NULL
    )"""

# version 3: the engine's rate-limit state (attempts, failures, backoff; see `SQLiteStore.save_cadence`)
_CADENCE = """CREATE TABLE IF NOT EXISTS conversation_cadence (
        conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
        cadence         TEXT NOT NULL CHECK (json_valid(cadence)),
        updated_at      TEXT NOT NULL
    )"""

# version 4: what an opening engine needs besides its window (`SQLiteStore.totals`), exact and
# written in the transaction of the row they count, by triggers: so a rollsum that predates
# them, still writing the file through a connection it opened before the upgrade, is counted
# too (rows, sequence numbers, drops, summaries). The token total is written by `_insert`
# (`_COUNT_ROW`) and holds for the `counted` rows: a row it did not count (an older writer's)
# leaves `counted` behind `rows`, and the total is unknown. A conversation without a totals row
# (an older writer's new one) is read in full by the engine, and counted by its first new row
# (`_FIRST_ROW`). `messages_in_window` holds only the active and pending rows: the window's
# rows are found without a scan, and a covered row leaves it.
_TOTALS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS conversation_totals (
        conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
        rows            INTEGER NOT NULL DEFAULT 0,
        next_seq        INTEGER NOT NULL DEFAULT 0,
        dropped         INTEGER NOT NULL DEFAULT 0,
        summaries       INTEGER NOT NULL DEFAULT 0,
        tokens          INTEGER,
        counter         TEXT,
        counted         INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE INDEX IF NOT EXISTS messages_in_window ON messages(conversation_id, seq)
        WHERE state IN ('active', 'pending')""",
    """CREATE TRIGGER IF NOT EXISTS totals_message_added AFTER INSERT ON messages BEGIN
        UPDATE conversation_totals SET rows = rows + 1, next_seq = max(next_seq, NEW.seq + 1)
            WHERE conversation_id = NEW.conversation_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS totals_message_state AFTER UPDATE OF state ON messages
        WHEN (OLD.state = 'dropped') != (NEW.state = 'dropped') BEGIN
        UPDATE conversation_totals SET dropped = dropped + (NEW.state = 'dropped') - (OLD.state = 'dropped')
            WHERE conversation_id = NEW.conversation_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS totals_summary_added AFTER INSERT ON conversation_summaries BEGIN
        UPDATE conversation_totals SET summaries = summaries + 1 WHERE conversation_id = NEW.conversation_id;
    END""",
)
_COUNT_ROW = """UPDATE conversation_totals SET
        tokens = CASE WHEN rows = 0 THEN ?2 WHEN counter = ?3 AND counted = rows THEN tokens + ?2 END,
        counter = CASE WHEN rows = 0 OR (counter = ?3 AND counted = rows) THEN ?3 END,
        counted = rows + 1
    WHERE conversation_id = ?4"""
"""Before a new message (sequence number, tokens, counter, conversation) is inserted, which the
trigger then counts (SET reads the row as it was): its tokens added to a total its counter made
over every row so far, or starting one (no row before it); any other total, or a message
without a count (counter NULL), makes it unknown. A conversation with totals exists, so
`_insert` makes sure of the conversation only when this finds none (which pays for this
statement: it was ~5 % of a stored message's instructions)."""
_FIRST_ROW = """INSERT INTO conversation_totals (conversation_id, rows, next_seq, dropped, summaries, tokens, counter,
                                        counted)
    SELECT ?4, count(*), max(0, coalesce(max(seq) + 1, 0)), count(CASE WHEN state = 'dropped' THEN 1 END),
        (SELECT count(*) FROM conversation_summaries WHERE conversation_id = ?4),
        CASE WHEN count(*) = 0 THEN ?2 END, CASE WHEN count(*) = 0 THEN ?3 END, count(*) + 1
    FROM messages WHERE conversation_id = ?4"""
"""A conversation's totals made at its first message, counted from its rows: none (a new
conversation, the usual case: an index lookup), or an older writer's (then the tokens are
unknown)."""
_BACKFILL_TOTALS = """INSERT OR REPLACE INTO conversation_totals
        (conversation_id, rows, next_seq, dropped, summaries, tokens, counter, counted)
    SELECT c.id,
        (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id),
        (SELECT max(0, coalesce(max(m.seq) + 1, 0)) FROM messages m WHERE m.conversation_id = c.id),
        (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.state = 'dropped'),
        (SELECT count(*) FROM conversation_summaries s WHERE s.conversation_id = c.id),
        NULL, NULL, 0
    FROM conversations c"""
"""A version 1-3 file's totals, counted once when it is upgraded (tokens unknown: the first
engine to open a conversation counts them with its counter and keeps the sum)."""
_WINDOW_SQL = ("SELECT seq, id, role, content, name, created_at, meta, state, summary_id, reason "
               "FROM messages INDEXED BY messages_in_window "
               "WHERE conversation_id = ? AND state IN ('active', 'pending') ORDER BY seq, rowid")
"""The window's rows. ``INDEXED BY``: without statistics the planner may walk ``messages_by_seq``
instead (every row of the conversation: 7 ms at 10k messages where this takes 0.1)."""

_SUMMARY_COLUMNS: tuple[str, ...] = (
    "id", "conversation_id", "summary_text", "messages_covered", "start_message_id",
    "end_message_id", "created_at", "parent_id", "depth", "seq", "key_points", "facets",
    "pinned_facts", "covered_ids", "tokens", "model", "prompt_id", "prompt_hash", "usage",
    "fallback", "notes", "facts", "ledger", "meta",
)
_JSON_SUMMARY_FIELDS: tuple[str, ...] = (
    "key_points", "facets", "pinned_facts", "covered_ids", "usage", "notes", "facts", "ledger",
    "meta",
)
_SUMMARY_SELECT = f"SELECT {', '.join(_SUMMARY_COLUMNS)} FROM conversation_summaries"
_SUMMARY_ORDER = "ORDER BY created_at, seq, rowid"
_COVERABLE_SQL = ", ".join(f"'{s}'" for s in sorted(COVERABLE_STATES))


_REMEDIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("SQLITE_BUSY", "SQLITE_LOCKED"), "another connection held its write lock for longer than "
                                       "busy_timeout_s={timeout:g} s (a long write, a backup, a sqlite3 shell inside a "
                                       "transaction); retry, or give SQLiteStore(path, busy_timeout_s=...) more time"),
    (("SQLITE_FULL",), "the disk holding it is full; free space and retry"),
    (("SQLITE_CORRUPT", "SQLITE_NOTADB"), "the file is damaged; check it with sqlite3 {path} 'PRAGMA integrity_check' "
                                          "and restore it from a backup"),
    (("SQLITE_READONLY",), "it is read-only (the file, or its directory, where SQLite keeps {path}-wal and "
                           "{path}-shm): a store is written on every message"),
    (("SQLITE_IOERR",), "the disk or file system failed (a network file system is not supported); check them"),
    (("SQLITE_CANTOPEN",), "SQLite cannot open it, or its {path}-wal and {path}-shm beside it: check that the "
                           "directory still exists and is writable"),
)
"""What a file-level SQLite failure means and what to do, by ``sqlite_errorname`` prefix. Any other
error (a constraint, a bug) is not the file's and stays as raised."""


def _remedy(exc: BaseException, path: str, timeout: float) -> str | None:
    """`_REMEDIES`' advice for `exc`, or None when it is not a file-level failure."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.IntegrityError | StoreUnavailable):
        return None
    name = getattr(exc, "sqlite_errorname", "") or ""
    for names, remedy in _REMEDIES:
        if name.startswith(names):
            return remedy.format(path=path, timeout=timeout)
    return None


def _file_id(path: str) -> tuple[int, int] | None:
    """Which file `path` names now (device, inode); None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state first); OSError without /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
        return f.read().rpartition(")")[2].split()


def process_start(pid: int) -> str:
    """An id for the process `pid` that a reused pid does not share: boot id + start time from
    /proc (Linux). Empty where /proc is not available; liveness then rests on the pid alone."""
    try:
        fields = _stat(pid)
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        return f"{boot}:{fields[19]}"
    except (OSError, IndexError):
        return ""


def process_alive(pid: int, start: str, host: str) -> bool | None:
    """True if the process that made a claim still runs, False if it is gone, None when that
    cannot be known from here (another host).

    A zombie is gone: a killed worker stays one until its parent reaps it (a supervisor that
    waits late, a container whose PID 1 never reaps), and ``kill(pid, 0)`` still succeeds on it,
    so its claim wedged the conversation ("already open by another engine") although it runs no
    code and its SQLite locks went with it."""
    if host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return None
    try:
        if _stat(pid)[0] in ("Z", "X"):  # exited (zombie, or being reaped): not reaped yet
            return False
    except (OSError, IndexError):
        pass  # no /proc: the pid alone tells
    if start:
        now = process_start(pid)
        if now and now != start:
            return False  # the pid was reused by another process
    return True


class _Holder(NamedTuple):
    """The engine a file's claim row names for a conversation, and whether its process lives."""

    owner: str
    alive: bool | None
    """`process_alive`: None when that cannot be known from here (another host)."""
    process: str
    """"pid N on HOST"."""
    since: str

    @property
    def named(self) -> str:
        """How refusals name it: "pid N on HOST since WHEN"."""
        return f"{self.process} since {self.since}"


def _holder(conn: sqlite3.Connection, conversation_id: str) -> _Holder | None:
    """Who holds `conversation_id` in this file (None: no engine does): what opening a second
    engine (`SQLiteStore.claim`) and deleting the conversation both ask first."""
    row = conn.execute("SELECT owner, pid, process_start, host, claimed_at FROM conversation_owners "
                       "WHERE conversation_id = ?", (conversation_id,)).fetchone()
    if row is None:
        return None
    owner, pid, start, host, since = row
    return _Holder(str(owner), process_alive(int(pid), str(start), str(host)), f"pid {pid} on {host}", str(since))


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} is not JSON-serialisable: {exc}") from None


class SQLiteStore:
    """`Store` in a SQLite file (or ``":memory:"``); safe across threads and processes.

    `clock` stamps ``conversations.created_at`` (injectable so tests are deterministic).
    `synchronous` trades durability for speed: ``"FULL"`` (default) fsyncs every commit, so a
    returned call survives a power cut; ``"NORMAL"`` (about 4x faster writes) still survives
    any process crash and never half-applies a transaction, but a power cut may lose the last
    few commits -- fine for replays that can be re-run.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], datetime] | None = None,
                 busy_timeout_s: float = 10.0, synchronous: Synchronous = "FULL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ConfigError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = str(path)
        self._clock = clock or _utc_now
        self._busy_timeout_s = busy_timeout_s
        self._synchronous: Synchronous = synchronous
        self._pid = os.getpid()  # the process whose connection, lock and claims these are (`_here`)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._claims: set[tuple[str, str]] = set()
        conn = self._connect(busy_timeout_s)
        try:
            self._prepare(conn, synchronous)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        # closed when the store is collected: CPython 3.11's Connection is in a reference cycle
        # (its statement cache), so one not closed outlived its store until the cyclic collector
        # ran -- an engine given store="sqlite:PATH" for each request held a file descriptor or
        # three and a page cache per request that had ended (peak 91 fds over 1,000 requests)
        self._closer = weakref.finalize(self, conn.close)
        self._where = None if self.path in (":memory:", "") else os.path.abspath(self.path)
        self._file = None if self._where is None else _file_id(self._where)

    # --- opening -------------------------------------------------------------------------

    def _connect(self, busy_timeout_s: float) -> sqlite3.Connection:
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if not parent.is_dir():
                raise ConfigError(f"{self.path}: directory {str(parent)!r} does not exist")
            if Path(self.path).is_dir():
                raise ConfigError(f"{self.path}: is a directory, expected a SQLite file path")
        try:
            # isolation_level=None: autocommit; transactions are explicit BEGIN IMMEDIATE.
            conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise ConfigError(f"{self.path}: cannot open SQLite store: {exc}") from None
        return conn

    def _prepare(self, conn: sqlite3.Connection, synchronous: Synchronous) -> None:
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            # one read transaction: the identity and the tables are seen as of one moment. Read
            # apart, a worker that read (0, 0) of a new file just before another worker's schema
            # commit then saw its tables: "not a rollsum store" about a rollsum store, 1 start in 4
            # of three workers on a new file
            conn.execute("BEGIN")
            try:
                app_id, version = self._identity(conn)
                self._check_identity(conn, app_id, version)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
            if self.path != ":memory:":
                mode = self._wal(conn)
                if str(mode).lower() != "wal":
                    log.warning("%s: journal_mode is %s, not WAL", self.path, mode)
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            if version < SCHEMA_VERSION:
                self._create_schema(conn)
        except sqlite3.DatabaseError as exc:
            name = getattr(exc, "sqlite_errorname", "")
            if not name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) and (
                    failed := self._failed(exc, "opening the store", "")) is not None:
                raise failed from None  # locked, full, read-only: not the user's file's fault
            raise ConfigError(f"{self.path}: not a usable SQLite database ({exc})") from None

    def _wal(self, conn: sqlite3.Connection) -> str:
        """Put the file in WAL mode (kept in the file: a no-op once set) and return the mode.

        Switching needs the file to itself, and SQLite can answer SQLITE_BUSY at once, without its
        busy handler, while another connection is at the same new file (seen with 4 workers
        opening one together: "database is locked" after 1 ms, 1 start in 8; a plain reader is
        waited for by the busy handler). So the switch is retried, as the busy handler would, for
        up to the busy timeout."""
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
        if mode.lower() == "wal":
            return mode
        deadline, pause = time.monotonic() + self._busy_timeout_s, 0.001
        while True:
            try:
                return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            except sqlite3.OperationalError as exc:
                if not str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_BUSY") \
                        or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    @staticmethod
    def _identity(conn: sqlite3.Connection) -> tuple[int, int]:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        return app_id, version

    def _check_identity(self, conn: sqlite3.Connection, app_id: int, version: int) -> None:
        if app_id not in (0, APPLICATION_ID):
            raise ConfigError(f"{self.path}: not a rollsum store (application_id {app_id:#x}, "
                              f"expected {APPLICATION_ID:#x})")
        if version > SCHEMA_VERSION:
            raise ConfigError(f"{self.path}: store schema version {version} is newer than this "
                              f"rollsum supports ({SCHEMA_VERSION}); upgrade rollsum")
        if app_id == APPLICATION_ID and version < 1:
            raise ConfigError(f"{self.path}: unknown rollsum store schema version {version}, "
                              f"expected {SCHEMA_VERSION}")
        if app_id == 0:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            if tables:
                raise ConfigError(f"{self.path}: not a rollsum store (it has tables "
                                  f"{', '.join(tables[:5])}); pass a new or rollsum-created file")

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have created it between our check and our write lock.
            app_id, version = self._identity(conn)
            if version == 0:
                self._check_identity(conn, app_id, version)
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                log.debug("%s: created rollsum store schema v%d", self.path, SCHEMA_VERSION)
            if version < SCHEMA_VERSION:
                conn.execute(_OWNERS)
                conn.execute(_CADENCE)
                for stmt in _TOTALS:
                    conn.execute(stmt)
                if version:  # an older file: count what it holds, in this transaction
                    conn.execute(_BACKFILL_TOTALS)
                    log.info("%s: upgraded rollsum store schema v%d to v%d", self.path, version, SCHEMA_VERSION)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # --- plumbing ------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ConfigError(f"{self.path}: store is closed")
        return self._conn

    def _here(self) -> None:
        """Make the store this process's own after a fork() (one getpid per call; every use of
        the connection, the lock or the claims starts here).

        A store opened before the fork (a server that loads the application, then forks its
        workers: gunicorn ``--preload``) reached each child with its parent's connection, lock
        and claims. SQLite forbids carrying an open connection into a child; the lock may have
        been held by another of the parent's threads at the fork, and is then held for ever in
        the child; and the claims are the parent's engines': a child's `close()`, or its exit
        (an engine's release runs then), deleted them, so a second engine could open a
        conversation the parent's live engine was writing. The child now opens a connection of
        its own, with a new lock and no claims; the parent's connection is never used or closed
        in it (`_INHERITED`)."""
        if self._pid == os.getpid():
            return
        self._lock = threading.RLock()
        self._claims = set()
        # closed before the fork: stays closed; ":memory:": the child's own copy of the parent's
        # memory (no file, nothing shared to protect)
        if self._conn is not None and self._where is not None:
            conn = self._connect(self._busy_timeout_s)
            try:
                self._prepare(conn, self._synchronous)
            except BaseException:
                conn.close()
                raise
            self._closer.detach()  # the parent's: not this process's to close
            _INHERITED.append(self._conn)
            self._conn, self._closer = conn, weakref.finalize(self, conn.close)
        self._pid = os.getpid()  # last: a child whose connection failed to open tries again next call

    def _failed(self, exc: BaseException, doing: str, after: str) -> StoreUnavailable | None:
        """`exc` as a `StoreUnavailable` naming the file, what was being done, what it means and
        what to do (`_REMEDIES`); None when it is not a file-level failure."""
        remedy = _remedy(exc, self.path, self._busy_timeout_s)
        if remedy is None:
            return None
        failed = StoreUnavailable(f"{self.path}: {doing} failed: {exc}: {remedy}{after}")
        failed.sqlite_errorcode = exc.sqlite_errorcode  # type: ignore[attr-defined]  # (a DatabaseError: `_remedy`)
        failed.sqlite_errorname = exc.sqlite_errorname  # type: ignore[attr-defined]
        return failed

    @contextmanager
    def _read(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, for reads; a file-level failure is a `StoreUnavailable`."""
        self._here()
        with self._lock:
            try:
                yield self._db()
            except sqlite3.DatabaseError as exc:
                if (failed := self._failed(exc, doing, "")) is not None:
                    raise failed from None
                raise

    @contextmanager
    def _write(self, doing: str, after: str = "; nothing was written", *, same_file: bool = True
               ) -> Iterator[sqlite3.Connection]:
        """One write transaction under the lock: all statements commit together or none do. A
        file-level failure (locked past the busy timeout, a full disk, ...) is a `StoreUnavailable`
        saying `doing` failed (and `after`: nothing was written).

        `same_file`: first make sure the path still names the file this store opened (one stat).
        A file deleted or replaced under a live store (a cleanup job, a restore by ``mv``) took
        every later write with it, silently: `add()` returned, and the messages were in no file
        any process could open again, while a new process opened an empty store at the path."""
        self._here()
        with self._lock:
            conn = self._db()
            if same_file and self._file is not None and _file_id(self._where or "") != self._file:
                raise StoreUnavailable(
                    f"{self.path}: {doing} failed: the file was deleted or replaced after this store opened it "
                    f"(a cleanup job, a restore by mv, another program){after}: open the store again "
                    "(a new SQLiteStore, or a new engine on 'sqlite:PATH'); what it wrote before went with the "
                    "old file")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")  # inside: a deferred-constraint failure here rolls back too
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.DatabaseError as exc:
                if (failed := self._failed(exc, doing, after)) is not None:
                    raise failed from None
                raise

    def _ensure_conversation(self, conn: sqlite3.Connection, conversation_id: str) -> None:
        conn.execute("INSERT OR IGNORE INTO conversations (id, created_at) VALUES (?, ?)",
                     (conversation_id, self._clock().isoformat()))

    # --- the Store protocol --------------------------------------------------------------

    def add_message(self, conversation_id: str, seq: int, message: Message) -> None:
        self._insert(conversation_id, seq, message, None, None)

    def add_counted(self, conversation_id: str, seq: int, message: Message, tokens: int, counter: str) -> None:
        """`add_message` and the token total (`WindowedStore.add_counted`), in one transaction."""
        self._insert(conversation_id, seq, message, tokens, counter)

    def _insert(self, conversation_id: str, seq: int, message: Message, tokens: int | None,
                counter: str | None) -> None:
        """Store a message and count it in the same transaction (`_COUNT_ROW`): `tokens` added
        to the total when `counter` made it (or start it: the first row), else the total
        becomes unknown."""
        if message.id is None:
            raise ConfigError("a stored message needs an id")
        check_meta(message.meta, "message", message.id)
        meta = _dumps(dict(message.meta), f"message {message.id!r}: meta")
        row = (conversation_id, seq, message.id, message.role, message.content, message.name,
               message.created_at, meta)
        try:
            with self._write(f"storing message {message.id!r} of conversation {conversation_id!r}",
                             "; nothing was stored") as conn:
                counts = (seq, tokens, counter, conversation_id)
                if not conn.execute(_COUNT_ROW, counts).rowcount:  # its first row: no totals, maybe no conversation
                    self._ensure_conversation(conn, conversation_id)
                    conn.execute(_FIRST_ROW, counts)
                conn.execute("INSERT INTO messages (conversation_id, seq, id, role, content, name, "
                             "created_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
        except sqlite3.IntegrityError:
            raise DuplicateMessageId(f"duplicate message id {message.id!r} in {conversation_id!r}") from None
        except UnicodeEncodeError as exc:
            raise ConfigError(f"message {message.id!r}: text is not valid Unicode ({exc.reason})"
                              ) from None

    def commit_summary(self, record: SummaryRecord, covered_ids: Sequence[str]) -> None:
        check_covered_ids(record, covered_ids)
        check_meta(record.meta, "summary", record.id)
        d = record.to_dict()
        values: dict[str, Any] = {
            "id": record.id, "conversation_id": record.conversation_id,
            "summary_text": record.text, "messages_covered": record.messages_covered,
            "start_message_id": record.start_id, "end_message_id": record.end_id,
            "created_at": record.created_at, "parent_id": record.parent_id,
            "depth": record.depth, "seq": record.seq, "tokens": record.tokens,
            "model": record.model, "prompt_id": record.prompt_id,
            "prompt_hash": record.prompt_hash, "fallback": record.fallback,
        }
        for name in _JSON_SUMMARY_FIELDS:
            values[name] = _dumps(d[name], f"summary {record.id!r}: {name}")
        cid = record.conversation_id
        try:
            with self._write(f"committing summary {record.id!r} of conversation {cid!r}",
                             "; nothing was committed, every message stays where it was") as conn:
                if conn.execute("SELECT 1 FROM conversation_summaries WHERE id = ?",
                                (record.id,)).fetchone():
                    raise ConfigError(f"summary id {record.id!r} already exists; nothing was committed")
                self._ensure_conversation(conn, cid)
                # The record first, then the messages it covers: same transaction, so a failure
                # anywhere below (or a crash) leaves neither.
                conn.execute(
                    f"INSERT INTO conversation_summaries ({', '.join(_SUMMARY_COLUMNS)}) "
                    f"VALUES ({', '.join(':' + c for c in _SUMMARY_COLUMNS)})", values)
                cur = conn.executemany(
                    "UPDATE messages SET state = 'covered', summary_id = ?, reason = NULL "
                    f"WHERE conversation_id = ? AND id = ? AND state IN ({_COVERABLE_SQL})",
                    [(record.id, cid, mid) for mid in covered_ids])
                if covered_ids and cur.rowcount != len(covered_ids):
                    raise uncoverable_error(record, self._problems(conn, cid, covered_ids, record.id))
        except sqlite3.IntegrityError as exc:
            raise ConfigError(f"summary {record.id!r}: rejected by the store ({exc}); "
                              "nothing was committed") from None
        except UnicodeEncodeError as exc:
            raise ConfigError(f"summary {record.id!r}: text is not valid Unicode ({exc.reason})"
                              ) from None
        log.debug("committed summary %s covering %d messages of %s", record.id, len(covered_ids), cid)

    @staticmethod
    def _problems(conn: sqlite3.Connection, cid: str, ids: Sequence[str], summary_id: str
                  ) -> list[tuple[str, str | None]]:
        """Why the UPDATE touched fewer rows than asked, read inside the doomed transaction."""
        problems: list[tuple[str, str | None]] = []
        for mid in ids:
            row = conn.execute("SELECT state, summary_id FROM messages "
                               "WHERE conversation_id = ? AND id = ?", (cid, mid)).fetchone()
            if row is None:
                problems.append((mid, None))
            elif row[1] != summary_id:  # not updated by us: it was covered/dropped already
                problems.append((mid, row[0]))
        return problems

    def set_state(self, conversation_id: str, ids: Sequence[str], state: MessageState,
                  reason: str | None = None) -> None:
        check_settable(state)
        if not ids:
            return
        with self._write(f"moving {len(ids)} message(s) of conversation {conversation_id!r} to {state!r}",
                         "; nothing was changed") as conn:
            found: dict[str, str] = {}
            for mid in dict.fromkeys(ids):
                row = conn.execute("SELECT state FROM messages WHERE conversation_id = ? AND id = ?",
                                   (conversation_id, mid)).fetchone()
                if row is not None:
                    found[mid] = row[0]
            unknown = [mid for mid in ids if mid not in found]
            if unknown:
                raise ConfigError(f"set_state: unknown message ids in {conversation_id!r}: "
                                  f"{unknown[:5]}; nothing was changed")
            covered = [mid for mid in ids if found[mid] == "covered"]
            if covered:
                raise ConfigError(f"set_state: messages {covered[:5]} are covered by a summary "
                                  "and cannot change state; nothing was changed")
            conn.executemany("UPDATE messages SET state = ?, reason = ? "
                             "WHERE conversation_id = ? AND id = ?",
                             [(state, reason, conversation_id, mid) for mid in found])

    def messages(self, conversation_id: str, state: MessageState | None = None
                 ) -> list[StoredMessage]:
        sql = ("SELECT seq, id, role, content, name, created_at, meta, state, summary_id, reason "
               "FROM messages WHERE conversation_id = ?")
        params: tuple[Any, ...] = (conversation_id,)
        if state is not None:
            sql += " AND state = ?"
            params += (state,)
        with self._read(f"reading conversation {conversation_id!r}") as conn:
            rows = conn.execute(sql + " ORDER BY seq, rowid", params).fetchall()
        return _stored(conversation_id, rows)

    def window_rows(self, conversation_id: str) -> list[StoredMessage]:
        """`WindowedStore.window_rows`, through the ``messages_in_window`` index."""
        with self._read(f"reading conversation {conversation_id!r}") as conn:
            rows = conn.execute(_WINDOW_SQL, (conversation_id,)).fetchall()
        return _stored(conversation_id, rows)

    def totals(self, conversation_id: str) -> StoreTotals | None:
        """`WindowedStore.totals`: one row, kept by the schema's triggers and `_insert` (`_TOTALS`);
        None for a conversation without one (no message, or only an older writer's)."""
        with self._read(f"reading conversation {conversation_id!r}") as conn:
            row = conn.execute("SELECT rows, next_seq, dropped, summaries, tokens, counter, counted "
                               "FROM conversation_totals WHERE conversation_id = ?", (conversation_id,)).fetchone()
        if row is None:
            return None
        rows, next_seq, dropped, summaries, tokens, counter, counted = row
        known = counter is not None and counted == rows  # else a row came without a count
        return StoreTotals(rows=rows, next_seq=next_seq, dropped=dropped, summaries=summaries,
                           tokens=tokens if known else None, counter=counter if known else None)

    def set_token_total(self, conversation_id: str, counter: str, tokens: int, rows: int) -> bool:
        with self._write(f"saving the token total of conversation {conversation_id!r}") as conn:
            cur = conn.execute("UPDATE conversation_totals SET tokens = ?, counter = ?, counted = rows "
                               "WHERE conversation_id = ? AND rows = ?", (tokens, counter, conversation_id, rows))
            return cur.rowcount == 1

    def summaries(self, conversation_id: str) -> list[SummaryRecord]:
        with self._read(f"reading the summaries of conversation {conversation_id!r}") as conn:
            rows = conn.execute(f"{_SUMMARY_SELECT} WHERE conversation_id = ? {_SUMMARY_ORDER}",
                                (conversation_id,)).fetchall()
        return [_record(row) for row in rows]

    def latest_summary(self, conversation_id: str) -> SummaryRecord | None:
        with self._read(f"reading the summaries of conversation {conversation_id!r}") as conn:
            row = conn.execute(
                f"{_SUMMARY_SELECT} WHERE conversation_id = ? "
                "ORDER BY created_at DESC, seq DESC, rowid DESC LIMIT 1", (conversation_id,)).fetchone()
        return None if row is None else _record(row)

    def delete_conversation(self, conversation_id: str) -> None:
        with self._write(f"deleting conversation {conversation_id!r}", "; nothing was deleted") as conn:
            held = _holder(conn, conversation_id)
            if held is not None and held.alive is not False:
                raise delete_busy_error(self.path, conversation_id, held.named)
            conn.execute("DELETE FROM conversation_owners WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    def conversations(self) -> list[str]:
        with self._read("listing conversations") as conn:
            return [r[0] for r in conn.execute("SELECT id FROM conversations ORDER BY id")]

    def save_cadence(self, conversation_id: str, cadence: Mapping[str, Any]) -> None:
        check_meta(cadence, "conversation", conversation_id, "cadence")
        blob = _dumps(dict(cadence), f"conversation {conversation_id!r}: cadence")
        with self._write(f"saving the cadence of conversation {conversation_id!r}") as conn:
            self._ensure_conversation(conn, conversation_id)
            conn.execute("INSERT OR REPLACE INTO conversation_cadence (conversation_id, cadence, updated_at) "
                         "VALUES (?, ?, ?)", (conversation_id, blob, self._clock().isoformat()))

    def cadence(self, conversation_id: str) -> dict[str, Any] | None:
        with self._read(f"reading the cadence of conversation {conversation_id!r}") as conn:
            row = conn.execute("SELECT cadence FROM conversation_cadence WHERE conversation_id = ?",
                               (conversation_id,)).fetchone()
        if row is None:
            return None
        found = json.loads(row[0])
        return found if isinstance(found, dict) else None

    def claim(self, conversation_id: str, owner: str, *, takeover: bool = False) -> None:
        me, host = os.getpid(), socket.gethostname()
        with self._write(f"claiming conversation {conversation_id!r}", "; no engine was opened") as conn:
            held = _holder(conn, conversation_id)
            if held is not None and held.owner != owner:
                if held.alive is not False and not takeover:
                    raise owner_error(self.path, conversation_id, held.named)
                log.warning("%s: conversation %r: taking over from engine %s (%s, %s)", self.path, conversation_id,
                            held.owner, held.process, "gone" if held.alive is False else "forced")
            conn.execute("INSERT OR REPLACE INTO conversation_owners (conversation_id, owner, pid, "
                         "process_start, host, claimed_at) VALUES (?, ?, ?, ?, ?, ?)",
                         (conversation_id, owner, me, process_start(me), host, self._clock().isoformat()))
            self._claims.add((conversation_id, owner))

    def release(self, conversation_id: str, owner: str) -> None:
        """Give the claim up. When the file cannot be written (locked past the busy timeout, a
        full disk) the claim is kept, and raised about: it was forgotten before, so no retry
        (`close()`, this store's `close()`) could release it, and every other engine was refused
        the conversation for as long as this process ran. Only a claim this process made is
        released (after a fork, the parent's stay its own: `_here`)."""
        self._here()
        with self._lock:
            if self._conn is None or (conversation_id, owner) not in self._claims:
                self._claims.discard((conversation_id, owner))
                return
            with self._write(f"releasing conversation {conversation_id!r}",
                             "; the claim stays, so other engines are refused it while this process runs: retry "
                             "close(), or open the next engine with takeover=True",
                             same_file=False) as conn:  # a claim in a deleted file holds no one up
                conn.execute("DELETE FROM conversation_owners WHERE conversation_id = ? AND owner = ?",
                             (conversation_id, owner))
            self._claims.discard((conversation_id, owner))

    def close(self) -> None:
        self._here()
        with self._lock:
            for cid, owner in sorted(self._claims):
                try:
                    self.release(cid, owner)
                except sqlite3.Error as exc:  # closing must not fail; the claim outlives it (the message says so)
                    log.warning("%s", exc if isinstance(exc, StoreUnavailable) else
                                f"{self.path}: could not release conversation {cid!r}: {exc}")
            self._claims.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


def _stored(conversation_id: str, rows: Sequence[Sequence[Any]]) -> list[StoredMessage]:
    return [
        StoredMessage(
            conversation_id=conversation_id, seq=seq,
            message=Message(role=role, content=content, id=mid, name=name,
                            created_at=created_at, meta=json.loads(meta)),
            state=st, summary_id=summary_id, reason=reason)
        for seq, mid, role, content, name, created_at, meta, st, summary_id, reason in rows
    ]


def _record(row: Sequence[Any]) -> SummaryRecord:
    col: Mapping[str, Any] = dict(zip(_SUMMARY_COLUMNS, row))
    d: dict[str, Any] = {
        "id": col["id"], "conversation_id": col["conversation_id"], "text": col["summary_text"],
        "messages_covered": col["messages_covered"], "start_id": col["start_message_id"],
        "end_id": col["end_message_id"], "created_at": col["created_at"],
        "parent_id": col["parent_id"], "depth": col["depth"], "seq": col["seq"],
        "tokens": col["tokens"], "model": col["model"], "prompt_id": col["prompt_id"],
        "prompt_hash": col["prompt_hash"], "fallback": col["fallback"],
    }
    for name in _JSON_SUMMARY_FIELDS:
        d[name] = json.loads(col[name])
    return SummaryRecord.from_dict(d)
