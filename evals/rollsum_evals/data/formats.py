"""One entry point for every dataset source: files of each format and generator specs.

A loader is one function `(path, *, strict, limits) -> Iterator[Conversation]` plus one
``LOADERS.register(name, loader)``: `LOADERS` is a `rollsum.registry.Registry` that
`iter_conversations` (so `load`, `rollsum data validate/stats/convert --format` and a run) and a
spec's ``[[datasets]] format`` check read, so the new name works everywhere a format is named.
The format is guessed from the name and the first bytes when it is not given (built-ins only).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl

from rollsum.errors import ConfigError
from rollsum.registry import Registry
from rollsum.safejson import JSONInputError, loads
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, SkipLog, first_record_line, read_json_bytes
from rollsum_evals.data.types import Conversation

log = logging.getLogger(__name__)

SYNTH_PREFIX = "synth:"
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


LOADERS: Registry[Loader] = Registry("loader", {"jsonl": _jsonl, "chat": _chat, "locomo": _locomo, "hf": _hf,
                                                "synth": _synth})
"""Dataset formats by name, in registration order (the order errors list them in)."""


MAX_SYNTH_MESSAGES = 10_000_000
"""The most messages one synthetic set may hold (conversations × messages): ~3 GB of JSONL, and
hours to replay. Without a bound a mistyped count streamed to disk until the disk was full."""


def parse_synth_spec(spec: str) -> Iterator[Any]:
    """`synth:FLAVOR?conversations=4&messages=300&seed=1&facts=10` -> SyntheticConversation items.

    `messages` may be a range `200-400` (each conversation gets a seeded length in it);
    `agent_probes=0` leaves out the agent flavor's post-compaction probes (issue #23), e.g. to
    compare with numbers pinned before they existed.
    """
    from rollsum_evals.data import synth

    body = spec[len(SYNTH_PREFIX):] if spec.startswith(SYNTH_PREFIX) else spec
    flavor, _, query = body.partition("?")
    if flavor not in synth.FLAVORS:
        raise ConfigError(f"{spec}: flavor: expected one of {', '.join(synth.FLAVORS)}, got {flavor!r}")
    params = {"conversations": "1", "messages": "300", "seed": "0"}
    allowed = (*params, "facts", "agent_probes")
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
        agent_probes = params.get("agent_probes", "1")
        if agent_probes not in ("0", "1"):
            raise ValueError
    except ValueError:
        raise ConfigError(f"{spec}: expected integers for conversations, messages (or LOW-HIGH), seed, "
                          "facts; 0 or 1 for agent_probes") from None
    if conversations < 1:
        raise ConfigError(f"{spec}: conversations: expected at least 1")
    lengths = messages if isinstance(messages, tuple) else (messages,)
    if min(lengths) < 1 or (isinstance(messages, tuple) and messages[0] > messages[1]):
        raise ConfigError(f"{spec}: messages: expected a positive number or a range LOW-HIGH with "
                          f"1 <= LOW <= HIGH, got {params['messages']!r}")
    if facts is not None and facts < 0:
        raise ConfigError(f"{spec}: facts: expected a non-negative number of facts, got {facts}")
    if conversations * max(lengths) > MAX_SYNTH_MESSAGES:
        raise ConfigError(f"{spec}: expected at most {MAX_SYNTH_MESSAGES:,} messages in all (conversations × "
                          f"messages), got up to {conversations * max(lengths):,}")
    return synth.dataset(flavor, conversations=conversations, n_messages=messages, seed=seed, facts=facts,
                         agent_probes=agent_probes == "1")


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
        head = fh.read(1 << 16).removeprefix(b"\xef\xbb\xbf")
    stripped = head.lstrip()
    if stripped.startswith(b"["):
        markers = (b'"qa"', b'"sample_id"', b'"speaker_a"')
        return "locomo" if any(m in head for m in markers) else "chat"
    first = first_record_line(path_or_name)
    if first is None and stripped.startswith(b"{"):
        return "jsonl"  # an unreadable first line: the canonical reader names it precisely
    try:
        obj = loads(first) if first is not None else None
    except JSONInputError as err:
        if err.column is None and stripped.startswith(b"{"):
            return "jsonl"  # JSON, but unusable (NaN, too deep, a lone surrogate): said at its line
        obj = None
    if obj is None:
        # a whole-document object (pretty-printed), a broken line or not JSON at all: LoCoMo by
        # its keys; a broken line that starts like a canonical record goes to the canonical
        # reader (it says "truncated JSON" at the line); else the chat loader, whose one-line
        # error names every accepted shape
        if b'"qa"' in head and b'"conversation"' in head:
            return "locomo"
        line = (first or "").lstrip()
        if line.startswith('{"id"') and '"messages"' in line and not _parses_whole(path_or_name):
            return "jsonl"
        return "chat"
    if isinstance(obj, dict) and "conversation" in obj and "qa" in obj:
        return "locomo"
    return "jsonl" if is_canonical(obj) else "chat"


def _parses_whole(path: str) -> bool:
    try:
        loads(read_json_bytes(path, DEFAULT_LIMITS.max_json_bytes))
    except (JSONInputError, ConfigError):
        return False
    return True


def is_canonical(obj: Any) -> bool:
    """The canonical format is a conversation whose messages carry ids (so probes can point at
    them); anything else with messages is a chat export. Decided on the first record only, so a
    file is never read half one way and half another. One message with a string id is enough:
    a canonical record with a missing or numeric id elsewhere is then refused at that message by
    the canonical checks, not silently re-numbered as a chat export (whose message ids, numbers
    or none, are never kept: messages are numbered by position)."""
    if not isinstance(obj, dict) or "messages" not in obj or not isinstance(obj.get("id"), str) or not obj["id"]:
        return False
    msgs = obj["messages"]
    return not isinstance(msgs, list) or any(isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]
                                             for m in msgs)


SELF_CHECKED: frozenset[Loader] = frozenset(LOADERS[n] for n in ("jsonl", "chat", "hf", "synth"))
"""Loaders that check every record with `rollsum_evals.data.validate.check_record` themselves
(with its line or row); any other loader's conversations are checked here, so no loader can
hand a run a conversation that `rollsum data validate` would refuse. Held by the loader itself,
not its name: a loader registered over a built-in's name (``replace=True``) is checked here."""


