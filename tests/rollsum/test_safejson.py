"""`rollsum.safejson.loads`: what `json.loads` accepts but nothing downstream can use is refused
at the file, with where and what; every ordinary JSON value still reads exactly as before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.safejson import MAX_DEPTH, JSONInputError, check_value, has_surrogate, loads


@pytest.mark.parametrize(("text", "needle"), [
    ('{"v": NaN}', "NaN is not a JSON number"),
    ('[Infinity]', "Infinity is not a JSON number"),
    ('[-Infinity]', "-Infinity is not a JSON number"),
    ('{"v": 1e999}', "the number 1e999 is too large"),
    ('"\\ud800"', "a lone surrogate"),
    ('{"\\udfff": 1}', "a lone surrogate"),
    ('["ok", ["x\\udc00y"]]', "a lone surrogate in 'x\\udc00y'"),
    ('["\udc80"]', "a lone surrogate"),  # not an escape: a str decoded with errors="surrogateescape"
    ('{"\udc80": 1}', "a lone surrogate"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"at most {MAX_DEPTH} levels"),
    ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), "nested too deeply"),
    ('{"n": ' + "9" * 5000 + "}", "an integer of more than 4,300 digits"),  # was the parser's ValueError
])
def test_unusable_json_is_one_error(text: str, needle: str) -> None:
    with pytest.raises(JSONInputError) as err:
        loads(text)
    assert needle in str(err.value)


def test_a_syntax_error_keeps_line_and_column() -> None:
    with pytest.raises(JSONInputError) as err:
        loads('{\n  "a": [1, }')
    assert (err.value.line, err.value.column) == (2, 12)
    assert str(err.value) == "line 2, column 12: Expecting value"


def test_bytes_that_are_not_utf8_say_where() -> None:
    with pytest.raises(JSONInputError, match="invalid UTF-8 at byte 5"):
        loads(b'["caf\xe9"]')
    assert loads(b'\xef\xbb\xbf["bom"]') == ["bom"]


def test_what_is_fine_stays_fine() -> None:
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"  # a surrogate *pair* is one character
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(deepest) == json.loads(deepest)
    assert loads("1e308") == 1e308
    assert not has_surrogate("plain") and has_surrogate("a\ud800")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]),
                                                                      max_size=5), kids, max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(value=JSON, ascii_only=st.booleans())
def test_any_ordinary_json_reads_back_unchanged(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-8")) == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(value=JSON, depth=st.integers(min_value=1, max_value=2 * MAX_DEPTH))
def test_depth_is_refused_exactly_past_the_limit(value: Any, depth: int) -> None:
    wrapped: Any = value
    for _ in range(depth):
        wrapped = [wrapped]
    text = json.dumps(wrapped)
    if depth + _depth(value) > MAX_DEPTH:
        with pytest.raises(JSONInputError, match="nested too deeply"):
            loads(text)
    else:
        assert loads(text) == json.loads(text)
        check_value(json.loads(text))


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0
