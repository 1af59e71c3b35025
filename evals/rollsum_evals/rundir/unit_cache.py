"""The Unit-result cache: finished replays and their scored rows, so an identical re-run (or a
re-run with another scorer) copies instead of replaying (cached requests, one level up from the
model cache).

Two kinds of entry share one table: a *replay* (the Unit's texts, summaries, events and trace
lines) keyed by the Unit and a fingerprint of the code that affects the replay, and its *scored
rows* keyed by the replay key, the scoring plan and a fingerprint of the scoring code. Changing
a scorer misses only the second; changing the library misses both; changing a report misses
neither.

SQLite in WAL mode: each `put` is one transaction (atomic; two sweeps sharing the cache dir wait
on each other instead of failing). Payloads are stored exactly as they go to the run directory,
after redaction, so the cache can never hold more than the run dir does. A cache that cannot be
opened or read is a warning and a miss, never a failed sweep: it is only a speed-up.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rollsum.redact import secret_index
from rollsum_evals.rundir.journal import ReplayLines, ScoredLines

log = logging.getLogger(__name__)

UNIT_CACHE_FILE = "units.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS unit_results (
    key TEXT PRIMARY KEY,
    unit_id TEXT NOT NULL,
    payload BLOB NOT NULL,
    created_at REAL NOT NULL
);
"""
T = TypeVar("T")
_Lines = TypeVar("_Lines", ReplayLines, ScoredLines)


class UnitCache:
    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        except (sqlite3.Error, OSError) as err:
            log.warning("unit cache %s unusable (%s): every Unit will be replayed", path, err)

    def _get_many(self, keys: Mapping[str, str], secrets: Sequence[str],
                  decode: Callable[[str, dict[str, Any]], T | None]) -> dict[str, T]:
        """``keys`` maps unit id -> cache key; returns the hits by unit id.

        Stored text was redacted by the same code (the key covers the code), so only this
        process's own secrets can be new: an entry that contains one is treated as a miss,
        never copied."""
        if self._conn is None or not keys:
            return {}
        by_key = {k: uid for uid, k in keys.items()}
        index = secret_index(secrets)
        out: dict[str, T] = {}
        items = list(by_key)
        try:
            for i in range(0, len(items), 500):
                chunk = items[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._conn.execute(
                        f"SELECT key, payload FROM unit_results WHERE key IN ({marks})", chunk):
                    uid = by_key[key]
                    text = zlib.decompress(blob).decode("utf-8")
                    if index and index.found_in(text):
                        continue
                    hit = decode(uid, decode_payload(text))
                    if hit is not None:
                        out[uid] = hit
        except (sqlite3.Error, ValueError, KeyError, TypeError, zlib.error) as err:
            log.warning("unit cache %s unreadable (%s): replaying instead", self.path, err)
            return {}
        return out

    def get_replays(self, keys: Mapping[str, str], *, secrets: Sequence[str] = (),
                    commit_rows: dict[str, dict[str, Any]] | None = None) -> dict[str, ReplayLines]:
        """Replay hits by unit id. `commit_rows`, when given, receives each hit's decoded trace
        line (decoded here anyway to check the owner; the largest line of an entry, so a
        caller that needs it does not decode it twice)."""
        return self._get_many(keys, secrets, lambda uid, d: _owned(ReplayLines.from_json(d), uid, commit_rows))

    def get_scores(self, keys: Mapping[str, str], *, secrets: Sequence[str] = (),
                   commit_rows: dict[str, dict[str, Any]] | None = None) -> dict[str, ScoredLines]:
        """Scored-rows hits by unit id; `commit_rows` as in `get_replays` (the units line)."""
        return self._get_many(keys, secrets, lambda uid, d: _owned(ScoredLines.from_json(d), uid, commit_rows))

    def put(self, key: str, unit_id: str, payload: ReplayLines | ScoredLines) -> bool:
        if self._conn is None:
            return False
        blob = zlib.compress(encode_payload(payload.to_json()).encode("utf-8"), 1)
        try:
            with self._conn:
                self._conn.execute("INSERT OR REPLACE INTO unit_results VALUES (?, ?, ?, ?)",
                                   (key, unit_id, blob, float(self._clock())))
        except sqlite3.Error as err:
            log.warning("unit cache %s: could not store %s (%s)", self.path, unit_id, err)
            return False
        return True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


PAYLOAD_MAGIC = "rollsum unit payload 1\n"
"""First line of an entry's text: then one JSON line, the index (each field's length, or each of
its entries' lengths), then the fields' texts back to back. Journal lines are JSON already: as
string values of one JSON object (the first format, still read) every quote in them was escaped
and decoding the object was a third of an identical re-run's cache lookup; here they are sliced."""


def encode_payload(fields: Mapping[str, str | Mapping[str, str]]) -> str:
    """An entry's text from its fields (`ReplayLines.to_json`, `ScoredLines.to_json`): string
    fields and string-to-string mappings (the texts by id), order kept."""
    index: dict[str, int | dict[str, int]] = {}
    parts: list[str] = []
    for name, value in fields.items():
        if isinstance(value, str):
            index[name] = len(value)
            parts.append(value)
        else:
            index[name] = {k: len(v) for k, v in value.items()}
            parts.extend(value.values())
    return PAYLOAD_MAGIC + json.dumps(index, ensure_ascii=False) + "\n" + "".join(parts)


def decode_payload(text: str) -> dict[str, Any]:
    """`encode_payload` undone (or a first-format entry: one JSON object). A text whose lengths do
    not add up is a ValueError: the lookup then treats the cache as unreadable, never hands out
    a cut line."""
    if not text.startswith(PAYLOAD_MAGIC):
        out: dict[str, Any] = json.loads(text)
        return out
    end = text.index("\n", len(PAYLOAD_MAGIC))
    index = json.loads(text[len(PAYLOAD_MAGIC):end])
    pos = end + 1
    fields: dict[str, Any] = {}
    for name, size in index.items():
        if isinstance(size, dict):
            sub: dict[str, str] = {}
            for key, n in size.items():
                sub[key], pos = text[pos:pos + int(n)], pos + int(n)
            fields[name] = sub
        else:
            fields[name], pos = text[pos:pos + int(size)], pos + int(size)
    if pos != len(text):
        raise ValueError(f"unit cache entry: {len(text) - pos:+d} characters against its index")
    return fields


def _owned(lines: _Lines, unit_id: str, commit_rows: dict[str, dict[str, Any]] | None = None) -> _Lines | None:
    """An entry is only handed out under the Unit it was stored for (its commit line says so)."""
    row = json.loads(lines.commit_line)
    if not (isinstance(row, dict) and row.get("unit_id") == unit_id):
        return None
    if commit_rows is not None:
        commit_rows[unit_id] = row
    return lines
