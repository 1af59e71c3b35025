"""Claude through the official `anthropic` SDK (Messages API, non-streaming).

The SDK is the only transport: tests inject an `anthropic.Anthropic` built on the SDK's own
HTTP library's MockTransport, so the request building, retries and error mapping exercised in
tests are the ones that run in production. Every SDK failure is mapped to a `ModelError` whose
`kind` tells callers whether retrying can help.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
from anthropic.types import model_param

from rollsum.errors import ConfigError, ErrorKind, MissingCredentials, ModelError
from rollsum.models.base import Completion, CompletionRequest
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum.redact import redact, redacting_logger
from rollsum.types import Message, Usage

log = redacting_logger(__name__)

API_KEY_ENV = "ANTHROPIC_API_KEY"
MISSING_KEY_MESSAGE = (
    "ANTHROPIC_API_KEY is not set: export it, or use an offline model (extractive, fake:..., replay:PATH)"
)
DEFAULT_MODEL = "claude-haiku-4-5"
LEADING_USER_TURN = "(The conversation so far follows.)"
EMPTY_TURN = "(empty message)"


def known_models() -> tuple[str, ...]:
    """Model ids the installed SDK declares; the list moves with the SDK version, not with us."""
    names: list[str] = []
    for arg in typing.get_args(model_param.ModelParam):
        names.extend(a for a in typing.get_args(arg) if isinstance(a, str))
    return tuple(names)


def resolve_model_name(model: str, *, allow_unknown: bool = False) -> str:
    """Validate `model` against the SDK's aliases; map ``X-latest`` to ``X`` when X is known.

    Seed 001 asks for ``claude-haiku-4-5-latest``, which the API does not serve: the undated
    alias already tracks the latest snapshot, so the suffix is dropped with a log line.
    """
    known = known_models()
    if model in known or allow_unknown:
        return model
    if model.endswith("-latest") and model[: -len("-latest")] in known:
        base = model[: -len("-latest")]
        log.info("model %r is not an API alias; using %r (the undated alias tracks the latest)", model, base)
        return base
    close = difflib.get_close_matches(model, known, n=1)
    raise ConfigError(
        f"unknown Anthropic model {model!r}{f' (did you mean {close[0]!r}?)' if close else ''}: the installed "
        f"anthropic SDK knows {', '.join(sorted(known))} {UNKNOWN_MODEL_HINT}"
    )


UNKNOWN_MODEL_HINT = "(pass allow_unknown_model=True to send it anyway)"
"""How a library caller sends a model the SDK does not know yet (a command line cannot)."""


_ACCEPTS_TEMPERATURE = re.compile(r"^claude-(?:\d|(?:haiku|sonnet|opus)-[34](?:-|$))")


def accepts_temperature(model: str) -> bool:
    """Whether to send ``temperature``: Claude 3.x/4.x take it; from the 5 generation on, a
    non-default sampling parameter is a 400, so it is left out (the model decides)."""
    return bool(_ACCEPTS_TEMPERATURE.match(model))


def to_messages_api(request: CompletionRequest) -> tuple[str, list[dict[str, str]]]:
    """A provider-neutral request as the Messages API's (system, messages): `messages_api`."""
    return messages_api(request.system, request.messages)


def messages_api(system: str | None, messages: Sequence[Message]) -> tuple[str, list[dict[str, str]]]:
    """Messages as the Messages API wants them: ``(system, messages)``.

    The API wants strictly alternating turns that start with ``user`` and keeps the system
    prompt out of the list, so: system-role messages join the system prompt (blank line
    between), tool results are user turns (``[tool result: NAME]`` then the text), consecutive
    same-role turns are merged (blank line between), an empty text becomes a placeholder (the
    API refuses empty text), and a short user turn is prepended when the history starts with
    the assistant.
    """
    system_parts = [system] if system else []
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            system_parts.append(m.content)
            continue
        role = "assistant" if m.role == "assistant" else "user"
        content = m.content if m.content.strip() else EMPTY_TURN
        if m.role == "tool":
            content = f"[tool result{': ' + m.name if m.name else ''}]\n{content}"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + content
        else:
            turns.append({"role": role, "content": content})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": LEADING_USER_TURN})
    return "\n\n".join(p for p in system_parts if p), turns


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None:
            return float(ms) / 1000.0
        s = headers.get("retry-after")
        return float(s) if s is not None else None
    except (TypeError, ValueError):
        return None


def _api_message(err: anthropic.APIStatusError) -> str:
    """The API's own one-line message (``error.message`` of the body) rather than the SDK's
    "Error code: 401 - {...}" rendering of the whole body."""
    body = err.body
    inner = body.get("error") if isinstance(body, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("message"), str) and inner["message"].strip():
        return str(inner["message"])
    return str(err.message)


