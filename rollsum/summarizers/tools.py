"""Rule-based one-line summaries of tool results (seed 002's compact form).

Tool output is the bulk of a coding agent's context and mostly re-derivable (the file is still
on disk), but the *fact* that a file was read, a command failed, or a search hit three files is
what the agent needs to keep working. Each extractor keeps those facts in one line:

    [✓ read_file: File: src/app.ts | Lines: 120 | Type: typescript | Exports: hello, world]
    [❌ execute_bash: Command: npm test | Exit: 1 | Output: 3 lines | Error: Error: Module not found]
    [✓ read_file: File: config/app.toml | Lines: 9 | Type: toml | Sets: timeout = 30, region = "eu-west-1"]

Beyond the seed: a line-number gutter (``cat -n``, agent read tools) is ignored when reading a
file's structure, and a settings file's top-level literal values are listed (``Sets:``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rollsum.types import Message

Status = Literal["success", "error", "partial"]


@dataclass(frozen=True, slots=True)
class ToolSummary:
    tool_name: str
    status: Status
    key_facts: tuple[str, ...]
    metadata: Mapping[str, str | int | bool | None] = field(default_factory=dict)


_FILE_TYPES = {
    "ts": "typescript", "tsx": "typescript", "js": "javascript", "jsx": "javascript",
    "mjs": "javascript", "cjs": "javascript", "py": "python", "pyi": "python", "md": "markdown",
    "json": "json", "jsonl": "json", "toml": "toml", "yaml": "yaml", "yml": "yaml", "go": "go",
    "rs": "rust", "swift": "swift", "java": "java", "kt": "kotlin", "c": "c", "h": "c",
    "cpp": "cpp", "cc": "cpp", "hpp": "cpp", "rb": "ruby", "php": "php", "sh": "shell",
    "sql": "sql", "html": "html", "css": "css", "txt": "text", "csv": "csv", "ini": "toml", "cfg": "toml",
    "env": "shell",
}


def _line_start(pattern: str, flags: int = 0) -> re.Pattern[str]:
    r"""`pattern` at the start of a line, to be searched in ``"\n" + text``: it finds there what
    ``^pattern`` (multi-line) finds in `text`, at half the cost or less. A multi-line ``^`` is
    tried at every character of a file; a pattern that starts with a literal lets the regex
    engine skip straight to the line breaks. The same matches: every line start, the first
    included, follows a line break; and no match of these patterns ends on a line break it
    would take from the next line (each ends on a character that is not one, or where ``$``
    stops before one)."""
    return re.compile(r"\n(?:" + pattern + ")", flags)


_JS_EXPORT_RE = re.compile(
    r"export\s+(?:default\s+)?(?:async\s+)?(?:const|let|var|function\*?|class|interface|type|enum)\s+(\w+)")
_JS_IMPORT_RE = _line_start(r"\s*import\s+.*?from\s+['\"][^'\"]+['\"]|\s*import\s+['\"][^'\"]+['\"]")
_PY_DEF_RE = _line_start(r"(?:async\s+)?(?:def|class)\s+(\w+)")
_PY_IMPORT_RE = _line_start(r"(?:from\s+\S+\s+)?import\s+\S")
_ERROR_WORDS = ("error", "failed", "exception", "traceback", "fatal")
"""What marks a tool-output line as an error (`_ERROR_LINE_RE`, and `_error_line`'s substring
pre-check: one list for both)."""
_ERROR_LINE_RE = re.compile("|".join(_ERROR_WORDS), re.I)
_NOT_AN_ERROR_RE = re.compile(r"\b0\s+(?:failed|errors?|failures?)\b|\bno errors?\b", re.I)
_EXIT_RE = re.compile(r"\bexit(?:ed)?(?:\s+with)?(?:\s+(?:code|status))?\s*[:=]?\s*(-?\d+)", re.I)
_PROMPT_LINE_RE = re.compile(r"^\$\s+(.+)$", re.M)
_READ_FAILED_RE = re.compile(r"^\s*(?:error|no such file|permission denied|enoent)", re.I)
_MATCH_LINE_RE = re.compile(r"^([^\s:][^:\n]*?):(?:\d+[:\-]|\s)")
_PATH_ONLY_RE = re.compile(r"^[\w./\\\-]+\.\w+$")
_DIFF_ADD_RE = _line_start(r"\+(?!\+\+)")
_DIFF_DEL_RE = _line_start(r"-(?!--)")
_NO_MATCH_RE = re.compile(r"^\s*(?:no matches|no results|0 matches)", re.I)
# a line-number gutter as `cat -n` and agent read tools print it: "   3  code", "3\tcode", "3→code"
_GUTTER_RE = _line_start(r" *\d+(?:\t| {2,}|→|: | \| ?)")
# a top-level setting: NAME = literal / key: literal (number, quoted string, bool). The
# possessive quantifiers (`*+`) give nothing back, and giving back could never help: each is
# followed by what it cannot take (a name's characters by blanks, "=" or ":"; blanks by "=",
# ":" or a value's first character; a number's by a blank, "#" or the line's end), so the
# matches are those of the plain `*`, without the backtracking at every line that is not a
# setting (`def f(x):`, `import y`), which was two thirds of the pattern's cost
_SETTING_RE = _line_start(
    r"([A-Za-z_][\w.\-]*+)\s*+[=:]\s*+(-?\d[\d_.,]*+|\"[^\"\n]{0,40}\"|'[^'\n]{0,40}'|true|false|True|False|"
    r"None|null)\s*(?:#.*)?$", re.M)  # (re.M for the `$`)
_SETTING_TYPES = ("python", "toml", "yaml", "text", "unknown", "shell")
MAX_SETTINGS = 5


def _meta_str(m: Message, *keys: str) -> str | None:
    for k in keys:
        v = m.meta.get(k)
        if v is not None and str(v):
            return str(v)
    return None


def _line_count(content: str) -> int:
    return content.count("\n") + 1 if content else 0


def _cut(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 3] + "..."


_ERROR_CASE_EXTRAS = ("\u0130", "\u0131")
"""The characters `_ERROR_LINE_RE` (case-insensitive) takes for a letter of its words whose
lowercase is not that letter: "İ" and "ı" for "i" (a test checks every code point)."""


_ERROR_WORD_RE = re.compile("|".join(_ERROR_WORDS))
"""`_ERROR_LINE_RE` without its case flag, for lowercased ASCII text (`_error_line`)."""
_OTHER_LINE_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
"""The ASCII characters besides "\n" that `str.splitlines` breaks a line at."""


def _error_line(content: str) -> str | None:
    # a case-insensitive pattern has no literal prefix, so the regex engine tries a match at
    # every character of every line; a line can only match when the lowercased text holds one
    # of the words (each matched character lowers to its letter) or one of the extras, and
    # five plain substring scans rule most outputs out at a fraction of the cost
    low = content.lower()
    if not any(w in low for w in _ERROR_WORDS) and not any(c in content for c in _ERROR_CASE_EXTRAS):
        return None
    if content.isascii() and not any(c in content for c in _OTHER_LINE_BREAKS):
        # ASCII: lowering keeps every character in its place and is exactly what the case
        # flag matches (the extras are not ASCII), and lines end at "\n" alone; so the words
        # are found in the whole lowercased text, case-sensitively (the regex engine scans for
        # their first letters), and each find's line is judged, in order, as the loop would
        find = _ERROR_WORD_RE.search
        m = find(low)
        while m is not None:
            at = m.start()
            end = content.find("\n", at)
            if end < 0:
                end = len(content)
            line = content[content.rfind("\n", 0, at) + 1:end]
            if not _NOT_AN_ERROR_RE.search(line):
                return line.strip()
            m = find(low, end)
        return None
    for line in content.splitlines():
        if _ERROR_LINE_RE.search(line) and not _NOT_AN_ERROR_RE.search(line):
            return line.strip()
    return None


def _strip_gutter(content: str) -> str:
    """`content` without a line-number gutter, when (nearly) every line has one."""
    lines = content.count("\n") + 1
    stripped, gutters = _GUTTER_RE.subn("\n", "\n" + content)  # one pass: counts what it removes
    return stripped[1:] if lines and gutters >= 0.9 * lines else content


def file_type(path: str) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _FILE_TYPES.get(ext, "unknown")


def _read_file(m: Message) -> ToolSummary:
    raw = m.content
    content = _strip_gutter(raw)
    path = _meta_str(m, "path", "file_path", "filename") or "unknown"
    lines = _line_count(raw)
    ftype = file_type(path)
    facts = [f"File: {path}", f"Lines: {lines}", f"Type: {ftype}"]
    if _READ_FAILED_RE.match(content):
        facts.append(f"Error: {_cut(content.splitlines()[0], 100)}")
        return ToolSummary("read_file", "error", tuple(facts), {"path": path, "lines": lines})
    lines_of = "\n" + content  # `_line_start` patterns
    if ftype in ("typescript", "javascript", "unknown"):
        exports = _JS_EXPORT_RE.findall(content)[:5]
        if exports:
            facts.append(f"Exports: {', '.join(exports)}")
        imports = len(_JS_IMPORT_RE.findall(lines_of))
        if imports:
            facts.append(f"Imports: {imports} modules")
    elif ftype == "python":
        defs = _PY_DEF_RE.findall(lines_of)[:5]
        if defs:
            facts.append(f"Defines: {', '.join(defs)}")
        imports = len(_PY_IMPORT_RE.findall(lines_of))
        if imports:
            facts.append(f"Imports: {imports} modules")
    if ftype in _SETTING_TYPES:
        # the values a settings file holds are the facts an agent comes back for
        settings = [f"{k} = {v}" for k, v in _SETTING_RE.findall(lines_of)[:MAX_SETTINGS]]
        if settings:
            facts.append(f"Sets: {', '.join(settings)}")
    return ToolSummary("read_file", "success", tuple(facts), {
        "path": path, "lines": lines,
        "hasExports": "export " in content, "hasImports": "import " in content,
    })


def _bash(m: Message) -> ToolSummary:
    content = m.content
    command = _meta_str(m, "command", "cmd")
    if command is None:
        pm = _PROMPT_LINE_RE.search(content)
        command = pm.group(1) if pm else "unknown"
    exit_code: int | None = None
    raw_exit = m.meta.get("exit_code", m.meta.get("exitCode"))
    if raw_exit is not None:
        try:
            exit_code = int(raw_exit)
        except (TypeError, ValueError):
            exit_code = None
    if exit_code is None:
        em = _EXIT_RE.search(content)
        if em:
            exit_code = int(em.group(1))
    err = _error_line(content)
    out_lines = _line_count(content)
    facts = [f"Command: {_cut(command, 60)}", f"Exit: {'?' if exit_code is None else exit_code}",
             f"Output: {out_lines} lines"]
    if err:
        facts.append(f"Error: {_cut(err, 100)}")
    failed = (exit_code is not None and exit_code != 0) or err is not None
    return ToolSummary("execute_bash", "error" if failed else "success", tuple(facts), {
        "command": command, "exitCode": exit_code, "outputLines": out_lines, "hasError": err is not None,
    })


def _search(m: Message) -> ToolSummary:
    content = m.content
    pattern = _meta_str(m, "pattern", "query", "regex") or "unknown"
    files: dict[str, None] = {}
    matches = 0
    if not _NO_MATCH_RE.match(content):
        for line in content.splitlines():
            hit = _MATCH_LINE_RE.match(line)
            if hit:
                matches += 1
                files.setdefault(hit.group(1).strip(), None)
            elif _PATH_ONLY_RE.match(line.strip()):
                matches += 1
                files.setdefault(line.strip(), None)
    names = list(files)
    facts = [f'Pattern: "{_cut(pattern, 60)}"', f"Matches: {matches}", f"Files: {len(names)}"]
    if names:
        facts.append(f"Top files: {', '.join(names[:3])}")
    return ToolSummary(m.name or "search_files", "success" if matches else "partial", tuple(facts), {
        "pattern": pattern, "matchCount": matches, "fileCount": len(names),
    })


def _write(action: str) -> Callable[[Message], ToolSummary]:
    def extract(m: Message) -> ToolSummary:
        content = m.content
        path = _meta_str(m, "path", "file_path", "filename") or "unknown"
        facts = [f"File: {path}", f"Action: {action}"]
        written = m.meta.get("content")
        if isinstance(written, str):
            facts.append(f"Lines: {_line_count(written)}")
        lines_of = "\n" + content  # `_line_start` patterns
        added, removed = len(_DIFF_ADD_RE.findall(lines_of)), len(_DIFF_DEL_RE.findall(lines_of))
        if added or removed:
            facts.append(f"Changes: +{added} -{removed}")
        err = _error_line(content)
        if err:
            facts.append(f"Error: {_cut(err, 100)}")
        tool = m.name or ("create_file" if action == "created" else "edit_file")
        return ToolSummary(tool, "error" if err else "success", tuple(facts), {"path": path, "action": action})
    return extract


def _default(m: Message) -> ToolSummary:
    content = m.content
    first = next((ln for ln in content.splitlines() if ln.strip()), "")
    facts = [_cut(first, 100)] if first else ["(empty)"]
    lines = _line_count(content)
    if lines > 1:
        facts.append(f"Output: {lines} lines")
    err = _error_line(content) if m.role == "tool" else None
    return ToolSummary(m.name or m.role, "error" if err else "success", tuple(facts), {"lines": lines})


EXTRACTORS: Mapping[str, Callable[[Message], ToolSummary]] = {
    "read_file": _read_file,
    "execute_bash": _bash,
    "bash": _bash,
    "search_files": _search,
    "grep": _search,
    "create_file": _write("created"),
    "write_file": _write("created"),
    "edit_file": _write("edited"),
}


def summarize_tool_result(message: Message) -> ToolSummary:
    """The key facts of one tool result; unknown tools get a generic first-line summary."""
    extractor = EXTRACTORS.get(message.name or "", _default)
    return extractor(message)


def format_tool_summary(summary: ToolSummary) -> str:
    status = "❌" if summary.status == "error" else "✓"
    return f"[{status} {summary.tool_name}: {' | '.join(summary.key_facts)}]"


def summarize_dropped(messages: Sequence[Message]) -> str:
    """Seed 002's block for messages dropped to fit the budget: a header plus one line each."""
    lines = [format_tool_summary(summarize_tool_result(m)) for m in messages]
    return f"--- Summarized Context ({len(messages)} items) ---\n" + "\n".join(lines)
