"""Mask credentials in text before it is logged, printed or stored.

Model output, error messages and request dumps can echo an API key back (a misconfigured
proxy, a prompt that quoted an environment dump, a summary that copied a key out of the
conversation). Anything that goes to a log, cache, cassette, run directory or report passes
through `redact` / `redact_obj` first; the CLI also wraps its output streams
(`RedactingStream`) and log handlers (`install_log_redaction`), so a key never reaches a
terminal or a disk.

What is masked:

- every substring of 8 or more characters of a *known secret*: the value of any environment
  variable whose name looks like a credential (``*_API_KEY``, ``*_TOKEN``, ...; `env_secrets`),
  and any secret a caller passes. A summary quoting only the key's tail (``...SECRET123``) is
  masked as surely as the whole key. Secrets shorter than 8 characters are not masked (too many
  false hits, and no real key is that short). A credential-named variable whose value is not a
  secret is not one: a path (``SSH_KEY=/home/me/.ssh/id_ed25519`` names where a key is, and
  masking its pieces would turn every path under that folder into ``***run``), a plain word or
  a number (`looks_secret`). A whole known secret is also found in its base64, base64url and
  percent-encoded forms (a key inside a basic-auth header, a data URL, a query string);
- the usual key shapes whatever their value: ``sk-ant-...``, ``sk-...``, bearer tokens,
  ``x-api-key: ...`` / ``api_key = ...`` assignments, AWS access key ids;
- in `redact_obj`, mapping keys as well as values, and the values of auth headers.

Cost: finding substrings of a secret must not be quadratic (a sweep journals thousands of rows).
A secret's 8-grams are indexed once (`SecretIndex`, cached per set of secrets); text is scanned
for the secret's 4-character blocks at every 5th offset — any 8-character piece of the secret
contains one of them whole — with `str.find` (C speed), and only where one occurs are the
8-character windows around it looked up. Text without any block costs one `find` per block.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import json
import logging
import os
import re
import sys
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any
from urllib.parse import quote, quote_plus

MASK = "***"
MIN_SECRET = 8
"""Shortest secret masked, and shortest piece of a secret masked."""
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


_WORD = re.compile(r"[a-z]+(?:[._-][a-z]+)*|[0-9]+")
_PATH_START = re.compile(r"^(?:~|\.{1,2})?[/\\]|^[A-Za-z]:[/\\]")


def is_path(value: str) -> bool:
    """`value` names a place in a file system rather than being a secret: it starts like a path
    (``/``, ``~/``, ``./``, ``C:\\``) and either it or its folder exists, or it has no capital
    letter (a random key that happens to start with ``/`` has some; a path a user typed rarely
    does, and when it does it usually exists)."""
    if not _PATH_START.match(value) or any(c.isspace() for c in value):
        return False
    full = os.path.expanduser(value)
    if not any(c.isupper() for c in value):
        return True
    try:
        parent = os.path.dirname(full)
        return os.path.exists(full) or (parent.rstrip("/\\") != "" and os.path.isdir(parent))
    except (OSError, ValueError):
        return False


def looks_secret(value: str) -> bool:
    """Whether a credential-named variable's value is a secret worth masking: 8+ characters, not
    a path (`is_path`), not a plain lower-case word (``disabled``, ``keyring``) or a number. The
    well-known key variables (`KEY_ENV_VARS`) are always secrets."""
    return len(value) >= MIN_SECRET and not is_path(value) and not _WORD.fullmatch(value)


def env_secrets() -> list[str]:
    """Values of every credential-looking environment variable that `looks_secret`. Read at call
    time: tests and users set them after import."""
    found = {v for k, v in os.environ.items() if k.upper().endswith(SECRET_ENV_SUFFIXES) and looks_secret(v)}
    found.update(v for k in KEY_ENV_VARS if len(v := os.environ.get(k, "")) >= MIN_SECRET)
    return sorted(found)


def encoded_forms(secret: str) -> set[str]:
    """How `secret` reads once encoded: percent-encoded (``quote``, ``quote_plus``) and base64 /
    base64url at each of the three byte alignments it can have inside a longer encoded text
    (for alignment k, the characters that depend only on the secret's bytes: the first group is
    dropped when it mixes in bytes before the secret, the last when it mixes in bytes after)."""
    forms = {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    raw = secret.encode("utf-8")
    for k in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * k + raw).decode("ascii").rstrip("=")
            start = 4 if k else 0
            whole = (k + len(raw)) // 3 * 4  # characters of complete 3-byte groups
            end = whole if (k + len(raw)) % 3 else len(text)
            forms.add(text[start:end])
    return {f for f in forms if len(f) >= MIN_SECRET and f != secret}


# ----------------------------------------------------------------------------------------------
# substrings of known secrets

_BLOCK, _STRIDE = 4, 5
"""An 8-character window of a secret starting at offset o contains the block at the first
multiple of 5 at or after o (o + 4 at most, and it ends by o + 8). Fewer, longer blocks make
fewer `find` scans; 4 x 5 is the largest product that keeps the guarantee."""


class SecretIndex:
    """The 8-character pieces of some secrets, and what finds them in text quickly.

    Each secret is also indexed as JSON and Python's ``repr`` would escape it (a quote or a
    backslash in a key must not let its escaped form through a JSON file or a log line)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        encoded: set[str] = set()
        for s in secrets:
            if len(s) < MIN_SECRET:
                continue
            forms.update({s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1], repr(s)[1:-1]})
            encoded.update(encoded_forms(s))
        self.forms = tuple(sorted(forms))
        self.encoded = tuple(sorted(encoded - forms))
        """Encoded forms of whole secrets, found whole (one `find` each): indexing their pieces
        too would multiply the blocks scanned for, and redaction runs on every journaled line."""
        self._grams = frozenset(f[i:i + MIN_SECRET] for f in self.forms for i in range(len(f) - MIN_SECRET + 1))
        self._blocks = tuple(sorted({f[i:i + _BLOCK] for f in self.forms
                                     for i in range(0, len(f) - _BLOCK + 1, _STRIDE)}))

    def __bool__(self) -> bool:
        return bool(self.forms)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Merged ``[start, end)`` ranges of `text` covered by 8-character pieces of a secret or
        by a whole secret's encoded form."""
        if not self.forms or len(text) < MIN_SECRET:
            return []
        ranges: list[tuple[int, int]] = []
        for form in self.encoded:
            at = text.find(form)
            while at != -1:
                ranges.append((at, at + len(form)))
                at = text.find(form, at + 1)
        starts: set[int] = set()
        grams = self._grams
        for block in self._blocks:
            at = text.find(block)
            while at != -1:
                for p in range(max(0, at - _STRIDE + 1), at + 1):
                    if text[p:p + MIN_SECRET] in grams:
                        starts.add(p)
                at = text.find(block, at + 1)
        ranges.extend((p, p + MIN_SECRET) for p in starts)
        merged: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        return merged

    def found_in(self, text: str) -> bool:
        return bool(self.spans(text))

    def mask(self, text: str) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        out, last = [], 0
        for a, b in spans:
            out.append(text[last:a])
            out.append(MASK)
            last = b
        out.append(text[last:])
        return "".join(out)


