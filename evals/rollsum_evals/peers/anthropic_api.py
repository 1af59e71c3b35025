"""Anthropic's own context management as `rollsum.memory.Memory` s: the platform's answer to
"what would I get if I let the API manage the context?", replayed and scored like a preset.

Two memories, both sending the conversation to the Messages API (beta) through the sweep's
`rollsum.models.base.Model` as a `CompletionRequest.native` request, so caching, cassettes,
rate limits, cost and ``--max-cost-usd`` apply as to every summarizer call:

- `ContextEditingMemory`: *context editing*, edit ``clear_tool_uses_20250919`` under the beta
  header ``context-management-2025-06-27``. The full history goes with every request; past
  ``trigger`` input tokens the API clears the oldest tool results (keeps the last ``keep`` tool
  uses, clears at least ``clear_at_least`` tokens or nothing, never a tool in
  ``exclude_tools``) and answers how many it cleared (``context_management.applied_edits[]``:
  ``cleared_tool_uses``, ``cleared_input_tokens``). The API does not send the edited history
  back; it clears oldest first, so the memory's context is the history with that many of the
  oldest eligible tool results replaced by `CLEARED` (the call stays, its result goes).
- `CompactionMemory`: *server-side compaction*, edit ``compact_20260112`` under the beta header
  ``compact-2026-01-12``. Past ``trigger`` input tokens the API summarizes the conversation (with
  ``instructions`` when given) into a ``compaction`` content block; the memory sends that block
  back as an assistant turn at the point it was written, as the API requires (the API drops
  everything before it), and its context is the block's summary plus what came after.
  ``pause_after_compaction`` is on, so a compacting call returns the block and nothing else.
  The compaction pass is billed apart (``usage.iterations`` entries of type ``compaction``);
  the Completion's tokens include it, so the cost report does too.

The API is asked where an agent or a chat app would ask it: after each user message or tool
result (a run of assistant messages needs no call). ``max_tokens`` caps the answer nobody reads.
Tool calls: a rollsum ``tool`` message (its ``name`` the tool) becomes an assistant ``tool_use``
block and a user ``tool_result`` block with a stable id, and every tool named so far is declared
in ``tools`` (the API refuses tool blocks without tool definitions).

Names, beta headers and shapes checked against anthropic SDK 2.14 (``anthropic.types.beta``:
``BetaClearToolUses20250919EditParam``, ``BetaCompact20260112EditParam``,
``BetaCompactionBlock``, ``BetaContextManagementResponse``, ``BetaIterationsUsage``) and the API
docs (build-with-claude/context-editing, build-with-claude/compaction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rollsum.capabilities import Capabilities
from rollsum.errors import ConfigError
from rollsum.models.base import CompletionRequest, Model
from rollsum.tokens import TokenCounter
from rollsum.types import Message, SummaryEvent
from rollsum_evals.peers.base import SummaryLog, versions

CONTEXT_EDITING_BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
COMPACTION_BETA = "compact-2026-01-12"
COMPACT = "compact_20260112"
CLEARED = "[tool result cleared by the API's context editing]"
"""What stands in the context for a tool result the API cleared (the API's own placeholder text
is not returned to the client)."""
LEADING_USER_TURN = "(The conversation so far follows.)"
EMPTY_TURN = "(empty message)"
KEY_ENV = "ANTHROPIC_API_KEY"

API_PEER = Capabilities(offline=False, free=False, deterministic=False, follows_prompt=False)
"""Calls a paid API (through the sweep's model) and uses the API's own summarizer."""


def tool_use_id(index: int) -> str:
    """The stable id of the tool call behind the conversation's message `index`."""
    return f"toolu_rollsum_{index:06d}"


def api_turns(messages: Sequence[Message], after: dict[int, dict[str, Any]] | None = None
              ) -> tuple[str, list[dict[str, Any]], list[str]]:
    """``(system, messages, tool names)`` for the Messages API, as content blocks.

    System messages join the system prompt; a ``tool`` message is an assistant ``tool_use``
    block plus a user ``tool_result`` block; consecutive same-role turns merge; the history
    starts with a user turn. `after` maps a message index to a block (a compaction block) sent
    as assistant content right after that message.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    tools: list[str] = []

    def put(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})

    for i, m in enumerate(messages):
        text = m.content if m.content.strip() else EMPTY_TURN
        if m.role == "system":
            system.append(m.content)
        elif m.role == "tool":
            name = m.name or "tool"
            if name not in tools:
                tools.append(name)
            put("assistant", {"type": "tool_use", "id": tool_use_id(i), "name": name, "input": {}})
            put("user", {"type": "tool_result", "tool_use_id": tool_use_id(i), "content": text})
        else:
            put("assistant" if m.role == "assistant" else "user", {"type": "text", "text": text})
        if after and i in after:
            put("assistant", after[i])
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": LEADING_USER_TURN}]})
    return "\n\n".join(s for s in system if s), turns, tools


def tool_definitions(names: Sequence[str]) -> list[dict[str, Any]]:
    return [{"name": n, "description": f"The {n} tool.", "input_schema": {"type": "object"}} for n in names]


class _ApiMemory:
    """What both API peers share: the history, when to ask the API, and asking it."""

    capabilities = API_PEER
    needs_env: tuple[str, ...] = (KEY_ENV,)
    """Environment variables without which a sweep skips this memory (and says so)."""
    version = versions("anthropic")
    beta = ""
    prefix = "anthropic"

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None, max_tokens: int = 16) -> None:
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}")
        self.model = model
        self.context_window = context_window
        self.counter = counter
        self.max_tokens = max_tokens
        self.messages: list[Message] = []
        self.asked = 0
        """How many messages the last request held (the API is asked at most once per length)."""
        self.log = SummaryLog(self.prefix, counter, model.name, on_event)

    def add(self, message: Message) -> None:
        if message.id is None:
            message = message.with_id(f"an{len(self.messages)}")
        self.messages.append(message)

    def edits(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def blocks_after(self) -> dict[int, dict[str, Any]]:
        return {}

    def request(self) -> CompletionRequest:
        """The beta Messages API request for the whole history (what `ask` sends)."""
        system, turns, tools = api_turns(self.messages, self.blocks_after())
        native: dict[str, Any] = {"messages": turns, "betas": [self.beta],
                                  "context_management": {"edits": self.edits()}}
        if tools:
            native["tools"] = tool_definitions(tools)
        return CompletionRequest(system=system, messages=(), max_tokens=self.max_tokens,
                                 prompt_id=f"anthropic:{self.edits()[0]['type']}", native=native,
                                 metadata={"purpose": "peer context management"})

    def ask(self) -> dict[str, Any] | None:
        """Ask the API when an agent would (after a user message or a tool result, once per
        length of history); the response body, or None when no call was due."""
        if not self.messages or self.messages[-1].role not in ("user", "tool") or self.asked == len(self.messages):
            return None
        self.asked = len(self.messages)
        completion = self.model.complete(self.request())
        if completion.native is None:
            raise ConfigError(f"{type(self).__name__} needs an anthropic: model (the Messages API's context "
                              f"management), got {self.model.name}")
        return completion.native

    def config(self) -> dict[str, Any]:
        return {"peer": f"anthropic Messages API {self.edits()[0]['type']}", "versions": self.version,
                "beta": self.beta, "context_management": {"edits": self.edits()}, "max_tokens": self.max_tokens}


class ContextEditingMemory(_ApiMemory):
    """Context editing (``clear_tool_uses_20250919``) at the sweep's window.

    `trigger`: input tokens past which the API clears (default: the window); `keep`: tool uses
    kept (the API's default, 3); `clear_at_least`: tokens a clearing must free or it does not
    happen; `exclude_tools`: tools whose results are never cleared; `clear_tool_inputs`: clear
    the calls' inputs too (the memory sends none, so this changes nothing here but the request).
    """

    beta = CONTEXT_EDITING_BETA
    prefix = "anthropic-context-editing"

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None, trigger: int | None = None,
                 keep: int = 3, clear_at_least: int | None = None, exclude_tools: Sequence[str] = (),
                 clear_tool_inputs: bool = False, max_tokens: int = 16) -> None:
        super().__init__(model=model, context_window=context_window, counter=counter, on_event=on_event,
                         max_tokens=max_tokens)
        self.trigger = context_window if trigger is None else int(trigger)
        if self.trigger < 1 or keep < 0 or (clear_at_least is not None and clear_at_least < 1):
            raise ConfigError(f"trigger must be >= 1, keep >= 0, clear_at_least >= 1; got {self.trigger}, "
                              f"{keep}, {clear_at_least}")
        self.keep = keep
        self.clear_at_least = clear_at_least
        self.exclude_tools = tuple(exclude_tools)
        self.clear_tool_inputs = clear_tool_inputs
        self.cleared = 0
        """Tool results the API cleared in its last answer (the oldest eligible ones)."""
        self.cleared_tokens = 0

    def edits(self) -> list[dict[str, Any]]:
        edit: dict[str, Any] = {"type": CLEAR_TOOL_USES, "trigger": {"type": "input_tokens", "value": self.trigger},
                                "keep": {"type": "tool_uses", "value": self.keep}}
        if self.clear_at_least is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return [edit]

    def context(self) -> list[Message]:
        body = self.ask()
        if body is not None:
            applied = (body.get("context_management") or {}).get("applied_edits") or []
            mine = [e for e in applied if e.get("type") == CLEAR_TOOL_USES]
            self.cleared = sum(int(e.get("cleared_tool_uses") or 0) for e in mine)
            self.cleared_tokens = sum(int(e.get("cleared_input_tokens") or 0) for e in mine)
        out: list[Message] = []
        left = self.cleared
        for m in self.messages:
            if left and m.role == "tool" and (m.name or "tool") not in self.exclude_tools:
                left -= 1
                out.append(Message("tool", CLEARED, name=m.name))
            else:
                out.append(m)
        return out

    def config(self) -> dict[str, Any]:
        return {**super().config(), "cleared_tool_uses": self.cleared, "cleared_input_tokens": self.cleared_tokens}


class CompactionMemory(_ApiMemory):
    """Server-side compaction (``compact_20260112``) at the sweep's window.

    `trigger`: input tokens past which the API compacts (default: the window; the API's own
    default is 150,000 and it may refuse a trigger below its minimum); `instructions`: extra
    instructions for the API's summary.
    """

    beta = COMPACTION_BETA
    prefix = "anthropic-compaction"

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None, trigger: int | None = None,
                 instructions: str | None = None, max_tokens: int = 16) -> None:
        super().__init__(model=model, context_window=context_window, counter=counter, on_event=on_event,
                         max_tokens=max_tokens)
        self.trigger = context_window if trigger is None else int(trigger)
        if self.trigger < 1:
            raise ConfigError(f"trigger must be >= 1, got {self.trigger}")
        self.instructions = instructions
        self.blocks: dict[int, dict[str, Any]] = {}
        """Message index -> the compaction block the API wrote after it (sent back there)."""

    def edits(self) -> list[dict[str, Any]]:
        edit: dict[str, Any] = {"type": COMPACT, "trigger": {"type": "input_tokens", "value": self.trigger},
                                "pause_after_compaction": True}
        if self.instructions:
            edit["instructions"] = self.instructions
        return [edit]

    def blocks_after(self) -> dict[int, dict[str, Any]]:
        return dict(self.blocks)

    def context(self) -> list[Message]:
        body = self.ask()
        if body is not None:
            # a block with null content is a failed compaction: the API treats it as a no-op,
            # so it is sent back (as returned) but changes nothing here
            for block in body.get("content") or []:
                if block.get("type") == "compaction":
                    self.blocks[len(self.messages) - 1] = block
        live = [(i, b) for i, b in sorted(self.blocks.items()) if b.get("content")]
        if not live:
            return list(self.messages)
        at, block = live[-1]
        summary = str(block["content"])
        kept = self.messages[at + 1:]
        self.log.update(summary, [m.id or "" for m in self.messages[:at + 1]], (), at)
        return [Message("assistant", summary), *kept]

    def config(self) -> dict[str, Any]:
        return {**super().config(), "compactions": len(self.blocks)}
