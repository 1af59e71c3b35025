"""One entry point for every dataset source: files of each format and generator specs.

A loader is one function `(path, *, strict, limits) -> Iterator[Conversation]` plus one entry in
`LOADERS`. The format is guessed from the name and the first bytes when it is not given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl

from rollsum.errors import ConfigError
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits
from rollsum_evals.data.types import Conversation

SYNTH_PREFIX = "synth:"
FORMATS = ("jsonl", "chat", "locomo", "hf", "synth")
Loader = Callable[..., Iterator[Conversation]]


def _jsonl(path: str, **kw: Any) -> Iterator[Conversation]:
    from rollsum_evals.data.jsonl import iter_jsonl

    return iter_jsonl(path, **kw)


def _chat(path: str, **kw: Any) -> Iterator[Conversation]:
    from rollsum_evals.data.chat import iter_chat

    return iter_chat(path, **kw)


def _locomo(path: str, **kw: Any) -> Iterator[Conversation]:
    from rollsum_evals.data.locomo import iter_locomo

    return iter_locomo(path, **kw)


def _hf(path: str, **kw: Any) -> Iterator[Conversation]:
    from rollsum_evals.data.hf import iter_hf

    return iter_hf(path, **kw)


def _synth(spec: str, **_: Any) -> Iterator[Conversation]:
    for item in parse_synth_spec(spec):
        yield item.conversation()


LOADERS: dict[str, Loader] = {"jsonl": _jsonl, "chat": _chat, "locomo": _locomo, "hf": _hf, "synth": _synth}


def parse_synth_spec(spec: str) -> Iterator[Any]:
    """`synth:FLAVOR?conversations=4&messages=300&seed=1&facts=10` -> SyntheticConversation items.

    `messages` may be a range `200-400` (each conversation gets a seeded length in it).
    """
    from rollsum_evals.data import synth

    body = spec[len(SYNTH_PREFIX):] if spec.startswith(SYNTH_PREFIX) else spec
    flavor, _, query = body.partition("?")
    if flavor not in synth.FLAVORS:
        raise ConfigError(f"{spec}: flavor: expected one of {', '.join(synth.FLAVORS)}, got {flavor!r}")
    params = {"conversations": "1", "messages": "300", "seed": "0"}
    allowed = (*params, "facts")
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key not in allowed:
            raise ConfigError(f"{spec}: unknown parameter {key!r} (expected {', '.join(allowed)})")
        params[key] = value
    try:
        conversations = int(params["conversations"])
        low, _, high = params["messages"].partition("-")
        messages: int | tuple[int, int] = (int(low), int(high)) if high else int(low)
        seed = int(params["seed"])
        facts = int(params["facts"]) if "facts" in params else None
    except ValueError:
        raise ConfigError(f"{spec}: expected integers for conversations, messages (or LOW-HIGH), seed, "
                          "facts") from None
    if conversations < 1:
        raise ConfigError(f"{spec}: conversations: expected at least 1")
    return synth.dataset(flavor, conversations=conversations, n_messages=messages, seed=seed, facts=facts)


def guess_format(path_or_name: str) -> str:
    """The format of a path or name, from its prefix, extension or first bytes."""
    from rollsum_evals.data.hf import HUB_PREFIX, is_hf_dir

    if path_or_name.startswith(SYNTH_PREFIX):
        return "synth"
    if path_or_name.startswith(HUB_PREFIX):
        return "hf"
    if not os.path.exists(path_or_name):
        raise ConfigError(f"{path_or_name}: no such file (expected a dataset file, a Hugging Face "
                          "directory, hf:NAME or synth:FLAVOR?...)")
    if os.path.isdir(path_or_name):
        if is_hf_dir(path_or_name):
            return "hf"
        raise ConfigError(f"{path_or_name}: a directory, but not a Hugging Face dataset (no dataset_info.json)")
    if path_or_name.endswith((".parquet", ".arrow")):
        return "hf"
    with open(path_or_name, "rb") as fh:
        head = fh.read(1 << 16)
    stripped = head.lstrip()
    if stripped.startswith(b"["):
        markers = (b'"qa"', b'"sample_id"', b'"speaker_a"')
        return "locomo" if any(m in head for m in markers) else "chat"
    if stripped.startswith(b"{"):
        first = stripped.split(b"\n", 1)[0]
        try:
            obj = json.loads(first)
        except (json.JSONDecodeError, UnicodeDecodeError):
            # a whole-document object (pretty-printed) or a broken line: decide by keys seen
            if b'"qa"' in head and b'"conversation"' in head:
                return "locomo"
            return "jsonl"
        if isinstance(obj, dict):
            if "conversation" in obj and "qa" in obj:
                return "locomo"
            msgs = obj.get("messages")
            first_msg = msgs[0] if isinstance(msgs, list) and msgs else None
            if "id" in obj and "messages" in obj and ("probes" in obj or "references" in obj or "meta" in obj
                                                      or (isinstance(first_msg, dict) and "id" in first_msg)
                                                      or not isinstance(msgs, list)):
                return "jsonl"
            from rollsum_evals.data.chat import looks_like_chat

            if looks_like_chat(obj):
                return "chat"
    return "jsonl"


def iter_conversations(path_or_name: str | os.PathLike[str], format: str | None = None, *,
                       strict: bool = False, limits: Limits = DEFAULT_LIMITS) -> Iterator[Conversation]:
    """Stream the conversations of a file, directory, hub name or generator spec."""
    name = os.fspath(path_or_name)
    fmt = format or guess_format(name)
    if fmt not in LOADERS:
        raise ConfigError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt not in ("synth", "hf") and not os.path.exists(name):
        raise ConfigError(f"{name}: no such file")
    return LOADERS[fmt](name, strict=strict, limits=limits)


def load(path_or_name: str | os.PathLike[str], format: str | None = None, *, strict: bool = False,
         limits: Limits = DEFAULT_LIMITS) -> list[Conversation]:
    """Every conversation of a dataset, in file order (see `iter_conversations` to stream)."""
    return list(iter_conversations(path_or_name, format, strict=strict, limits=limits))