def classify_error(err: BaseException) -> ModelError:
    """Map an SDK (or decoding) exception to a `ModelError` with the right kind."""
    if isinstance(err, ModelError):
        return err
    if isinstance(err, anthropic.APITimeoutError):
        return ModelError(f"Anthropic request timed out: {err}", ErrorKind.TIMEOUT)
    if isinstance(err, anthropic.APIConnectionError):
        return ModelError(f"cannot reach the Anthropic API: {err}", ErrorKind.CONNECTION)
    if isinstance(err, anthropic.APIStatusError):
        status = err.status_code
        detail = redact(_api_message(err))
        retry_after = _retry_after(err.response.headers)
        if status == 429:
            kind = ErrorKind.RATE_LIMIT
        elif status == 408:
            kind = ErrorKind.TIMEOUT
        elif status >= 500 or status == 409:
            kind = ErrorKind.SERVER
        elif status in (401, 403):  # a bad key or a key without access: no retry can help
            kind = ErrorKind.AUTH
        elif status == 413 or "prompt is too long" in detail.lower():
            kind = ErrorKind.OVERFLOW
        else:
            kind = ErrorKind.CLIENT
        return ModelError(f"Anthropic API returned {status}: {detail}", kind,
                          retry_after=retry_after, status=status)
    if isinstance(err, anthropic.APIResponseValidationError | json.JSONDecodeError | ValueError):
        return ModelError(f"Anthropic API returned a malformed response: {redact(str(err))}",
                          ErrorKind.MALFORMED)
    return ModelError(f"Anthropic call failed: {type(err).__name__}: {redact(str(err))}", ErrorKind.OTHER)


