"""Narrative summaries from a language model, incremental over the previous summary.

The previous record's rendered text goes into every prompt, so each summary is a rewrite of the
whole story so far rather than a summary of a summary's fragment. When a span is too large for
the summarizer model's window it is summarized in consecutive chunks, each folding the previous
chunk's output in as the "previous summary" (map-fold); every lossy step is noted on the draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rollsum.errors import ConfigError, ErrorKind, ModelError, SummarizeError
from rollsum.models.base import CompletionRequest, Model
from rollsum.prompts import PromptTemplate
from rollsum.prompts import get as get_prompt
from rollsum.redact import redacting_logger
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.summarizers.transcript import (
    NO_PREVIOUS,
    chunk_lines,
    filter_noise,
    render_line,
    render_must_keep,
    trim_oldest,
)
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, Usage

log = redacting_logger(__name__)

WORDS_PER_TOKEN = 0.75
MIN_CHUNK_TOKENS = 64
"""Below this a chunk holds too little conversation to be worth a model call: overflow error."""
SAFETY_FRACTION = 0.05
"""Headroom kept free in the model's window: our token counts are estimates."""
Overflow = Literal["chunk", "trim-oldest"]


@dataclass(frozen=True, slots=True)
class _Parsed:
    text: str
    key_points: tuple[str, ...] = ()
    facets: dict[str, tuple[str, ...]] | None = None
    notes: tuple[str, ...] = ()


