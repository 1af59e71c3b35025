"""JSON from files a user gave us (datasets, questions, cassettes, run files): parsed so that
whatever is in them ends as one `JSONInputError` saying where and what, never a crash later.

`json.loads` alone accepts things that blow up far from the file: ``NaN`` and ``1e999`` (not
JSON; a NaN answer became the probe answer "nan"), an integer of 5,000 digits (a ValueError
traceback from the parser), a lone surrogate ``"\\ud800"`` (valid JSON
escape, but not text: it passed validation and crashed a run when the conversation was hashed
as UTF-8), and nesting a hundred thousand levels deep (`RecursionError` inside the parser, or
later inside `json.dumps` when a record is hashed from a deeper stack). `loads` refuses all of
them at the file, with the line and column when the parser knows them.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted. Real records nest a handful of levels (a
conversation, its messages, a message's content blocks, their metadata); the limit only has to
stay well below what the interpreter's recursion allows wherever a record is later dumped."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONInputError(ValueError):
    """What is wrong with a JSON text, and where (1-based line and column, when known)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line is not None and self.column is not None \
            else f"column {self.column}: " if self.column is not None else ""
        return where + self.message


def _constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a JSON number (expected a finite number)")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JSONInputError(f"the number {text[:40]} is too large (expected a finite number)")
    return value


def past_digit_limit(err: ValueError) -> bool:
    """`err` is the interpreter refusing an integer of more digits than ``int()`` converts
    (`sys.get_int_max_str_digits`), which JSON and TOML parsers let through as a ValueError."""
    return "integer string conversion" in str(err)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON value; anything `json.loads` would accept but we cannot use is refused."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise JSONInputError(f"invalid UTF-8 at byte {err.start} (expected UTF-8 text)") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as err:
        raise JSONInputError(err.msg, err.lineno, err.colno) from None
    except RecursionError:
        raise JSONInputError(f"nested too deeply (expected at most {max_depth} levels of arrays and objects)") \
            from None
    except ValueError as err:  # an integer of more digits than int() converts (sys.get_int_max_str_digits)
        if not past_digit_limit(err):
            raise
        raise JSONInputError(f"an integer of more than {sys.get_int_max_str_digits():,} digits (expected a number "
                             "Python can read)") from None
    # a lone surrogate arrives as an escape, or already in a str a caller decoded leniently
    # (``errors="surrogateescape"``); text with neither cannot hold one, and skips the walk's string checks
    surrogates = _SURROGATE_ESCAPE.search(text) is not None or has_surrogate(text)
    check_value(value, max_depth=max_depth, surrogates=surrogates)
    return value


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, surrogates: bool = True) -> None:
    """Refuse a parsed value nested deeper than `max_depth`, or (with `surrogates`) holding a
    string or key with a lone surrogate. Iterative: a deep value cannot overflow the stack here."""
    if isinstance(value, str):
        _check_text(value)
        return
    if not isinstance(value, dict | list):
        return
    containers = (dict, list)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise JSONInputError(f"nested too deeply (expected at most {max_depth} levels of arrays and objects)")
        if isinstance(item, dict):
            if surrogates:
                for k in item:
                    _check_text(k)
            children = item.values()
        else:
            children = item
        for v in children:
            if type(v) in containers:
                stack.append((v, depth + 1))
            elif surrogates and type(v) is str:
                _check_text(v)


def _check_text(text: str) -> None:
    if has_surrogate(text):
        raise JSONInputError(f"a lone surrogate in {_excerpt(text)} (expected text that is valid Unicode: "
                             "a \\ud800-\\udfff escape must be half of a pair)")


def has_surrogate(text: str) -> bool:
    """Whether a string holds a lone surrogate (cannot be written as UTF-8)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def _excerpt(text: str) -> str:
    m = _SURROGATE.search(text)
    start = max(0, (m.start() if m else 0) - 20)
    return repr(text[start:start + 40]).encode("ascii", "backslashreplace").decode("ascii")