class AnthropicModel:
    """A Claude model behind the `Model` protocol.

    Without an injected `client`, the key comes from ``ANTHROPIC_API_KEY`` and its absence
    raises `MissingCredentials` here, at construction, so a sweep fails before its first unit.

    Retries: one policy end to end. The engine (`RollingSummarizer`, ``retries``) owns them, so
    the SDK client is built -- or, when injected, re-optioned with ``client.with_options`` --
    with ``max_retries=0`` by default: a persistent 500 costs exactly the engine's
    ``retries + 1`` HTTP calls instead of (SDK retries + 1) × (engine retries + 1). Code that
    calls the model directly, outside an engine, can pass ``max_retries=N`` to get the SDK's
    own retrying back (or wrap the model in `rollsum.models.RetryingModel`).
    The installed SDK no longer has a ``temperature`` keyword; it is sent in the request body,
    by default only to models that accept it (`accepts_temperature`); ``send_temperature``
    forces it either way.
    """

    provider = "anthropic"

    def __init__(self, client: anthropic.Anthropic | None = None, model: str = DEFAULT_MODEL, *,
                 max_retries: int = 0, timeout: float = 120.0, api_key: str | None = None,
                 allow_unknown_model: bool = False, send_temperature: bool | None = None,
                 context_window: int = DEFAULT_CONTEXT_WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.model = resolve_model_name(model, allow_unknown=allow_unknown_model)
        if client is None:
            key = api_key or os.environ.get(API_KEY_ENV, "")
            if not key:
                raise MissingCredentials(MISSING_KEY_MESSAGE)
            client = anthropic.Anthropic(api_key=key, max_retries=max_retries, timeout=timeout)
        elif client.max_retries != max_retries:
            client = client.with_options(max_retries=max_retries)
        self.max_retries = max_retries
        self._client = client
        self._send_temperature = (accepts_temperature(self.model) if send_temperature is None
                                  else send_temperature)
        self._context_window = context_window
        self._clock = clock
        self._served: dict[str, Completion | ModelError] = {}

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    @property
    def context_window(self) -> int:
        return self._context_window

    @property
    def client(self) -> anthropic.Anthropic:
        return self._client

    def __repr__(self) -> str:  # never shows the client (and so never the key)
        return f"AnthropicModel({self.model!r})"

    def complete(self, request: CompletionRequest) -> Completion:
        served = self._served.get(self.batch_key(request)) if self._served else None
        if isinstance(served, ModelError):
            raise served
        if served is not None:
            return served
        if request.native is not None:
            return self._complete_native(request)
        kwargs = self.batch_params(request)
        if "temperature" in kwargs:
            kwargs["extra_body"] = {"temperature": kwargs.pop("temperature")}
        start = self._clock()
        try:
            response = self._client.messages.create(**kwargs)
        except Exception as err:  # every SDK failure becomes a classified ModelError
            raise classify_error(err) from err
        latency = self._clock() - start
        return self._to_completion(response, latency)

    # -- Message Batches (rollsum.models.batch) ------------------------------------------------

    def batch_key(self, request: CompletionRequest) -> str:
        """The batch request's ``custom_id``: the same sha256 the response cache keys by (64 hex
        characters, which the API's ``^[a-zA-Z0-9_-]{1,64}$`` accepts), so a resumed run and the
        cache agree on which answer is whose."""
        return request.hash(self.provider, self.name)

    def batch_params(self, request: CompletionRequest) -> dict[str, Any]:
        """The Messages API body of `request`: what `complete` sends, and a batch request's
        ``params``."""
        system, messages = to_messages_api(request)
        params: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens,
                                  "messages": messages}
        if system:
            params["system"] = system
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        if self._send_temperature:
            params["temperature"] = request.temperature
        return params

    def batch_completion(self, message: Any) -> Completion:
        """A succeeded batch result's message as a `Completion` (no latency: it waited in a queue)."""
        return dataclasses.replace(self._to_completion(message, 0.0), batched=True)

    def served(self, request: CompletionRequest) -> bool:
        """Whether `complete` will answer `request` from a batch already paid for (`serve`)."""
        return bool(self._served) and self.batch_key(request) in self._served

    def serve(self, answers: dict[str, Completion | ModelError]) -> None:
        """Answers a batch already paid for, by `batch_key`: `complete` returns (or raises) them
        instead of calling the API, so the wrappers above (cache, budget, meter) see them as
        ordinary calls."""
        self._served.update(answers)

    def _complete_native(self, request: CompletionRequest) -> Completion:
        """`CompletionRequest.native` as a beta Messages API call: its fields (``messages`` as
        content blocks, ``tools``, ``context_management``, ``betas``) go to the SDK as given; the
        neutral ``system``/``stop`` apply as usual. The Completion carries the whole response
        (``native``), and its tokens include the compaction passes (``usage.iterations`` entries
        of type ``compaction``), which the API bills apart from the top-level usage."""
        native = dict(request.native or {})
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, **native}
        if request.system:
            kwargs["system"] = request.system
        if request.stop:
            kwargs["stop_sequences"] = list(request.stop)
        start = self._clock()
        try:
            response = self._client.beta.messages.create(**kwargs)
        except Exception as err:
            raise classify_error(err) from err
        latency = self._clock() - start
        try:
            body = response.model_dump(mode="json", exclude_none=True)
            usage = body.get("usage") or {}
            passes = [it for it in usage.get("iterations") or [] if it.get("type") == "compaction"]
            text = "".join(b.get("text", "") for b in body.get("content") or [] if b.get("type") == "text")
        except (AttributeError, TypeError) as err:
            raise ModelError(f"Anthropic API returned an unexpected shape: {err}", ErrorKind.MALFORMED) from err

        def total(key: str) -> int:
            return int(usage.get(key) or 0) + sum(int(it.get(key) or 0) for it in passes)

        return Completion(text=text, input_tokens=total("input_tokens"), output_tokens=total("output_tokens"),
                          model=str(body.get("model") or self.model), latency_s=latency,
                          stop_reason=body.get("stop_reason"), cache_read_tokens=total("cache_read_input_tokens"),
                          cache_write_tokens=total("cache_creation_input_tokens"), native=body)

    def _to_completion(self, response: Any, latency: float) -> Completion:
        try:
            blocks = list(response.content or [])
            text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")
            usage = response.usage
            stop_reason = response.stop_reason
        except AttributeError as err:
            raise ModelError(f"Anthropic API returned an unexpected shape: {err}", ErrorKind.MALFORMED) from err
        if usage is None:
            # the SDK does not validate bodies: a response without ``usage`` reached the token
            # counts below as an AttributeError, which ended a whole Unit's QA scoring as an
            # error and, inside a Message Batch, failed (and re-sent) every request of the batch
            raise ModelError("Anthropic API returned a response without usage (token counts)", ErrorKind.MALFORMED)
        try:
            tokens = (int(usage.input_tokens or 0), int(usage.output_tokens or 0),
                      int(getattr(usage, "cache_read_input_tokens", 0) or 0),
                      int(getattr(usage, "cache_creation_input_tokens", 0) or 0))
        except (AttributeError, TypeError, ValueError) as err:
            raise ModelError(f"Anthropic API returned unreadable usage: {redact(str(err))}",
                             ErrorKind.MALFORMED) from err
        billed = Usage(*tokens, calls=1)  # a refused or empty answer is paid for all the same
        if stop_reason == "refusal":
            # whatever text came before the refusal is not a summary, an answer or a grade: taken
            # as one, a summary "I can't help with that." archived the messages it replaced and
            # a QA answer scored F1 0 against the summary instead of counting as a failed call
            raise ModelError("Anthropic API refused the request (stop_reason=refusal)", ErrorKind.REFUSAL,
                             billed=billed)
        if not text.strip():
            raise ModelError(f"Anthropic API returned no text (stop_reason={stop_reason})", ErrorKind.EMPTY,
                             billed=billed)
        return Completion(
            text=text,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            model=str(response.model or self.model),
            latency_s=latency,
            stop_reason=stop_reason,
            cache_read_tokens=tokens[2],
            cache_write_tokens=tokens[3],
        )

    def count_tokens(self, request: CompletionRequest) -> int:
        """Input tokens the API would bill for `request` (one count_tokens call)."""
        system, messages = to_messages_api(request)
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if system:
            kwargs["system"] = system
        try:
            return int(self._client.messages.count_tokens(**kwargs).input_tokens)
        except Exception as err:
            raise classify_error(err) from err