class _ModelSummarizer:
    """Prompt building, overflow handling and the model call; subclasses parse the output.

    Transcript shaping, each from a seed and each reported in the draft's notes:
    - `max_message_chars`: every message is capped at this many characters, with a marker
      (seed 002's LLM mode: 1,000);
    - `filter_noise`: tool output reduced to a one-line digest (what ran, the first error),
      system messages left out (seed 003);
    - `transcript_budget` with `transcript_overflow`: a transcript over the budget (or over the
      model's window) is either summarized in consecutive chunks (``"chunk"``, nothing left
      out) or cut to its newest messages (``"trim-oldest"``, seed 003's "cap at 8K, trimming
      oldest": one call, the previous summary carries the older story).
    """

    name = "model"
    default_prompt = "since-last/v1"
    """The template used when none is named; each subclass names its own."""

    def __init__(self, model: Model, prompt: str | None = None, *, max_output_tokens: int = 1024,
                 counter: TokenCounter | None = None, transcript_budget: int | None = None,
                 transcript_overflow: Overflow = "chunk", filter_noise: bool = False,
                 max_message_chars: int | None = None) -> None:
        if model is None:
            raise ConfigError(f"summarizer {self.name!r} needs a model (or use 'extractive')")
        if max_output_tokens <= 0:
            raise ConfigError(f"max_output_tokens: expected a positive integer, got {max_output_tokens}")
        if transcript_budget is not None and transcript_budget < MIN_CHUNK_TOKENS:
            raise ConfigError(
                f"transcript_budget: expected at least {MIN_CHUNK_TOKENS} tokens or None, got {transcript_budget}")
        if transcript_overflow not in ("chunk", "trim-oldest"):
            raise ConfigError(f"transcript_overflow: expected 'chunk' or 'trim-oldest', got {transcript_overflow!r}")
        if max_message_chars is not None and max_message_chars < 1:
            raise ConfigError(f"max_message_chars: expected a positive integer or None, got {max_message_chars}")
        self.model = model
        self.template: PromptTemplate = get_prompt(prompt if prompt is not None else self.default_prompt)
        self.max_output_tokens = max_output_tokens
        self.counter: TokenCounter = counter or HeuristicCounter()
        self.transcript_budget = transcript_budget
        self.transcript_overflow: Overflow = transcript_overflow
        self.filter_noise = filter_noise
        self.max_message_chars = max_message_chars

    def params(self) -> dict[str, Any]:
        return {
            "model": self.model.name,
            "prompt": self.template.id,
            "prompt_sha256": self.template.sha256,
            "max_output_tokens": self.max_output_tokens,
            "transcript_budget": self.transcript_budget,
            "transcript_overflow": self.transcript_overflow,
            "filter_noise": self.filter_noise,
            "max_message_chars": self.max_message_chars,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model.name!r}, prompt={self.template.id!r})"

    # -- the part subclasses change -------------------------------------------------------

    def _parse(self, raw: str) -> _Parsed:
        text = raw.strip()
        if not text:
            raise SummarizeError("summarizer model returned empty text", transport=False,
                                 kind=ErrorKind.EMPTY, raw=raw)
        return _Parsed(text)

    def _fold(self, parsed: _Parsed) -> str:
        """The text a chunk's result passes on as the next chunk's previous summary."""
        return parsed.text

    def _merge(self, parts: Sequence[_Parsed]) -> _Parsed:
        return parts[-1]

    # -- the shared part ------------------------------------------------------------------

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        if not request.messages:
            raise SummarizeError("nothing to summarize: the span is empty", transport=False,
                                 kind=ErrorKind.EMPTY)
        tpl = self.template
        max_words = self._max_words(request)
        must_keep = render_must_keep(request.must_keep)
        meta = (f"<meta total_messages={request.total_messages or len(request.messages)} "
                f"total_tokens={request.total_tokens} depth={request.depth} />")
        previous = request.previous.render() if request.previous is not None else ""
        previous = previous.strip() or NO_PREVIOUS

        def build(transcript: str, prev: str) -> str:
            return tpl.render(transcript=transcript, previous_summary=prev, must_keep=must_keep,
                              max_words=max_words, meta=meta)

        count = self.counter.count
        window = self.model.context_window
        available = window - self.max_output_tokens - int(window * SAFETY_FRACTION)
        overhead = count(tpl.system) + count(build("", ""))
        notes: list[str] = []
        messages: Sequence[Message] = request.messages
        if self.filter_noise:
            messages, filtered = filter_noise(messages)
            if filtered:
                notes.append(f"filtered {filtered} tool/system message(s) to one-line digests")
            if not messages:
                raise SummarizeError("nothing to summarize: the span held only system messages",
                                     transport=False, kind=ErrorKind.EMPTY)
        lines = [render_line(m, self.max_message_chars) for m in messages]
        if self.max_message_chars is not None:
            capped = sum(1 for m in messages if len(m.content.strip()) > self.max_message_chars)
            if capped:
                notes.append(f"capped {capped} message(s) at {self.max_message_chars} characters")
        transcript_tokens = sum(count(ln) + 1 for ln in lines)
        fits = overhead + count(previous) + transcript_tokens <= available
        if fits and (self.transcript_budget is None or transcript_tokens <= self.transcript_budget):
            chunks: tuple[tuple[str, ...], ...] = (tuple(lines),)
        else:
            reserve = max(count(previous), self.max_output_tokens)
            budget = available - overhead - reserve
            if self.transcript_budget is not None:
                budget = min(budget, self.transcript_budget)
            if budget < MIN_CHUNK_TOKENS:
                raise SummarizeError(
                    f"summary prompt cannot fit model {self.model.name!r}: window {window}, output "
                    f"{self.max_output_tokens}, prompt overhead {overhead}, previous summary {reserve} tokens",
                    transport=False, kind=ErrorKind.OVERFLOW)
            if self.transcript_overflow == "trim-oldest":
                trimmed, note = trim_oldest(lines, budget, self.counter)
                chunks = (trimmed,)
                notes.extend([note] if note else [])
            else:
                chunking = chunk_lines(messages, budget, self.counter, lines)
                chunks = chunking.chunks
                notes.extend(chunking.notes)
                if len(chunks) > 1:
                    notes.append(f"chunked into {len(chunks)} parts")

        usage = Usage()
        parts: list[_Parsed] = []
        prev = previous
        for i, chunk in enumerate(chunks):
            prompt = build("\n".join(chunk), prev)
            req = CompletionRequest(
                system=tpl.system,
                messages=(Message("user", prompt),),
                max_tokens=self.max_output_tokens,
                temperature=0.0,
                prompt_id=tpl.id,
                metadata={"purpose": "summary", "summarizer": self.name, "chunk": i,
                          "conversation_id": request.conversation_id},
            )
            try:
                completion = self.model.complete(req)
            except ModelError as e:
                raise SummarizeError.from_model_error(e) from e
            usage = usage + completion.usage
            if completion.stop_reason == "max_tokens":
                notes.append(f"model output hit max_tokens ({self.max_output_tokens}) in part {i + 1}")
            parsed = self._parse(completion.text)
            parts.append(parsed)
            prev = self._fold(parsed)
        final = self._merge(parts)
        for p in parts:
            notes.extend(p.notes)
        return SummaryDraft(
            text=final.text,
            key_points=final.key_points,
            facets=final.facets or {},
            model=self.model.name,
            prompt_id=tpl.id,
            prompt_hash=tpl.sha256,
            usage=usage,
            notes=tuple(notes),
            meta={"calls": len(chunks), "max_words": max_words},
        )

    def _max_words(self, request: SummaryRequest) -> int:
        """The template's word limit, lowered when the summary's token share is smaller."""
        return max(20, min(self.template.max_words, int(request.max_tokens * WORDS_PER_TOKEN)))


class PromptedSummarizer(_ModelSummarizer):
    """Plain-text rolling summary from a model, with a named, versioned prompt template."""

    name = "prompted"

    default_prompt = "since-last/v1"
