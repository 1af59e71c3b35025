"""Records' checks: what is wrong with a canonical record, as `Issue`s (`RecordError` carries them).

Every loader checks its records here, and so does `rollsum data validate`
(`rollsum_evals.data.validate`, the command, which sits above the loaders): "validate says OK"
and "load accepts it" can never disagree, and no loader imports the command. Every issue
names the file, line, conversation id, field and what was expected, because the
person reading it is fixing a file by hand.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rollsum.errors import ConfigError
from rollsum.safejson import JSONInputError, check_value, has_surrogate, loads
from rollsum.types import ROLES
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, iter_lines
from rollsum_evals.data.types import PROBE_CATEGORIES

Severity = Literal["error", "warning"]
MAX_ISSUES_PER_RECORD = 20
TOP_LEVEL_KEYS = ("id", "messages", "probes", "references", "meta")


@dataclass(frozen=True, slots=True)
class Issue:
    file: str
    line: int | None
    conversation_id: str | None
    field: str
    expected: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        conv = f" conversation {self.conversation_id!r}" if self.conversation_id else ""
        fld = f" field {self.field}" if self.field else ""
        return f"{where}:{conv}{fld}: {self.expected}" if (conv or fld) else f"{where}: {self.expected}"


class RecordError(ConfigError):
    """A record that cannot be loaded; carries its issues for callers that want them all."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__(str(issues[0]) + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""))
        self.issues = issues


class _Collector:
    def __init__(self, file: str, line: int | None, conv: str | None) -> None:
        self.file, self.line, self.conv = file, line, conv
        self.issues: list[Issue] = []

    def add(self, fld: str, expected: str, severity: Severity = "error") -> None:
        if len(self.issues) < MAX_ISSUES_PER_RECORD:
            self.issues.append(Issue(self.file, self.line, self.conv, fld, expected, severity))


def _type(v: Any) -> str:
    return "null" if v is None else {dict: "object", list: "array", str: "string", bool: "boolean",
                                     int: "integer", float: "number"}.get(type(v), type(v).__name__)


def check_record(obj: Any, *, file: str, line: int | None = None, limits: Limits = DEFAULT_LIMITS,
                 seen_ids: set[str] | None = None) -> list[Issue]:
    """All problems of one canonical conversation record (empty list: loadable)."""
    if not isinstance(obj, dict):
        return [Issue(file, line, None, "", f"expected a JSON object (a conversation), got {_type(obj)}")]
    cid = obj.get("id")
    c = _Collector(file, line, cid if isinstance(cid, str) else None)
    if not isinstance(cid, str) or not cid:
        c.add("id", f"expected a non-empty string, got {_type(cid)}")
    elif has_surrogate(cid):
        c.add("id", _SURROGATE_TEXT)
    elif not cid.isprintable():
        c.add("id", f"expected a printable id (no line breaks or control characters), got {cid!r}")
    elif seen_ids is not None:
        if cid in seen_ids:
            c.add("id", "expected a conversation id unique in the file (duplicate)")
        seen_ids.add(cid)
    for key in obj:
        if key not in TOP_LEVEL_KEYS:
            c.add(key, f"unknown top-level field (expected only {', '.join(TOP_LEVEL_KEYS)})", "warning")
    if "meta" in obj and not isinstance(obj["meta"], dict):
        c.add("meta", f"expected an object, got {_type(obj['meta'])}")
    _check_meta(c, "meta", obj.get("meta"))
    message_ids = _check_messages(obj.get("messages"), c, limits)
    _check_probes(obj.get("probes", []), c, limits, message_ids)
    _check_references(obj.get("references", []), c, message_ids)

    return c.issues


