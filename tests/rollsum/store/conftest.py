"""Fixtures shared by the store tests: every contract test runs once per implementation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rollsum.store import MemoryStore, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "store.db")
    yield s
    s.close()
