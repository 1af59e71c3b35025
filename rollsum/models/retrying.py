"""Retries for callers that use a model outside an engine (a QA scorer, a judge).

`RollingSummarizer` owns the retries of summary calls (`retries`, `backoff_s`), and
`AnthropicModel` leaves its SDK client's own retries at 0 so the two never multiply. Code that
calls `Model.complete` directly wraps the model in `RetryingModel` to get the same policy:
retryable failures (connection, timeout, 429, 5xx) are retried with exponential backoff, or
after the server's ``retry-after`` when it sent one; others are raised at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rollsum.errors import ConfigError, ModelError, retry_wait
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper


class RetryingModel(ModelWrapper):
    """`inner` with `retries` more tries on a retryable `ModelError`; counts `.retried`."""

    def __init__(self, inner: Model, *, retries: int = 2, backoff_s: float = 0.5,
                 max_retry_after_s: float = 60.0, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(inner)
        if retries < 0 or backoff_s < 0:
            raise ConfigError("retries and backoff_s must be >= 0")
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self.retried = 0

    def complete(self, request: CompletionRequest) -> Completion:
        for n in range(self.retries + 1):
            try:
                return self.inner.complete(request)
            except ModelError as err:
                if not err.retryable or n == self.retries:
                    raise
                self.retried += 1
                self._sleep(retry_wait(n, self.backoff_s, err.retry_after, self.max_retry_after_s))
        raise AssertionError("unreachable")  # pragma: no cover
