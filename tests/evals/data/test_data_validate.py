import json
import shutil
from pathlib import Path

import pytest
from rollsum_evals.cli import main
from rollsum_evals.data import Limits, load, validate

from rollsum.errors import ConfigError

HERE = Path(__file__).parent
MALFORMED = sorted((HERE / "malformed").glob("*.jsonl"))
EXPECTED = {
    "truncated_json.jsonl": "truncated JSON",
    "wrong_types.jsonl": "field messages: expected an array of messages, got string",
    "missing_role.jsonl": "messages[1].role: missing",
    "empty_content.jsonl": "messages[1].content: expected non-empty text",
    "invalid_utf8.jsonl": "invalid UTF-8",
    "duplicate_ids.jsonl": "'m1' appears twice",
    "evidence_nowhere.jsonl": "points to message id 'm9'",
}


def test_the_corpus_covers_every_expected_case() -> None:
    assert {p.name for p in MALFORMED} == set(EXPECTED)


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_each_malformed_file_gets_one_clear_error_naming_file_and_line(path: Path) -> None:
    report = validate(path)
    assert not report.ok
    assert len(report.errors) == 1
    text = str(report.errors[0])
    assert EXPECTED[path.name] in text
    assert text.startswith(f"{path}:1:")


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_cli_validate_exits_2_with_one_error_line_and_no_traceback(path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1


def _record(cid: str, content: str = "hello there") -> str:
    return json.dumps({"id": cid, "messages": [{"id": "m1", "role": "user", "content": content}]})


def test_a_50_mb_message_is_rejected_without_loading_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.jsonl"
    with open(big, "w") as fh:
        fh.write(_record("ok") + "\n")
        fh.write('{"id":"huge","messages":[{"id":"m1","role":"user","content":"')
        chunk = "a" * (1 << 20)
        for _ in range(50):
            fh.write(chunk)
        fh.write('"}]}\n')
    assert main(["data", "validate", str(big)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{big}:2: line is" in err and "over the limit" in err
    assert [c.id for c in load(big)] == ["ok"]


def test_message_over_the_character_limit_is_an_error_when_the_line_fits(tmp_path: Path) -> None:
    f = tmp_path / "long.jsonl"
    f.write_text(_record("c", "a" * 2000) + "\n")
    report = validate(f, limits=Limits(max_message_chars=1000))
    assert "expected at most 1,000 characters" in str(report.errors[0])


def test_a_bad_record_among_many_is_reported_with_its_line_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "many.jsonl"
    lines = [_record(f"c{i}") for i in range(3000)]
    lines[1234] = _record("bad", content="")
    f.write_text("\n".join(lines) + "\n")
    report = validate(f)
    assert [(i.line, i.conversation_id) for i in report.errors] == [(1235, "bad")]
    assert report.valid_records == 2999
    convs = load(f)
    assert len(convs) == 2999 and "bad" not in {c.id for c in convs}
    with pytest.raises(ConfigError, match=":1235:"):
        load(f, strict=True)


def test_strict_validation_turns_warnings_into_errors(tmp_path: Path) -> None:
    f = tmp_path / "warn.jsonl"
    rec = {"id": "c", "messages": [{"id": "m1", "role": "user", "content": "hi"}], "extra": 1}
    f.write_text(json.dumps(rec) + "\n")
    assert validate(f).ok
    assert not validate(f, strict=True).ok


def test_duplicate_conversation_ids_in_a_file_are_errors(tmp_path: Path) -> None:
    f = tmp_path / "dup.jsonl"
    f.write_text(_record("same") + "\n" + _record("same") + "\n")
    report = validate(f)
    assert len(report.errors) == 1 and report.errors[0].line == 2


def test_missing_file_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "validate", str(tmp_path / "nope.jsonl")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_valid_fixture_passes(tmp_path: Path) -> None:
    f = tmp_path / "v.jsonl"
    shutil.copy(HERE / "fixtures" / "valid.jsonl", f)
    assert validate(f).ok


def test_schema_file_accepts_a_canonical_record() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads(files("rollsum_evals.data").joinpath("conversation.schema.json").read_text())
    rec = json.loads((HERE / "fixtures" / "valid.jsonl").read_text().splitlines()[0])
    jsonschema.validate(rec, schema)
    rec["messages"][0]["role"] = "robot"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rec, schema)


def test_a_time_no_context_can_show_is_warned_once_per_conversation(tmp_path: Path) -> None:
    # '2024/03/04 09:00' loads, but the context shows no stamp for it: validate says so, once
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([
        {"role": "user", "content": "", "created_at": "2024-03-04T08:00:00Z"},  # empty: left out
        {"role": "user", "content": "hi", "created_at": "2024-03-04T09:00:00Z"},
        {"role": "assistant", "content": "yo", "created_at": "2024/03/04 09:01"},
        {"role": "user", "content": "ok", "created_at": "yesterday"},
    ]))
    report = validate(chat)
    assert report.ok and not report.errors
    timed = [str(w) for w in report.warnings if "created_at" in str(w)]
    assert timed == [f"{chat}: conversation 'chat' field messages[1].created_at: expected an ISO 8601 time such "
                     "as 2024-03-04T09:00:00Z, got '2024/03/04 09:01' (message id 'chat:2') (and 1 more message(s) "
                     "of this conversation): a context shows such a message without its time, so a question about "
                     "when it was said cannot be answered from it"]
    assert not validate(chat, strict=True).ok
    assert [m.created_at for m in load(chat)[0].messages] == ["2024-03-04T09:00:00Z", "2024/03/04 09:01", "yesterday"]
