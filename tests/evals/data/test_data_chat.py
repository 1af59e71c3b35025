from pathlib import Path

from rollsum_evals.data import guess_format, load, validate

FIX = Path(__file__).parent / "fixtures"


def test_jsonl_exports_load_with_assigned_ids_and_mapped_roles() -> None:
    convs = load(FIX / "chat_export.jsonl")
    assert guess_format(str(FIX / "chat_export.jsonl")) == "chat"
    assert [c.id for c in convs] == ["chat_export-1", "share-2", "chat_export-3"]
    assert [m.role for m in convs[1].messages] == ["user", "assistant"]
    assert convs[0].messages[1].id == "chat_export-1:1"
    assert convs[2].messages[0].content == "part one\npart two"


def test_json_array_exports_load() -> None:
    convs = load(FIX / "chat_export_array.json")
    assert [c.id for c in convs] == ["a1", "a2"]


def test_a_message_without_role_is_skipped_with_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text('{"messages": [{"content": "hi"}]}\n{"messages": [{"role": "user", "content": "ok"}]}\n')
    assert len(load(f, "chat")) == 1
    report = validate(f, format="chat")
    assert not report.ok and "role: missing" in str(report.errors[0])
