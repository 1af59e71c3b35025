from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import (
    ToolSummary,
    format_tool_summary,
    summarize_dropped,
    summarize_tool_result,
    tools,
)
from rollsum.types import Message


def tool(name: str, text: str, **meta: object) -> Message:
    return Message("tool", text, name=name, meta=meta)


def test_read_file_with_metadata_seed_002() -> None:
    m = tool("read_file", "export function hello() {}\nexport const world = 42;\nimport { foo } from 'bar';")
    s = summarize_tool_result(m)
    assert s.tool_name == "read_file" and s.status == "success"
    assert any(f.startswith("Lines:") for f in s.key_facts) and s.metadata["hasExports"] is True


def test_read_file_one_line_form() -> None:
    content = "\n".join(["export function hello() {}", "export const world = 1;"] + ["//"] * 118)
    line = format_tool_summary(summarize_tool_result(tool("read_file", content, path="src/app.ts")))
    assert line == "[✓ read_file: File: src/app.ts | Lines: 120 | Type: typescript | Exports: hello, world]"


def test_read_python_file_lists_definitions() -> None:
    s = summarize_tool_result(tool("read_file", "import os\n\ndef main():\n    pass\nclass Bot:\n  x=1", path="a.py"))
    assert "Type: python" in s.key_facts and "Defines: main, Bot" in s.key_facts


def test_bash_with_error_detection_seed_002() -> None:
    s = summarize_tool_result(tool("execute_bash", "npm test\nError: Module not found\nexit code: 1"))
    assert s.status == "error" and any(f.startswith("Error:") for f in s.key_facts)


def test_bash_one_line_form_from_meta() -> None:
    m = tool("execute_bash", "npm test\nError: Module not found\nexit code: 1", command="npm test")
    assert format_tool_summary(summarize_tool_result(m)) == (
        "[❌ execute_bash: Command: npm test | Exit: 1 | Output: 3 lines | Error: Error: Module not found]")


def test_bash_success_and_meta_exit_code_win() -> None:
    ok = summarize_tool_result(tool("execute_bash", "10 passed, 0 failed", command="pytest", exit_code=0))
    assert ok.status == "success" and "Exit: 0" in ok.key_facts
    bad = summarize_tool_result(tool("execute_bash", "done", command="make", exit_code=2))
    assert bad.status == "error" and "Exit: 2" in bad.key_facts


def test_bash_command_from_prompt_line_and_long_command_cut() -> None:
    s = summarize_tool_result(tool("execute_bash", "$ ls -la\ntotal 0"))
    assert "Command: ls -la" in s.key_facts
    long = summarize_tool_result(tool("execute_bash", "", command="x" * 100))
    assert long.key_facts[0] == "Command: " + "x" * 57 + "..."


def test_search_counts_matches_and_files() -> None:
    out = "src/a.py:3:foo()\nsrc/a.py:9:foo(1)\nsrc/b.py:1:import foo"
    for name in ("search_files", "grep"):
        line = format_tool_summary(summarize_tool_result(tool(name, out, pattern="foo")))
        assert line == f'[✓ {name}: Pattern: "foo" | Matches: 3 | Files: 2 | Top files: src/a.py, src/b.py]'
    none = summarize_tool_result(tool("grep", "No matches found", pattern="zzz"))
    assert none.status == "partial" and "Matches: 0" in none.key_facts


def test_create_and_edit_file() -> None:
    c = summarize_tool_result(tool("create_file", "Created", path="docs/x.md", content="a\nb"))
    assert c.key_facts == ("File: docs/x.md", "Action: created", "Lines: 2") and c.status == "success"
    e = summarize_tool_result(tool("edit_file", "--- a\n+++ b\n-old\n+new\n+more", path="x.py"))
    assert "Changes: +2 -1" in e.key_facts and "Action: edited" in e.key_facts
    err = summarize_tool_result(tool("edit_file", "Error: file not found", path="y.py"))
    assert err.status == "error"


def test_unknown_tool_gets_a_generic_line() -> None:
    s = summarize_tool_result(tool("weather", "Sunny, 21C\nwind 3 km/h"))
    assert format_tool_summary(s) == "[✓ weather: Sunny, 21C | Output: 2 lines]"


def test_format_is_concise_seed_002() -> None:
    ts = ToolSummary("read_file", "success", ("File: /app.ts", "Lines: 100"), {})
    assert format_tool_summary(ts) == "[✓ read_file: File: /app.ts | Lines: 100]"


def test_summarize_dropped_has_header_and_one_line_each() -> None:
    out = summarize_dropped([tool("read_file", "x", path="a.ts"), tool("execute_bash", "ok", command="ls")])
    lines = out.split("\n")
    assert lines[0] == "--- Summarized Context (2 items) ---" and len(lines) == 3
    assert lines[1].startswith("[✓ read_file: File: a.ts") and lines[2].startswith("[✓ execute_bash:")


