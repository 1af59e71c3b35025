"""Messages API response bodies, as the real `anthropic` SDK receives them from a MockTransport."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2


def message_json(text: str = "hello", *, stop_reason: str = "end_turn", input_tokens: int = 10,
                 output_tokens: int = 2, cache_read: int | None = None, cache_write: int | None = None,
                 model: str = "claude-haiku-4-5-20251001", content: list[dict[str, Any]] | None = None
                 ) -> dict[str, Any]:
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}] if content is None else content,
        "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write},
    }


KEY = "sk-ant-test-SECRET"
Handler = Callable[[httpx2.Request], httpx2.Response]
