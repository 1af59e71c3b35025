"""Chat exports people have (OpenAI, Anthropic, ShareGPT; JSON or JSONL; one conversation or
many) load as canonical conversations; a file's shape is decided once; conversions round-trip."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.cli import main
from rollsum_evals.data import guess_format, load, validate
from rollsum_evals.data.checks import RecordError
from rollsum_evals.data.convert import write_export
from rollsum_evals.data.sidecar import attach

from rollsum.errors import ConfigError

CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My locker code is 4417."},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}]
OTHER = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]


def _jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


SHAPES = {
    "array.json": (json.dumps(CHAT, indent=2), [3]),
    "lines.jsonl": (_jsonl(CHAT), [3]),
    "arrays.json": (json.dumps([CHAT, OTHER]), [3, 2]),
    "arrays.jsonl": (_jsonl([CHAT, OTHER]), [3, 2]),
    "object.json": (json.dumps({"messages": CHAT}, indent=2), [3]),
    "objects.jsonl": (_jsonl([{"messages": CHAT}, {"id": "b", "messages": OTHER}]), [3, 2]),
    "objects.json": (json.dumps([{"messages": CHAT}, {"messages": OTHER}]), [3, 2]),
    "sharegpt.json": (json.dumps([{"conversations": [{"from": "human", "value": "Hi"},
                                                     {"from": "gpt", "value": "Hello"}]}]), [2]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_export_shape_loads_without_a_format(tmp_path: Path, name: str) -> None:
    text, sizes = SHAPES[name]
    f = tmp_path / name
    f.write_text(text)
    assert guess_format(str(f)) == "chat"
    convs = load(f, strict=True)
    assert [len(c.messages) for c in convs] == sizes
    first = convs[0]
    assert first.messages[-1].content in ("Noted.", "Hello")
    assert len({c.id for c in convs}) == len(convs)
    assert all(m.id == f"{first.id}:{i}" for i, m in enumerate(first.messages))


def _node(nid: str, parent: str | None, children: list[str], role: str | None = None, content: Any = None,
          t: float | None = None, **extra: Any) -> dict[str, Any]:
    message = None if role is None else {"id": f"msg-{nid}", "author": {"role": role, "name": extra.pop("name", None),
                                                                         "metadata": {}},
                                         "create_time": t, "content": content, "metadata": extra}
    return {"id": nid, "message": message, "parent": parent, "children": children}


def _text(*parts: Any) -> dict[str, Any]:
    return {"content_type": "text", "parts": list(parts)}


CHATGPT = [
    {"title": "Flat move", "id": "c-flat", "current_node": "t1", "mapping": {
        "root": _node("root", None, ["sys"]),
        "sys": _node("sys", "root", ["ctx"], "system", _text(""), is_visually_hidden_from_conversation=True),
        "ctx": _node("ctx", "sys", ["u1"], "user",
                     {"content_type": "user_editable_context", "user_profile": "I am Ana"},
                     is_visually_hidden_from_conversation=True),
        "u1": _node("u1", "ctx", ["a1", "a2"], "user", _text("I move into the flat on 4 March."), 1709542800.5),
        "a1": _node("a1", "u1", [], "assistant", _text("An older answer, regenerated."), 1709542810.0),
        "a2": _node("a2", "u1", ["u2"], "assistant", _text("Congratulations on the move!"), 1709542820.0),
        "u2": _node("u2", "a2", ["t1"], "user", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"}, "Here is the lease."]},
            1709542900.0),
        "t1": _node("t1", "u2", [], "tool", {"content_type": "execution_output", "text": "rent: 950 EUR"},
                    1709542910.0, name="python"),
    }},
    {"title": "Other", "conversation_id": "c-other", "mapping": {
        "r": _node("r", None, ["x"]),
        "x": _node("x", "r", ["y"], "user", _text("Hi"), 1709000000.0),
        "y": _node("y", "x", [], "assistant", _text("Hello"), 1709000001.0),
    }},
]


def test_a_chatgpt_export_reads_the_branch_the_user_last_saw(tmp_path: Path) -> None:
    """ChatGPT's own `conversations.json` keeps each conversation as a tree of nodes (`mapping`):
    the messages are the branch that ends at `current_node` (a regenerated answer's older branch
    left out), without ChatGPT's hidden system and profile messages; times are its epochs."""
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(CHATGPT))
    assert guess_format(str(f)) == "chat"
    flat, other = load(f, strict=True)
    assert (flat.id, other.id) == ("c-flat", "c-other")
    assert [(m.role, m.content) for m in flat.messages] == [
        ("user", "I move into the flat on 4 March."), ("assistant", "Congratulations on the move!"),
        ("user", "[image]\nHere is the lease."), ("tool", "rent: 950 EUR")]
    assert flat.messages[0].created_at == "2024-03-04T09:00:00.500000Z"
    assert flat.messages[3].name == "python"
    assert [m.content for m in other.messages] == ["Hi", "Hello"]  # no current_node: the last leaf


