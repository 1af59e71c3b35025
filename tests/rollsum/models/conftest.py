"""Fixtures for the model layer: a network guard and real SDK clients on a MockTransport."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from tests.support.anthropic import message_json

TEST_KEY = "sk-ant-test-SECRET"
Handler = Callable[[httpx2.Request], httpx2.Response]


class Recorder:
    """A MockTransport handler that serves queued responses and keeps every request."""

    def __init__(self, *responses: httpx2.Response | Exception | Handler) -> None:
        self.queue = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        item = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx2.Response):
            return item(request)
        return item


@pytest.fixture
def sdk_client() -> Iterator[Callable[..., anthropic.Anthropic]]:
    """Factory: the real `anthropic.Anthropic` on an httpx2 MockTransport."""
    made: list[httpx2.Client] = []

    def make(handler: Handler, *, max_retries: int = 0, api_key: str = TEST_KEY) -> anthropic.Anthropic:
        http = httpx2.Client(transport=httpx2.MockTransport(handler))
        made.append(http)
        return anthropic.Anthropic(api_key=api_key, http_client=http, max_retries=max_retries)

    yield make
    for http in made:
        http.close()


@pytest.fixture
def recorder() -> type[Recorder]:
    """The `Recorder` class (test modules do not import conftest)."""
    return Recorder


@pytest.fixture
def msg() -> Callable[..., dict[str, Any]]:
    """`message_json`: a Messages API response body."""
    return message_json
