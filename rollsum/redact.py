"""Mask credentials in text before it is logged or stored.

Model output, error messages and request dumps can echo an API key back (a misconfigured
proxy, a prompt that quoted an environment dump). Anything that goes to a log, cache, cassette
or report passes through `redact` / `redact_obj` first, and the CLI installs
`RedactingFilter` on its log handlers (the SDK's DEBUG log prints request bodies), so a key
never reaches disk.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

MASK = "***"
KEY_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Anthropic keys first, so the generic sk- rule does not leave the tail visible.
    (re.compile(r"sk-ant-[A-Za-z0-9_\-]{4,}"), "sk-ant-" + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), "sk-" + MASK),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\g<1>" + MASK),
    (re.compile(r"(?i)\b((?:x-api-key|api[_-]?key|aws_secret_access_key|secret[_-]?key|access[_-]?token)"
                r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"), r"\g<1>" + MASK),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), "AKIA" + MASK),
)

_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("sk-ant-",), ("sk-",), ("bearer",), ("key", "token"), ("akia", "asia", "agpa", "aida", "aroa"),
)
"""A literal each pattern cannot match without (lower case): most text contains none, and
skipping the regex then is what makes redacting every cached completion cheap (it was ~60 %
of a sweep Unit's CPU)."""


SECRET_ENV_SUFFIXES: tuple[str, ...] = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def env_secrets() -> list[str]:
    """Values of every credential-looking environment variable (8+ characters): for writers
    that must mask secrets even in shapes the patterns do not know (run directories)."""
    return [v for k, v in os.environ.items() if k.upper().endswith(SECRET_ENV_SUFFIXES) and len(v) >= 8]


def redact(text: str, extra_secrets: Sequence[str] = ()) -> str:
    """`text` with API keys, bearer tokens and AWS-style keys replaced by a mask.

    The live values of the key environment variables are masked too, whatever their shape;
    they are read at call time because tests and users set them after import. `extra_secrets`
    are literal values masked last (e.g. `env_secrets()`).
    """
    for var in KEY_ENV_VARS:
        secret = os.environ.get(var, "")
        if len(secret) >= 8 and secret in text:
            text = text.replace(secret, MASK)
    lowered = text.lower()
    for (pattern, repl), needles in zip(_PATTERNS, _NEEDLES):
        if any(n in lowered for n in needles):
            text = pattern.sub(repl, text)
    for value in extra_secrets:
        if value in text:
            text = text.replace(value, MASK)
    return text


_SECRET_HEADERS = frozenset({"x-api-key", "authorization", "anthropic-api-key", "proxy-authorization"})


def redact_obj(obj: Any, extra_secrets: Sequence[str] = ()) -> Any:
    """Deep copy of JSON-like data with every string redacted and auth headers masked."""
    if isinstance(obj, str):
        # no secret the patterns or the live keys describe fits in fewer than 8 characters
        return redact(obj, extra_secrets) if len(obj) >= 8 else obj
    if isinstance(obj, Mapping):
        return {str(k): (MASK if str(k).lower() in _SECRET_HEADERS else redact_obj(v, extra_secrets))
                for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v, extra_secrets) for v in obj]
    return obj


class RedactingFilter(logging.Filter):
    """A handler filter that scrubs keys from every record before it is written."""

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
