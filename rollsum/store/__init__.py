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
    without claims (a third-party one). A release that raises (the file locked past the busy
    timeout) can be called again: it counts as done only once the store released."""
    take = getattr(store, "claim", None)
    if not callable(take):
        return None
    take(conversation_id, owner, takeover=takeover)
    return _Release(weakref.finalize(holder, store.release, conversation_id, owner))


class _Release:
    """A claim's release, run by the engine's `close()` and, failing that, when the engine is
    collected. `weakref.finalize` forgets its call before making it, so a release that raised
    could never be retried: `close()` again was a no-op and the claim stayed for as long as the
    process ran, refusing every other engine the conversation. This calls the release with the
    finalizer still armed, and disarms it once the release went through."""

    __slots__ = ("_finalizer",)

    def __init__(self, finalizer: weakref.finalize) -> None:
        self._finalizer = finalizer

    def __call__(self) -> object:
        armed = self._finalizer.peek()
        if armed is None:  # released already (or collected)
            return None
        release, args, kwargs = armed[1:]
        done = release(*args, **kwargs)  # raises: still armed, so close() (or collection) tries again
        self._finalizer.detach()
        return done
