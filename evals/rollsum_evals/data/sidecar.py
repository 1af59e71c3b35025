"""Questions about a chat, kept beside it: the probe sidecar (``questions.jsonl`` or ``.csv``).

A chat export carries no probes, and a person attaching questions to one should not have to
learn message ids. So a row names its evidence the way a person would: a message *index* (the
position in the export's message array, from 0), or a piece of text copied from the chat. When
it is asked is just as plain: ``ask_at`` = a message index (the context right after that
message: what the main model would have seen answering it), ``end``, or ``+N`` (N messages after
the evidence). Rows are checked against the chat they belong to, and every problem names file,
line, field and what was expected. The same rows may sit in a chat export's ``probes`` array.

Format (docs/datasets.md has examples)::

    {"question": "What is the locker code?", "answer": "4417", "evidence": 12, "ask_at": "+40"}
    question,answer,evidence,ask_at
    What is the locker code?,4417,My locker code is 4417,end

Fields: ``question``, ``answer`` (required); ``evidence`` (an index, text, a message id, or a
list of them; CSV: ``;``-separated indices); ``ask_at``; ``id``; ``category`` (default
``fact``); ``conversation`` (id or 0-based position, needed when the chat file holds several);
``stale_answers`` (list; CSV: ``;``-separated); ``meta`` (an object of your own, kept in the
probe's ``meta``; CSV: ``meta.NAME`` columns). Any other key is an error naming file, line and
the keys allowed (`checks.unknown_key`, the sweep spec's wording): a typo (``evidance``) kept as
metadata would silently make a question without evidence.

Over ~400 lines because every check of a person-written questions file (JSONL and CSV, evidence
by index or by quoted text, the ask_at forms) names its file, line and field; the checks are the
module's job and splitting them from the reader would split one error path in two.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rollsum.errors import ConfigError
from rollsum.safejson import JSONInputError, loads
from rollsum_evals.data.checks import Issue, RecordError, Severity, json_problem, unknown_key
from rollsum_evals.data.exports import SYSTEM_SUFFIX, describe, message_index
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, iter_lines, read_json_bytes
from rollsum_evals.data.types import PROBE_CATEGORIES, Conversation, Probe

FIELDS: tuple[str, ...] = ("question", "answer", "evidence", "ask_at", "id", "category", "conversation",
                           "stale_answers")
META_FIELD = "meta"
"""A row's own data (an object), kept in the probe's meta; in a CSV, ``meta.NAME`` columns."""
KEYS: tuple[str, ...] = (*FIELDS, META_FIELD)
"""Every key a question row may have."""
ASK_AT_END = "end"
META_KEY = "ask_at"
"""`Probe.meta` key of a resolved ``ask_at``: a message position in the conversation, or "end"."""
_AGE = re.compile(r"^\+\s*(\d+)$")
MAX_INDEX_DIGITS = 18
"""Longest message index read as a number (no chat has 10**18 messages; ``int()`` refuses past
`sys.get_int_max_str_digits`): a longer one is reported as outside the chat."""


def _index_value(text: str) -> int | str:
    """A CSV cell's index: an int, or the digits themselves when too long to be one."""
    digits = text.strip()
    return int(digits) if len(digits) <= MAX_INDEX_DIGITS else digits


@dataclass(frozen=True, slots=True)
class Row:
    """One question as written: its file, line and fields."""

    file: str
    line: int | None
    fields: Mapping[str, Any]
    field_prefix: str = ""
    """``probes[3].`` for rows embedded in a chat export (their line is the record's)."""


# ----------------------------------------------------------------------------------------------
# reading


def read_rows(path: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS) -> list[Row]:
    """Rows of a ``.jsonl``, ``.json`` (an array) or ``.csv`` file; unreadable ones are a
    ConfigError naming the file and line. A file without a single question is refused too, as an
    empty conversations file is: it is a mistake (the wrong file, an export cut short), and
    taken as "0 questions" it would validate, then give a run whose retention measures nothing."""
    rows = _read_rows(path, limits)
    if not rows:
        file = os.fspath(path)
        ext = os.path.splitext(file)[1].lower()
        what = {".csv": "a header row and no question rows", ".json": "an empty array"}.get(ext, "the file is empty")
        raise ConfigError(f"{file}: no questions: {what} (expected one question object per line, "
                          '{"question": ..., "answer": ..., "evidence": ...}; or a .json array of them, or a '
                          ".csv with a header row and one question per row)")
    return rows


