"""LangChain v1's ``SummarizationMiddleware`` (package ``langchain``) as a Memory.

The middleware is what a LangChain v1 agent runs before each model call: past its ``trigger``
(tokens, messages or a fraction of the model's input window) it summarizes everything but the
last ``keep`` messages (20 by default) with its own prompt into one human message ("Here is a
summary of the conversation to date: ..."), and it never cuts between a tool call and its
result (the cut moves back to the AI message that made the call). It replaced the
``ConversationSummaryBufferMemory`` that `rollsum_evals.peers.langchain` wraps.

`SummarizationMiddlewareMemory` holds the agent state's message list and calls the middleware's
``before_model`` once per turn, exactly as the agent loop does, applying the update it returns.
Only the chat model and the token counts are rollsum's:

- `RollsumChatModel` is a LangChain ``BaseChatModel`` whose ``_generate`` is ``Model.complete``
  (system messages as the request's system prompt, ``max_tokens`` = the summary's share of the
  window), with ``profile = {"max_input_tokens": window}`` so fractional triggers mean a
  fraction of the sweep's window;
- ``token_counter`` is rollsum's counter (the middleware's default is a character estimate).

Tool calls: a rollsum ``tool`` message becomes a ``ToolMessage`` whose ``tool_call_id`` is
recorded on the AI message it follows (``tool_calls``), so the middleware sees the pairs it
promises never to split. Default trigger: the window minus the summary's share, in tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from rollsum.models.base import CompletionRequest, Model
from rollsum.tokens import TokenCounter
from rollsum.types import Message, SummaryEvent
from rollsum_evals.peers.base import (
    ADAPTER,
    EXTRA_HINT,
    SUMMARY_SHARE,
    SummaryLog,
    answer_tokens,
    rebuild,
    split_budget,
    versions,
)
from rollsum_evals.peers.langchain_messages import to_langchain

try:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.outputs import ChatGeneration, ChatResult
except ImportError as err:  # one line through rollsum.plugins.load
    raise ImportError(f"{err}; {EXTRA_HINT}") from err

PROMPT_ID = "langchain:SummarizationMiddleware"


class RollsumChatModel(BaseChatModel):
    """A LangChain chat model answered by a rollsum `Model`."""

    rollsum_model: Any
    max_tokens: int

    @property
    def _llm_type(self) -> str:
        return "rollsum-chat"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        system = "\n\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        turns = [Message("assistant" if isinstance(m, AIMessage) else "user", str(m.content))
                 for m in messages if not isinstance(m, SystemMessage)]
        completion = self.rollsum_model.complete(CompletionRequest(
            system=system, messages=turns, max_tokens=self.max_tokens, stop=tuple(stop or ()),
            prompt_id=PROMPT_ID, metadata={"purpose": "peer summary"}))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=completion.text))])


def context_size(value: Any, what: str) -> Any:
    """A TOML ``["tokens", 7200]`` (or a list of them, for ``trigger``) as the middleware's tuples."""
    if isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[0], str):
        return (value[0], value[1])
    if what == "trigger" and isinstance(value, list | tuple):
        return [context_size(v, what) for v in value]
    return value


class SummarizationMiddlewareMemory:
    """``SummarizationMiddleware`` at the presets' window, as a `rollsum.memory.Memory`.

    `trigger`: the middleware's (``["tokens", N]``, ``["messages", N]``, ``["fraction", f]`` or
    a list of them; default ``["tokens", window minus the summary's share]``); `keep`: what it
    keeps verbatim (default ``["messages", 20]``, the middleware's); `summary_share`: the
    window's part the summary may take (the answers' cap).
    """

    capabilities = ADAPTER
    version = versions("langchain", "langchain-core")

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None, trigger: Any = None,
                 keep: Sequence[Any] = ("messages", 20), summary_share: float = SUMMARY_SHARE) -> None:
        self.buffer_tokens, self.summary_tokens = split_budget(context_window, summary_share)
        self.counter = counter
        chat = RollsumChatModel(rollsum_model=model, max_tokens=answer_tokens(self.summary_tokens, counter),
                                profile={"max_input_tokens": context_window})
        default: Any = ("tokens", self.buffer_tokens)
        self.trigger: Any = context_size(trigger, "trigger") if trigger is not None else default
        self.keep = context_size(keep, "keep")
        self.middleware = SummarizationMiddleware(model=chat, trigger=self.trigger, keep=self.keep,
                                                  token_counter=self.count)
        self.log = SummaryLog("langchain-middleware", counter, model.name, on_event)
        self.state: list[BaseMessage] = []
        self._by_id: dict[str, Message] = {}
        self._order: list[str] = []

    def count(self, messages: Iterable[BaseMessage]) -> int:
        return sum(self.counter.count_message(Message("user", str(m.content))) for m in messages)

    def add(self, message: Message) -> None:
        if message.id is None:
            message = message.with_id(f"lcm{len(self._order)}")
        mid = message.id or ""
        self._by_id[mid] = message
        self._order.append(mid)
        self.state.append(self._to_langchain(message))

    def _to_langchain(self, message: Message) -> BaseMessage:
        mid = message.id or ""
        if message.role == "tool":
            call_id = f"call_{mid}"
            for prev in reversed(self.state):  # the AI message that made the call (after any results)
                if isinstance(prev, AIMessage) and prev.id in self._by_id:
                    prev.tool_calls.append({"name": message.name or "tool", "args": {}, "id": call_id,
                                            "type": "tool_call"})
                    break
                if not isinstance(prev, ToolMessage):
                    break
            return ToolMessage(content=message.content, tool_call_id=call_id, name=message.name, id=mid)
        return to_langchain(message, mid)

    def context(self) -> list[Message]:
        """What the agent would send now: ``before_model`` first (it may summarize)."""
        update = self.middleware.before_model(cast(Any, {"messages": self.state}), cast(Any, None))
        if update is not None:
            self.state = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
        return rebuild(((m.id, str(m.content)) for m in self.state), self._by_id, self._order, self.log, "user")

    def config(self) -> dict[str, Any]:
        return {"peer": "langchain.agents.middleware.SummarizationMiddleware", "versions": self.version,
                "trigger": self.trigger, "keep": self.keep, "summary_max_tokens": self.summary_tokens}