@functools.lru_cache(maxsize=32)
def _index(secrets: tuple[str, ...]) -> SecretIndex:
    return SecretIndex(secrets)


def secret_index(extra_secrets: Sequence[str] = ()) -> SecretIndex:
    """The index of the environment's secrets plus `extra_secrets` (cached per set)."""
    return _index(tuple(sorted({*env_secrets(), *(s for s in extra_secrets if len(s) >= MIN_SECRET)})))


def _redact_with(text: str, index: SecretIndex) -> str:
    text = index.mask(text)
    lowered = text.lower()
    for (pattern, repl), needles in zip(_PATTERNS, _NEEDLES):
        if any(n in lowered for n in needles):
            text = pattern.sub(repl, text)
    return text


def redact(text: str, extra_secrets: Sequence[str] = ()) -> str:
    """`text` with every 8+ character piece of a known secret, and every key-shaped token,
    replaced by a mask. Known secrets: the environment's (`env_secrets`) and `extra_secrets`."""
    if len(text) < MIN_SECRET:
        return text
    return _redact_with(text, secret_index(extra_secrets))


def contains_secret(text: str, extra_secrets: Sequence[str] = ()) -> bool:
    """Whether `redact` would change `text`."""
    return redact(text, extra_secrets) != text


_SECRET_HEADERS = frozenset({"x-api-key", "authorization", "anthropic-api-key", "proxy-authorization"})


