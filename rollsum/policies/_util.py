"""Small helpers shared by policies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


def units_holding(messages: Sequence[Message], indices: Iterable[int]) -> list[tuple[int, int]]:
    """The units of ``tool_units(messages, 0, len(messages))`` that hold any of `indices`, in order.

    Found from the indices outward instead of by splitting the whole list, so its cost is the
    size of those units, not of the window: the engine asks on every eviction, and at a 200k
    window the whole list is thousands of messages. A tool result belongs to the assistant
    message before its run of results; after anything else it stands alone.
    """
    n = len(messages)
    out: list[tuple[int, int]] = []
    end = 0
    last_tool = last_p = -1  # the last tool result placed, and the message before its run
    for k in sorted(set(indices)):
        if k < end or k >= n:
            continue  # inside the unit just found, or not a position at all
        start = k
        if messages[k].role == "tool":
            p = k - 1
            while p >= 0 and p != last_tool and messages[p].role == "tool":
                p -= 1
            if p >= 0 and p == last_tool:
                p = last_p  # the same run of results as the last one: do not walk it again
            last_tool, last_p = k, p
            if p >= 0 and messages[p].role == "assistant":
                start = p
        stop = start + 1
        if messages[start].role == "assistant":
            while stop < n and messages[stop].role == "tool":
                stop += 1
        out.append((start, stop))
        end = stop
    return out


def ratio(tokens: int, window: int) -> float:
    return tokens / window if window > 0 else float("inf")
