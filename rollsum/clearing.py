"""Tool-result clearing: Anthropic's context editing (``clear_tool_uses``) run locally.

Why: on agent traffic most of the context is tool output the agent has already read (file
contents, test logs, grep hits). Clearing old results is cheaper than summarizing them (no model
call) and keeps every call and every word the user and the assistant said. The semantics follow
the API's strategy:

- **trigger**: clearing is considered only when the context is over `trigger` tokens;
- **keep**: the newest `keep` tool results are never cleared (counted over every tool result in
  the window, excluded tools included, as the API counts tool uses);
- **clear_at_least**: when the results that could be cleared would free fewer tokens than this,
  nothing is cleared this time (clearing breaks a prompt cache, so it should be worth it);
- **exclude_tools**: results of these tools are never cleared;
- a cleared result stays in place, its content replaced by a short placeholder (`PLACEHOLDER`);
  the call that asked for it is untouched, and the *stored* message never changes: clearing is a
  display version in the context, like the window guard's clip, so no message is lost.

Clearing is sticky: a cleared result stays cleared while it is in the window (the API clears
the same old results on every later request, since the prompt only grows past its trigger).
Once cleared, everything older than the newest `keep` results is cleared at once, the API's
"clear the oldest first, keep N" with its minimum.

The engine (`rollsum.engine.RollingSummarizer`, ``clear_tool_results=True``) calls `plan` before
it asks the policy, so every policy and the window guard see the cleared context: a summary is
made only if clearing was not enough (docs/seeds.md, "Tool-result clearing").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from rollsum.errors import ConfigError
from rollsum.types import Message

PLACEHOLDER = "[tool result cleared to save context: {name}, {chars} characters; run the tool again if needed]"
"""What a cleared result shows instead of its content (the API's wording is not public; ours
names the tool and the size so the reader knows what is gone and how to get it back)."""
DEFAULT_TRIGGER_SHARE = 0.5
"""Without an explicit trigger, clearing starts at half the window (the API's default is
100,000 input tokens, half of a 200,000-token window)."""


@dataclass(frozen=True, slots=True)
class ClearSettings:
    """One conversation's clearing rule (see the module docstring for each field)."""

    trigger: int
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.trigger < 0 or self.keep < 0 or self.clear_at_least < 0:
            raise ConfigError("clear_trigger, clear_keep and clear_at_least must be >= 0")

    @classmethod
    def make(cls, context_window: int, trigger: int | None, keep: int, clear_at_least: int,
             exclude_tools: Collection[str]) -> ClearSettings:
        if isinstance(exclude_tools, str):
            raise ConfigError("clear_exclude_tools: expected a list of tool names, got a string")
        when = int(DEFAULT_TRIGGER_SHARE * context_window) if trigger is None else trigger
        return cls(when, keep, clear_at_least, frozenset(exclude_tools))


def placeholder(message: Message) -> Message:
    """The display version of a cleared tool result: same id, role, name and call id."""
    text = PLACEHOLDER.format(name=message.name or "tool", chars=len(message.content))
    return dataclasses.replace(message, content=text, meta={**message.meta, "cleared_chars": len(message.content)})


def plan(messages: Sequence[Message], tokens: Sequence[int], cleared: Mapping[str, Message],
         context_tokens: int, settings: ClearSettings,
         count_message: Callable[[Message], int]) -> dict[int, Message]:
    """Which results to clear now: index into `messages` -> its placeholder ({} for none).

    `tokens` are what each message takes in the context now; `cleared` the results already
    cleared (by id). Pure: the engine applies the answer.
    """
    if context_tokens <= settings.trigger:
        return {}
    results = [i for i, m in enumerate(messages) if m.role == "tool"]
    older = results[:max(0, len(results) - settings.keep)]
    out: dict[int, Message] = {}
    freed = 0
    for i in older:
        m = messages[i]
        if m.id is None or m.id in cleared or (m.name or "") in settings.exclude_tools:
            continue
        shown = placeholder(m)
        saved = tokens[i] - count_message(shown)
        if saved <= 0:  # a result already shorter than its placeholder stays as it is
            continue
        out[i] = shown
        freed += saved
    if not out or freed < settings.clear_at_least:
        return {}
    return out
