"""Error taxonomy shared by the library.

Every error a *user* can cause (bad config, missing key, unknown preset) derives from
`RollsumError`, so a CLI can print one line instead of a traceback. Transport and validation
failures are distinguished because the failure policy differs: transport errors are retried,
validation errors are not (retrying a model that returned malformed output tends to loop).
"""

from __future__ import annotations

import sqlite3
import sys
from enum import StrEnum

from rollsum.types import Usage


class RollsumError(Exception):
    """Base class for errors a caller is expected to handle or show to a user."""


class ConfigError(RollsumError):
    """A parameter, preset name, model spec or file is not what was expected."""


class DuplicateMessageId(ConfigError):
    """A store already holds a message with this id in the conversation (the engine gives an
    id-less message another id when its own choice is taken)."""


class ConversationBusy(ConfigError):
    """Another live engine holds the conversation (`Store.claim`). In a server that builds an
    engine per request this is most often a second request on the same conversation (a double
    send, a retry) arriving while the first is served: catch this class to retry or queue it.
    It was a plain `ConfigError`, which a server could not tell from a configuration mistake."""


class StoreUnavailable(RollsumError, sqlite3.OperationalError):
    """A store's file could not be read or written: locked by another connection past the busy
    timeout, a full disk, a damaged, read-only or vanished file. Its message names the file, what
    was being done and what to do; what the call would have written was not written.

    Why a class of its own: these came out of `RollingSummarizer.add()` (and opening, closing)
    as a bare ``sqlite3.OperationalError: database is locked``, naming neither the file nor a
    remedy. It is still a `sqlite3.OperationalError` (with ``sqlite_errorname``), so code that
    caught that keeps working."""


class MissingCredentials(ConfigError):
    """A real model was requested but its API key is not set."""


def closed_engine(conversation_id: str) -> ConfigError:
    """What `add()` raises on a closed engine (before anything is stored): its claim is gone, so
    another engine may own the conversation, and its message would collide with that one's."""
    return ConfigError(f"conversation {conversation_id!r}: this engine was closed, so another may own the "
                       "conversation now (a closed engine's message would collide with its next one); open a "
                       "new engine on the store to go on")


def not_a_message(value: object) -> TypeError:
    """What `add()` raises for a str or an API dict: say so, not "'str' has no attribute 'id'"."""
    return TypeError(f"add() takes a rollsum.Message, got {type(value).__name__} (make one: Message(\"user\", text))")


class ErrorKind(StrEnum):
    """Why a model or summarizer call failed; decides whether a retry can help."""

    CONNECTION = "connection"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    AUTH = "auth"  # 401/403: the key is wrong or lacks permission; no retry and no later call can help
    CLIENT = "client"  # other 4xx: our request is wrong, retrying will not help
    MALFORMED = "malformed"  # the model answered, but not in the shape we asked for
    EMPTY = "empty"
    REFUSAL = "refusal"  # the model declined (stop_reason "refusal"): its text is not an answer
    OVERFLOW = "overflow"  # the request would not fit the summarizer model's window
    OTHER = "other"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE


_RETRYABLE = {ErrorKind.CONNECTION, ErrorKind.TIMEOUT, ErrorKind.RATE_LIMIT, ErrorKind.SERVER}


