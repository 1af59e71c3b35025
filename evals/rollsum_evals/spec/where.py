"""Where in a spec file a field is: ``file:line`` for every error message (tomllib keeps no
positions), shared by the parser and the checks it calls."""

from __future__ import annotations

import re
from typing import Any

from rollsum.errors import ConfigError


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

    def location(self, key: str, occurrence: int = 0) -> str:
        line = self.line_of(key, occurrence)
        return f"{self.path}:{line}" if line else self.path

    def error(self, fieldname: str, expected: str, got: Any = None, *, key: str | None = None,
              occurrence: int = 0) -> ConfigError:
        loc = self.location(key or fieldname.rsplit(".", 1)[-1].split("[")[0], occurrence)
        got_s = "" if got is None else f", got {got!r}"
        return ConfigError(f"{loc}: field '{fieldname}': expected {expected}{got_s}")

