"""LlamaIndex's ``ChatSummaryMemoryBuffer`` (package ``llama-index-core``) as a Memory.

The buffer keeps the newest messages under ``token_limit`` and, when older ones no longer fit,
asks its LLM (system prompt ``SUMMARIZE_PROMPT``, the transcript as a user message) for a summary
that replaces them as a system message; it does this when the history is read (``get()``), so
`ChatSummaryMemory.context` calls ``get()`` once per turn, as a chat engine does before each
answer. Only the LLM and the tokenizer are rollsum's:

- `RollsumLlamaLLM` is a LlamaIndex ``CustomLLM`` whose ``chat``/``complete`` call
  ``Model.complete`` (system messages as the request's system prompt, ``max_tokens`` =
  ``num_output`` = the summary's share of the window);
- ``tokenizer_fn`` is rollsum's counter (LlamaIndex's default loads a tiktoken encoding, which
  downloads it), counting a message's overhead too, as the presets do;
- ``token_limit`` = the window minus the summary's share (the buffer counts the summary once it
  is in the history, so the share is what keeps buffer plus a new summary inside the window).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

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

try:
    from llama_index.core.async_utils import asyncio_run
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        LLMMetadata,
        MessageRole,
    )
    from llama_index.core.llms import CustomLLM
    from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
    from llama_index.core.memory import ChatSummaryMemoryBuffer, FactExtractionMemoryBlock, Memory
except ImportError as err:  # one line through rollsum.plugins.load
    raise ImportError(f"{err}; {EXTRA_HINT}") from err

PROMPT_ID = "llama-index:ChatSummaryMemoryBuffer"
MEMORY_PROMPT_ID = "llama-index:Memory:FactExtractionMemoryBlock"
ID_KEY = "rollsum_id"


class RollsumLlamaLLM(CustomLLM):
    """A LlamaIndex LLM answered by a rollsum `Model`."""

    rollsum_model: Any
    window: int
    max_tokens: int
    prompt_id: str = PROMPT_ID

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.window, num_output=self.max_tokens,
                           model_name=str(self.rollsum_model.name), is_chat_model=True)

    def _ask(self, system: str, messages: list[Message]) -> str:
        completion = self.rollsum_model.complete(CompletionRequest(
            system=system, messages=messages, max_tokens=self.max_tokens, prompt_id=self.prompt_id,
            metadata={"purpose": "peer summary"}))
        text: str = completion.text
        return text

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        system = "\n\n".join(str(m.content) for m in messages if m.role == MessageRole.SYSTEM)
        turns = [Message("assistant" if m.role == MessageRole.ASSISTANT else "user", str(m.content))
                 for m in messages if m.role != MessageRole.SYSTEM]
        text = self._ask(system, turns)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._ask("", [Message("user", prompt)]))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        yield self.complete(prompt, formatted=formatted, **kwargs)


_ROLES = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT, "system": MessageRole.SYSTEM,
          "tool": MessageRole.TOOL}


class ChatSummaryMemory:
    """``ChatSummaryMemoryBuffer`` at the presets' budget, as a `rollsum.memory.Memory`.

    `summary_share`: the part of the window its summary may take (the rest is its token limit).
    """

    capabilities = ADAPTER
    version = versions("llama-index-core")

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None,
                 summary_share: float = SUMMARY_SHARE) -> None:
        self.buffer_tokens, self.summary_tokens = split_budget(context_window, summary_share)
        self.counter = counter
        overhead = int(getattr(counter, "overhead", 0))
        llm = RollsumLlamaLLM(rollsum_model=model, window=model.context_window,
                              max_tokens=answer_tokens(self.summary_tokens, counter))
        # called on one message's text at a time: its tokens plus the per-message overhead
        self.memory = ChatSummaryMemoryBuffer.from_defaults(
            llm=llm, token_limit=self.buffer_tokens,
            tokenizer_fn=lambda text: range(counter.count(text) + overhead))
        self.log = SummaryLog("llamaindex", counter, model.name, on_event)
        self._by_id: dict[str, Message] = {}
        self._order: list[str] = []

    def add(self, message: Message) -> None:
        _put(self.memory, message.with_id(f"li{len(self._order)}") if message.id is None else message,
             self._by_id, self._order)

    def context(self) -> list[Message]:
        """``get()``: summarizes what no longer fits, returns the summary and the buffer."""
        history = self.memory.get()
        return rebuild(_pairs(history), self._by_id, self._order, self.log, "system")

    def config(self) -> dict[str, Any]:
        return {"peer": "llama_index.core.memory.ChatSummaryMemoryBuffer", "versions": self.version,
                "token_limit": self.buffer_tokens, "summary_max_tokens": self.summary_tokens}


class LlamaMemory:
    """LlamaIndex's ``Memory`` (successor of ``ChatSummaryMemoryBuffer``), as a `rollsum.memory.Memory`.

    ``Memory`` keeps a FIFO of recent messages at most ``chat_history_token_ratio`` of its
    ``token_limit``; past that it flushes the oldest (``token_flush_size`` tokens at a time)
    into its memory blocks, whose content ``get()`` puts before the history as a system message,
    cut so blocks plus history stay inside ``token_limit``. The LLM-backed block is
    ``FactExtractionMemoryBlock`` (facts extracted from what was flushed, condensed past
    ``max_facts``): that is the summary here, reported as the peer's summary events.

    `token_limit` defaults to the window minus the summary's share (the block content is framed
    by a template the limit counts loosely); `chat_history_token_ratio` (0.7),
    `token_flush_size` (10 % of the limit) and `max_facts` (50) are LlamaIndex's defaults. Its
    chat store is an in-memory SQLite (``aiosqlite``), one per conversation.
    """

    capabilities = ADAPTER
    version = versions("llama-index-core")

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None, token_limit: int | None = None,
                 chat_history_token_ratio: float = 0.7, token_flush_size: int | None = None,
                 max_facts: int = 50, summary_share: float = SUMMARY_SHARE) -> None:
        buffer_tokens, self.summary_tokens = split_budget(context_window, summary_share)
        self.token_limit = buffer_tokens if token_limit is None else int(token_limit)
        self.flush = max(1, int(self.token_limit * 0.1)) if token_flush_size is None else int(token_flush_size)
        overhead = int(getattr(counter, "overhead", 0))
        llm = RollsumLlamaLLM(rollsum_model=model, window=model.context_window,
                              max_tokens=answer_tokens(self.summary_tokens, counter), prompt_id=MEMORY_PROMPT_ID)
        self.block = FactExtractionMemoryBlock(llm=llm, max_facts=max_facts)
        self.memory = Memory.from_defaults(
            token_limit=self.token_limit, chat_history_token_ratio=chat_history_token_ratio,
            token_flush_size=self.flush, memory_blocks=[self.block],
            tokenizer_fn=lambda text: range(counter.count(text) + overhead))
        self.ratio = chat_history_token_ratio
        self.log = SummaryLog("llamaindex-memory", counter, model.name, on_event)
        self._by_id: dict[str, Message] = {}
        self._order: list[str] = []

    def add(self, message: Message) -> None:
        _put(self.memory, message.with_id(f"lm{len(self._order)}") if message.id is None else message,
             self._by_id, self._order)

    def context(self) -> list[Message]:
        """``get()``: the memory blocks' content (a system message), then the recent history."""
        return rebuild(_pairs(self.memory.get()), self._by_id, self._order, self.log, "system")

    def close(self) -> None:
        """Release the in-memory chat store's connection on the loop that opened it (left to the
        garbage collector, aiosqlite closes it on a loop that may be closed by then)."""
        engine = getattr(self.memory.sql_store, "_async_engine", None)
        if engine is not None:
            asyncio_run(engine.dispose())

    def config(self) -> dict[str, Any]:
        return {"peer": "llama_index.core.memory.Memory + FactExtractionMemoryBlock", "versions": self.version,
                "token_limit": self.token_limit, "chat_history_token_ratio": self.ratio,
                "token_flush_size": self.flush, "summary_max_tokens": self.summary_tokens}


def _pairs(history: Iterable[Any]) -> Iterator[tuple[str | None, str]]:
    """LlamaIndex chat messages as (the id we stored with each, its content)."""
    for m in history:
        mid = m.additional_kwargs.get(ID_KEY)
        yield (None if mid is None else str(mid)), str(m.content)


def _put(memory: Any, message: Message, by_id: dict[str, Message], order: list[str]) -> None:
    """Hand `message` (with an id) to a LlamaIndex memory, tagged with its id so `_pairs` can tell
    it back from the memory's own summary text; remember it for `rebuild`."""
    by_id[message.id or ""] = message
    order.append(message.id or "")
    memory.put(ChatMessage(role=_ROLES[message.role], content=message.content, additional_kwargs={ID_KEY: message.id}))

