"""Suite-wide guards: no test reaches the network, no test sees the developer's API key, and no
property test fails on the machine's load."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# The suite runs on a shared 2-core machine: how fast hypothesis generates inputs says nothing
# about the code under test, and its timing checks failed tests at random under load
# (`test_report_keys`: "Input generation is slow"). A test's own @settings still applies on top.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that opens a real network connection (Unix sockets stay allowed)."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def _refuse(address: Any) -> RuntimeError:
        return RuntimeError(f"test tried to open a real network connection to {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        raise _refuse(address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family == socket.AF_UNIX:
            return real_connect_ex(self, address)
        raise _refuse(address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        raise _refuse(address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide for themselves whether a key exists."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ROLLSUM_PRICES", raising=False)


@pytest.fixture(autouse=True, scope="session")
def _no_truncate_curve() -> Iterator[None]:
    """Specs in tests count their Units exactly: the truncate grid `rollsum run` adds to every
    sweep (issue #18) is off unless a test turns it on (tests/evals/spec/test_truncate_curve.py
    deletes this variable). Session-scoped so module fixtures that run a sweep see it too;
    subprocesses inherit it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROLLSUM_TRUNCATE_CURVE", "0")
        yield