def _read_rows(path: str | os.PathLike[str], limits: Limits) -> list[Row]:
    file = os.fspath(path)
    if not os.path.isfile(file):
        found = "is a directory" if os.path.isdir(file) else "questions file not found"
        raise ConfigError(f"{file}: {found} (expected a .jsonl, .json or .csv file of questions)")
    ext = os.path.splitext(file)[1].lower()
    if ext == ".csv":
        return _csv_rows(file, limits)
    if ext == ".json":
        try:
            data = loads(read_json_bytes(file, limits.max_json_bytes))
        except JSONInputError as err:
            where = f"{file}:{err.line}: invalid JSON at column {err.column}" if err.line is not None else file
            raise ConfigError(f"{where}: {err.message} (expected an array of question objects)") from None
        if not isinstance(data, list):
            raise ConfigError(f"{file}: expected an array of question objects, got {describe(data)}")
        return [_object_row(file, None, item, f"[{k}].") for k, item in enumerate(data)]
    rows = []
    with open(file, "rb") as fh:
        for ln in iter_lines(fh, limits.max_line_bytes):
            if ln.text is None:
                raise ConfigError(f"{file}:{ln.number}: {ln.error}")
            if not ln.text.strip():
                continue
            try:
                obj = loads(ln.text.removeprefix("\ufeff"))
            except JSONInputError as err:
                raise ConfigError(f"{file}:{ln.number}: {json_problem(err, ln.text, 'one question object per line')}") \
                    from None
            rows.append(_object_row(file, ln.number, obj, ""))
    return rows


def _object_row(file: str, line: int | None, obj: Any, prefix: str) -> Row:
    if not isinstance(obj, dict):
        where = f"{file}:{line}" if line else f"{file}: item {prefix.rstrip('.')}"
        raise ConfigError(f"{where}: expected a question object with question and answer, got {describe(obj)}")
    return Row(file, line, obj, prefix if line is None else "")


