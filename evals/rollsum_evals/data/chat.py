"""The ``chat`` loader: chat exports in the shapes people have them, JSON or JSONL.

Accepted, one conversation or many:

- a JSON array of messages ``[{"role": ..., "content": ...}, ...]`` (one conversation);
- a JSON array of such arrays (one conversation each);
- an object with ``messages`` (OpenAI; Anthropic with a top-level ``system``),
  ``conversations`` (ShareGPT, ``from``/``value``) or ``mapping`` (ChatGPT's own
  ``conversations.json``: the branch ending at ``current_node``), alone or in a JSON array;
- JSONL: one message per line (the file is one conversation), or one array or conversation
  object per line.

The shape is decided once, from the first record, and every later record must have it: a line
of another shape is one error naming its line and what was expected (never a silent switch to
another reading of the file). Messages are normalised by `rollsum_evals.data.exports`; a
conversation object's own ``probes`` (or ``questions``) are read by the questions-sidecar
rules (`rollsum_evals.data.sidecar`), never dropped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from rollsum.errors import ConfigError
from rollsum.safejson import JSONInputError, loads
from rollsum_evals.data.checks import Issue, RecordError, check_record, json_problem
from rollsum_evals.data.exports import (
    EMPTY_MESSAGE,
    EXPECTED_SHAPES,
    ExportError,
    conversation_parts,
    describe,
    empty_messages_dropped,
    is_conversation,
    is_message,
    message_key,
    to_conversation_messages,
)
from rollsum_evals.data.reader import (
    DEFAULT_LIMITS,
    Limits,
    SkipLog,
    first_record_line,
    iter_lines,
    read_json_bytes,
)
from rollsum_evals.data.types import Conversation

log = logging.getLogger(__name__)

Shape = Literal["messages", "object"]
_HEAD_BYTES = 1 << 16
_PROBE_KEYS = ("probes", "questions")


@dataclass(frozen=True, slots=True)
class _Record:
    line: int | None
    """JSONL line (the first message's, for one message per line); None inside a JSON document."""
    default_id: str
    shape: Shape
    value: Any
    lines: tuple[int, ...] = ()
    """One message per line: each message's line, for error messages."""


def iter_chat(path: str | os.PathLike[str], *, strict: bool = False, limits: Limits = DEFAULT_LIMITS,
              skips: SkipLog | None = None) -> Iterator[Conversation]:
    file = os.fspath(path)
    log_skips = skips if skips is not None else SkipLog(file, log)
    dropped: list[int] = []
    try:
        for _line, conv, issues in iter_checked_chat(file, limits=limits, dropped=dropped):
            if conv is None:
                if strict:
                    raise RecordError(issues)
                log_skips.skip(RecordError(issues))
                continue
            yield conv
    finally:
        if skips is None:
            log_skips.close()
        if dropped:  # never silent: what `rollsum data validate` warns about, counted for the file
            log.warning("%s: dropped %d empty message(s) (%s) in %d conversation(s): the canonical format has "
                        "no empty messages; `rollsum data validate %s` lists them", file, sum(dropped), EMPTY_MESSAGE,
                        len(dropped), file)


def iter_checked_chat(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS,
                      dropped: list[int] | None = None
                      ) -> Iterator[tuple[int | None, Conversation | None, list[Issue]]]:
    """(line, conversation or None, issues) per record: what `rollsum data validate` lists.
    A conversation that lost empty messages on the way carries a warning saying which
    (`exports.empty_messages_dropped`), and `dropped` gets how many, once per such conversation."""
    file = os.fspath(path)
    seen: set[str] = set()  # conversation ids: unique in the file, as in the canonical format
    for rec in _records(file, limits):
        if isinstance(rec, Issue):
            yield rec.line, None, [rec]
            continue
        empty: list[int] = []
        try:
            conv = _conversation(file, rec, empty)
        except RecordError as err:
            yield rec.line, None, err.issues
            continue
        issues = check_record(conv.to_dict(), file=file, line=rec.line, limits=limits, seen_ids=seen)
        errors = [i for i in issues if i.severity == "error"]
        if empty:
            line = rec.lines[empty[0]] if rec.lines else rec.line
            key = "messages" if rec.shape == "messages" else message_key(rec.value)
            issues.insert(0, Issue(file, line, conv.id, "", empty_messages_dropped(empty, key), "warning"))
            if dropped is not None and not errors:
                dropped.append(len(empty))
        yield rec.line, None if errors else conv, issues


def _conversation(file: str, rec: _Record, dropped: list[int] | None = None) -> Conversation:
    """`dropped` receives the positions of the record's empty messages (left out)."""
    try:
        if rec.shape == "messages":
            _check_export_ids(file, rec, rec.value)
            return Conversation(id=rec.default_id, messages=tuple(to_conversation_messages(
                rec.value, rec.default_id, dropped=dropped)), meta={"source": "chat"})
        cid, key, items, system = conversation_parts(rec.value, rec.default_id)
        conv = Conversation(id=cid, messages=tuple(to_conversation_messages(items, cid, field=key, system=system,
                                                                            dropped=dropped)),
                            meta={"source": "chat", **(rec.value.get("meta") if isinstance(rec.value.get("meta"),
                                                                                            dict) else {})})
    except ExportError as err:
        line = rec.lines[err.index] if rec.lines and err.index is not None else rec.line
        raise RecordError([Issue(file, line, None, "", str(err))]) from None
    _check_export_ids(file, rec, items)
    for pkey in _PROBE_KEYS:
        if pkey in rec.value:
            from rollsum_evals.data.sidecar import embedded

            # evidence may name the export's own message ids (a canonical record in a JSON array)
            aliases = {str(item["id"]): f"{cid}:{i}" for i, item in enumerate(items)
                       if isinstance(item, dict) and isinstance(item.get("id"), str | int)}
            conv = embedded(conv, rec.value[pkey], file=file, line=rec.line, key=pkey, aliases=aliases)
    return conv


def _check_export_ids(file: str, rec: _Record, items: list[Any]) -> None:
    """An export's own message ids are not kept (messages are numbered by position), but a
    probe's evidence may name them: two messages with one id would make that ambiguous."""
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        raw = item.get("id") if isinstance(item, dict) else None
        if not isinstance(raw, str | int) or isinstance(raw, bool):
            continue
        if str(raw) in seen:
            line = rec.lines[i] if rec.lines else rec.line
            raise RecordError([Issue(file, line, None, "", f"field messages[{i}].id: expected message ids unique "
                                     f"in the conversation; {raw!r} is also messages[{seen[str(raw)]}]'s")])
        seen[str(raw)] = i


def _head(file: str) -> bytes:
    with open(file, "rb") as fh:
        return fh.read(_HEAD_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()


def _bare_json_value(head: bytes) -> bool:
    """Whether the file opens like a JSON string, number, true, false or null (valid JSON, so
    "not JSON" would be wrong; it is just not a conversation)."""
    return head[:1] in b'"-0123456789' or head.startswith((b"true", b"false", b"null"))


def _stem(file: str) -> str:
    return os.path.splitext(os.path.basename(file))[0]


def _records(file: str, limits: Limits) -> Iterator[_Record | Issue]:
    """The file's conversations as records, or the Issue that stops or skips one."""
    head = _head(file)
    if not head:
        yield Issue(file, None, None, "", f"the file is empty (expected {EXPECTED_SHAPES})")
        return
    if head[:1] not in (b"[", b"{"):
        what = "a bare JSON value, not a chat export" if _bare_json_value(head) else "not JSON"
        yield Issue(file, 1, None, "", f"{what} (expected {EXPECTED_SHAPES})")
        return
    if head[:1] == b"{" and _first_line_parses(file, limits):
        yield from _jsonl_records(file, limits)
        return
    try:
        doc = loads(read_json_bytes(file, limits.max_json_bytes))
    except JSONInputError as err:
        if head[:1] == b"[" and err.message == "Extra data":  # one array per line: JSONL
            yield from _jsonl_records(file, limits)
            return
        if err.column is None:
            yield Issue(file, None, None, "", f"{err.message} (expected {EXPECTED_SHAPES})")
        else:
            yield Issue(file, err.line, None, "", f"invalid JSON at column {err.column}: {err.message} "
                                                  f"(expected {EXPECTED_SHAPES})")
        return
    yield from _document_records(file, doc)


def _first_line_parses(file: str, limits: Limits) -> bool:
    first = first_record_line(file, limits.max_line_bytes)
    try:
        loads(first or "")
    except JSONInputError as err:
        return err.column is None  # parsed, but unusable: the line's own error says why
    return True


def _document_records(file: str, doc: Any) -> Iterator[_Record | Issue]:
    stem = _stem(file)
    if is_conversation(doc):
        yield _Record(None, stem, "object", doc)
        return
    if not isinstance(doc, list) or not doc:
        yield Issue(file, None, None, "", f"expected {EXPECTED_SHAPES}; got {describe(doc)}")
        return
    first = doc[0]
    if is_message(first):
        yield _Record(None, stem, "messages", doc)
        return
    shape: Shape
    if isinstance(first, list):
        shape, what = "messages", "an array of messages"
    elif is_conversation(first):
        shape, what = "object", 'a conversation object with "messages", "conversations" or "mapping"'
    else:
        yield Issue(file, None, None, "", f"expected {EXPECTED_SHAPES}; got an array whose first item is "
                                          f"{describe(first)}")
        return
    for k, item in enumerate(doc):
        ok = isinstance(item, list) if shape == "messages" else is_conversation(item)
        if not ok:
            yield Issue(file, None, None, f"[{k}]", f"expected {what} like item 0, got {describe(item)}")
            continue
        yield _Record(None, f"{stem}-{k + 1}", shape, item)


def _jsonl_records(file: str, limits: Limits) -> Iterator[_Record | Issue]:
    stem = _stem(file)
    shape: Literal["message", "messages", "object"] | None = None
    first_line = 0
    messages: list[Any] = []
    lines: list[int] = []
    broken = False
    with open(file, "rb") as fh:
        for ln in iter_lines(fh, limits.max_line_bytes):
            if ln.text is None:
                yield Issue(file, ln.number, None, "", ln.error or "unreadable line")
                broken = broken or shape == "message"
                continue
            if not ln.text.strip():
                continue
            try:
                obj = loads(ln.text.removeprefix("\ufeff"))
            except JSONInputError as err:
                yield Issue(file, ln.number, None, "", json_problem(err, ln.text, "one JSON value per line"))
                broken = broken or shape == "message"
                continue
            if shape is None:
                first_line = ln.number
                if is_message(obj):
                    shape = "message"
                elif isinstance(obj, list):
                    shape = "messages"
                elif is_conversation(obj):
                    shape = "object"
                else:
                    yield Issue(file, ln.number, None, "", f"expected {EXPECTED_SHAPES}; got {describe(obj)}")
                    return
            if shape == "message":
                if not is_message(obj):
                    yield Issue(file, ln.number, None, "", f"expected a message object like line {first_line} "
                                                           f"(the file has one message per line), got {describe(obj)}")
                    broken = True
                    continue
                messages.append(obj)
                lines.append(ln.number)
            elif shape == "messages":
                if not isinstance(obj, list):
                    yield Issue(file, ln.number, None, "", f"expected an array of messages like line {first_line}, "
                                                           f"got {describe(obj)}")
                    continue
                yield _Record(ln.number, f"{stem}-{ln.number}", "messages", obj)
            else:
                if not is_conversation(obj):
                    yield Issue(file, ln.number, None, "", f"expected a conversation object like line {first_line} "
                                                           f'(with "messages" or "conversations"), got {describe(obj)}')
                    continue
                yield _Record(ln.number, f"{stem}-{ln.number}", "object", obj)
    if shape == "message" and not broken:
        yield _Record(first_line, stem, "messages", messages, tuple(lines))
    elif shape is None:
        yield Issue(file, None, None, "", f"the file holds no JSON value (expected {EXPECTED_SHAPES})")


def from_export(obj: Any, *, default_id: str, file: str = "<export>", dropped: list[int] | None = None
                ) -> Conversation:
    """One conversation object or message array, in canonical form (ConfigError if it is not;
    `file` names where it came from in the message). `dropped` receives the positions of its
    empty messages, which are left out (the caller says so: never silently)."""
    if isinstance(obj, list):
        rec = _Record(None, default_id, "messages", obj)
    elif is_conversation(obj):
        rec = _Record(None, default_id, "object", obj)
    else:
        raise ConfigError(f"{file}: expected {EXPECTED_SHAPES}; got {describe(obj)}")
    return _conversation(file, rec, dropped)
