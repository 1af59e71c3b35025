"""Error taxonomy shared by the library.

Every error a *user* can cause (bad config, missing key, unknown preset) derives from
`RollsumError`, so a CLI can print one line instead of a traceback. Transport and validation
failures are distinguished because the failure policy differs: transport errors are retried,
validation errors are not (retrying a model that returned malformed output tends to loop).
"""

from __future__ import annotations

from enum import StrEnum


class RollsumError(Exception):
    """Base class for errors a caller is expected to handle or show to a user."""


class ConfigError(RollsumError):
    """A parameter, preset name, model spec or file is not what was expected."""


class MissingCredentials(ConfigError):
    """A real model was requested but its API key is not set."""


class ErrorKind(StrEnum):
    """Why a model or summarizer call failed; decides whether a retry can help."""

    CONNECTION = "connection"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    CLIENT = "client"  # other 4xx: our request is wrong, retrying will not help
    MALFORMED = "malformed"  # the model answered, but not in the shape we asked for
    EMPTY = "empty"
    OVERFLOW = "overflow"  # the request would not fit the summarizer model's window
    OTHER = "other"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE


_RETRYABLE = {ErrorKind.CONNECTION, ErrorKind.TIMEOUT, ErrorKind.RATE_LIMIT, ErrorKind.SERVER}


class ModelError(RollsumError):
    """A model call failed. `kind` classifies it; `retry_after` comes from the server if sent."""

    def __init__(self, message: str, kind: ErrorKind = ErrorKind.OTHER, *,
                 retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.kind.retryable


class SummarizeError(RollsumError):
    """A summarizer could not produce a valid summary.

    `transport` errors (network, timeout, 429, 5xx) are worth one retry; `validation` errors
    (malformed JSON, empty text, schema violations) are not.
    """

    def __init__(self, message: str, *, transport: bool, kind: ErrorKind = ErrorKind.OTHER,
                 raw: str | None = None) -> None:
        super().__init__(message)
        self.transport = transport
        self.kind = kind
        self.raw = raw

    @classmethod
    def from_model_error(cls, err: ModelError) -> SummarizeError:
        return cls(str(err), transport=err.retryable, kind=err.kind)
