"""RetryingModel: the engine's retry policy for callers outside an engine."""

from __future__ import annotations

import pytest

from rollsum.errors import ErrorKind, ModelError
from rollsum.models import CompletionRequest, FakeModel, RetryingModel
from rollsum.types import Message

REQ = CompletionRequest(system="s", messages=[Message("user", "hello there")])


def test_retryable_failures_are_retried_with_backoff_then_answered() -> None:
    sleeps: list[float] = []
    inner = FakeModel("echo", fail_first=2, fail_kind="500", retry_after=None, sleep=lambda s: None)
    model = RetryingModel(inner, retries=2, backoff_s=0.5, sleep=sleeps.append)
    assert model.complete(REQ).text and inner.calls == 3 and sleeps == [0.5, 1.0] and model.retried == 2


def test_retry_after_is_honoured_up_to_a_cap() -> None:
    sleeps: list[float] = []
    inner = FakeModel("echo", fail_first=1, fail_kind="429", retry_after=7.0, sleep=lambda s: None)
    RetryingModel(inner, retries=1, backoff_s=0.1, max_retry_after_s=5.0, sleep=sleeps.append).complete(REQ)
    assert sleeps == [5.0]


def test_non_retryable_and_exhausted_failures_are_raised() -> None:
    bad = FakeModel("echo", fail_rate=1.0, fail_kind="malformed", sleep=lambda s: None)
    with pytest.raises(ModelError) as info:
        RetryingModel(bad, retries=3, sleep=lambda s: None).complete(REQ)
    assert info.value.kind is ErrorKind.MALFORMED and bad.calls == 1
    down = FakeModel("echo", fail_rate=1.0, fail_kind="500", sleep=lambda s: None)
    with pytest.raises(ModelError):
        RetryingModel(down, retries=2, sleep=lambda s: None).complete(REQ)
    assert down.calls == 3
