"""Chat exports: `{"messages": [{role, content}, ...]}` per JSONL line, or a JSON array of them.

Exports from chat apps and fine-tuning sets vary in small ways (ShareGPT's `conversations` with
`from`/`value`, content as a list of text parts, `human`/`gpt` roles); those are mapped onto the
four roles. Ids are assigned (`<conversation>:<index>`) when a message has none, so probes and
summaries can point at messages. Exports carry no probes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from typing import Any, cast

from rollsum.errors import ConfigError
from rollsum.types import ROLES, Message, Role
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, iter_lines, read_json_bytes
from rollsum_evals.data.types import Conversation
from rollsum_evals.data.validate import Issue, RecordError, check_record

log = logging.getLogger(__name__)

ROLE_ALIASES = {"human": "user", "gpt": "assistant", "bot": "assistant", "ai": "assistant",
                "model": "assistant", "chatbot": "assistant", "function": "tool", "developer": "system"}
_MESSAGE_KEYS = ("messages", "conversations", "conversation", "turns")


def looks_like_chat(obj: Any) -> bool:
    return isinstance(obj, dict) and any(isinstance(obj.get(k), list) for k in _MESSAGE_KEYS)


def iter_chat(path: str | os.PathLike[str], *, strict: bool = False,
              limits: Limits = DEFAULT_LIMITS) -> Iterator[Conversation]:
    file = os.fspath(path)
    stem = os.path.splitext(os.path.basename(file))[0]
    for line, obj in _records(file, limits):
        if isinstance(obj, Issue):
            if strict:
                raise RecordError([obj])
            log.warning("skipped record: %s", obj)
            continue
        try:
            conv = from_export(obj, default_id=f"{stem}-{line}")
        except ConfigError as err:
            issue = Issue(file, line or None, None, "", str(err))
            if strict:
                raise RecordError([issue]) from None
            log.warning("skipped record: %s", issue)
            continue
        errors = [i for i in check_record(conv.to_dict(), file=file, line=line or None, limits=limits)
                  if i.severity == "error"]
        if errors:
            if strict:
                raise RecordError(errors)
            log.warning("skipped record: %s", errors[0])
            continue
        yield conv


def _records(file: str, limits: Limits) -> Iterator[tuple[int, Any]]:
    """(line, object) pairs: per line for JSONL, per array item (line 0) for a JSON document."""
    with open(file, "rb") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith(b"["):
        try:
            data = json.loads(read_json_bytes(file, limits.max_json_bytes).decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            yield 0, Issue(file, None, None, "", f"invalid JSON: {err} (expected an array of chat exports)")
            return
        for item in data:
            yield 0, item
        return
    with open(file, "rb") as fh:
        for ln in iter_lines(fh, limits.max_line_bytes):
            if ln.text is None:
                yield ln.number, Issue(file, ln.number, None, "", ln.error or "unreadable line")
            elif ln.text.strip():
                try:
                    yield ln.number, json.loads(ln.text)
                except json.JSONDecodeError as err:
                    yield ln.number, Issue(file, ln.number, None, "",
                                           f"invalid JSON at column {err.colno}: {err.msg}")


def from_export(obj: Any, *, default_id: str) -> Conversation:
    if not looks_like_chat(obj):
        raise ConfigError("expected an object with a messages array")
    key = next(k for k in _MESSAGE_KEYS if isinstance(obj.get(k), list))
    cid = str(obj.get("id") or obj.get("conversation_id") or default_id)
    messages = []
    for i, m in enumerate(obj[key]):
        if not isinstance(m, dict):
            raise ConfigError(f"field {key}[{i}]: expected an object with role and content")
        role = m.get("role", m.get("from"))
        if not isinstance(role, str):
            raise ConfigError(f"field {key}[{i}].role: missing (expected user, assistant, system or tool)")
        role = ROLE_ALIASES.get(role.lower(), role.lower())
        if role not in ROLES:
            raise ConfigError(f"field {key}[{i}].role: expected one of {', '.join(ROLES)}, got {role!r}")
        content = m.get("content", m.get("value", m.get("text")))
        if isinstance(content, list):  # content parts
            content = "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise ConfigError(f"field {key}[{i}].content: expected a string")
        meta = {k: v for k, v in m.items() if k in ("tool_calls", "tool_call_id")}
        created = m.get("created_at", m.get("timestamp"))
        try:
            messages.append(Message(role=cast(Role, role), content=content, id=str(m.get("id") or f"{cid}:{i}"),
                                    name=m.get("name") if isinstance(m.get("name"), str) else None,
                                    created_at=None if created is None else str(created), meta=meta))
        except (ValueError, TypeError) as err:
            raise ConfigError(f"field {key}[{i}].role: {err}") from None
    meta = obj.get("meta") if isinstance(obj.get("meta"), dict) else {}
    return Conversation(id=cid, messages=tuple(messages), meta={"source": "chat", **meta})
