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

The engine (`rollsum.engine.RollingSummarizer`, ``clear_tool_results=True``) asks `ClearQueue` before
it asks the policy, so every policy and the window guard see the cleared context: a summary is
made only if clearing was not enough (docs/seeds.md, "Tool-result clearing").
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection, Mapping
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


def never_cleared(rule: ClearSettings, message: Message) -> bool:
    """A result `rule` never clears: an excluded tool's, or one without an id (the cleared set
    is by id). Whether clearing would shorten it is the other half (`ClearQueue._age`)."""
    return message.id is None or (message.name or "") in rule.exclude_tools


def cleared_view(message: Message, tokens: int, count: Callable[[Message], int]) -> tuple[Message, int]:
    """`message` (of `tokens` tokens) as clearing shows it, and the tokens that saves: a result
    that saves none (already shorter than its placeholder) is never cleared."""
    shown = placeholder(message)
    return shown, tokens - count(shown)


def placeholder(message: Message) -> Message:
    """The display version of a cleared tool result: same id, role, name and call id."""
    text = PLACEHOLDER.format(name=message.name or "tool", chars=len(message.content))
    return dataclasses.replace(message, content=text, meta={**message.meta, "cleared_chars": len(message.content)})


class ClearQueue:
    """The clearing rule kept up to date message by message: what `take` would clear now.

    Why incremental: the rule reads every tool result in the window (which are the newest
    `keep`, which are cleared, what each would free), and asking it afresh on every message made
    the `clear-tool-results` preset cost ~300 µs per message at a 200k window, growing with the
    window. Here each result is looked at when it arrives, once when it stops being one of the
    newest `keep` (its placeholder is made then, once), and when it leaves the window; a message
    costs O(1) amortized and a clearing costs what it clears. The answers are the rule's exactly
    (`tests/rollsum/test_clearing.py` replays streams through the rule written plainly):

    - ``young``: the newest `keep` tool results in the window (never cleared), oldest first;
    - ``older``: every other tool result in the window, by sequence number, in window order;
    - ``due``: the older ones that clearing would change now (not cleared yet, not an excluded
      tool's, longer than their placeholder), with their placeholders; ``freed`` what they save.

    The owner (`rollsum.window.Window`) reports every tool result that enters (`push`) or
    leaves (`remove`) the window and marks what `take` returns as cleared in `cleared`.
    """

    __slots__ = ("_made", "cleared", "count", "due", "freed", "older", "rule", "young")

    def __init__(self, rule: ClearSettings, count: Callable[[Message], int], cleared: Mapping[str, Message]) -> None:
        self.rule = rule
        self.count = count
        """How the context counts a message (the owner's counter: what a placeholder saves)."""
        self.cleared = cleared
        """The owner's cleared results, by id (a result cleared once is never due again)."""
        self.young: deque[tuple[int, Message, int]] = deque()
        self.older: dict[int, tuple[Message, int]] = {}
        self.due: dict[int, Message] = {}
        self.freed = 0
        self._made: dict[int, tuple[Message, int]] = {}
        """Placeholder and tokens saved, by sequence number, made once per result in the window."""

    def push(self, seq: int, message: Message, tokens: int) -> None:
        """A message entered the window (the newest; `tokens` its stored version's count)."""
        if message.role != "tool":
            return
        young = self.young
        young.append((seq, message, tokens))
        if len(young) > self.rule.keep:
            self._age(*young.popleft())

    def remove(self, seq: int, message: Message) -> None:
        """A message left the window. One of the newest `keep` leaving makes the newest older
        result one of them again (it is not due while it is)."""
        if message.role != "tool":
            return
        if self.older.pop(seq, None) is not None:
            self._undue(seq)
            self._made.pop(seq, None)
            return
        self._made.pop(seq, None)
        young = self.young
        for k, entry in enumerate(young):
            if entry[0] == seq:
                del young[k]
                break
        else:
            return
        if self.older:
            back, (m, n) = self.older.popitem()  # the newest older result (dicts pop the last inserted)
            self._undue(back)
            young.appendleft((back, m, n))

    def take(self, context_tokens: int) -> dict[int, Message]:
        """The results to clear at this context size (sequence number -> placeholder), all or
        none (`clear_at_least`); they are no longer due."""
        if context_tokens <= self.rule.trigger or not self.due or self.freed < self.rule.clear_at_least:
            return {}
        out, self.due, self.freed = self.due, {}, 0
        return out

    def _age(self, seq: int, message: Message, tokens: int) -> None:
        """`message` is no longer one of the newest `keep` results: due if clearing saves."""
        self.older[seq] = (message, tokens)
        if message.id in self.cleared or never_cleared(self.rule, message):
            return
        made = self._made.get(seq)
        if made is None:
            made = self._made[seq] = cleared_view(message, tokens, self.count)
        if made[1] > 0:  # a result already shorter than its placeholder stays as it is
            self.due[seq] = made[0]
            self.freed += made[1]

    def _undue(self, seq: int) -> None:
        if self.due.pop(seq, None) is not None:
            self.freed -= self._made[seq][1]
