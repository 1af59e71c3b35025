"""The heuristic token counter: a message's count follows its current content."""

from __future__ import annotations

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