def _csv_rows(file: str, limits: Limits) -> list[Row]:
    data = read_json_bytes(file, limits.max_json_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise ConfigError(f"{file}:{line}: invalid UTF-8 at byte {err.start} (expected a UTF-8 CSV file)") from None
    try:
        return _csv_records(file, text)
    except csv.Error as err:  # a NUL byte, a field over the csv module's size limit, ...
        raise ConfigError(f"{file}: not a readable CSV file: {err} (expected a header row and one question "
                          "per row)") from None


def _csv_records(file: str, text: str) -> list[Row]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "question" not in reader.fieldnames:
        raise ConfigError(f"{file}:1: expected a header row naming the columns (question, answer, "
                          f"evidence, ask_at, ...), got {', '.join(reader.fieldnames or []) or 'nothing'}")
    # DictReader keeps the last of two same-named columns and drops the other without a word;
    # names are compared as the rows use them (stripped); unnamed columns (trailing commas) are not
    # names, they are allowed to repeat
    seen: dict[str, int] = {}
    for col, name in enumerate(reader.fieldnames, 1):
        key = name.strip()
        if key and key in seen:
            raise ConfigError(f"{file}:{reader.line_num}: column {key!r} appears twice in the header (columns "
                              f"{seen[key]} and {col}; expected each column once)")
        seen.setdefault(key, col)
        if key and key not in FIELDS and not (key.startswith(f"{META_FIELD}.") and key[len(META_FIELD) + 1:]):
            raise ConfigError(f"{file}:{reader.line_num}: column {key!r}: expected "
                              f"{unknown_key(key, FIELDS, 'columns of your own are named meta.NAME')}")
    rows = []
    for rec in reader:
        fields: dict[str, Any] = {k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in rec.items()
                                  if k is not None and v not in (None, "")}
        if None in rec:
            raise ConfigError(f"{file}:{reader.line_num}: more values than header columns "
                              "(quote text that contains commas)")
        for key in ("evidence", "stale_answers"):
            if isinstance(fields.get(key), str) and key == "stale_answers":
                fields[key] = [s.strip() for s in fields[key].split(";") if s.strip()]
            elif isinstance(fields.get(key), str) and re.fullmatch(r"\d+(\s*;\s*\d+)*", fields[key]):
                fields[key] = [_index_value(s) for s in fields[key].split(";")]
        own = {k[len(META_FIELD) + 1:]: fields.pop(k) for k in list(fields) if k.startswith(f"{META_FIELD}.")}
        if own:
            fields[META_FIELD] = own
        if fields:
            rows.append(Row(file, reader.line_num, fields))
    return rows


# ----------------------------------------------------------------------------------------------
# resolving against the chat


@dataclass(slots=True)
class _Problems:
    issues: list[Issue]

    def add(self, row: Row, cid: str | None, fld: str, expected: str, severity: Severity = "error") -> None:
        self.issues.append(Issue(row.file, row.line, cid, row.field_prefix + fld, expected, severity))


def positions_by_index(conv: Conversation) -> dict[int, list[int]]:
    """Export index -> positions in `conv.messages`. Chat exports keep the index in the id
    (`rollsum_evals.data.exports`); anything else (canonical files) counts positions."""
    parsed: dict[int, list[int]] = {}
    for pos, m in enumerate(conv.messages):
        n = message_index(m.id, conv.id)
        if n is None:
            if m.id == f"{conv.id}:{SYSTEM_SUFFIX}":
                continue
            return {pos: [pos] for pos in range(len(conv.messages))}
        parsed.setdefault(n, []).append(pos)
    return parsed


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


class _Chat:
    """One conversation as a sidecar row sees it."""

    def __init__(self, conv: Conversation, aliases: Mapping[str, str] | None = None) -> None:
        self.conv = conv
        self.by_index = positions_by_index(conv)
        self.by_id = {m.id: i for i, m in enumerate(conv.messages) if m.id}
        for alias, mid in (aliases or {}).items():  # an export's own message ids
            if mid in self.by_id:
                self.by_id.setdefault(alias, self.by_id[mid])
        self.normed = [_norm(m.content) for m in conv.messages]
        self.last_index = max(self.by_index, default=-1)

    def index(self, n: int | str) -> list[int] | str:
        """The positions message index `n` (an int, or a run of digits) stands for, or what was
        expected. Digits past `MAX_INDEX_DIGITS` are outside any chat (and past what ``int()``
        converts: a 5,000-digit index was a ValueError traceback)."""
        if isinstance(n, str):
            digits = n.strip()
            if len(digits) > MAX_INDEX_DIGITS:
                return (f"message index {digits[:12]}… ({len(digits):,} digits) is outside the chat (messages "
                        f"0-{self.last_index}; indices count from 0)")
            n = int(digits)
        if n in self.by_index:
            return self.by_index[n]
        if n < 0 or n > self.last_index:
            return (f"message index {n} is outside the chat (messages 0-{self.last_index}; indices count "
                    "from 0)")
        return f"message {n} is empty (no text or tool call), so it was not loaded"

    def evidence(self, value: Any) -> list[int] | str:
        items = value if isinstance(value, list) else [value]
        if not items:
            return "expected a message index, text from the chat, or a list of them; got an empty list"
        out: set[int] = set()
        for item in items:
            if isinstance(item, bool) or not isinstance(item, int | str):
                return f"expected a message index or text from the chat, got {describe(item)}"
            if isinstance(item, str) and item in self.by_id:
                out.add(self.by_id[item])
                continue
            if isinstance(item, int) or item.strip().isdigit():
                found = self.index(item)
                if isinstance(found, str):
                    return found
                out.update(found)
                continue
            quote = _norm(item)
            if not quote:
                return "expected a message index or text from the chat, got an empty string"
            hits = [i for i, text in enumerate(self.normed) if quote in text]
            if not hits:
                short = item if len(item) <= 60 else item[:57] + "..."
                return (f"the text {short!r} appears in no message of this chat (evidence is a message "
                        "index, or text copied from the message that holds the answer)")
            out.update(hits)
        return sorted(out)

    def ask_at(self, value: Any, evidence: Sequence[int]) -> int | str | tuple[str]:
        """A position, ``"end"``, or a 1-tuple holding what was expected (an error)."""
        if isinstance(value, str) and value.strip().lower() == ASK_AT_END:
            return ASK_AT_END
        age = _AGE.match(value.strip()) if isinstance(value, str) else None
        last = len(self.conv.messages) - 1
        if age is not None:
            if not evidence:
                return (f"'+N' (N messages after the evidence) needs evidence; got {value!r} without it",)
            pos = max(evidence) + (int(age.group(1)) if len(age.group(1)) <= MAX_INDEX_DIGITS else last + 1)
            if pos > last:
                return (f"{value if len(value) <= 40 else value[:37] + '...'!r} is past the end of the chat "
                        f"(evidence at message {self._label(max(evidence))}, "
                        f"{last - max(evidence)} message(s) after it)",)
            return pos
        numeric = isinstance(value, str) and value.strip().isdigit()
        if (isinstance(value, int) and not isinstance(value, bool)) or numeric:
            found = self.index(value)
            if isinstance(found, str):
                return (found,)
            pos = max(found)
            if evidence and pos < max(evidence):
                return (f"message {int(value)} comes before the evidence (message {self._label(max(evidence))}): "
                        "the answer is not in the chat yet there",)
            return pos
        return (f"a message index, 'end' or '+N' (N messages after the evidence), got {value!r}",)

    def _label(self, pos: int) -> int:
        """The export index of a position (what the user wrote)."""
        return next((n for n, ps in self.by_index.items() if pos in ps), pos)


def resolve(conv: Conversation, rows: Iterable[Row], aliases: Mapping[str, str] | None = None
            ) -> tuple[list[Probe], list[Issue]]:
    """The probes `rows` describe for `conv`, and every problem found (errors and warnings).
    `aliases`: other names of message ids (an export's own ids), for evidence given by id."""
    chat = _Chat(conv, aliases)
    problems = _Problems([])
    probes: list[Probe] = []
    seen: set[str] = {p.id for p in conv.probes}
    for row in rows:
        probe = _probe(chat, row, problems, seen)
        if probe is not None:
            probes.append(probe)
    return probes, problems.issues


def _probe(chat: _Chat, row: Row, problems: _Problems, seen: set[str]) -> Probe | None:
    cid = chat.conv.id
    f = row.fields
    errors = len([i for i in problems.issues if i.severity == "error"])
    for key in f:
        if key not in KEYS:
            problems.add(row, cid, key, f"expected {unknown_key(key, KEYS, 'data of your own goes in meta: {...}')}")
    text: dict[str, str] = {}
    for key in ("question", "answer"):
        v = f.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and key == "answer":
            v = str(v)
        if not isinstance(v, str) or not v.strip():
            problems.add(row, cid, key, f"expected a non-empty string, got {describe(v)}")
        else:
            text[key] = v.strip()
    category = f.get("category", "fact")
    if category not in PROBE_CATEGORIES:
        problems.add(row, cid, "category", f"expected one of {', '.join(PROBE_CATEGORIES)}, got {category!r}")
    evidence: list[int] = []
    if f.get("evidence") not in (None, "", []):
        found = chat.evidence(f["evidence"])
        if isinstance(found, str):
            problems.add(row, cid, "evidence", found)
        else:
            evidence = found
    else:
        problems.add(row, cid, "evidence", "missing: without evidence a question has no age and is asked only "
                     "at the end (give a message index or text from the chat)", "warning")
    own = f.get(META_FIELD, {})
    if not isinstance(own, dict):
        problems.add(row, cid, META_FIELD, f"expected an object of your own data, got {describe(own)}")
        own = {}
    elif META_KEY in own:  # it would stand for a resolved position, unchecked
        problems.add(row, cid, f"{META_FIELD}.{META_KEY}", f"expected {META_KEY!r} beside question and answer, "
                     "not in meta (it is checked against the chat there)")
    meta: dict[str, Any] = dict(own)
    if f.get("ask_at") not in (None, ""):
        at = chat.ask_at(f["ask_at"], evidence)
        if isinstance(at, tuple):
            problems.add(row, cid, "ask_at", at[0])
        else:
            meta[META_KEY] = at
    stale = f.get("stale_answers", [])
    if not isinstance(stale, list) or not all(isinstance(s, str) for s in stale):
        problems.add(row, cid, "stale_answers", f"expected a list of strings, got {describe(stale)}")
        stale = []
    pid = f.get("id")
    if pid is None:
        pid = f"{cid}:q{row.line}" if row.line is not None else f"{cid}:q{len(seen)}"
    if not isinstance(pid, str | int) or isinstance(pid, bool) or not str(pid):
        problems.add(row, cid, "id", f"expected a non-empty string, got {describe(pid)}")
    elif str(pid) in seen:
        problems.add(row, cid, "id", f"expected question ids unique in the conversation; {str(pid)!r} appears twice")
    if len([i for i in problems.issues if i.severity == "error"]) > errors:
        return None
    seen.add(str(pid))
    return Probe(id=str(pid), question=text["question"], answer=text["answer"],
                 evidence=tuple(str(chat.conv.messages[i].id) for i in evidence), category=str(category),
                 stale_answers=tuple(stale), meta=meta)


def _conversation_of(row: Row, convs: Sequence[Conversation]) -> Conversation | str:
    want = row.fields.get("conversation")
    if want is None:
        if len(convs) == 1:
            return convs[0]
        ids = ", ".join(c.id for c in convs[:5]) + (", ..." if len(convs) > 5 else "")
        return (f"missing: the chat file holds {len(convs)} conversations, so each question names one "
                f"by id or 0-based position ({ids})")
    for c in convs:
        if c.id == str(want):
            return c
    if (isinstance(want, int) and not isinstance(want, bool)) or (
            isinstance(want, str) and want.isdigit() and len(want) <= MAX_INDEX_DIGITS):
        k = int(want)
        if 0 <= k < len(convs):
            return convs[k]
    shown = want if not isinstance(want, str) or len(want) <= 40 else want[:37] + "..."
    return f"no conversation {shown!r} in the chat file (it holds {', '.join(c.id for c in convs[:5])}...)"


def _position_also(want: Any, conv: Conversation, convs: Sequence[Conversation]) -> Conversation | None:
    """Another conversation `want` also names by its 0-based position, when `want` was taken as
    `conv`'s id (ids "1", "2", "3": a question's ``conversation: 1`` is "1", or the second one);
    None when it is not ambiguous. A number is what an author who counts positions writes."""
    if not (isinstance(want, int) and not isinstance(want, bool)) or str(want) != conv.id:
        return None
    return convs[want] if 0 <= want < len(convs) and convs[want] is not conv else None


def check(convs: Sequence[Conversation], rows: Sequence[Row]) -> tuple[list[Conversation], list[Issue]]:
    """`convs` with the rows' probes added (only rows without errors), and every problem."""
    issues: list[Issue] = []
    grouped: dict[str, list[Row]] = {}
    warned: set[str] = set()
    for row in rows:
        conv = _conversation_of(row, convs)
        if isinstance(conv, str):
            issues.append(Issue(row.file, row.line, None, row.field_prefix + "conversation", conv))
            continue
        other = _position_also(row.fields.get("conversation"), conv, convs)
        if other is not None and other.id not in warned:
            warned.add(other.id)
            issues.append(Issue(row.file, row.line, None, row.field_prefix + "conversation",
                                f"{row.fields.get('conversation')!r} is conversation {conv.id!r}'s id and the "
                                f"0-based position of {other.id!r}: read as the id (write the id as text to "
                                "silence this; every such question goes to that conversation)", "warning"))
        grouped.setdefault(conv.id, []).append(row)
    out = []
    for conv in convs:
        probes, found = resolve(conv, grouped.get(conv.id, []))
        issues.extend(found)
        out.append(replace(conv, probes=conv.probes + tuple(probes)) if probes else conv)
    return out, issues


def attach(convs: Sequence[Conversation], path: str | os.PathLike[str], *,
           limits: Limits = DEFAULT_LIMITS) -> list[Conversation]:
    """`convs` with the questions of `path` as probes. Any error is a `RecordError` (its message
    is the first problem and how many more there are): a run must not silently lose questions."""
    out, issues = check(convs, read_rows(path, limits=limits))
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        raise RecordError(errors)
    return out


def embedded(conv: Conversation, items: Any, *, file: str, line: int | None, key: str,
             aliases: Mapping[str, str] | None = None) -> Conversation:
    """A chat export's own ``probes`` (or ``questions``) array, read by the sidecar's rules."""
    if not isinstance(items, list):
        raise RecordError([Issue(file, line, conv.id, key, f"expected an array of questions, got {describe(items)}")])
    rows = []
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError([Issue(file, line, conv.id, f"{key}[{k}]",
                                     f"expected a question object with question and answer, got {describe(item)}")])
        rows.append(Row(file, line, item, f"{key}[{k}]."))
    probes, issues = resolve(conv, rows, aliases)
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        raise RecordError(errors)
    return replace(conv, probes=conv.probes + tuple(probes))


# ----------------------------------------------------------------------------------------------
# writing (`rollsum data convert` to a format that has no place for probes)


def rows_for(conv: Conversation, positions: Mapping[str, int], *, name_conversation: bool) -> list[dict[str, Any]]:
    """Sidecar rows for a conversation's probes, indices counted in the exported array."""
    out = []
    for p in conv.probes:
        row: dict[str, Any] = {"id": p.id, "question": p.question, "answer": p.answer}
        if name_conversation:
            row["conversation"] = conv.id
        ev = sorted({positions[e] for e in p.evidence if e in positions})
        if ev:
            row["evidence"] = ev[0] if len(ev) == 1 else ev
        at = p.meta.get(META_KEY)
        if isinstance(at, int) and 0 <= at < len(conv.messages) and str(conv.messages[at].id) in positions:
            row["ask_at"] = positions[str(conv.messages[at].id)]
        elif at == ASK_AT_END:
            row["ask_at"] = ASK_AT_END
        if p.category != "fact":
            row["category"] = p.category
        if p.stale_answers:
            row["stale_answers"] = list(p.stale_answers)
        own = {k: v for k, v in p.meta.items() if k != META_KEY}
        if own:  # read back by the same rules (META_FIELD), so the probe comes back whole
            row[META_FIELD] = own
        out.append(row)
    return out