def test_settings_files_list_their_values() -> None:
    content = ('"""Settings for the service."""\n\nretries = 12\nrequest_timeout = 6432  # ms\n'
               'region = "eu-west-1"\ndebug = False\n\ndef helper():\n    local = 5\n')
    line = format_tool_summary(summarize_tool_result(tool("read_file", content, path="config/payments.py")))
    assert line == ('[✓ read_file: File: config/payments.py | Lines: 10 | Type: python | Defines: helper | '
                    'Sets: retries = 12, request_timeout = 6432, region = "eu-west-1", debug = False]')
    toml = summarize_tool_result(tool("read_file", "[server]\nport = 8080\nhost = \"0.0.0.0\"\n", path="app.toml"))
    assert 'Sets: port = 8080, host = "0.0.0.0"' in toml.key_facts
    ts = summarize_tool_result(tool("read_file", "export const limit = 5;\nconst x = 1;", path="a.ts"))
    assert not any(f.startswith("Sets:") for f in ts.key_facts)  # code in other languages: exports only


def test_line_number_gutters_are_ignored_when_reading_structure() -> None:
    numbered = "\n".join(f"{n:>4}  {line}" for n, line in enumerate(
        ["import os", "", "def load_config(path):", "    return path", "TIMEOUT = 30"], 1))
    s = summarize_tool_result(tool("read_file", numbered, path="src/config.py"))
    assert "Defines: load_config" in s.key_facts and "Sets: TIMEOUT = 30" in s.key_facts
    assert "Lines: 5" in s.key_facts
    arrows = "1→def main():\n2→    pass"
    assert "Defines: main" in summarize_tool_result(tool("read_file", arrows, path="m.py")).key_facts


