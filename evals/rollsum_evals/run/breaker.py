"""Stop a sweep at once when its model cannot work at all: a refused key, no connection.

Without this, a bad key meant every summary trigger of every Unit failing one by one (the
engine keeps messages and backs off, as it should for a transient failure), minutes of
warnings, and a run full of summary-less Units that look like results. A `Breaker` is shared by
every model one sweep (or one worker process) builds. It trips on the first authentication or
permission failure (401/403: no later call can succeed), on the first 404 (a model the API does
not serve: a misspelt or retired name), and on repeated invalid-request (400) or connection
failures before any call has succeeded (an outage after successes is transient and left to the engine's
retries). Once tripped, every model call raises `SweepStop`, a BaseException so that it passes
through the engine and the Unit code, which turn every Exception into a failure row; the sweep
loop turns it into one line and exit 2 (`SweepStopped`), and no Unit in flight is journaled,
so `--resume` runs them once the cause is fixed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from rollsum.errors import ConfigError, ErrorKind, ModelError, classify_exception
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum_evals.spec import components

NOT_FOUND = "not_found"
"""The stop kind of a 404 from a model call: the model name (or the API's address) is wrong, so no
call to it can succeed; it used to leave every summary and QA call of the sweep failing one by one
and the run "complete" with exit 0."""
INVALID_REQUEST = "invalid_request"
CLIENT_FAILURES = 3
"""400s (other than a prompt too long, kind ``overflow``), with no success before them, that stop
the sweep: a request the API refuses every time (``max_tokens`` above the model's output limit, a
parameter the model does not take) is the spec's mistake, and the sweep used to make every
summary and QA call of every Unit fail on it, then end "complete" with exit 0. After a success a
400 is that request's own problem, left to the Unit."""
CONNECTION_FAILURES = 2
"""Connection failures, with no success before them, that stop the sweep (the engine's default
retry makes two attempts per summary: one summary that cannot reach the API at all)."""


class SweepStop(BaseException):
    """The sweep cannot go on; `cause` is the one line to show."""

    def __init__(self, cause: str, kind: str = "model") -> None:
        super().__init__(cause, kind)
        self.cause = cause
        self.kind = kind


class SweepStopped(ConfigError):
    """What the sweep raises after a `SweepStop`: a user-fixable cause, printed in one line."""


@dataclass(slots=True)
class Breaker:
    connection_limit: int = CONNECTION_FAILURES
    successes: int = 0
    connection_failures: int = 0
    client_limit: int = CLIENT_FAILURES
    client_failures: int = 0
    tripped: str | None = None
    kind: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> None:
        if self.tripped is not None:
            raise SweepStop(self.tripped, self.kind)

    def success(self) -> None:
        with self._lock:
            self.successes += 1
            self.connection_failures = 0

    def failure(self, model: str, err: BaseException) -> None:
        """Record a failed call; raises `SweepStop` when the sweep must end."""
        kind = classify_exception(err).kind
        with self._lock:
            if self.tripped is not None:
                pass
            elif kind is ErrorKind.AUTH:
                self.tripped = (f"{model}: {err} (check the API key, e.g. ANTHROPIC_API_KEY, and its access "
                                "to this model)")
                self.kind = kind.value
            elif isinstance(err, ModelError) and err.status == 404:
                self.tripped = (f"{model}: {err} (the API does not serve this model: check the model name in the "
                                "spec or --model, and ANTHROPIC_BASE_URL if you set it)")
                self.kind = NOT_FOUND
            elif kind is ErrorKind.CLIENT and isinstance(err, ModelError) and err.status == 400 \
                    and self.successes == 0:
                self.client_failures += 1
                if self.client_failures >= self.client_limit:
                    self.tripped = (f"{model}: {err}; the API refused {self.client_failures} requests as invalid "
                                    "and accepted none (check what the spec asks of this model: its name, "
                                    "max_tokens within the model's output limit, parameters it accepts)")
                    self.kind = INVALID_REQUEST
            elif kind is ErrorKind.CONNECTION and self.successes == 0:
                self.connection_failures += 1
                if self.connection_failures >= self.connection_limit:
                    self.tripped = (f"{model}: {err}; no call has succeeded (check the network, a proxy or the "
                                    "API's status)")
                    self.kind = kind.value
        self.check()


class GuardedModel(ModelWrapper):
    """A model whose calls report to a `Breaker` (and stop once it has tripped)."""

    def __init__(self, inner: Model, breaker: Breaker, spec: str) -> None:
        super().__init__(inner)
        self.breaker = breaker
        self.spec = spec

    def complete(self, request: CompletionRequest) -> Completion:
        self.breaker.check()
        try:
            out = self.inner.complete(request)
        except Exception as err:
            self.breaker.failure(self.spec, err)
            raise
        self.breaker.success()
        return out


@dataclass(slots=True)
class GuardedBuilder:
    """A model builder whose models (those that call a service: not offline ones, whose
    failures are results) share one breaker. Picklable when the builder is."""

    inner: object
    breaker: Breaker = field(default_factory=Breaker)

    def __call__(self, spec: str) -> Model | None:
        model = self.inner(spec)  # type: ignore[operator]
        if model is None or components.of_model(spec).offline:
            return model
        return GuardedModel(model, self.breaker, spec)