def _check_messages(msgs: Any, c: _Collector, limits: Limits) -> set[str] | None:
    """The conversation's message ids, or None when the messages are unusable (so that
    probes are not also reported as pointing nowhere)."""
    ids: set[str] = set()
    if not isinstance(msgs, list):
        c.add("messages", f"expected an array of messages, got {_type(msgs)}")
        return None
    if not msgs:
        c.add("messages", "expected at least one message, got an empty array")
    if len(msgs) > limits.max_messages:
        c.add("messages", f"expected at most {limits.max_messages:,} messages, got {len(msgs):,}")
        return None
    unread: list[tuple[int, str]] = []  # (position, created_at) of times no context can show
    # (a chat export's position differs when empties were left out: the id names its item)
    for i, m in enumerate(msgs):
        f = f"messages[{i}]"
        if isinstance(m, dict) and isinstance(m.get("created_at"), str) and m["created_at"].strip() \
                and not has_surrogate(m["created_at"]) and not _readable_time(m["created_at"]):
            unread.append((i, m["created_at"]))
        if not isinstance(m, dict):
            c.add(f, f"expected an object with role and content, got {_type(m)}")
            continue
        role = m.get("role")
        if role is None:
            c.add(f"{f}.role", f"missing: expected one of {', '.join(ROLES)}")
        elif role not in ROLES:
            c.add(f"{f}.role", f"expected one of {', '.join(ROLES)}, got {role!r}")
        content = m.get("content")
        meta = m.get("meta", {})
        if not isinstance(content, str):
            c.add(f"{f}.content", f"expected a string, got {_type(content)}")
        elif has_surrogate(content):
            c.add(f"{f}.content", _SURROGATE_TEXT)
        elif len(content) > limits.max_message_chars:
            c.add(f"{f}.content", f"expected at most {limits.max_message_chars:,} characters, "
                                  f"got {len(content):,}")
        elif not content.strip() and not (isinstance(meta, dict) and meta.get("tool_calls")):
            c.add(f"{f}.content", "expected non-empty text (only a tool-calling assistant message may be empty)")
        _unique_id(c, f"{f}.id", m.get("id"), ids, "non-empty string id", "ids")
        for key in ("name", "created_at"):
            if m.get(key) is not None and not isinstance(m[key], str):
                c.add(f"{f}.{key}", f"expected a string or null, got {_type(m[key])}")
            elif isinstance(m.get(key), str) and has_surrogate(m[key]):
                c.add(f"{f}.{key}", _SURROGATE_TEXT)
        if not isinstance(meta, dict):
            c.add(f"{f}.meta", f"expected an object, got {_type(meta)}")
        else:
            _check_tool_links(c, f"{f}.meta", meta)
        _check_meta(c, f"{f}.meta", meta)
    if unread:
        i, when = unread[0]
        more = f" (and {len(unread) - 1} more message(s) of this conversation)" if len(unread) > 1 else ""
        mid = msgs[i].get("id")
        named = f" (message id {mid!r})" if isinstance(mid, str) and mid else ""
        c.add(f"messages[{i}].created_at", f"expected an ISO 8601 time such as 2024-03-04T09:00:00Z, got "
              f"{when[:60]!r}{named}{more}: a context shows such a message without its time, so a question about "
              "when it was said cannot be answered from it", "warning")
    return ids


def _readable_time(when: str) -> bool:
    """Whether a context can show `when` as a stamp: the library's own rule
    (`rollsum.context.stamp_day`, which the scorer asks too), so validate warns exactly where the
    stamp would be missing. Why: any text was accepted, and a chat stamped ``03/04/2024 09:00``
    replayed with no times."""
    from rollsum.context import stamp_day

    return stamp_day(when) is not None


def _check_tool_links(c: _Collector, where: str, meta: Mapping[str, Any]) -> None:
    """The canonical tool convention (`rollsum.types`): context assembly pairs a call with its
    result by these ids, so a wrong type would silently unpair them."""
    calls = meta.get("tool_calls")
    if calls is not None and (not isinstance(calls, list)
                              or not all(isinstance(x, str) and x for x in calls)):
        c.add(f"{where}.tool_calls", f"expected a list of tool call id strings, got {_type(calls)} {calls!r}"[:200])
    answers = meta.get("tool_call_id")
    if answers is not None and (not isinstance(answers, str) or not answers):
        c.add(f"{where}.tool_call_id", f"expected a tool call id string, got {_type(answers)} {answers!r}"[:200])


_SURROGATE_TEXT = ("expected text that is valid Unicode, got a lone surrogate (a \\ud800-\\udfff escape that "
                   "is not half of a pair)")


def _check_meta(c: _Collector, where: str, meta: Any) -> None:
    """Free-form metadata: any JSON, but text that can be written out and nesting that can be
    hashed (`rollsum.safejson`)."""
    if isinstance(meta, dict) and meta:
        try:
            check_value(meta)
        except JSONInputError as err:
            c.add(where, f"expected plain JSON: {err.message}")


def _unique_id(c: _Collector, where: str, value: Any, seen: set[str], what: str, plural: str) -> None:
    """A non-empty string not seen before in this conversation (then remembered)."""
    if not isinstance(value, str) or not value:
        c.add(where, f"expected a {what}, got {_type(value)}")
    elif has_surrogate(value):
        c.add(where, _SURROGATE_TEXT)
    elif not value.isprintable():
        c.add(where, f"expected a printable id (no line breaks or control characters), got {value!r}")
    elif value in seen:
        c.add(where, f"expected {plural} unique in the conversation; {value!r} appears twice")
    else:
        seen.add(value)