def test_anthropic_body_with_system_and_tool_blocks(tmp_path: Path) -> None:
    body = {"system": [{"type": "text", "text": "You are a coding agent."}], "messages": [
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                          {"type": "text", "text": "Running them."},
                                          {"type": "tool_use", "id": "tu1", "name": "bash",
                                           "input": {"command": "pytest"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "3 passed"},
                                     {"type": "text", "text": "Great, now commit."}]},
        {"role": "assistant", "content": [{"type": "image", "source": {}}]},
    ]}
    f = tmp_path / "a.json"
    f.write_text(json.dumps(body))
    (conv,) = load(f, strict=True)
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant"]
    system, _, call, result, text, image = conv.messages
    assert system.content == "You are a coding agent." and system.id == f"{conv.id}:system"
    assert call.meta["tool_calls"] == ["tu1"] and 'Calling bash({"command": "pytest"})' in call.content
    assert "hmm" not in call.content  # thinking is not part of the conversation
    assert result.meta["tool_call_id"] == "tu1" and result.name == "bash" and result.content == "3 passed"
    assert (result.id, text.id) == (f"{conv.id}:2", f"{conv.id}:2.1")  # split from item 2, results first
    assert image.content == "[image]"


def test_openai_tool_calls_and_tool_results(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "4 C, rain"},
            {"role": "assistant", "content": "4 degrees and rain."}]
    f = tmp_path / "o.jsonl"
    f.write_text(_jsonl(msgs))
    (conv,) = load(f, strict=True)
    assert conv.messages[1].meta["tool_calls"] == ["c1"]
    assert conv.messages[1].content == 'Calling weather({"city":"Oslo"}).'
    assert conv.messages[2].role == "tool" and conv.messages[2].name == "weather"
    assert conv.messages[2].meta["tool_call_id"] == "c1"


def test_the_shape_is_decided_once_and_a_stray_line_is_one_error(tmp_path: Path) -> None:
    f = tmp_path / "mixed.jsonl"
    f.write_text(_jsonl([CHAT[1], CHAT[2], {"messages": OTHER}, CHAT[1]]))
    with pytest.raises(RecordError) as info:
        load(f, strict=True)
    assert str(info.value).startswith(f"{f}:3: expected a message object like line 1")
    report = validate(f)
    assert len(report.errors) == 1 and report.errors[0].line == 3


def test_an_unknown_shape_is_one_line_not_one_per_record(tmp_path: Path) -> None:
    f = tmp_path / "odd.jsonl"
    f.write_text(_jsonl([{"text": "hello"}] * 50))
    report = validate(f)
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{f}:1: expected a chat export")


def test_records_without_ids_are_a_chat_export_and_their_probes_are_read(tmp_path: Path) -> None:
    """Once guessed as canonical (because of `probes`), such a file gave 20 'expected a
    non-empty string id' errors; now it is a chat export and its probes are kept."""
    f = tmp_path / "p.jsonl"
    rec = {"id": None, "messages": CHAT, "probes": [{"question": "Locker code?", "answer": "4417", "evidence": 1}]}
    f.write_text(json.dumps(rec) + "\n")
    assert guess_format(str(f)) == "chat"
    (conv,) = load(f, strict=True)
    assert [(p.answer, p.evidence) for p in conv.probes] == [("4417", ("p-1:1",))]


def test_bad_embedded_probes_are_refused_never_dropped(tmp_path: Path) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"messages": CHAT, "probes": [{"question": "Locker code?", "answer": "4417",
                                                           "evidence": 9}]}))
    with pytest.raises(RecordError, match=r"field probes\[0\]\.evidence: message index 9 is outside"):
        load(f, strict=True)
    assert load(f) == []  # not loaded without its probes


