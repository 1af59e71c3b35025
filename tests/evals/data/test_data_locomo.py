import json
from pathlib import Path

import pytest
from rollsum_evals.data import guess_format, load, validate
from rollsum_evals.data.locomo import UNANSWERABLE, parse_session_date
from rollsum_evals.data.types import Conversation

from rollsum.errors import ConfigError

TINY = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
REAL = Path(__file__).resolve().parents[4] / "shared" / "datasets" / "locomo" / "locomo-dev.json"


@pytest.fixture(scope="module")
def tiny() -> Conversation:
    (conv,) = load(TINY)
    return conv


def test_format_is_guessed() -> None:
    assert guess_format(str(TINY)) == "locomo"


def test_turns_become_messages_with_dia_ids_and_roles_by_first_speaker(tiny: Conversation) -> None:
    assert [m.id for m in tiny.messages] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [m.role for m in tiny.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert tiny.messages[1].name == "Ben"


def test_session_date_is_kept(tiny: Conversation) -> None:
    m = tiny.messages[3]
    assert m.meta["session_date"] == "10:15 am on 9 March, 2022"
    assert m.created_at == "2022-03-09T10:15:00"
    assert parse_session_date("not a date") is None


def test_a_session_date_of_another_shape_is_said_not_dropped_in_silence(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # '8 May 2023 at 1:56pm' left the session's turns without created_at and nobody said so
    import logging

    sample = json.loads(TINY.read_text())
    sample = sample[0] if isinstance(sample, list) else sample
    sample["conversation"]["session_1_date_time"] = "8 May 2023 at 1:56pm"
    path = tmp_path / "odd.json"
    path.write_text(json.dumps([sample]))
    with caplog.at_level(logging.WARNING, logger="rollsum_evals.data.locomo"):
        (conv,) = load(path)
    assert conv.messages[0].created_at is None and conv.messages[3].created_at == "2022-03-09T10:15:00"
    said = [r.getMessage() for r in caplog.records if "session_1_date_time" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"{path}: sample 0 (") and "'8 May 2023 at 1:56pm'" in said[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rollsum_evals.data.locomo"):
        load(TINY)
    assert not [r for r in caplog.records if "date_time" in r.getMessage()]


def test_an_empty_turn_is_left_out_and_said_as_a_chat_exports_is(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # a turn with no text and no photo refused the whole conversation ("expected non-empty
    # text"), while a chat export drops its empty messages with a warning
    import logging

    sample = json.loads(TINY.read_text())
    sample = sample[0] if isinstance(sample, list) else sample
    sample["conversation"]["session_1"][2]["text"] = "  "
    sample["conversation"]["session_1"][2].pop("blip_caption", None)
    path = tmp_path / "empty.json"
    path.write_text(json.dumps([sample]))
    with caplog.at_level(logging.WARNING, logger="rollsum_evals.data.locomo"):
        (conv,) = load(path, strict=True)
    assert [m.id for m in conv.messages] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    said = [r.getMessage() for r in caplog.records if "empty turn" in r.getMessage()]
    assert len(said) == 1 and "1 empty turn(s) (no text, no photo) left out: D1:3" in said[0]


def test_image_captions_become_text(tiny: Conversation) -> None:
    assert tiny.messages[1].content.endswith("[shares a photo: a photo of a canal with boats]")


def test_qa_becomes_probes_with_named_categories(tiny: Conversation) -> None:
    cats = [(p.category, p.meta["locomo_category"]) for p in tiny.probes]
    assert cats == [("single-hop", 4), ("temporal", 2), ("adversarial", 5), ("multi-hop", 1), ("open-domain", 3)]
    assert tiny.probes[1].answer == "2021"  # numbers become strings


def test_joined_and_padded_evidence_is_normalised(tiny: Conversation) -> None:
    assert tiny.probes[1].evidence == ("D1:3", "D2:1")
    assert tiny.probes[2].evidence == ("D2:2",)
    assert tiny.probes[3].evidence == ("D1:2",)
    assert tiny.probes[3].meta["unresolved_evidence"] == ["D2:9"]


def test_adversarial_without_answer_keeps_the_trap_in_meta(tiny: Conversation) -> None:
    p = tiny.probes[2]
    assert p.answer == UNANSWERABLE
    assert p.meta["adversarial_answer"] == "chess"


def test_session_summaries_become_references_covering_their_session(tiny: Conversation) -> None:
    assert [(r.id, r.covers) for r in tiny.references] == [
        ("tiny-1:session_1", ("D1:1", "D1:2", "D1:3")), ("tiny-1:session_2", ("D2:1", "D2:2"))]


def test_broken_sample_is_a_config_error_in_strict_mode(tmp_path: Path) -> None:
    data = json.loads(TINY.read_text())
    data[0]["qa"][0]["category"] = 9
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"qa\[0\].category"):
        load(f, "locomo", strict=True)
    assert load(f, "locomo") == []
    assert not validate(f).ok


def test_a_wrong_shape_is_named_in_json_words_not_python_types(tmp_path: Path) -> None:
    # "expected dict, got NoneType" for a chat export read as LoCoMo
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    with pytest.raises(ConfigError, match=r"field conversation: expected an object, got nothing \(the key is"):
        load(chat, "locomo", strict=True)
    data = json.loads(TINY.read_text())
    data[0]["qa"] = {"q": 1}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"field qa: expected an array, got an object with keys q"):
        load(bad, "locomo", strict=True)


def test_a_session_number_too_long_to_read_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # int() refuses past 4,300 digits: the loader raised its ValueError
    data = json.loads(TINY.read_text())
    data[0]["session_summary"] = {"session_" + "9" * 5000 + "_summary": "x"}  # no such session: left out
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(data))
    assert len(load(ok, "locomo", strict=True)) == 1
    conv = data[0]["conversation"]
    conv["session_" + "9" * 5000] = conv.pop("session_2")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"field conversation\.session_9+\.\.\.: expected a session number of "
                                          r"at most 18 digits, got 5,000"):
        load(bad, "locomo", strict=True)


def test_truncated_locomo_file_is_one_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "cut.json"
    f.write_text(TINY.read_text()[:300])
    report = validate(f)
    assert len(report.errors) == 1 and "invalid JSON" in str(report.errors[0])


@pytest.mark.locomo
@pytest.mark.skipif(not REAL.exists(), reason=f"LoCoMo dev file not present at {REAL}")
def test_real_locomo_dev_file_shape() -> None:
    convs = load(REAL)
    assert len(convs) == 3
    assert sum(len(c.messages) for c in convs) == 1297
    assert sum(len(c.probes) for c in convs) == 500
    assert all(c.references for c in convs)
    assert validate(REAL).ok