class ModelError(RollsumError):
    """A model call failed. `kind` classifies it; `retry_after` comes from the server if sent.

    `billed` is what the provider charged for a call that failed *after* it was answered (a
    refusal, a reply with no text): such a call costs money like a good one, and a spend account
    that counted it as nothing let a run that was being refused spend past ``--max-cost-usd``
    while reporting $0. None when nothing was billed (an HTTP error, no connection)."""

    def __init__(self, message: str, kind: ErrorKind = ErrorKind.OTHER, *,
                 retry_after: float | None = None, status: int | None = None,
                 billed: Usage | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status
        self.billed = billed

    @property
    def retryable(self) -> bool:
        return self.kind.retryable


class SummarizeError(RollsumError):
    """A summarizer could not produce a valid summary.

    `transport` errors (network, timeout, 429, 5xx) are worth one retry; `validation` errors
    (malformed JSON, empty text, schema violations) are not.
    """

    def __init__(self, message: str, *, transport: bool, kind: ErrorKind = ErrorKind.OTHER,
                 raw: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.transport = transport
        self.kind = kind
        self.raw = raw
        self.retry_after = retry_after

    @classmethod
    def from_model_error(cls, err: ModelError) -> SummarizeError:
        return cls(str(err), transport=err.retryable, kind=err.kind, retry_after=err.retry_after)


def retry_wait(attempt: int, backoff_s: float, retry_after: float | None, max_retry_after_s: float) -> float:
    """Seconds to wait before retrying after failed try `attempt` (0-based): ``backoff_s ×
    2**attempt``, or the server's ``retry-after`` when that is longer, never more than
    `max_retry_after_s`. One policy for the engine's summary calls and `RetryingModel`.

    Why the backoff is capped too: ``retries`` may be up to 100, and uncapped the doubling
    blocked ``add()`` for 0.25 × 2**29 s (about 4 years) before the 31st try, or raised
    OverflowError from ``time.sleep`` further on."""
    wait = backoff_s * (2 ** attempt)
    if retry_after is not None:
        wait = max(wait, retry_after)
    return min(wait, max_retry_after_s)


def classify_exception(err: BaseException) -> SummarizeError:
    """Any exception raised while making a summary, as a classified `SummarizeError`.

    The engine calls models and summarizers it did not write (a custom model, a cache on a
    full disk), so it cannot rely on them raising our own errors: a `TimeoutError` or a reset
    connection is a transport failure worth a retry like a 5xx, a locked SQLite cache is
    transient too, and anything else (a `ValueError` from a parser, a bug) is a failure that
    retrying will not fix. Either way it becomes a summarizer failure, never an exception out
    of `RollingSummarizer.add()`.
    """
    if isinstance(err, SummarizeError):
        return err
    if isinstance(err, ModelError):
        return SummarizeError.from_model_error(err)
    name = type(err).__name__
    text = f"{name}: {err}" if str(err) else name
    sdk_kind = _sdk_kind(err)
    if sdk_kind is not None:
        return SummarizeError(text, transport=sdk_kind.retryable, kind=sdk_kind)
    if isinstance(err, TimeoutError):
        return SummarizeError(text, transport=True, kind=ErrorKind.TIMEOUT)
    if isinstance(err, ConnectionError):
        return SummarizeError(text, transport=True, kind=ErrorKind.CONNECTION)
    if isinstance(err, sqlite3.OperationalError) and any(
            w in str(err).lower() for w in ("locked", "busy")):
        return SummarizeError(text, transport=True, kind=ErrorKind.OTHER)
    if isinstance(err, OSError):
        return SummarizeError(text, transport=True, kind=ErrorKind.CONNECTION)
    return SummarizeError(text, transport=False, kind=ErrorKind.OTHER)


def _sdk_kind(err: BaseException) -> ErrorKind | None:
    """The kind of an `anthropic` SDK exception raised by a model that did not map it (a custom
    model calling the SDK itself). The SDK is only consulted when it is already imported: an
    SDK exception cannot exist otherwise, and this module stays free of the import."""
    sdk = sys.modules.get("anthropic")
    if sdk is None:
        return None
    if isinstance(err, sdk.AuthenticationError | sdk.PermissionDeniedError):
        return ErrorKind.AUTH
    if isinstance(err, sdk.APITimeoutError):
        return ErrorKind.TIMEOUT
    if isinstance(err, sdk.APIConnectionError):
        return ErrorKind.CONNECTION
    if isinstance(err, sdk.RateLimitError):
        return ErrorKind.RATE_LIMIT
    if isinstance(err, sdk.InternalServerError):
        return ErrorKind.SERVER
    return None
