"""Chat exports as people have them: OpenAI- and Anthropic-style message arrays, ShareGPT and
ChatGPT's own ``conversations.json`` (a tree of nodes per conversation: `_chatgpt_thread`).

Reading: one list of message objects (``{"role", "content"}``, ``{"from", "value"}``) becomes
the messages of one conversation. Content may be a string or a list of content blocks (OpenAI
``text``/``image_url``, Anthropic ``text``/``tool_use``/``tool_result``/``image``); tool calls
(OpenAI ``tool_calls``, Anthropic ``tool_use``) and their results (OpenAI ``role: tool``,
Anthropic ``tool_result`` blocks) are mapped onto the canonical tool convention
(``meta.tool_calls`` on the calling assistant message, a ``tool`` message with
``meta.tool_call_id``), so context assembly never separates a call from its result.

Message ids are assigned from the position in the export, ``<conversation>:<i>``; the extra
messages an Anthropic ``tool_result`` block splits off get ``<conversation>:<i>.<k>``. So "message
12" in a questions sidecar means item 12 of the export's array, whatever was split or dropped
(`message_index`). Empty messages (no text, no tool call, no tool result) are dropped: the
canonical format refuses them and they carry nothing. Never silently: `to_conversation_messages`
reports their positions, and `empty_messages_dropped` says so in the one sentence that
`rollsum data validate` warns with and every loading command logs (convert, stats, a run).

Writing (`rollsum data convert --to openai|anthropic|sharegpt`): each writer returns the
exported object and, for every canonical message id, its position in the exported array, so a
questions sidecar written next to it points at the right items.

Over ~400 lines because it holds both directions of every export format: reading and writing
share the role names, the content-block rules and the id convention, and a module per format
would split each rule from its inverse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from rollsum.errors import ConfigError
from rollsum.types import ROLES, Message, Role

ROLE_ALIASES: Mapping[str, str] = {
    "human": "user", "gpt": "assistant", "bot": "assistant", "ai": "assistant", "model": "assistant",
    "chatbot": "assistant", "function": "tool", "developer": "system", "ipython": "tool",
}
MESSAGE_LIST_KEYS: tuple[str, ...] = ("messages", "conversations", "conversation", "turns")
"""Where a conversation object keeps its messages: OpenAI/Anthropic ``messages``, ShareGPT
``conversations``; the first key holding a list wins."""
EXPORT_FORMATS: tuple[str, ...] = ("openai", "anthropic", "sharegpt")
SYSTEM_SUFFIX = "system"
"""Id suffix of the message made from a conversation's top-level ``system`` (Anthropic, ShareGPT)."""
_PLACEHOLDER = {"image_url": "[image]", "image": "[image]", "input_image": "[image]",
                "input_audio": "[audio]", "audio": "[audio]", "file": "[file]", "input_file": "[file]",
                "document": "[document]"}
_CONTENT_KEYS = ("content", "value", "text", "parts")
_SKIPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_SAYS_CALL = re.compile(r"\bCalling [\w.\-]+\(")
"""How a tool call is written into the calling message's text (the synthetic agent's wording):
a call's name and arguments are part of what a summary should keep."""


