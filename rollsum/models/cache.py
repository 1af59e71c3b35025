"""A persistent response cache so a sweep never pays twice for the same call.

SQLite in WAL mode gives one file that many threads and processes can read and write at once
(writers wait on `busy_timeout` instead of failing). The key is the request hash including the
inner model's name and the prompt version, so a prompt edit or a model change is a miss, never
a stale answer. Only successes are stored: a cached failure would turn a transient 429 into a
permanent one.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.redact import redact, redact_obj, redacting_logger

log = redacting_logger(__name__)

CacheMode = Literal["on", "off", "read-only", "strict"]
CACHE_MODES: tuple[str, ...] = ("on", "off", "read-only", "strict")
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class CacheMissError(ModelError):
    """A `strict` cache had no answer: the cache is stale for this run (CI uses this)."""


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    saved_input_tokens: int = 0
    saved_output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def innermost(model: Model) -> Model:
    """The model that actually answers, under any wrappers (recorder, limiter, cache).

    Keys use it so that wrapping order or a cassette path never splits one cache.
    """
    seen = 0
    while getattr(model, "inner", None) is not None and seen < 16:
        model = model.inner  # type: ignore[attr-defined]
        seen += 1
    return model


def provider_of(model: Model) -> str:
    return str(getattr(model, "provider", "") or model.name.partition(":")[0])


class CacheFile:
    """One cache file: its mode and one connection per thread, schema set up once.

    Many `CachedModel`s can share one `CacheFile` (a sweep makes a fresh model per Unit), so
    that dozens of concurrent Units do not each open a connection and rewrite the schema under
    the file's write lock.
    """

    def __init__(self, path: str | Path, mode: str = "on") -> None:
        if mode not in CACHE_MODES:
            raise ConfigError(f"cache mode {mode!r}: expected one of {', '.join(CACHE_MODES)}")
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._warned = False
        if mode == "strict" and not self.path.exists():
            raise ConfigError(f"cache file {self.path} does not exist: strict mode answers only from "
                              "an existing cache (fill it with the cache mode 'on' first)")
        if mode == "on":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if mode != "off":
            self._connect()  # a bad path or a non-SQLite file fails at construction

    def _connect(self) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            if self.mode in ("read-only", "strict"):
                if not self.path.exists():
                    return None
                conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30.0,
                                       check_same_thread=False)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            else:
                conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'responses'").fetchone() is None:
                    conn.executescript(_SCHEMA)
                    conn.execute("INSERT OR IGNORE INTO meta(name, value) VALUES ('schema', ?)",
                                 (str(SCHEMA_VERSION),))
                    conn.commit()
        except sqlite3.Error as err:
            raise ConfigError(f"cache file {self.path}: cannot open as SQLite ({err})") from err
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def lookup(self, key: str) -> Completion | None:
        conn = self._connect()
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as err:  # a damaged file: the cache is only a speed-up
            if "no such table" not in str(err):
                self._warn_once(f"cache {self.path}: cannot read ({err}); answering without it")
            return None
        if row is None:
            return None
        try:
            return Completion.from_dict(json.loads(row[0]), cached=True)
        except (ValueError, KeyError) as err:
            log.warning("cache %s: unreadable entry %s… ignored (%s)", self.path, key[:12], err)
            return None

    def store(self, key: str, model_name: str, prompt_id: str, completion: Completion, now: float) -> bool:
        conn = self._connect()
        if conn is None:
            return False
        blob = json.dumps(redact_obj(completion.to_dict()), ensure_ascii=False)
        try:
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO responses(key, model, prompt_id, response, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, redact(model_name), prompt_id, blob, now),
                )
        except sqlite3.Error as err:  # disk full, read-only file: the answer is still good
            self._warn_once(f"cache {self.path}: cannot store ({err}); answers are not being cached")
            return False
        return True

    def _warn_once(self, message: str) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        log.warning("%s", message)

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


class CachedModel(ModelWrapper):
    """Wraps any `Model`; answers repeated requests from an SQLite file.

    Modes: ``on`` (read and write), ``off`` (pass-through), ``read-only`` (serve hits, never
    write: for runs on a shared cache), ``strict`` (a miss raises `CacheMissError`: proves a CI
    run made no live call). Pass a `CacheFile` instead of a path to share connections.
    """

    def __init__(self, inner: Model, path: str | Path | CacheFile, mode: str = "on", *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(inner)
        self._owns_file = not isinstance(path, CacheFile)
        self.file = path if isinstance(path, CacheFile) else CacheFile(path, mode)
        self.path = self.file.path
        self.mode = self.file.mode
        self.stats = CacheStats()
        self._clock = clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CachedModel({self.inner!r}, {str(self.path)!r}, mode={self.mode!r})"

    def key(self, request: CompletionRequest) -> str:
        answering = innermost(self.inner)
        return request.hash(provider_of(answering), answering.name)

    def _lookup(self, key: str) -> Completion | None:
        return self.file.lookup(key)

    def _store(self, key: str, request: CompletionRequest, completion: Completion) -> None:
        if self.file.store(key, self.inner.name, request.prompt_id, completion, self._clock()):
            with self._lock:
                self.stats.writes += 1

    def complete(self, request: CompletionRequest) -> Completion:
        if self.mode == "off":
            return self.inner.complete(request)
        key = self.key(request)
        hit = self._lookup(key)
        if hit is not None:
            with self._lock:
                self.stats.hits += 1
                self.stats.saved_input_tokens += hit.input_tokens
                self.stats.saved_output_tokens += hit.output_tokens
            return hit
        with self._lock:
            self.stats.misses += 1
        if self.mode == "strict":
            raise CacheMissError(
                f"cache miss in strict mode ({self.path}): no answer for {self.inner.name} "
                f"request {key[:12]} (prompt {request.prompt_id or '-'}); re-run with the cache "
                "mode 'on' to fill it", ErrorKind.OTHER)
        completion = self.inner.complete(request)  # errors propagate and are never stored
        if self.mode == "on":
            self._store(key, request, completion)
        return completion

    def close(self) -> None:
        """Close the file if this model opened it; a shared `CacheFile` is its owner's to close."""
        if self._owns_file:
            self.file.close()
