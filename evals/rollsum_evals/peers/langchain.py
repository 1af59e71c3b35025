"""LangChain's ``ConversationSummaryBufferMemory`` (package ``langchain-classic``) as a Memory.

The memory keeps the newest messages under ``max_token_limit`` and folds the ones it prunes into
a running summary with its own prompt (``SUMMARY_PROMPT``), which it prepends as a system
message. Everything here is LangChain's code path, called the way a chat application calls it
(one message in, prune, read the buffer); only the LLM and the token counts are rollsum's:

- `RollsumLLM` is a LangChain ``LLM`` whose ``_call`` is ``Model.complete`` (the whole prompt as
  one user message, ``max_tokens`` = the summary's share of the window), and whose token counts
  are rollsum's counter (LangChain's default downloads a GPT-2 tokenizer);
- ``max_token_limit`` = the window minus that share (`rollsum_evals.peers.base.split_budget`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
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
    split_budget,
    versions,
)
from rollsum_evals.peers.langchain_messages import to_langchain

try:
    from langchain_classic.memory import ConversationSummaryBufferMemory
    from langchain_core._api import LangChainDeprecationWarning
    from langchain_core.language_models.llms import LLM
except ImportError as err:  # one line through rollsum.plugins.load
    raise ImportError(f"{err}; {EXTRA_HINT}") from err

PROMPT_ID = "langchain:ConversationSummaryBufferMemory"


class RollsumLLM(LLM):
    """A LangChain LLM answered by a rollsum `Model`, counting tokens with rollsum's counter."""

    rollsum_model: Any
    counter: Any
    max_tokens: int

    @property
    def _llm_type(self) -> str:
        return "rollsum"

    def _call(self, prompt: str, stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> str:
        completion = self.rollsum_model.complete(CompletionRequest(
            system="", messages=[Message("user", prompt)], max_tokens=self.max_tokens,
            stop=tuple(stop or ()), prompt_id=PROMPT_ID, metadata={"purpose": "peer summary"}))
        text: str = completion.text
        return text

    def get_num_tokens(self, text: str) -> int:
        n: int = self.counter.count(text)
        return n

    def get_token_ids(self, text: str) -> list[int]:
        return list(range(self.get_num_tokens(text)))

    def get_num_tokens_from_messages(self, messages: list[Any], tools: Sequence[Any] | None = None) -> int:
        return sum(self.counter.count_message(Message("user", str(m.content))) for m in messages)


class SummaryBufferMemory:
    """``ConversationSummaryBufferMemory`` at the presets' budget, as a `rollsum.memory.Memory`.

    `summary_share`: the part of the window its summary may take (the rest is its buffer).
    """

    capabilities = ADAPTER
    version = versions("langchain-classic", "langchain-core")

    def __init__(self, *, model: Model, context_window: int, counter: TokenCounter,
                 on_event: Callable[[SummaryEvent], None] | None = None,
                 summary_share: float = SUMMARY_SHARE) -> None:
        self.buffer_tokens, self.summary_tokens = split_budget(context_window, summary_share)
        llm = RollsumLLM(rollsum_model=model, counter=counter,
                         max_tokens=answer_tokens(self.summary_tokens, counter))
        with warnings.catch_warnings():  # deprecated in favour of agents; still what users run
            warnings.simplefilter("ignore", LangChainDeprecationWarning)
            self.memory = ConversationSummaryBufferMemory(llm=llm, max_token_limit=self.buffer_tokens,
                                                          return_messages=True)
        self.log = SummaryLog("langchain", counter, model.name, on_event)
        self._by_id: dict[str, Message] = {}
        self._order: list[str] = []

    def add(self, message: Message) -> None:
        if message.id is None:
            message = message.with_id(f"lc{len(self._order)}")
        self._by_id[message.id or ""] = message
        self._order.append(message.id or "")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangChainDeprecationWarning)
            self.memory.chat_memory.add_message(to_langchain(message))
            self.memory.prune()
        kept = [m.id for m in self.memory.chat_memory.messages]
        self.log.update(self.memory.moving_summary_buffer, self._order, kept, len(self._order) - 1)

    def context(self) -> list[Message]:
        """What ``load_memory_variables`` returns (summary first), as rollsum messages: the
        buffered ones are the conversation's own."""
        out: list[Message] = []
        for m in self.memory.load_memory_variables({})[self.memory.memory_key]:
            original = self._by_id.get(m.id) if m.id else None
            out.append(original if original is not None else Message("system", str(m.content)))
        return out

    def config(self) -> dict[str, Any]:
        return {"peer": "langchain_classic.memory.ConversationSummaryBufferMemory", "versions": self.version,
                "max_token_limit": self.buffer_tokens, "summary_max_tokens": self.summary_tokens}
