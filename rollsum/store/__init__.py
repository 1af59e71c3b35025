"""Where conversations, messages and the summary chain live.

`MemoryStore` for replays, tests and benchmarks; `SQLiteStore` when summaries must outlive the
process. Both implement `Store` with identical rules (shared contract tests), so choosing one
is a deployment decision, never a behavioural one. `open_store` turns a user-facing spec string
(``RollingSummarizer(store="sqlite:chat.db")``, ``from_preset(..., store=...)``) into a store.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable

from rollsum.errors import ConfigError
from rollsum.store.base import Store, StoredMessage, StoreTotals, WindowedStore
from rollsum.store.memory import MemoryStore
from rollsum.store.sqlite import SQLiteStore

__all__ = ["MemoryStore", "SQLiteStore", "Store", "StoreTotals", "StoredMessage", "WindowedStore", "claim",
           "open_store", "resolve"]


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
"""A spec's ``KIND:`` prefix (two characters at least: ``C:`` is a Windows drive, a path)."""


def open_store(spec: str) -> Store:
    """``"memory"`` (or ``"memory:"``) -> `MemoryStore`; ``"sqlite:PATH"`` or a bare path -> `SQLiteStore`.

    ``"sqlite::memory:"`` opens a private in-memory SQLite database (useful to exercise the
    SQL path without a file).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"store: expected 'memory', 'sqlite:PATH' or a file path, got {spec!r}")
    spec = spec.strip()
    if spec in ("memory", "memory:"):
        return MemoryStore()
    scheme = _SCHEME.match(spec)
    if scheme is not None and scheme.group(1) != "sqlite":  # a typo ("sqlite3:", "memroy:") made a file of that name
        raise ConfigError(f"store {spec!r}: unknown kind {scheme.group(1)!r}; expected 'memory', 'sqlite:PATH' or a "
                          f"file path (./{spec} for a file of that name)")
    path = spec.removeprefix("sqlite:")
    if not path:
        raise ConfigError(f"store: {spec!r} names no file; expected 'sqlite:PATH'")
    return SQLiteStore(path)


def resolve(store: Store | str | None) -> Store:
    """An engine's `store` argument as a store: a spec string opened (`open_store`), None a
    fresh `MemoryStore`."""
    if isinstance(store, str):
        return open_store(store)
    return store if store is not None else MemoryStore()


def claim(store: Store, conversation_id: str, owner: str, *, takeover: bool, holder: object
          ) -> Callable[[], object] | None:
    """Claim a conversation for `owner` in a store that keeps claims (``store.claim``); returns
    the release, which also runs when `holder` is garbage-collected, or None for a store
    without claims (a third-party one)."""
    take = getattr(store, "claim", None)
    if not callable(take):
        return None
    take(conversation_id, owner, takeover=takeover)
    return weakref.finalize(holder, store.release, conversation_id, owner)
