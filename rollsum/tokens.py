"""Token counting.

The default is a heuristic: ceil(chars / 4 × calibration) plus a fixed per-message overhead.
chars/4 is the classic English estimate for GPT-style BPEs; Claude's tokenizer produces more
tokens for the same text, so the Anthropic presets use a calibration factor above 1 (see
`docs/models.md` for how it was measured). A count takes O(1) (the text's length), so a replay
of n messages costs O(n) counting, not O(n²), without a cache: a memo lookup per message cost
more than the arithmetic it saved.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

from rollsum.params import AT_LEAST_0, ParamError, Range, check_number
from rollsum.types import Message

_POSITIVE = Range(0, low_open=True)

DEFAULT_MESSAGE_OVERHEAD = 4
"""Role markers and separators a chat format adds around each message."""

CLAUDE_CALIBRATION = 1.15
"""chars/4 undercounts Claude tokens on English chat text; multiply estimates by this."""


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...


class HeuristicCounter:
    """chars/4 × calibration, plus `overhead` per message (no memo: the count is computed from
    the length, which is cheaper than looking it up)."""

    def __init__(self, *, chars_per_token: float = 4.0, calibration: float = 1.0,
                 overhead: int = DEFAULT_MESSAGE_OVERHEAD) -> None:
        # numbers checked as numbers (`rollsum.params`): NaN or inf got through ``<= 0`` and made
        # every count raise inside ``add()``, after the message was stored
        for name, value, integer, rng in (("chars_per_token", chars_per_token, False, _POSITIVE),
                                          ("calibration", calibration, False, _POSITIVE),
                                          ("overhead", overhead, True, AT_LEAST_0)):
            found = check_number(value, integer=integer, range=rng)
            if found is not None:
                raise ParamError(f"HeuristicCounter {name}: expected {found}, got {value!r}")
        self.chars_per_token = chars_per_token
        self.calibration = calibration
        self.overhead = overhead
        self._factor = calibration / chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) * self._factor) if text else 0

    def count_message(self, message: Message) -> int:
        # `count` written out: the engine counts every message it is given, and the call was a
        # third of this method's cost; a subclass with its own `count` counts through it
        # (`__init_subclass__`)
        text = message.content
        return (math.ceil(len(text) * self._factor) if text else 0) + self.overhead

    @property
    def token_key(self) -> str | None:
        """What makes this counter's counts (`counter_key`): its factor and overhead. None
        for a subclass that counts otherwise (its own `count` or `count_message`): its
        numbers alone would not tell its counts from the base class's."""
        cls = type(self)
        if cls.count is not HeuristicCounter.count or cls.count_message is not HeuristicCounter.count_message:
            return None
        return f"heuristic:{float(self._factor)!r}:{int(self.overhead)}"  # what `count_message` reads

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A subclass that changes `count` but not `count_message` counts messages with its `count`."""
        super().__init_subclass__(**kwargs)
        if cls.count is not HeuristicCounter.count and cls.count_message is HeuristicCounter.count_message:
            cls.count_message = _count_message_by_count  # type: ignore[method-assign]

    def __repr__(self) -> str:
        return (f"HeuristicCounter(chars_per_token={self.chars_per_token}, "
                f"calibration={self.calibration}, overhead={self.overhead})")


def _count_message_by_count(self: HeuristicCounter, message: Message) -> int:
    """`HeuristicCounter.count_message` of a subclass with its own `count`."""
    return self.count(message.content) + self.overhead


def counter_key(counter: object) -> str | None:
    """A name for what `counter` counts, equal for two counters only when they count every
    message alike: a store keeps it with its running token total (`rollsum.store.StoreTotals`),
    so an engine opened with another counter counts the conversation again instead of taking a
    total it did not make. From the counter's ``token_key`` (a string, or a method returning
    one); None (no key: every open counts again) for a counter without one, or whose counts
    may change (`AnthropicTokenCounter` falls back to an estimate when the API fails)."""
    key = getattr(counter, "token_key", None)
    if callable(key):
        key = key()
    return key if isinstance(key, str) and key else None
