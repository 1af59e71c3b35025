"""Where in a spec file a field is: ``file:line`` for every error message (tomllib keeps no
positions), shared by the parser and the checks it calls."""

from __future__ import annotations

import re
from typing import Any

from rollsum.errors import ConfigError

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
"""A TOML table header, ``[a.b]`` or ``[[a]]``, and the dotted name it opens."""


class Where:
    """Turns a field path into ``file:line`` for error messages (tomllib keeps no positions)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, occurrence: int = 0) -> int | None:
        pat = re.compile(rf"^\s*(\[\[?\s*)?[\w.\-\"]*\b{re.escape(key)}\b")
        seen = 0
        for i, line in enumerate(self.lines, 1):
            if pat.match(line):
                if seen == occurrence:
                    return i
                seen += 1
        return None

    def line_of_path(self, path: list[str]) -> int | None:
        """The line where the dotted key `path` is written: under the longest table header that
        is a prefix of it (``[tune.params.since-last]`` for ``tune.params.since-last.keep_last``),
        the line setting its next part; that header when the key is written inline or not at all;
        None without such a header."""
        best: tuple[int, int] | None = None  # (parts matched, header's index)
        for i, text in enumerate(self.lines):
            m = _HEADER.match(text)
            if m is None:
                continue
            parts = [p.strip().strip('"') for p in m.group(1).split(".")]
            if parts == path[:len(parts)] and (best is None or len(parts) > best[0]):
                best = (len(parts), i)
        if best is None:
            return None
        n, start = best
        if n < len(path):
            key = re.compile(rf'^\s*"?{re.escape(path[n])}"?\s*=')
            for j in range(start + 1, len(self.lines)):
                if _HEADER.match(self.lines[j]):
                    break
                if key.match(self.lines[j]):
                    return j + 1
        return start + 1

    def line_in_table(self, table: str, i: int, key: str) -> int | None:
        """The line of `key` inside the `i`-th ``[[table]]`` (its header up to the next header
        that is not one of its own sub-tables); None when the tables are not one header each or
        the key is not written there. Why: counting a key's occurrences over the whole file put a
        config's ``models`` or an unknown key at the top-level ``models`` line, or at no line."""
        header = re.compile(rf"^\s*\[\[\s*{re.escape(table)}\s*\]\]")
        starts = [n for n, text in enumerate(self.lines) if header.match(text)]
        if i >= len(starts):
            return None
        own = re.compile(rf"^\s*\[\[?\s*{re.escape(table)}\s*\.")
        pat = re.compile(rf"^\s*(\[\[?\s*)?[\w.\-\"]*\b{re.escape(key)}\b")
        for n in range(starts[i] + 1, len(self.lines)):
            text = self.lines[n]
            if text.lstrip().startswith("[") and not own.match(text):
                return None
            if pat.match(text):
                return n + 1
        return None

    def location(self, key: str, occurrence: int = 0, fieldname: str = "") -> str:
        table = re.match(r"^(\w+)\[(\d+)\]\.", fieldname)
        line = self.line_in_table(table[1], int(table[2]), key) if table else None
        line = line or self.line_of(key, occurrence)
        return f"{self.path}:{line}" if line else self.path

    def error(self, fieldname: str, expected: str, got: Any = None, *, key: str | None = None,
              occurrence: int = 0) -> ConfigError:
        loc = self.location(key or fieldname.rsplit(".", 1)[-1].split("[")[0], occurrence, fieldname)
        got_s = "" if got is None else f", got {got!r}"
        return ConfigError(f"{loc}: field '{fieldname}': expected {expected}{got_s}")

