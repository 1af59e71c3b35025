import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rollsum_evals.data import reader
from rollsum_evals.data.reader import dataset_hash, iter_lines


def test_lines_are_numbered_and_the_last_line_needs_no_newline() -> None:
    lines = list(iter_lines(io.BytesIO(b"a\r\nb\n\nc")))
    assert [(ln.number, ln.text) for ln in lines] == [(1, "a"), (2, "b"), (3, ""), (4, "c")]


def test_over_long_line_is_reported_and_reading_continues() -> None:
    data = b"short\n" + b"x" * 5000 + b"\nafter\n"
    lines = list(iter_lines(io.BytesIO(data), max_line_bytes=100))
    assert lines[0].text == "short"
    assert lines[1].text is None and "5,000 bytes" in (lines[1].error or "")
    assert lines[2].text == "after"


def test_invalid_utf8_is_reported_for_that_line_only() -> None:
    lines = list(iter_lines(io.BytesIO(b"ok\n\xff\xfe\nok2\n")))
    assert lines[1].text is None and "UTF-8" in (lines[1].error or "")
    assert [lines[0].text, lines[2].text] == ["ok", "ok2"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab\n", max_size=40), max_size=8))
def test_chunk_boundaries_never_change_the_lines(parts: list[str]) -> None:
    data = "".join(parts).encode()
    old = reader.CHUNK_BYTES
    reader.CHUNK_BYTES = 3
    try:
        got = [ln.text for ln in iter_lines(io.BytesIO(data))]
    finally:
        reader.CHUNK_BYTES = old
    expected = data.decode().split("\n")
    if expected and expected[-1] == "":
        expected.pop()
    assert got == expected


def test_dataset_hash_is_sha256_of_the_bytes(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_bytes(b"abc")
    assert dataset_hash(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_dataset_hash_of_a_directory_changes_with_any_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("1")
    before = dataset_hash(tmp_path)
    (tmp_path / "a").write_text("2")
    assert dataset_hash(tmp_path) != before


def test_whole_document_formats_refuse_files_over_the_limit(tmp_path: Path) -> None:
    from rollsum.errors import ConfigError

    f = tmp_path / "big.json"
    f.write_bytes(b"[" + b" " * 100 + b"]")
    with pytest.raises(ConfigError, match="over the limit"):
        reader.read_json_bytes(f, 10)
