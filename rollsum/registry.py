"""A name -> component table that production code reads and anyone can extend: `Registry`.

The policies (`rollsum.policies.POLICIES`), presets (`rollsum.presets.PRESETS`), context formats
(`rollsum.context.FORMATS`), summarizers (`rollsum.summarizers.REGISTRY`), model backends
(`rollsum.models.spec.BACKENDS`, by spec prefix), and the harness's scorers
(`rollsum_evals.scoring.REGISTRY`) and dataset loaders (`rollsum_evals.data.formats.LOADERS`) are
each one `Registry`. Adding a component is ``register(name, cls)``; a test that adds one for its
own duration uses ``with REGISTRY.registered(name, cls):`` (the previous entry, if any, comes
back afterwards), so no test reaches into a private dict. A name is registered once:
registering a taken name is an error unless ``replace=True`` says it is meant, because two
plug-ins silently fighting over one name would make a sweep's result depend on import order.

Readers see a read-only `Mapping` (``in``, ``[name]``, iteration in registration order,
``values()``, ``items()``); only `register`, `unregister` and `registered` change it. An entry
that carries its own name (a policy class's ``name``, a `Preset`'s or a `ContextFormat`'s, a
`Backend`'s ``prefix``) must be registered under that name (`name_of`): the engine records a
component by its own name (a run, a model by its spec), so an entry reachable under another
would be recorded as something a rerun cannot find.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from rollsum.errors import ConfigError

T = TypeVar("T")


class Registry(Mapping[str, T]):
    """Entries by name, in registration order (the order `names` lists them in)."""

    def __init__(self, what: str, entries: Mapping[str, T] | None = None, *,
                 name_of: Callable[[T], str | None] | None = None) -> None:
        self.what = what
        """What an entry is ("summarizer", "scorer"): the word error messages use."""
        self.name_of = name_of
        """An entry's own name, which must be the name it is registered under (None: no such name)."""
        self._entries: dict[str, T] = {}
        for name, entry in (entries or {}).items():
            self.register(name, entry)

    def register(self, name: str, entry: T, *, replace: bool = False) -> None:
        """Make `entry` reachable as `name` everywhere the registry is read."""
        if not isinstance(name, str) or not name.strip() or ":" in name:
            raise ConfigError(f"{self.what} name {name!r}: expected a non-empty name without ':' "
                              "(a ':' marks an import path 'package.module:Class')")
        if name in self._entries and not replace and self._entries[name] is not entry:
            raise ConfigError(f"{self.what} {name!r} is already registered (pass replace=True to replace it)")
        own = self.name_of(entry) if self.name_of is not None else name
        if own != name:
            said = "has no name of its own" if own is None else f"calls itself {own!r}"
            raise ConfigError(f"{self.what} {name!r}: the entry {said}; register it under its own name")
        self._entries[name] = entry

    def unregister(self, name: str) -> T:
        """Remove `name` and return its entry (KeyError when it is not registered)."""
        return self._entries.pop(name)

    @contextmanager
    def registered(self, name: str, entry: T) -> Iterator[T]:
        """`entry` registered as `name` inside the block, the previous state restored after."""
        previous = self._entries.get(name)
        self.register(name, entry, replace=True)
        try:
            yield entry
        finally:
            if previous is None:
                self._entries.pop(name, None)
            else:
                self._entries[name] = previous

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
