"""RateLimiter and LimitedModel, in virtual time."""

from __future__ import annotations

import threading
import time

import pytest

from rollsum.errors import ConfigError, ModelError
from rollsum.models import CompletionRequest, FakeModel, LimitedModel, RateLimiter
from rollsum.types import Message


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def test_requests_per_minute_spaces_calls() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(requests_per_min=60, clock=clock, sleep=clock.sleep)
    for _ in range(60):
        assert limiter.acquire() == 0.0  # a minute's burst is allowed
    limiter.acquire()
    assert clock.now == pytest.approx(1.0)  # then one per second
    for _ in range(9):
        limiter.acquire()
    assert clock.now == pytest.approx(10.0)


def test_tokens_per_minute_and_settle_refunds() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(tokens_per_min=6000, clock=clock, sleep=clock.sleep)
    limiter.acquire(6000)
    limiter.acquire(600)  # 600 tokens refill in 6 s
    assert clock.now == pytest.approx(6.0)
    limiter.settle(reserved=600, actual=0)
    limiter.acquire(600)  # refunded: no wait
    assert clock.now == pytest.approx(6.0)


def test_oversized_request_waits_for_a_full_bucket_not_forever() -> None:
    clock = VirtualClock()
    limiter = RateLimiter(tokens_per_min=100, clock=clock, sleep=clock.sleep)
    limiter.acquire(100)
    limiter.acquire(10_000)
    assert clock.now == pytest.approx(60.0)


def test_invalid_limits_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        RateLimiter(requests_per_min=0)
    with pytest.raises(ConfigError):
        LimitedModel(FakeModel(), None, max_concurrency=0)


def test_concurrency_cap_holds_across_threads() -> None:
    inner = FakeModel("echo", latency_ms=20)
    model = LimitedModel(inner, RateLimiter(requests_per_min=10_000), max_concurrency=2)
    req = CompletionRequest(system="", messages=[Message("user", "hi")], max_tokens=10)
    threads = [threading.Thread(target=lambda: [model.complete(req) for _ in range(3)]) for _ in range(6)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inner.calls == 18
    assert model.max_in_flight == 2
    assert time.monotonic() - start >= 0.18 - 0.02  # 18 calls of 20 ms, two at a time


def test_limited_model_is_transparent() -> None:
    inner = FakeModel("echo")
    limiter = RateLimiter(requests_per_min=100, tokens_per_min=100_000)
    model = LimitedModel(inner, limiter)
    req = CompletionRequest(system="s", messages=[Message("user", "hello")], max_tokens=10)
    assert model.complete(req).text == "hello"
    assert model.name == inner.name and model.context_window == inner.context_window
    assert model.limiter is limiter and limiter.acquired == 1


def test_try_acquire_takes_nothing_when_it_says_wait() -> None:
    """The non-blocking half a cluster's one limiter serves: a caller told to wait has taken
    nothing, so N callers asking in turn get exactly the limiter's rate between them."""
    clock = VirtualClock()
    limiter = RateLimiter(requests_per_min=2, clock=clock, sleep=clock.sleep)
    assert limiter.try_acquire() == 0.0 and limiter.try_acquire() == 0.0
    assert limiter.try_acquire() == pytest.approx(30.0)
    assert limiter.try_acquire() == pytest.approx(30.0)  # asking again took nothing either
    clock.sleep(30.0)
    assert limiter.try_acquire() == 0.0 and limiter.try_acquire() == pytest.approx(30.0)
    assert limiter.acquired == 3


def test_retry_after_pauses_everyone_sharing_the_limiter() -> None:
    """One caller told ``retry-after: 7`` stops every caller of the same limiter for 7 s (on a
    cluster: every worker), not only itself."""
    clock = VirtualClock()
    limiter = RateLimiter(requests_per_min=600, clock=clock, sleep=clock.sleep)
    told = LimitedModel(FakeModel("echo", fail_first=1, fail_kind="429", retry_after=7.0), limiter)
    other = LimitedModel(FakeModel("echo"), limiter)
    req = CompletionRequest(system="s", messages=[Message("user", "hi")], max_tokens=5)
    with pytest.raises(ModelError):
        told.complete(req)
    assert other.complete(req).text == "hi"
    assert clock.now == pytest.approx(7.0)
