"""A rollsum message as a LangChain message: one mapping for both LangChain peers.

Its own module because the two peers need different packages (``langchain-classic`` for the
summary buffer, ``langchain`` v1 for the middleware) and both need only ``langchain-core`` here.
"""

from __future__ import annotations

from typing import Any

from rollsum.types import Message
from rollsum_evals.peers.base import EXTRA_HINT

try:
    from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, SystemMessage
except ImportError as err:  # one line through rollsum.plugins.load
    raise ImportError(f"{err}; {EXTRA_HINT}") from err


def to_langchain(message: Message, message_id: str | None = None) -> BaseMessage:
    """The LangChain message of `message`'s role (tool results excepted: the middleware pairs
    them with their call). ``message_id`` overrides the id (the middleware needs a string)."""
    kw: dict[str, Any] = {"content": message.content,
                          "id": message.id if message_id is None else message_id, "name": message.name}
    if message.role == "user":
        return HumanMessage(**kw)
    if message.role == "assistant":
        return AIMessage(**kw)
    if message.role == "system":
        return SystemMessage(**kw)
    return ChatMessage(role=message.role, **kw)
