"""The model seam: one request shape, one response shape, one protocol.

Everything that calls a language model (summarizers, the QA scorer, the judge) goes through
`Model.complete`, so caching, record/replay, rate limiting and cost accounting wrap any model
the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rollsum.types import Message, Usage


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """A provider-neutral, non-streaming completion request.

    `messages` hold only user/assistant turns; the system prompt travels in `system`.
    `prompt_id` names the versioned template that produced the request: it is part of the
    cache key, so editing a prompt never serves stale answers.
    """

    system: str
    messages: Sequence[Message]
    max_tokens: int = 1024
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    prompt_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form tags for logs and cassettes (purpose, unit id). Not part of the cache key."""
    native: dict[str, Any] | None = None
    """Provider-native request fields (JSON), for a caller that needs what the neutral shape
    cannot say: the Anthropic peers send content blocks, ``tools``, ``context_management`` and
    ``betas`` here (`rollsum_evals.peers.anthropic`). A backend that does not know them answers
    with ``Completion.native`` None, which such a caller refuses. Part of the cache key when set."""

    def key_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "system": self.system,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop),
            "prompt_id": self.prompt_id,
        }
        if self.native is not None:  # absent otherwise: every existing cache key stays the same
            payload["native"] = self.native
        return payload

    def hash(self, provider: str = "", model: str = "") -> str:
        """Stable sha256 of everything that changes the answer (provider and model included)."""
        payload = {"provider": provider, "model": model, **self.key_payload()}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    latency_s: float = 0.0
    stop_reason: str | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cached: bool = False
    """True when a cache or cassette answered: no tokens were paid for this call."""
    native: dict[str, Any] | None = None
    """The provider's whole response (JSON) when the request was `CompletionRequest.native`:
    what a caller reads beyond the text (applied context edits, compaction blocks). Stored in
    caches and cassettes with the rest."""
    batched: bool = False
    """True when a Message Batch answered (`rollsum.models.batch`): its tokens were paid at the
    batch price (`BATCH_DISCOUNT` of the list price), which is what a spend account charges."""

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cache_read_tokens,
                     self.cache_write_tokens, calls=1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "model": self.model,
            "latency_s": self.latency_s,
            "stop_reason": self.stop_reason,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            **({"native": self.native} if self.native is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, cached: bool = False) -> Completion:
        return cls(
            text=d["text"],
            input_tokens=int(d.get("input_tokens", 0)),
            output_tokens=int(d.get("output_tokens", 0)),
            model=d.get("model", ""),
            latency_s=float(d.get("latency_s", 0.0)),
            stop_reason=d.get("stop_reason"),
            cache_read_tokens=int(d.get("cache_read_tokens", 0)),
            cache_write_tokens=int(d.get("cache_write_tokens", 0)),
            cached=cached,
            native=d.get("native"),
        )


@runtime_checkable
class Model(Protocol):
    """Anything that answers a `CompletionRequest`.

    `name` is the model-spec string that re-creates it (``anthropic:claude-haiku-4-5``,
    ``extractive``, ``fake:...``); `context_window` is how many input tokens it accepts, so a
    summarizer can chunk or fall back before sending a request that cannot fit.
    Failures raise `rollsum.errors.ModelError` with a `kind`.
    """

    @property
    def name(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    def complete(self, request: CompletionRequest) -> Completion: ...


class ModelWrapper:
    """Base for a model that wraps another (cache, recorder, rate limiter, meter).

    It answers to the inner model's name and window, so wrapping never changes which model a
    manifest says was used or how much a summarizer may send it.
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def context_window(self) -> int:
        return self.inner.context_window