def iter_conversations(path_or_name: str | os.PathLike[str], format: str | None = None, *,
                       strict: bool = False, limits: Limits = DEFAULT_LIMITS,
                       skips: SkipLog | None = None) -> Iterator[Conversation]:
    """Stream the conversations of a file, directory, hub name or generator spec.

    A bad record is a `RecordError` naming file, line and field when `strict`; otherwise it is
    logged and left out, and counted in `skips` when one is given (the caller closes it)."""
    name = os.fspath(path_or_name)
    fmt = format or guess_format(name)
    if fmt not in LOADERS:
        raise ConfigError(f"format: expected one of {', '.join(LOADERS)}, got {fmt!r}")
    if fmt not in ("synth", "hf") and not os.path.exists(name):
        raise ConfigError(f"{name}: no such file")
    loader = LOADERS[fmt]
    options: dict[str, Any] = {"strict": strict, "limits": limits}
    if skips is not None and _takes(loader, "skips"):
        options["skips"] = skips
    convs = loader(name, **options)
    return convs if loader in SELF_CHECKED else _checked(convs, name, strict=strict, limits=limits, skips=skips)


def _takes(fn: Callable[..., Any], name: str) -> bool:
    params = inspect.signature(fn).parameters
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _checked(convs: Iterator[Conversation], file: str, *, strict: bool, limits: Limits,
             skips: SkipLog | None) -> Iterator[Conversation]:
    from rollsum_evals.data.checks import RecordError, check_record

    log_skips = skips if skips is not None else SkipLog(file, log)
    seen: set[str] = set()
    try:
        for conv in convs:
            errors = [i for i in check_record(conv.to_dict(), file=file, limits=limits, seen_ids=seen)
                      if i.severity == "error"]
            if not errors:
                yield conv
            elif strict:
                raise RecordError(errors)
            else:
                log_skips.skip(RecordError(errors))
    finally:
        if skips is None:
            log_skips.close()


def load(path_or_name: str | os.PathLike[str], format: str | None = None, *, strict: bool = False,
         limits: Limits = DEFAULT_LIMITS, skips: SkipLog | None = None) -> list[Conversation]:
    """Every conversation of a dataset, in file order (see `iter_conversations` to stream)."""
    return list(iter_conversations(path_or_name, format, strict=strict, limits=limits, skips=skips))