def redact_obj(obj: Any, extra_secrets: Sequence[str] = ()) -> Any:
    """Deep copy of JSON-like data with every string redacted, mapping keys included, and
    auth headers masked. Two keys that mask to the same text keep both values (the second
    gets a ``#2`` suffix): masking must not lose data."""
    return _redact_obj(obj, secret_index(extra_secrets))


def _redact_obj(obj: Any, index: SecretIndex) -> Any:
    if isinstance(obj, str):
        # no secret the patterns or the index describe fits in fewer than 8 characters
        return _redact_with(obj, index) if len(obj) >= MIN_SECRET else obj
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            key = str(k)
            value = MASK if key.lower() in _SECRET_HEADERS else _redact_obj(v, index)
            key = _redact_with(key, index) if len(key) >= MIN_SECRET else key
            while key in out:
                key += "#2"
            out[key] = value
        return out
    if isinstance(obj, list | tuple):
        return [_redact_obj(v, index) for v in obj]
    return obj


# ----------------------------------------------------------------------------------------------
# logs


class RedactingFilter(logging.Filter):
    """Scrubs keys from a record: its message, and its traceback and stack.

    The traceback is rendered here (``exc_text``; a standard formatter then uses it as is)
    because the formatter would otherwise render it after every filter has run, from the live
    exception, whose message may quote the key. Add it to a *logger* to protect every handler
    that logger's records reach, or to a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FORMATTER = logging.Formatter()


class RedactingFormatter(logging.Formatter):
    """Wraps a handler's formatter and redacts its whole output: message, traceback, stack,
    and whatever a custom format adds (the record's own fields)."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Redact every handler of `logger` (the root logger by default): a filter on each, and its
    formatter wrapped, so tracebacks are masked however they are rendered."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))


def redacting_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` with a `RedactingFilter`: for library modules that log
    exceptions, so that an application's own handlers never see a key in a traceback."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger


# ----------------------------------------------------------------------------------------------
# output streams


class RedactingStream(io.TextIOBase):
    """A text stream that redacts what it passes on, a line at a time.

    Text is held until a line ends (``\\n`` or ``\\r``, so progress bars still move) or the
    stream is flushed: a key written in two pieces is still seen whole."""

    _LIMIT = 1 << 16

    def __init__(self, inner: IO[str]) -> None:
        super().__init__()
        self.inner = inner
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, s: str) -> int:
        with self._lock:
            self._pending += s
            cut = max(self._pending.rfind("\n"), self._pending.rfind("\r"))
            if cut >= 0 or len(self._pending) > self._LIMIT:
                end = cut + 1 if cut >= 0 else len(self._pending)
                out, self._pending = self._pending[:end], self._pending[end:]
                self.inner.write(redact(out))
        return len(s)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                out, self._pending = self._pending, ""
                self.inner.write(redact(out))
        self.inner.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.inner, "encoding", "utf-8"))

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)


def _redacting_excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    sys.stderr.write(redact("".join(traceback.format_exception(exc_type, exc, tb))))
    sys.stderr.flush()


def _redacting_thread_hook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    sys.stderr.write(redact(f"Exception in thread {name}:\n"
                            + "".join(traceback.format_exception(args.exc_type, args.exc_value,
                                                                 args.exc_traceback))))
    sys.stderr.flush()


@contextmanager
def redacted_output() -> Iterator[None]:
    """While inside: ``sys.stdout`` and ``sys.stderr`` redact everything written to them, and
    uncaught exceptions (of the process and of threads) are printed redacted. The streams are
    restored on exit; the exception hooks stay (a traceback printed after the command returned
    must be masked too)."""
    sys.excepthook = _redacting_excepthook
    threading.excepthook = _redacting_thread_hook
    saved = sys.stdout, sys.stderr
    wrapped = [s if isinstance(s, RedactingStream) else RedactingStream(s) for s in saved]
    sys.stdout, sys.stderr = wrapped
    try:
        yield
    finally:
        for s in wrapped:
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
                s.flush()
        sys.stdout, sys.stderr = saved


def redact_process_output() -> None:
    """For a worker process: its stdout/stderr redact for the rest of its life."""
    sys.excepthook = _redacting_excepthook
    threading.excepthook = _redacting_thread_hook
    if not isinstance(sys.stdout, RedactingStream) and sys.stdout is not None:
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream) and sys.stderr is not None:
        sys.stderr = RedactingStream(sys.stderr)
