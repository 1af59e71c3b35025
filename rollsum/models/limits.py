"""Client-side rate limiting: stay under a provider's requests/min and tokens/min, and cap
how many calls are in flight, so a parallel sweep slows down instead of collecting 429s.

One `RateLimiter` is shared by every thread that calls the same provider account; the clock and
sleep are injected so tests run in virtual time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from rollsum.errors import ConfigError, ModelError
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.tokens import CLAUDE_CALIBRATION, HeuristicCounter


class _Bucket:
    """A token bucket refilled continuously at `per_min`, holding at most one minute's worth."""

    def __init__(self, per_min: float, now: float) -> None:
        self.capacity = float(per_min)
        self.rate = per_min / 60.0
        self.level = float(per_min)
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate


class Limiter(Protocol):
    """What `LimitedModel` needs of a limiter: a local `RateLimiter`, or a handle on one shared
    by a whole cluster (the harness's Ray executor keeps it in one actor)."""

    def acquire(self, tokens: int = 0) -> float: ...

    def settle(self, reserved: int, actual: int) -> None: ...

    def pause(self, seconds: float) -> None: ...


class RateLimiter:
    """Requests-per-minute and tokens-per-minute buckets shared across threads.

    `acquire(tokens)` blocks until one request and `tokens` tokens are available and takes
    them; `settle(reserved, actual)` gives back (or charges) the difference once the real usage
    is known. A request larger than a whole minute's token budget is clipped to it, so it waits
    for a full bucket rather than forever.
    """

    def __init__(self, requests_per_min: float | None = None, tokens_per_min: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        for label, value in (("requests_per_min", requests_per_min), ("tokens_per_min", tokens_per_min)):
            if value is not None and value <= 0:
                raise ConfigError(f"rate limit {label}={value}: expected a positive number (or none)")
        self._clock = clock
        self._sleep = sleep
        now = clock()
        self._requests = _Bucket(requests_per_min, now) if requests_per_min else None
        self._tokens = _Bucket(tokens_per_min, now) if tokens_per_min else None
        self._lock = threading.Lock()
        self._paused_until = -float("inf")
        self.requests_per_min = requests_per_min
        self.tokens_per_min = tokens_per_min
        self.waited_s = 0.0
        self.acquired = 0

    def acquire(self, tokens: int = 0) -> float:
        """Take one request and `tokens` tokens; returns how long it waited (seconds)."""
        waited = 0.0
        while True:
            wait = self.try_acquire(tokens)
            if wait <= 0.0:
                with self._lock:
                    self.waited_s += waited
                return waited
            self._sleep(wait)
            waited += wait

    def try_acquire(self, tokens: int = 0) -> float:
        """Take one request and `tokens` tokens if they are there now (returns 0.0), else take
        nothing and return how long to wait before asking again. The non-blocking half of
        `acquire`, for a limiter that lives in another process (a cluster's one limiter: its
        callers wait on their side, so the limiter never blocks one caller behind another)."""
        with self._lock:
            now = self._clock()
            wait = max(0.0, self._paused_until - now)
            need_tokens = 0.0
            if self._requests is not None:
                self._requests.refill(now)
                wait = max(wait, self._requests.wait_for(1.0))
            if self._tokens is not None:
                self._tokens.refill(now)
                need_tokens = min(float(tokens), self._tokens.capacity)
                wait = max(wait, self._tokens.wait_for(need_tokens))
            if wait > 0.0:
                return wait
            if self._requests is not None:
                self._requests.level -= 1.0
            if self._tokens is not None:
                self._tokens.level -= need_tokens
            self.acquired += 1
            return 0.0

    def pause(self, seconds: float) -> None:
        """The provider said ``retry-after``: nobody sharing this limiter sends before then
        (not only the caller that was told), so N callers back off as one would."""
        if seconds > 0:
            with self._lock:
                self._paused_until = max(self._paused_until, self._clock() + seconds)

    def settle(self, reserved: int, actual: int) -> None:
        """Correct the token bucket once real usage is known (refund or extra charge)."""
        if self._tokens is None:
            return
        with self._lock:
            self._tokens.refill(self._clock())
            self._tokens.level = min(self._tokens.capacity, self._tokens.level + reserved - actual)


class LimitedModel(ModelWrapper):
    """Wraps a model with a shared `RateLimiter` and a cap on concurrent calls.

    Tokens are reserved before the call from an estimate (input by the calibrated heuristic plus
    `max_tokens` of output), then settled to the provider-reported usage. Pass the same limiter
    (and the same `semaphore`) to every model that shares a provider account.
    """

    def __init__(self, inner: Model, limiter: Limiter | None = None, max_concurrency: int | None = None,
                 *, semaphore: threading.Semaphore | None = None) -> None:
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency}: expected at least 1")
        super().__init__(inner)
        self.limiter = limiter
        self._semaphore = semaphore or (threading.BoundedSemaphore(max_concurrency)
                                        if max_concurrency else None)
        self._counter = HeuristicCounter(calibration=CLAUDE_CALIBRATION)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def __repr__(self) -> str:
        return f"LimitedModel({self.inner!r})"

    def estimate_tokens(self, request: CompletionRequest) -> int:
        return (self._counter.count(request.system)
                + sum(self._counter.count_message(m) for m in request.messages) + request.max_tokens)

    def complete(self, request: CompletionRequest) -> Completion:
        if self._semaphore is not None:
            self._semaphore.acquire()
        try:
            reserved = self.estimate_tokens(request)
            if self.limiter is not None:
                self.limiter.acquire(reserved)
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            actual = 0
            try:
                completion = self.inner.complete(request)
                actual = completion.input_tokens + completion.output_tokens
                return completion
            except ModelError as err:
                if err.retry_after and self.limiter is not None:
                    self.limiter.pause(err.retry_after)
                raise
            finally:
                with self._lock:
                    self.in_flight -= 1
                if self.limiter is not None:
                    self.limiter.settle(reserved, actual)
        finally:
            if self._semaphore is not None:
                self._semaphore.release()