def _check_probes(probes: Any, c: _Collector, limits: Limits, message_ids: set[str] | None) -> None:
    if not isinstance(probes, list):
        c.add("probes", f"expected an array of probes, got {_type(probes)}")
        return
    if len(probes) > limits.max_probes:
        c.add("probes", f"expected at most {limits.max_probes:,} probes, got {len(probes):,}")
        return
    seen: set[str] = set()
    for i, p in enumerate(probes):
        f = f"probes[{i}]"
        if not isinstance(p, dict):
            c.add(f, f"expected an object with id, question, answer, evidence, category, got {_type(p)}")
            continue
        _unique_id(c, f"{f}.id", p.get("id"), seen, "non-empty string", "probe ids")
        for key in ("question", "answer"):
            v = p.get(key)
            if not isinstance(v, str) or not v.strip():
                c.add(f"{f}.{key}", f"expected a non-empty string, got {_type(v)}")
            elif has_surrogate(v):
                c.add(f"{f}.{key}", _SURROGATE_TEXT)
        cat = p.get("category")
        if cat not in PROBE_CATEGORIES:
            c.add(f"{f}.category", f"expected one of {', '.join(PROBE_CATEGORIES)}, got {cat!r}")
        ev = _message_id_list(c, f"{f}.evidence", p.get("evidence", []), message_ids, first_only=False)
        if ev is not None and not ev:
            c.add(f"{f}.evidence", "expected at least one message id (the probe's age is unknown)", "warning")
        stale = p.get("stale_answers", [])
        if not isinstance(stale, list) or not all(isinstance(s, str) for s in stale):
            c.add(f"{f}.stale_answers", "expected an array of strings")
        if "meta" in p and not isinstance(p["meta"], dict):
            c.add(f"{f}.meta", f"expected an object, got {_type(p['meta'])}")
        elif isinstance(p.get("meta"), dict) and "ask_at" in p["meta"]:
            _check_ask_at(c, f"{f}.meta.ask_at", p["meta"]["ask_at"], len(message_ids or ()))


def _check_ask_at(c: _Collector, where: str, value: Any, n_messages: int) -> None:
    """A probe's own asking turn (`rollsum_evals.data.sidecar`): a message position or "end"."""
    if value == "end":
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < max(n_messages, 1):
        c.add(where, f"expected 'end' or a message position 0-{max(n_messages - 1, 0)}, got {value!r}")


def _message_id_list(c: _Collector, where: str, value: Any, message_ids: set[str] | None, *,
                     first_only: bool) -> list[str] | None:
    """An array of ids of this conversation's messages; each unknown id is reported (or only the
    first). None when it is not an array of strings at all."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        c.add(where, "expected an array of message id strings")
        return None
    for x in value:
        if message_ids is not None and x not in message_ids:
            c.add(where, f"points to message id {x!r}, which is not in this conversation")
            if first_only:
                break
    return value


def _check_references(refs: Any, c: _Collector, message_ids: set[str] | None) -> None:
    if not isinstance(refs, list):
        c.add("references", f"expected an array of references, got {_type(refs)}")
        return
    for i, r in enumerate(refs):
        f = f"references[{i}]"
        if not isinstance(r, dict):
            c.add(f, f"expected an object with id, text, covers, got {_type(r)}")
            continue
        if not isinstance(r.get("id"), str):
            c.add(f"{f}.id", f"expected a string, got {_type(r.get('id'))}")
        if not isinstance(r.get("text"), str) or not r["text"].strip():
            c.add(f"{f}.text", f"expected a non-empty string, got {_type(r.get('text'))}")
        _message_id_list(c, f"{f}.covers", r.get("covers", []), message_ids, first_only=True)


def iter_checked(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS
                 ) -> Iterator[tuple[int, Mapping[str, Any] | None, list[Issue]]]:
    """(line number, record or None, issues) for every non-blank line of a canonical JSONL file."""
    file = os.fspath(path)
    seen: set[str] = set()
    with open(file, "rb") as fh:
        for ln in iter_lines(fh, limits.max_line_bytes):
            if ln.text is None:
                yield ln.number, None, [Issue(file, ln.number, None, "", ln.error or "unreadable line")]
                continue
            if not ln.text.strip():
                continue
            try:
                obj = loads(ln.text)
            except JSONInputError as err:
                yield ln.number, None, [Issue(file, ln.number, None, "", json_problem(err, ln.text, "one JSON "
                                                                                       "object per line"))]
                continue
            issues = check_record(obj, file=file, line=ln.number, limits=limits, seen_ids=seen)
            yield ln.number, obj, issues


def json_problem(err: JSONInputError, text: str, expected: str) -> str:
    """What is wrong with one JSON text, in the words every loader uses."""
    if err.column is None:  # parsed, but not usable: NaN, a lone surrogate, too deep
        return f"{err.message}"
    stripped = text.rstrip()
    truncated = stripped.startswith(("{", "[")) and not stripped.endswith(("}", "]"))
    what = "truncated JSON (the line ends before the object closes)" if truncated else "invalid JSON"
    return f"{what} at column {err.column}: {err.message} (expected {expected})"


def unknown_key(key: str, allowed: Iterable[str], own: str = "") -> str:
    """What was expected instead of a key a file may not have: every allowed key, and the near
    miss when there is one. One wording for every hand-written file that names its keys (a
    sweep spec, `rollsum_evals.spec.parse`; a questions sidecar, `rollsum_evals.data.sidecar`),
    so a typo reads the same wherever it is made. `own`: where data of the user's own goes."""
    names = sorted(allowed)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    said = f"unknown key; did you mean {close[0]!r}?" if close else "unknown key"
    if own:
        said += f" {own[0].upper()}{own[1:]}" if close else f"; {own}"
    return f"one of {', '.join(names)} ({said})"
