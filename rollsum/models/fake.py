"""A deterministic stand-in model for tests, reliability drills and benchmarks.

It answers instantly and for free, yet can behave like a real provider where it matters to the
code around it: latency (fixed or seeded jitter, through an injected `sleep`), failures by rate
and kind (429, 5xx, timeout, malformed output), and token usage estimated the same way the
library estimates context size.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models.base import Completion, CompletionRequest
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.tokens import HeuristicCounter

MODES: tuple[str, ...] = ("echo", "scripted", "extractive", "json")
FAIL_KINDS: dict[str, tuple[ErrorKind, int | None]] = {
    "429": (ErrorKind.RATE_LIMIT, 429),
    "500": (ErrorKind.SERVER, 500),
    "529": (ErrorKind.SERVER, 529),
    "timeout": (ErrorKind.TIMEOUT, None),
    "connection": (ErrorKind.CONNECTION, None),
    "malformed": (ErrorKind.MALFORMED, None),
    "empty": (ErrorKind.EMPTY, None),
}
MALFORMED_JSON = '{"summary": "the model stopped mid-obje'
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CAPITALIZED = re.compile(r"\b[A-Z][a-zA-Z0-9_\-]+(?:\s+[A-Z][a-zA-Z0-9_\-]+)*")
_SPEAKER = re.compile(r"(?:^|(?<=[.!?]\s))[ \t]*(?:\[[^\]\n]*\][ \t]*)?([A-Z][\w\-]{0,30}(?: [A-Z][\w\-]{0,30})?):\s",
                      re.MULTILINE)
_STOPWORDS = frozenset({
    "The", "A", "An", "I", "We", "You", "He", "She", "It", "They", "This", "That", "These", "Those",
    "And", "But", "Or", "So", "If", "When", "What", "Why", "How", "Where", "Who", "Yes", "No", "Ok",
    "OK", "Okay", "Please", "Thanks", "Thank", "Hi", "Hello", "Also", "Then", "There", "Here",
    "My", "Our", "Your", "Let", "Sure", "Great", "User", "Assistant", "System", "Tool", "Summary",
    "Summarize", "Return", "JSON", "Do", "Is", "Are", "Was", "In", "On", "At", "For", "To", "Of",
})


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def extractive_text(text: str, max_chars: int) -> str:
    """The first sentences of `text` that fit in `max_chars` (at least a cut of the first)."""
    out: list[str] = []
    used = 0
    for s in _sentences(text):
        extra = len(s) + (1 if out else 0)
        if used + extra > max_chars:
            break
        out.append(s)
        used += extra
    if not out:
        return " ".join(text.split())[:max_chars]
    return " ".join(out)


def _unique(items: Iterable[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        item = item.strip()
        if item and item not in seen:
            seen[item] = None
        if len(seen) >= limit:
            break
    return list(seen)


def json_summary(text: str, max_chars: int) -> dict[str, Any]:
    """A schema-valid structured summary derived from `text` by fixed rules."""
    sentences = _sentences(text)
    lowered = [(s, s.lower()) for s in sentences]
    entities = _unique((m for m in _CAPITALIZED.findall(text) if m not in _STOPWORDS), 12)
    return {
        "summary": extractive_text(text, max(40, max_chars // 2)),
        "key_points": _unique(sentences[:3], 3),
        "participants": _unique(_SPEAKER.findall(text), 8),
        "decisions": _unique((s for s, lo in lowered if any(w in lo for w in
                              ("decided", "agreed", "we will", "let's go with", "chose"))), 5),
        "action_items": _unique((s for s, lo in lowered if any(w in lo for w in
                                 ("todo", "need to", "should", "must", "action item", "follow up"))), 5),
        "unresolved": _unique((s for s in sentences if s.endswith("?")), 5),
        "entities": entities,
    }


def _parse_options(options: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in options.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"fake model option {part!r}: expected key=value (e.g. fake:mode=echo,seed=1)")
        out[key.strip()] = value.strip()
    return out


class FakeModel:
    """Scripted, echo, extractive or JSON answers with simulated latency and failures."""

    def __init__(self, mode: str = "echo", *, script: Sequence[str | BaseException] = (),
                 latency_ms: float = 0.0, jitter_ms: float = 0.0, fail_rate: float = 0.0,
                 fail_kind: str = "500", fail_first: int = 0, retry_after: float | None = 0.0,
                 seed: int = 0, context_window: int = DEFAULT_CONTEXT_WINDOW, model: str = "fake",
                 sleep: Callable[[float], None] = time.sleep, spec: str | None = None) -> None:
        if mode not in MODES:
            raise ConfigError(f"fake model mode {mode!r}: expected one of {', '.join(MODES)}")
        if fail_kind not in FAIL_KINDS:
            raise ConfigError(f"fake model fail_kind {fail_kind!r}: expected one of {', '.join(FAIL_KINDS)}")
        if not 0.0 <= fail_rate <= 1.0:
            raise ConfigError(f"fake model fail_rate {fail_rate}: expected a number between 0 and 1")
        for key, value in (("latency_ms", latency_ms), ("jitter_ms", jitter_ms)):
            if not math.isfinite(value) or value < 0:  # NaN passes `< 0` and then breaks every call's sleep
                raise ConfigError(f"fake model {key} {value}: expected a finite number >= 0")
        if retry_after is not None and (not math.isfinite(retry_after) or retry_after < 0):
            raise ConfigError(f"fake model retry_after {retry_after}: expected a finite number >= 0")
        if mode == "scripted" and not script:
            raise ConfigError("fake model mode 'scripted' needs a non-empty script")
        self.mode = mode
        self.script = list(script)
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.fail_rate = fail_rate
        self.fail_kind = fail_kind
        self.fail_first = fail_first
        self.retry_after = retry_after
        self.seed = seed
        self.model = model
        self._context_window = context_window
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._counter = HeuristicCounter()
        self._spec = spec
        self.calls = 0
        self.failures = 0
        self.requests: list[CompletionRequest] = []

    @classmethod
    def from_options(cls, options: str, **kw: Any) -> FakeModel:
        """Build from the part after ``fake:``: ``mode=extractive,latency_ms=50,seed=1``."""
        opts = _parse_options(options)
        parsed: dict[str, Any] = {}
        converters: Mapping[str, Callable[[str], Any]] = {
            "mode": str, "fail_kind": str, "model": str,
            "latency_ms": float, "jitter_ms": float, "fail_rate": float, "retry_after": float,
            "seed": int, "fail_first": int, "context_window": int,
            "script": lambda v: v.split("|"),
        }
        for key, raw in opts.items():
            conv = converters.get(key)
            if conv is None:
                raise ConfigError(f"fake model option {key!r} is unknown: expected one of "
                                  f"{', '.join(sorted(converters))}")
            try:
                parsed[key] = conv(raw)
            except ValueError as err:
                raise ConfigError(f"fake model option {key}={raw!r}: {err}") from err
        if "script" in parsed and "mode" not in parsed:
            parsed["mode"] = "scripted"
        return cls(**{**parsed, **kw}, spec="fake:" + options if options else "fake")

    @property
    def name(self) -> str:
        return self._spec or "fake"

    @property
    def context_window(self) -> int:
        return self._context_window

    def __repr__(self) -> str:
        return f"FakeModel({self.name!r})"

    def complete(self, request: CompletionRequest) -> Completion:
        with self._lock:
            index = self.calls
            self.calls += 1
            self.requests.append(request)
            jitter = self._rng.uniform(-self.jitter_ms, self.jitter_ms) if self.jitter_ms else 0.0
            fail = index < self.fail_first or (self.fail_rate > 0 and self._rng.random() < self.fail_rate)
            if fail:
                self.failures += 1
        latency = max(0.0, self.latency_ms + jitter) / 1000.0
        if latency:
            self._sleep(latency)
        if fail and not (self.fail_kind == "malformed" and self.mode == "json"):
            raise self._failure()
        text = MALFORMED_JSON if fail else self._answer(request, index)
        input_tokens = self._counter.count(request.system) + sum(
            self._counter.count_message(m) for m in request.messages)
        return Completion(text=text, input_tokens=input_tokens, output_tokens=self._counter.count(text),
                          model=self.model, latency_s=latency, stop_reason="end_turn")

    def _failure(self) -> ModelError:
        kind, status = FAIL_KINDS[self.fail_kind]
        return ModelError(f"fake model injected failure: {self.fail_kind}", kind,
                          retry_after=self.retry_after if kind is ErrorKind.RATE_LIMIT else None,
                          status=status)

    def _answer(self, request: CompletionRequest, index: int) -> str:
        max_chars = max(1, request.max_tokens) * 4
        if self.mode == "scripted":
            item = self.script[index % len(self.script)]
            if isinstance(item, BaseException):
                raise item
            return item
        user_text = "\n".join(m.content for m in request.messages if m.role == "user")
        if self.mode == "echo":
            users = [m.content for m in request.messages if m.role == "user"]
            return users[-1] if users else ""
        if self.mode == "extractive":
            return extractive_text(user_text, max_chars)
        return json.dumps(json_summary(user_text, max_chars), ensure_ascii=False)
