"""The heuristic token counter: a message's count follows its current content."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rollsum.errors import ConfigError
from rollsum.tokens import DEFAULT_MESSAGE_OVERHEAD, HeuristicCounter
from rollsum.types import Message


def test_a_message_counts_its_content_plus_the_overhead_whatever_was_counted_before() -> None:
    counter = HeuristicCounter()
    short = Message("user", "x" * 8, id="m1")
    assert counter.count_message(short) == 2 + DEFAULT_MESSAGE_OVERHEAD
    # the same id with other content (a clipped or edited message) counts the new content,
    # never a remembered count
    longer = Message("user", "x" * 40, id="m1")
    assert counter.count_message(longer) == 10 + DEFAULT_MESSAGE_OVERHEAD
    assert counter.count_message(Message("user", "", id="m2")) == DEFAULT_MESSAGE_OVERHEAD
    assert counter.count_message(Message("user", "x" * 9)) == 3 + DEFAULT_MESSAGE_OVERHEAD


def test_count_message_uses_the_counters_own_count() -> None:
    class Words(HeuristicCounter):
        def count(self, text: str) -> int:
            return len(text.split())

    assert Words(overhead=1).count_message(Message("user", "one two three", id="m")) == 4


def test_a_count_from_a_mixin_is_the_one_messages_are_counted_with() -> None:
    """`count_message` computes the heuristic itself (no call per message); a subclass whose
    `count` comes from anywhere in its bases, not only its own body, still counts through it."""

    class WordsMixin:
        def count(self, text: str) -> int:
            return len(text.split())

    class Words(WordsMixin, HeuristicCounter):
        pass

    class Twice(HeuristicCounter):
        def count_message(self, message: Message) -> int:  # its own: left alone
            return 2 * self.count(message.content)

    assert Words(overhead=1).count_message(Message("user", "one two three", id="m")) == 4
    assert Twice().count_message(Message("user", "x" * 8, id="m")) == 4
    assert HeuristicCounter().count_message(Message("user", "x" * 8, id="m")) == 2 + DEFAULT_MESSAGE_OVERHEAD


@pytest.mark.parametrize(("kw", "words"), [
    ({"calibration": float("nan")}, "calibration: expected a number > 0, got nan"),
    ({"calibration": float("inf")}, "calibration: expected a number > 0, got inf"),
    ({"chars_per_token": 0}, "chars_per_token: expected a number > 0, got 0"),
    ({"calibration": "1.15"}, "calibration: expected a number > 0, got '1.15'"),
    ({"overhead": -1}, "overhead: expected an integer >= 0, got -1"),
])
def test_a_counter_refuses_what_would_break_every_count(kw: dict[str, Any], words: str) -> None:
    """NaN passed the old ``<= 0`` check and every count raised inside ``add()`` after the
    message was stored; a string raised a bare TypeError."""
    with pytest.raises(ConfigError, match=re.escape(f"HeuristicCounter {words}")):
        HeuristicCounter(**kw)
    with pytest.raises(ValueError):  # still what a caller catching the old error catches
        HeuristicCounter(**kw)