def test_canonical_records_are_still_read_strictly(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text(json.dumps({"id": "c", "messages": [{"id": "m0", "role": "human", "content": "x"}]}) + "\n")
    assert guess_format(str(f)) == "jsonl"
    assert "messages[0].role" in str(validate(f).errors[0])


def test_stats_logs_a_repeated_problem_once_with_a_count(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(_jsonl([{"messages": [{"role": "narrator", "content": "x"}]}] * 460
                        + [{"messages": OTHER}]))
    with caplog.at_level(logging.WARNING):
        assert main(["data", "stats", str(f), "--skip-bad-records"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # the problem once, with its line; then the count
    assert f"{f}:1:" in warnings[0] and "role" in warnings[0]
    assert "skipped 460 records in all (460 x field messages[0].role" in warnings[1]
    assert "conversations" in capsys.readouterr().out


@pytest.mark.parametrize(("fmt", "ext"), [("openai", ".json"), ("openai", ".jsonl"), ("anthropic", ".json"),
                                          ("anthropic", ".jsonl"), ("sharegpt", ".jsonl")])
@pytest.mark.parametrize("flavor", ["chat", "agent"])
def test_convert_round_trips_messages_and_probes_through_a_sidecar(
        tmp_path: Path, fmt: str, ext: str, flavor: str) -> None:
    src = load(f"synth:{flavor}?conversations=2&messages=60&seed=4")
    out = tmp_path / f"out{ext}"
    n, side = write_export(src, out, fmt)
    assert n == 2 and side is not None and side.exists()
    back = attach(load(out, strict=True), side)
    assert len(back) == 2
    for a, b in zip(src, back, strict=True):
        assert [(m.role, m.content) for m in a.messages] == [(m.role, m.content) for m in b.messages]
        pos_a = {m.id: i for i, m in enumerate(a.messages)}
        pos_b = {m.id: i for i, m in enumerate(b.messages)}
        assert [(p.question, p.answer, p.category, p.stale_answers) for p in a.probes] == \
               [(p.question, p.answer, p.category, p.stale_answers) for p in b.probes]
        assert [[pos_a[e] for e in p.evidence] for p in a.probes] == \
               [[pos_b[e] for e in p.evidence] for p in b.probes]
        own = [{k: v for k, v in p.meta.items() if k != "ask_at"} for p in a.probes]  # (was lost)
        assert any(own) and own == [{k: v for k, v in p.meta.items() if k != "ask_at"} for p in b.probes]
        def links(c: Any) -> list[tuple[int, str]]:  # which message calls or answers which call
            return [(i, str(x)) for i, m in enumerate(c.messages)
                    for x in [*m.meta.get("tool_calls", []), m.meta.get("tool_call_id")] if x]
        if fmt != "sharegpt":  # ShareGPT has no tool-call ids
            assert links(a) == links(b)


def test_convert_cli_writes_a_plain_openai_export_and_its_sidecar(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "chat.json"
    assert main(["data", "convert", "synth:chat?conversations=1&messages=80&seed=1", str(out), "--to", "openai"]) == 0
    data = json.loads(out.read_text())
    assert isinstance(data, list) and set(data[0]) == {"role", "content"}
    side = tmp_path / "chat.questions.jsonl"
    assert str(side) in capsys.readouterr().out
    assert main(["data", "validate", str(out), "--questions", str(side)]) == 0


@pytest.mark.parametrize(("fmt", "said"), [
    ("openai", "created_at of 80 message(s);"),
    ("anthropic", "created_at of 80 message(s), name of 2 message(s);"),
    ("sharegpt", "created_at of 80 message(s), name of 2 message(s);"),
    ("jsonl", None),
])
def test_convert_says_what_an_export_format_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     fmt: str, said: str | None) -> None:
    # every message's time was dropped without a word (the round trip compares role and content)
    src = tmp_path / "chat.jsonl"
    (conv,) = load("synth:chat?conversations=1&messages=80&seed=1")
    named = [dataclasses.replace(m, name="Zoë" if i < 2 else None) for i, m in enumerate(conv.messages)]
    src.write_text(json.dumps(dataclasses.replace(conv, messages=tuple(named)).to_dict()) + "\n")
    assert main(["data", "convert", str(src), str(tmp_path / "out.jsonl"), "--to", fmt]) == 0
    notes = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("note:")]
    if said is None:
        assert notes == []
    else:
        assert len(notes) == 1 and f"left out of the {fmt} file" in notes[0] and said in notes[0], notes


def test_canonical_records_in_a_json_array_keep_their_probes(tmp_path: Path) -> None:
    """Not canonical JSONL, so read as chat export; evidence naming the records' own message
    ids still resolves."""
    canonical = load("synth:chat?conversations=2&messages=40&seed=6")
    records = []
    for c in canonical:  # ids of their own, not the <conversation>:<i> the loader assigns
        d = c.to_dict()
        rename = {m["id"]: f"msg-{i}" for i, m in enumerate(d["messages"])}
        for m in d["messages"]:
            m["id"] = rename[m["id"]]
        for p in d["probes"]:
            p["evidence"] = [rename[e] for e in p["evidence"]]
        records.append(d)
    f = tmp_path / "array.json"
    f.write_text(json.dumps(records, indent=1))
    back = load(f, strict=True)
    for a, b in zip(canonical, back, strict=True):
        pos_a = {m.id: i for i, m in enumerate(a.messages)}
        pos_b = {m.id: i for i, m in enumerate(b.messages)}
        assert [(p.id, [pos_a[e] for e in p.evidence]) for p in a.probes] == \
               [(p.id, [pos_b[e] for e in p.evidence]) for p in b.probes]


@pytest.mark.parametrize(("stamp", "hint"), [(1709542800123, True), (1e20, False)])
def test_an_epoch_no_calendar_holds_is_one_line_and_milliseconds_are_named(
        tmp_path: Path, stamp: float, hint: bool) -> None:
    # Date.now() style milliseconds were refused without saying what they probably are
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "x", "timestamp": stamp}]))
    with pytest.raises(ConfigError, match=r"field messages\[0\]\.timestamp: expected ISO text or seconds since "
                                          r"1970 within years 1-9999") as err:
        load(chat, strict=True)
    assert ("(milliseconds since 1970? divide by 1000)" in str(err.value)) is hint
