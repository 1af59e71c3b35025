"""Fixtures for harness tests that talk to a paid model: never the network."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import anthropic
import httpx2
import pytest

from rollsum.models.anthropic_model import AnthropicModel
from rollsum.models.spec import BACKENDS
from tests.support.anthropic import KEY, Handler


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Handler], list[httpx2.Request]]]:
    """`anthropic:` models built by the sweep talk to `handler` through the real SDK; returns the
    requests it saw."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    seen: list[httpx2.Request] = []
    clients: list[httpx2.Client] = []

    def serve(handler: Handler) -> list[httpx2.Request]:
        def record(request: httpx2.Request) -> httpx2.Response:
            seen.append(request)
            return handler(request)

        def build(rest: str, **kw: object) -> AnthropicModel:
            http = httpx2.Client(transport=httpx2.MockTransport(record))
            clients.append(http)
            return AnthropicModel(anthropic.Anthropic(api_key=KEY, http_client=http, max_retries=0), rest)

        stack.enter_context(BACKENDS.registered("anthropic", dataclasses.replace(BACKENDS["anthropic"], build=build)))
        return seen

    with ExitStack() as stack:  # the real backend comes back when the test ends
        yield serve
    for c in clients:
        c.close()
