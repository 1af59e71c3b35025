"""The questions sidecar: rows resolved against their chat (evidence by index or quoted text,
ask_at), every problem one line naming file, line and field; probes asked at their own turn."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.cli import main
from rollsum_evals.data import load
from rollsum_evals.data.checks import RecordError
from rollsum_evals.data.sidecar import attach, check, read_rows
from rollsum_evals.data.types import Probe
from rollsum_evals.scoring.asks import ProbeTiming, schedule_asks

from rollsum.errors import ConfigError
from rollsum.types import Message

CHAT = [{"role": "user", "content": f"Message number {i}."} for i in range(30)]
CHAT[5] = {"role": "user", "content": "My   locker code is 4417."}
CHAT[6] = {"role": "assistant", "content": ""}  # empty: dropped on load
CHAT[20] = {"role": "user", "content": "What was my LOCKER code again?"}


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(CHAT))
    return f


def _sidecar(tmp_path: Path, rows: list[dict[str, Any]], name: str = "q.jsonl") -> Path:
    f = tmp_path / name
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_evidence_and_ask_at_resolve_to_the_chat(tmp_path: Path, chat: Path) -> None:
    q = _sidecar(tmp_path, [
        {"question": "Locker code?", "answer": "4417", "evidence": 5, "ask_at": 20},
        {"question": "Locker code?", "answer": "4417", "evidence": "my locker CODE is 4417", "ask_at": "+3",
         "id": "quoted"},
        {"question": "Locker code?", "answer": "4417", "evidence": [5, "Message number 9."], "ask_at": "end",
         "category": "number", "meta": {"note": "kept in meta"}},
    ])
    (conv,) = attach(load(chat), q)
    pos = {m.id: i for i, m in enumerate(conv.messages)}
    p1, p2, p3 = conv.probes
    assert [pos[e] for e in p1.evidence] == [5] and p1.meta["ask_at"] == pos["chat:20"]
    assert p2.id == "quoted" and [pos[e] for e in p2.evidence] == [5] and p2.meta["ask_at"] == 5 + 3
    assert [pos[e] for e in p3.evidence] == [5, pos["chat:9"]] and p3.meta["ask_at"] == "end"
    assert p3.category == "number" and p3.meta["note"] == "kept in meta"
    assert p1.id == "chat:q1"  # default ids name the line


@pytest.mark.parametrize(("row", "needle"), [
    ({"question": "Q", "answer": "A", "evidence": 40}, "field evidence: message index 40 is outside the chat"),
    ({"question": "Q", "answer": "A", "evidence": 6}, "field evidence: message 6 is empty"),
    ({"question": "Q", "answer": "A", "evidence": "not in the chat"}, "field evidence: the text 'not in the chat'"),
    ({"question": "Q", "answer": "A", "evidence": 5, "ask_at": 3}, "field ask_at: message 3 comes before the evidence"),
    ({"question": "Q", "answer": "A", "evidence": 25, "ask_at": "+10"}, "field ask_at: '+10' is past the end"),
    ({"question": "Q", "answer": "A", "evidence": 5, "ask_at": "soon"}, "field ask_at: a message index, 'end'"),
    ({"question": "Q", "answer": "A", "ask_at": "+2"}, "field ask_at: '+N' (N messages after the evidence) needs"),
    ({"question": "", "answer": "A", "evidence": 5}, "field question: expected a non-empty string"),
    ({"question": "Q", "answer": "A", "evidence": 5, "askat": 9},
     "field askat: expected one of answer, ask_at, category, conversation, evidence, id, meta, question, "
     "stale_answers (unknown key; did you mean 'ask_at'? Data of your own goes in meta: {...})"),
    # a typo'd key far from any known one was kept in meta without a word: the question then had
    # no evidence (asked only at the end) and validate said ok
    ({"question": "Q", "answer": "A", "evidence": 5, "proof": 9},
     "field proof: expected one of answer, ask_at, category, conversation, evidence, id, meta, question, "
     "stale_answers (unknown key; data of your own goes in meta: {...})"),
    ({"question": "Q", "answer": "A", "evidence": 5, "meta": "mine"},
     "field meta: expected an object of your own data, got a string"),
    ({"question": "Q", "answer": "A", "evidence": 5, "meta": {"ask_at": 2}},
     "field meta.ask_at: expected 'ask_at' beside question and answer, not in meta"),
    ({"question": "Q", "answer": "A", "evidence": 5, "category": "trivia"}, "field category: expected one of"),
    # 5,000 digits: int() refused them with a ValueError traceback
    ({"question": "Q", "answer": "A", "evidence": "9" * 5000},
     "field evidence: message index 999999999999… (5,000 digits) is outside the chat"),
    ({"question": "Q", "answer": "A", "evidence": 5, "ask_at": "9" * 5000},
     "field ask_at: message index 999999999999… (5,000 digits) is outside the chat"),
    ({"question": "Q", "answer": "A", "evidence": 5, "ask_at": "+" + "9" * 5000},
     "field ask_at: '+999999999999999999999999999999999999...' is past the end"),
])
def test_each_mistake_is_one_line_naming_file_line_and_field(
        tmp_path: Path, chat: Path, row: dict[str, Any], needle: str) -> None:
    ok = {"question": "Locker code?", "answer": "4417", "evidence": 5}
    q = _sidecar(tmp_path, [ok, row])
    with pytest.raises(RecordError) as info:
        attach(load(chat), q)
    msg = str(info.value)
    assert msg.startswith(f"{q}:2: conversation 'chat' ") and needle in msg, msg
    assert "\n" not in msg


def test_all_problems_are_listed_and_counted(tmp_path: Path, chat: Path) -> None:
    bad = {"question": "Q", "answer": "A", "evidence": 99}
    q = _sidecar(tmp_path, [bad, bad, bad])
    with pytest.raises(RecordError, match=r"\(and 2 more\)"):
        attach(load(chat), q)
    _, issues = check(load(chat), read_rows(q))
    assert [i.line for i in issues] == [1, 2, 3]


def test_a_missing_evidence_is_a_warning_and_the_question_is_kept(tmp_path: Path, chat: Path) -> None:
    q = _sidecar(tmp_path, [{"question": "Q", "answer": "4417"}])
    convs, issues = check(load(chat), read_rows(q))
    assert [i.severity for i in issues] == ["warning"] and len(convs[0].probes) == 1


def test_csv_sidecar_with_quotes_and_index_lists(tmp_path: Path, chat: Path) -> None:
    q = tmp_path / "q.csv"
    q.write_text('question,answer,evidence,ask_at\n"Code, please?",4417,5;9,+2\nAgain?,4417,locker code is,end\n')
    (conv,) = attach(load(chat), q)
    pos = {m.id: i for i, m in enumerate(conv.messages)}
    assert conv.probes[0].question == "Code, please?"
    assert [pos[e] for e in conv.probes[0].evidence] == [5, pos["chat:9"]]
    assert conv.probes[0].meta["ask_at"] == pos["chat:9"] + 2
    assert conv.probes[1].meta["ask_at"] == "end"
    q.write_text("q,a\nx,y\n")
    with pytest.raises(ConfigError, match=r"q\.csv:1: expected a header row"):
        attach(load(chat), q)
    q.write_text('question,answer\nsplit, text, here,4417\n')
    with pytest.raises(ConfigError, match=r"q\.csv:2: more values than header columns"):
        attach(load(chat), q)


@pytest.mark.parametrize("header", ["question,answer,evidence,answer", "question,answer, answer ,evidence"])
def test_a_csv_header_naming_a_column_twice_is_refused_with_file_line_and_column(
        tmp_path: Path, chat: Path, capsys: pytest.CaptureFixture[str], header: str) -> None:
    # csv.DictReader would keep the last column's value and drop the first without a word
    q = tmp_path / "q.csv"
    q.write_text(f"{header}\nCode?,4417,5,9999\n")
    with pytest.raises(ConfigError, match=r"q\.csv:1: column 'answer' appears twice in the header \(columns 2 and"):
        read_rows(q)
    assert main(["data", "validate", str(chat), "--questions", str(q)]) == 2
    assert "appears twice" in capsys.readouterr().err
    q.write_text("question,answer,evidence,,\nCode?,4417,5,,\n")  # unnamed trailing columns: not names
    assert [r.fields["answer"] for r in read_rows(q)] == ["4417"]


def test_several_conversations_need_a_conversation_column(tmp_path: Path) -> None:
    f = tmp_path / "many.jsonl"
    f.write_text(json.dumps(CHAT[:10]) + "\n" + json.dumps(CHAT[:10]) + "\n")
    convs = load(f)
    q = _sidecar(tmp_path, [{"question": "Q", "answer": "4417", "evidence": 5}])
    with pytest.raises(RecordError, match=r"q\.jsonl:1: field conversation: missing: the chat file holds 2"):
        attach(convs, q)
    q = _sidecar(tmp_path, [{"question": "Q", "answer": "4417", "evidence": 5, "conversation": 1},
                            {"question": "Q", "answer": "4417", "evidence": 5, "conversation": convs[0].id}])
    out = attach(convs, q)
    assert [len(c.probes) for c in out] == [1, 1]
    q = _sidecar(tmp_path, [{"question": "Q", "answer": "4417", "evidence": 5, "conversation": "9" * 5000}])
    with pytest.raises(RecordError, match=r"field conversation: no conversation '9{37}\.\.\.' in the chat"):
        attach(convs, q)  # was int()'s ValueError traceback past 4,300 digits


def test_a_bad_line_is_named(tmp_path: Path, chat: Path) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text('{"question": "Q", "answer": "4417", "evidence": 5}\n{"question": \n')
    with pytest.raises(ConfigError, match=r"q\.jsonl:2: truncated JSON"):
        attach(load(chat), q)


@pytest.mark.parametrize("name, text, what", [
    ("q.jsonl", "", "the file is empty"),
    ("q.jsonl", "\n  \n", "the file is empty"),
    ("q.json", "[]", "an empty array"),
    ("q.csv", "question,answer,evidence\n", "a header row and no question rows"),
])
def test_a_questions_file_without_a_question_is_refused_as_an_empty_chat_is(
        tmp_path: Path, chat: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, what: str) -> None:
    # "0 questions" would validate and then give a run whose retention measures nothing
    q = tmp_path / name
    q.write_text(text)
    with pytest.raises(ConfigError, match=f"{name}: no questions: {what} \\(expected one question object"):
        read_rows(q)
    assert main(["data", "validate", str(chat), "--questions", str(q)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"{q}: no questions" in err


# ----------------------------------------------------------------------------------------------
# asking at the probe's own turn


def _msgs(n: int) -> list[Message]:
    return [Message("user", f"m{i}", id=f"c:{i}") for i in range(n)]


@pytest.mark.parametrize("timing", [ProbeTiming(ask="end"), ProbeTiming(ask="after", after_turns=3),
                                    ProbeTiming(ask="ages", ages=(2, 5), end=True), ProbeTiming()])
def test_a_probe_with_ask_at_is_asked_at_that_turn_only(timing: ProbeTiming) -> None:
    own = Probe("p", "q", "a", evidence=("c:3",), meta={"ask_at": 7})
    at_end = Probe("e", "q", "a", evidence=("c:3",), meta={"ask_at": "end"})
    free = Probe("f", "q", "a", evidence=("c:3",))
    asks = schedule_asks([own, at_end, free], _msgs(20), timing)
    by: dict[str, list[int]] = {}
    for a in asks:
        by.setdefault(a.probe.id, []).append(a.asked_turn)
    assert by["p"] == [7] and by["e"] == [19]
    if timing.ask == "sampled":  # the default: one turn drawn between evidence and end, and the end
        assert len(by["f"]) == 2 and 3 <= by["f"][0] <= 19 and by["f"][-1] == 19
    else:
        assert by["f"] == {"end": [19], "after": [6], "ages": [5, 8, 19]}[timing.ask]
    assert next(a for a in asks if a.probe.id == "p").age_turns == 4


def test_an_ask_at_outside_the_conversation_is_not_asked() -> None:
    p = Probe("p", "q", "a", evidence=("c:3",), meta={"ask_at": 50})
    assert schedule_asks([p], _msgs(20), ProbeTiming()) == []


def test_a_csv_column_no_question_has_is_refused_at_the_header_and_meta_columns_are_kept(
        tmp_path: Path, chat: Path) -> None:
    # a typo'd column was kept in every probe's meta: the questions had no evidence
    q = tmp_path / "q.csv"
    q.write_text("question,answer,evidance\nLocker code?,4417,5\nAgain?,4417,5\n")
    with pytest.raises(ConfigError, match=re.escape(
            f"{q}:1: column 'evidance': expected one of answer, ask_at, category, conversation, evidence, id, "
            "question, stale_answers (unknown key; did you mean 'evidence'? Columns of your own are named "
            "meta.NAME)")):
        read_rows(q)
    q.write_text("question,answer,evidence,meta.source\nLocker code?,4417,5,ticket 12\n")
    (conv,) = attach(load(chat), q)
    assert conv.probes[0].meta == {"source": "ticket 12"}


def test_a_json_array_item_that_is_not_a_question_names_its_index(tmp_path: Path) -> None:
    # (said only the file: which of 400 items was it?)
    q = tmp_path / "q.json"
    q.write_text(json.dumps([{"question": "Q?", "answer": "A", "evidence": 0}, 5]))
    with pytest.raises(ConfigError, match=re.escape(f"{q}: item [1]: expected a question object with question "
                                                    "and answer, got a number")):
        read_rows(q)


def test_a_csv_index_too_long_to_read_is_outside_the_chat(tmp_path: Path, chat: Path) -> None:
    q = tmp_path / "q.csv"
    q.write_text("question,answer,evidence\nLocker code?,4417,5\nQ,A," + "9" * 5000 + "\n")
    with pytest.raises(RecordError, match=r"q\.csv:3: conversation 'chat' field evidence: message index "
                                          r"999999999999… \(5,000 digits\) is outside the chat"):
        attach(load(chat), q)


def test_a_canonical_message_id_with_a_long_number_is_an_id_not_an_index(tmp_path: Path) -> None:
    # 'c:<5,000 digits>' was read as an export index by int(): a ValueError traceback
    data = tmp_path / "c.jsonl"
    data.write_text(json.dumps({"id": "c", "messages": [{"id": "c:" + "9" * 5000, "role": "user",
                                                          "content": "code 4417"}]}) + "\n")
    q = _sidecar(tmp_path, [{"question": "Code?", "answer": "4417", "evidence": 0}])
    (conv,) = attach(load(data), q)
    assert conv.probes[0].evidence == ("c:" + "9" * 5000,)


def test_a_number_that_is_one_conversations_id_and_anothers_position_warns_once(tmp_path: Path) -> None:
    """Ids "1", "2", "3": ``conversation: 1`` is read as the id "1" (the first conversation),
    though an author counting 0-based positions meant the second. Read as the id as before, but
    said once; an unambiguous number and an id written as text say nothing."""
    chats = [{"id": str(k), "messages": [{"role": "user", "content": f"Chat {k} says the code is {k}417."}]}
             for k in (1, 2, 3)]
    f = tmp_path / "chats.json"
    f.write_text(json.dumps(chats))
    convs = load(f, strict=True)
    rows: list[dict[str, Any]] = [{"question": "What is the code?", "answer": "1417", "conversation": 1},
            {"question": "What is the code again?", "answer": "1417", "conversation": 1},
            {"question": "And here?", "answer": "3417", "conversation": 3},
            {"question": "Text id?", "answer": "2417", "conversation": "2"}]
    out, issues = check(convs, read_rows(_sidecar(tmp_path, rows)))
    warnings = [str(i) for i in issues if i.severity == "warning" and "0-based position" in str(i)]
    assert len(warnings) == 1 and "1 is conversation '1''s id and the 0-based position of '2'" in warnings[0]
    assert warnings[0].startswith(f"{tmp_path / 'q.jsonl'}:1:")
    assert [len(c.probes) for c in out] == [2, 1, 1]
