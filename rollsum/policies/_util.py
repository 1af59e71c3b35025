"""Small helpers shared by policies."""

from __future__ import annotations

from collections.abc import Sequence

from rollsum.types import Message


def tool_units(messages: Sequence[Message], start: int, end: int) -> list[tuple[int, int]]:
    """Split messages[start:end] into units that must move together.

    A unit is an assistant message that calls tools plus the tool results that follow it (a
    call and its results), or any other single message, so a policy that picks units can never
    separate a tool call from its output. Only a message that declares calls (`calls_tools`)
    owns the results after it: tool messages after a user message, or after an assistant
    message without ``tool_calls`` metadata ("unlinked" results), stand alone rather than
    dragging those words along (they are tool output for seed 004's tool-only skip).
    """
    units: list[tuple[int, int]] = []
    i = start
    while i < end:
        j = i + 1
        if calls_tools(messages[i]):
            while j < end and messages[j].role == "tool":
                j += 1
        units.append((i, j))
        i = j
    return units


def calls_tools(message: Message) -> bool:
    """An assistant message that declares tool calls (``meta["tool_calls"]``, rollsum.types)."""
    return message.role == "assistant" and bool(message.meta.get("tool_calls"))


def ratio(tokens: int, window: int) -> float:
    return tokens / window if window > 0 else float("inf")
