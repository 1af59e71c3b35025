"""Small helpers shared by policies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


def units_holding(messages: Sequence[Message], indices: Iterable[int]) -> list[tuple[int, int]]:
    """The units of ``tool_units(messages, 0, len(messages))`` that hold any of `indices`, in order.

    Found from the indices outward instead of by splitting the whole list, so its cost is the
    size of those units, not of the window: the engine asks on every eviction, and at a 200k
    window the whole list is thousands of messages. A tool result belongs to the assistant
    message before its run of results when that message declares calls (`calls_tools`, the
    same rule as `tool_units`); after anything else it stands alone.
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
            if p >= 0 and calls_tools(messages[p]):
                start = p
        stop = start + 1
        if calls_tools(messages[start]):
            while stop < n and messages[stop].role == "tool":
                stop += 1
        out.append((start, stop))
        end = stop
    return out


def ratio(tokens: int, window: int) -> float:
    return tokens / window if window > 0 else float("inf")