class ExportError(ConfigError):
    """A message that cannot be read; `index` is its position in the export (for line numbers
    when each message is its own JSONL line)."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


def is_message(obj: Any) -> bool:
    """A single message object (not a conversation holding messages)."""
    return (isinstance(obj, dict) and any(isinstance(obj.get(k), str | dict) for k in ("role", "from", "author"))
            and not is_conversation(obj))


MAPPING_KEY = "mapping"
"""ChatGPT's own export (`conversations.json`): each conversation keeps its messages as a tree of
nodes under ``mapping`` (every edit and regeneration is a branch), ``current_node`` the leaf the
user last saw."""


def is_conversation(obj: Any) -> bool:
    return isinstance(obj, dict) and (any(isinstance(obj.get(k), list) for k in MESSAGE_LIST_KEYS)
                                      or isinstance(obj.get(MAPPING_KEY), dict))


def message_key(obj: Mapping[str, Any]) -> str:
    return next((k for k in MESSAGE_LIST_KEYS if isinstance(obj.get(k), list)), MAPPING_KEY)


def _chatgpt_thread(obj: Mapping[str, Any]) -> list[Any]:
    """The messages of a ChatGPT conversation's tree, root first, along the branch that ends at
    ``current_node`` (what the user last saw; without one, the last leaf), leaving out nodes
    without a message and messages ChatGPT hides from the conversation (its own system
    prompt, context it adds)."""
    nodes: Mapping[str, Any] = obj[MAPPING_KEY]
    node_id = obj.get("current_node")
    if not isinstance(node_id, str) or node_id not in nodes:
        leaves = [k for k, n in nodes.items() if isinstance(n, dict) and not n.get("children")]
        node_id = leaves[-1] if leaves else None
    thread: list[Any] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in nodes and node_id not in seen:
        seen.add(node_id)
        node = nodes[node_id]
        if not isinstance(node, dict):
            raise ExportError(f"field {MAPPING_KEY}.{node_id}: expected a node object (id, message, parent, "
                              f"children), got {describe(node)}")
        message = node.get("message")
        meta = message.get("metadata") if isinstance(message, dict) else None
        if isinstance(message, dict) and not (isinstance(meta, dict)
                                              and meta.get("is_visually_hidden_from_conversation")):
            thread.append(message)
        node_id = node.get("parent")
    thread.reverse()
    return thread


def describe(obj: Any) -> str:
    """What a JSON value is, for 'expected X, got Y' messages."""
    if isinstance(obj, dict):
        keys = ", ".join(sorted(obj)[:6]) + (", ..." if len(obj) > 6 else "")
        return f"an object with keys {keys}" if obj else "an empty object"
    if isinstance(obj, list):
        if not obj:
            return "an empty array"
        return f"an array of {describe(obj[0]).removeprefix('an ').removeprefix('a ')}s"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(type(obj), "null")


EXPECTED_SHAPES = ('a chat export: an array of messages [{"role": ..., "content": ...}], an array of '
                   'such arrays, an object with "messages" (OpenAI, Anthropic), "conversations" '
                   '(ShareGPT) or "mapping" (ChatGPT\'s conversations.json), or one of these per JSONL line')


# ----------------------------------------------------------------------------------------------
# reading


EMPTY_MESSAGE = "no text, tool call or tool result"
"""What makes an exported message empty, so dropped on load (the canonical format refuses it)."""


def empty_messages_dropped(indices: Sequence[int], field: str = "messages") -> str:
    """The one rule for an export's empty messages, said once for `rollsum data validate` (a
    warning per conversation) and for every command that loads the file (the log line): they are
    left out, and what follows from that."""
    shown = ", ".join(f"{field}[{i}]" for i in indices[:5]) + (f" and {len(indices) - 5} more" if len(indices) > 5
                                                                else "")
    return (f"{len(indices)} empty message(s) ({EMPTY_MESSAGE}): {shown}; left out when the file is loaded, so "
            "`rollsum data convert` does not write them and a run does not replay them (a questions sidecar "
            "may not point at them)")


def to_conversation_messages(items: Sequence[Any], cid: str, *, field: str = "messages",
                             system: Any = None, dropped: list[int] | None = None) -> list[Message]:
    """The canonical messages of one exported message list (see the module doc for ids).
    `dropped` receives the position of every empty item, which has no message."""
    out: list[Message] = []
    if system is not None:
        text = _text(system, "system", None)[0]
        if text.strip():
            out.append(Message("system", text, id=f"{cid}:{SYSTEM_SUFFIX}"))
    tool_names: dict[str, str] = {}
    for i, item in enumerate(items):
        made = _messages_of(item, i, cid, field, tool_names)
        if not made and dropped is not None:
            dropped.append(i)
        for k, m in enumerate(made):
            out.append(m.with_id(f"{cid}:{i}" if k == 0 else f"{cid}:{i}.{k}"))
    return out


def conversation_parts(obj: Mapping[str, Any], default_id: str) -> tuple[str, str, list[Any], Any]:
    """(id, message key, message items, system) of a conversation object."""
    key = message_key(obj)
    raw_id = obj.get("id", obj.get("conversation_id"))
    cid = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id) \
        else default_id
    items = _chatgpt_thread(obj) if key == MAPPING_KEY else list(obj[key])
    return cid, key, items, obj.get("system")


def message_index(message_id: str | None, cid: str) -> int | None:
    """The export position a message id was assigned from (`<cid>:<i>` or `<cid>:<i>.<k>`)."""
    if not message_id:
        return None
    m = re.fullmatch(re.escape(cid) + r":(\d{1,18})(?:\.\d+)?", message_id)  # (int() refuses 4,301 digits)
    return int(m.group(1)) if m else None


def _messages_of(item: Any, i: int, cid: str, field: str, tool_names: dict[str, str]) -> list[Message]:
    where = f"{field}[{i}]"
    if not isinstance(item, dict):
        raise ExportError(f"field {where}: expected a message object with role and content, got "
                          f"{describe(item)}", i)
    role = _role(item, where, i)
    author = item.get("author")
    name: str | None = item.get("name", author.get("name") if isinstance(author, dict) else None)
    if name is not None and not isinstance(name, str):
        raise ExportError(f"field {where}.name: expected a string (who spoke or which tool), got {describe(name)}", i)
    created = _timestamp(item, where, i)
    if not any(k in item for k in (*_CONTENT_KEYS, "tool_calls", "function_call")):
        raise ExportError(f"field {where}.content: missing (expected a string or a list of content blocks; "
                          "'value' or 'text' are read too)", i)
    raw = item.get("content", item.get("value", item.get("text", item.get("parts"))))
    text, calls, results = _text(raw, f"{where}.content", i)
    meta: dict[str, Any] = {}
    listed = item.get("tool_calls")
    if listed is not None and not isinstance(listed, list):
        raise ExportError(f"field {where}.tool_calls: expected a list of tool calls, got {describe(listed)}", i)
    for call in listed or ([item["function_call"]] if isinstance(item.get("function_call"), dict) else []):
        calls.append(_openai_call(call, f"{where}.tool_calls", i))
    if calls:
        meta["tool_calls"] = [c[0] for c in calls]
        said = _SAYS_CALL.search(text) is not None  # exported by us (or synthetic): it says so already
        for call_id, tool, args in calls:
            tool_names[call_id] = tool
            if not said:
                line = f"Calling {tool}({args})."
                text = f"{text}\n{line}" if text.strip() else line
    if role == "tool":
        answers = item.get("tool_call_id")
        if isinstance(answers, str):
            meta["tool_call_id"] = answers
            name = name or tool_names.get(answers) or None
    out: list[Message] = []
    for call_id, content, is_error in results:  # Anthropic: results answer the previous turn
        rmeta: dict[str, Any] = {"tool_call_id": call_id} if call_id else {}
        if is_error:
            rmeta["is_error"] = True
        out.append(Message("tool", content if content.strip() else "(empty tool result)",
                           name=tool_names.get(call_id), created_at=created, meta=rmeta))
    if text.strip() or calls:
        out.append(Message(cast(Role, role), text, name=name, created_at=created, meta=meta))
    return out


def _role(item: Mapping[str, Any], where: str, i: int) -> str:
    role = item.get("role", item.get("from"))
    if role is None and isinstance(item.get("author"), dict):  # ChatGPT's own export nodes
        role = item["author"].get("role")
    if not isinstance(role, str):
        raise ExportError(f"field {where}.role: missing (expected one of {', '.join(ROLES)}; "
                          "'from' with human/gpt is also read)", i)
    role = ROLE_ALIASES.get(role.lower(), role.lower())
    if role not in ROLES:
        raise ExportError(f"field {where}.role: expected one of {', '.join(ROLES)}, got {role!r}", i)
    return role


_TIME_KEYS = ("created_at", "timestamp", "create_time")


def _timestamp(item: Mapping[str, Any], where: str, i: int) -> str | None:
    """A message's time (ISO text, or epoch seconds made ISO); an epoch no calendar holds is
    an error naming the field, not an overflow deep in `datetime`."""
    key = next((k for k in _TIME_KEYS if k in item), None)
    value = item.get(key) if key else None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), UTC).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            hint = ""
            try:  # JavaScript's Date.now() and many exports count milliseconds
                datetime.fromtimestamp(float(value) / 1000, UTC)
                hint = " (milliseconds since 1970? divide by 1000)"
            except (OverflowError, OSError, ValueError):
                pass
            raise ExportError(f"field {where}.{key}: expected ISO text or seconds since 1970 within years "
                              f"1-9999, got {value!r}{hint}", i) from None
    if value is not None:  # else the message's time would be dropped in silence
        raise ExportError(f"field {where}.{key}: expected ISO text or seconds since 1970, got {describe(value)}", i)
    return None


def _text(raw: Any, where: str, i: int | None
          ) -> tuple[str, list[tuple[str, str, str]], list[tuple[str, str, bool]]]:
    """(text, tool calls (id, name, args), tool results (call id, text, is_error)) of a content
    value: a string, or a list of content blocks (a single block is read as a list of one)."""
    if raw is None:
        return "", [], []
    if isinstance(raw, str):
        return raw, [], []
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise ExportError(f"field {where}: expected a string or a list of content blocks, got {describe(raw)}", i)
    parts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    results: list[tuple[str, str, bool]] = []
    for k, block in enumerate(raw):
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, dict):
            raise ExportError(f"field {where}[{k}]: expected a content block object or a string, got "
                              f"{describe(block)}", i)
        kind = block.get("type")
        if kind in _SKIPPED_BLOCKS:
            continue
        if kind is None and isinstance(block.get("content_type"), str):  # a ChatGPT export's content
            parts += _chatgpt_parts(block)
            continue
        if kind == "tool_use":
            args = json.dumps(block.get("input") or {}, ensure_ascii=False, sort_keys=True)
            calls.append((str(block.get("id") or f"call_{len(calls)}"), str(block.get("name") or "tool"), args))
        elif kind == "tool_result":
            inner, _, _ = _text(block.get("content"), f"{where}[{k}].content", i)
            results.append((str(block.get("tool_use_id") or ""), inner, bool(block.get("is_error"))))
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("text", "input_text", "output_text"):  # a text part must hold its text
            raise ExportError(f"field {where}[{k}].text: expected the part's text (a string), got "
                              f"{describe(block.get('text'))}", i)
        elif kind == "refusal" and isinstance(block.get("refusal"), str):
            parts.append(block["refusal"])
        elif isinstance(kind, str):
            title = block.get("title") or block.get("filename") or ""
            placeholder = _PLACEHOLDER.get(kind, f"[{kind}]")
            parts.append(f"{placeholder[:-1]}: {title}]" if title else placeholder)
        else:
            raise ExportError(f"field {where}[{k}]: expected a content block with a 'type' (text, image_url, "
                              f"tool_use, ...), got {describe(block)}", i)
    return "\n".join(parts), calls, results


def _chatgpt_parts(content: Mapping[str, Any]) -> list[str]:
    """The text of a ChatGPT export's message content (``content_type`` text, multimodal_text,
    code, execution_output, ...): its ``parts`` (a string each; an image or file part as a
    placeholder) or its ``text``; nothing for content without either (user profile context)."""
    if isinstance(content.get("parts"), list):
        out = []
        for part in content["parts"]:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                kind = str(part.get("content_type") or "file")
                out.append("[image]" if "image" in kind else "[audio]" if "audio" in kind else f"[{kind}]")
        return out
    return [content["text"]] if isinstance(content.get("text"), str) else []


def _openai_call(call: Any, where: str, i: int) -> tuple[str, str, str]:
    if not isinstance(call, dict):
        raise ExportError(f"field {where}: expected tool call objects, got {describe(call)}", i)
    fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, sort_keys=True)
    call_id = call.get("id") or call.get("call_id")
    return (str(call_id) if call_id else f"call_{fn.get('name', 'tool')}", str(fn.get("name") or "tool"), args)


# ----------------------------------------------------------------------------------------------
# writing


Positions = dict[str, int]
"""Canonical message id -> position in the exported message array."""


def _tool_name_of_calls(messages: Sequence[Message]) -> dict[str, str]:
    return {str(m.meta["tool_call_id"]): m.name or "tool" for m in messages
            if m.role == "tool" and m.meta.get("tool_call_id")}


def to_openai(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], Positions]:
    """OpenAI Chat Completions messages; every canonical message is one item."""
    names = _tool_name_of_calls(messages)
    out: list[dict[str, Any]] = []
    pos: Positions = {}
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.name and m.role != "tool":
            d["name"] = m.name
        calls = m.meta.get("tool_calls")
        if m.role == "assistant" and isinstance(calls, list) and calls:
            d["tool_calls"] = [{"id": str(c), "type": "function",
                                "function": {"name": names.get(str(c), "tool"), "arguments": "{}"}}
                               for c in calls]
        if m.role == "tool":
            if m.meta.get("tool_call_id"):
                d["tool_call_id"] = str(m.meta["tool_call_id"])
            if m.name:
                d["name"] = m.name
        pos[str(m.id)] = len(out)
        out.append(d)
    return out, pos


def to_anthropic(messages: Sequence[Message]) -> tuple[dict[str, Any], Positions]:
    """An Anthropic Messages API body (``system`` + ``messages``). Leading system messages
    become ``system``; a later one is a user turn marked ``[system]``. Tool results are
    ``tool_result`` blocks in a user turn (consecutive ones share it); a call is a ``tool_use``
    block after the assistant's text. Same-role neighbours are *not* merged: positions stay one
    item per message except tool results, so a sidecar's indices keep meaning the same thing."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    pos: Positions = {}
    leading = True
    for m in messages:
        if m.role == "system" and leading:
            system.append(m.content)
            pos[str(m.id)] = 0
            continue
        leading = False
        if m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(m.meta.get("tool_call_id") or ""),
                                     "content": m.content}
            if m.meta.get("is_error"):
                block["is_error"] = True
            prev = out[-1] if out else None
            if prev is not None and prev["role"] == "user" and isinstance(prev["content"], list) and all(
                    b.get("type") == "tool_result" for b in prev["content"]):
                prev["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            pos[str(m.id)] = len(out) - 1
            continue
        role = "assistant" if m.role == "assistant" else "user"
        text = m.content if m.role != "system" else f"[system] {m.content}"
        calls = m.meta.get("tool_calls")
        if role == "assistant" and isinstance(calls, list) and calls:
            content: Any = ([{"type": "text", "text": text}] if text.strip() else []) + [
                {"type": "tool_use", "id": str(c), "name": "tool", "input": {}} for c in calls]
        else:
            content = text
        pos[str(m.id)] = len(out)
        out.append({"role": role, "content": content})
    names = _tool_name_of_calls(messages)
    for turn in out:
        for b in turn["content"] if isinstance(turn["content"], list) else []:
            if b.get("type") == "tool_use":
                b["name"] = names.get(b["id"], "tool")
    body: dict[str, Any] = {"messages": out}
    if system:
        body = {"system": "\n\n".join(system), **body}
    return body, pos


_SHAREGPT_ROLE = {"user": "human", "assistant": "gpt", "system": "system", "tool": "tool"}


def to_sharegpt(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], Positions]:
    out = [{"from": _SHAREGPT_ROLE[m.role], "value": m.content} for m in messages]
    return out, {str(m.id): i for i, m in enumerate(messages)}
