"""Scrubbing secrets out of anything the model layer writes to disk.

Cassettes, caches and logs are shared (committed, attached to bug reports), so every string
that leaves this layer goes through `redact`: it removes the live ``ANTHROPIC_API_KEY`` value
and anything shaped like an Anthropic key, even if a conversation happened to contain one.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"
KEY_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_KEY_PATTERN = re.compile(r"sk-ant-[A-Za-z0-9_\-]{4,}")
_SECRET_HEADERS = frozenset({"x-api-key", "authorization", "anthropic-api-key", "proxy-authorization"})


def _live_secrets() -> list[str]:
    # Read at call time: tests and users set the variable after import.
    return [v for name in KEY_ENV_VARS if (v := os.environ.get(name, "")) and len(v) >= 8]


def redact(text: str) -> str:
    for secret in _live_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _KEY_PATTERN.sub(REDACTED, text)


def redact_obj(obj: Any) -> Any:
    """Deep copy of JSON-like data with every string redacted and auth headers dropped."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        return {str(k): (REDACTED if str(k).lower() in _SECRET_HEADERS else redact_obj(v))
                for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj


class RedactingFilter(logging.Filter):
    """A handler filter that scrubs keys from every record before it is written.

    The SDK's own DEBUG log prints request bodies (so a key pasted into a conversation would
    reach a log file); attach this to each handler a program installs (`install_log_redaction`).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Add a `RedactingFilter` to every handler of `logger` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