_LINE_START_DEFINITIONS = [
    # each `_line_start` pattern as it was written with a multi-line ^ (the definition it must equal)
    (tools._JS_IMPORT_RE, re.compile(r"^\s*import\s+.*?from\s+['\"][^'\"]+['\"]|^\s*import\s+['\"][^'\"]+['\"]", re.M)),
    (tools._PY_DEF_RE, re.compile(r"^(?:async\s+)?(?:def|class)\s+(\w+)", re.M)),
    (tools._PY_IMPORT_RE, re.compile(r"^(?:from\s+\S+\s+)?import\s+\S", re.M)),
    (tools._DIFF_ADD_RE, re.compile(r"^\+(?!\+\+)", re.M)),
    (tools._DIFF_DEL_RE, re.compile(r"^-(?!--)", re.M)),
    (tools._GUTTER_RE, re.compile(r"^ *\d+(?:\t| {2,}|→|: | \| ?)", re.M)),
    (tools._SETTING_RE, re.compile(
        r"^([A-Za-z_][\w.\-]*)\s*(?:=|:)\s*(-?\d[\d_.,]*|\"[^\"\n]{0,40}\"|'[^'\n]{0,40}'|true|false|True|False|"
        r"None|null)\s*(?:#.*)?$", re.M)),
]
_LINES = st.lists(st.sampled_from([
    "\n", "\n", " ", "  ", "\t", "\r", "import ", "from ", "m", "'m'", '"', "def ", "class ", "async ", "f", "+",
    "++", "-", "--", "3", "12", "→", ": ", " | ", "|", "=", " = ", "true", "#c", "a_b", ".", "x:",
    # settings, and what follows a setting's value (`_SETTING_RE` gives nothing back)
    "TIMEOUT = 30", "x.y-z: 1_000,5", "-4.", "'v'", '"v"', "None", "null", " # c", "\n\n", " \n", "1 x",
]), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(_LINES)
def test_line_start_patterns_find_what_a_multi_line_caret_finds(text: str) -> None:
    """Searched in "\\n" + text, each pattern finds the same matches (groups and places, one
    character later for the break in front) as its ^ definition in the text itself."""
    for fast, definition in _LINE_START_DEFINITIONS:
        found = [(m.start(), m.end() - 1, m.groups()) for m in fast.finditer("\n" + text)]
        assert found == [(m.start(), m.end(), m.groups()) for m in definition.finditer(text)], fast.pattern
    gutter = _LINE_START_DEFINITIONS[5][1]
    stripped, n = gutter.subn("", text)
    assert tools._strip_gutter(text) == (stripped if n >= 0.9 * (text.count("\n") + 1) else text)


def test_the_first_line_of_a_result_counts_like_any_other() -> None:
    """The fast patterns need a line break before every line, the first included."""
    py = summarize_tool_result(tool("read_file", "import os\ndef first():\n    pass\nlimit = 3", path="a.py"))
    assert "Defines: first" in py.key_facts and "Imports: 1 modules" in py.key_facts
    assert "Sets: limit = 3" in py.key_facts
    ts = summarize_tool_result(tool("read_file", "import { a } from 'b'\nexport const c = 1", path="x.ts"))
    assert "Imports: 1 modules" in ts.key_facts
    gutter = summarize_tool_result(tool("read_file", "1\tdef first():\n2\t    pass", path="a.py"))
    assert "Defines: first" in gutter.key_facts
    edit = summarize_tool_result(tool("edit_file", "+added\n-removed\n context", path="a.py"))
    assert "Changes: +1 -1" in edit.key_facts


def _error_line_definition(content: str) -> str | None:
    """The first line the case-insensitive pattern finds an error word in (and no "0 failed")."""
    for line in content.splitlines():
        if tools._ERROR_LINE_RE.search(line) and not tools._NOT_AN_ERROR_RE.search(line):
            return line.strip()
    return None


def test_error_words_pre_check_knows_every_character_the_pattern_takes_for_a_letter() -> None:
    # `_error_line` rules a text out when its lowercase holds none of the words and it holds
    # none of the extras: that is exact only if every character the case-insensitive pattern
    # takes for a letter of a word lowers to that letter or is an extra
    assert tools._ERROR_LINE_RE.pattern == "|".join(tools._ERROR_WORDS)
    letters = sorted(set("".join(tools._ERROR_WORDS)))
    any_letter = re.compile(f"[{''.join(letters)}]", re.I)
    for cp in range(0x110000):
        ch = chr(cp)
        if any_letter.fullmatch(ch) and ch.lower() not in letters:
            assert ch in tools._ERROR_CASE_EXTRAS, hex(cp)


_OUTPUT = st.lists(st.sampled_from([
    "error", "ERROR", "Error:", "failed", "FAILED", "0 failed", "no errors", "exception", "Exception",
    "TRACEBACK", "fatal", "exceptİon", "faıled", "KELVİN", "ok", " ", "\n", "\r\n", "x", "é", "E", "rror",
    "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "İ",
]), max_size=20).map("".join)


@settings(max_examples=400, deadline=None)
@given(_OUTPUT)
def test_error_line_is_the_first_line_the_pattern_finds(text: str) -> None:
    assert tools._error_line(text) == _error_line_definition(text)


def test_error_line_in_ascii_text_is_found_in_the_whole_lowercased_text() -> None:
    # an ASCII text with "\n" line breaks alone is searched whole: a line the "0 failed" rule
    # excuses is passed over for the next one; any other line break, or a character whose
    # lowercase is longer (which moves every place after it), takes the line-by-line loop
    for text in ("ok\n3 passed, 0 failed\nbuild ERROR here\nmore", "no errors\nall 0 failed\nfine",
                 "ok\rerror in one\nrest", "a\x0berror\nb", "a\x0cerror", "a\x1cFATAL\x1dx\x1e",
                 "İİİİİİ\nerror\nok fine\nmore", "Traceback (most recent call last):", "\n\n  fatal: x  \n"):
        assert tools._error_line(text) == _error_line_definition(text), text


def test_error_line_with_a_dotted_or_dotless_i() -> None:
    # "İ" lowers to "i" and a combining dot, "ı" stays itself: neither leaves "exception" or
    # "failed" in the lowercased text, and the pattern still finds them
    for text in ("ok\nExceptİon raised", "ok\nbuild faıled", "ok\nall good"):
        assert tools._error_line(text) == _error_line_definition(text)
    assert tools._error_line("ok\nbuild faıled") == "build faıled"


_TOOL_LABEL_DEFINITION = re.compile(r"^(?:File|Command|Pattern|Top files|Exports|Defines|Error|Changes|Sets|Action): ")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["File: ", "Top files: ", "Error: ", "Action: ", "Lines: ", "Exit: 0",
                                          "Exit: 1", "File:", "Files: ", "src/a.py", ": ", "x", " ", "Error: e: f"]),
                         max_size=4).map("".join), max_size=5).map(" | ".join))
def test_tool_features_drop_each_facts_label_as_the_label_pattern_does(line_body: str) -> None:
    """`tool_features` drops a fact's label by a prefix test and its first ": " (no regex):
    the same facts as the label pattern's substitution gives."""
    from rollsum.summarizers import salience
    from rollsum.summarizers.extractive import _TOOL_TRIVIA, tool_features

    parts = [p for p in line_body.split(" | ") if not p.startswith(_TOOL_TRIVIA)]
    expected = salience.features(" ; ".join(_TOOL_LABEL_DEFINITION.sub("", p) for p in parts))
    assert tool_features(line_body) == expected
