"""Small helpers shared by policies."""

from __future__ import annotations

from collections.abc import Sequence

from rollsum.types import Message


def tool_units(messages: Sequence[Message], start: int, end: int) -> list[tuple[int, int]]:
    """Split messages[start:end] into units that must move together.

    A unit is an assistant message plus the tool results that follow it (a call and its
    results), or any other single message, so a policy that picks units can never separate a
    tool call from its output. Only assistants call tools: tool messages after a user message
    stand alone rather than dragging the user's words along.
    """
    units: list[tuple[int, int]] = []
    i = start
    while i < end:
        j = i + 1
        if messages[i].role == "assistant":
            while j < end and messages[j].role == "tool":
                j += 1
        units.append((i, j))
        i = j
    return units


def ratio(tokens: int, window: int) -> float:
    return tokens / window if window > 0 else float("inf")
