import json
import re
from pathlib import Path

import pytest
from rollsum_evals.cli import build_parser, main
from rollsum_evals.data import load

FIX = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("sub", ["synth", "validate", "convert", "stats"])
def test_every_subcommand_has_help(sub: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["data", sub, "--help"])
    assert exc.value.code == 0
    assert "usage: rollsum data " + sub in capsys.readouterr().out


def test_convert_help_says_what_in_and_out_may_be(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["data", "convert", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "IN a dataset file, a Hugging Face directory" in text and "OUT the file to write" in text
    assert "(.jsonl, .json or .csv)" in text


def test_synth_then_validate_then_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    manifest = tmp_path / "manifest.json"
    assert main(["data", "synth", "--flavor", "agent", "--conversations", "2", "--messages", "90",
                 "--seed", "3", "--out", str(out), "--manifest", str(manifest)]) == 0
    assert [len(c.messages) for c in load(out)] == [90, 90]
    entry = json.loads(manifest.read_text())["files"]["s.jsonl"]
    assert entry["spec"] == "synth:agent?conversations=2&messages=90&seed=3"
    assert main(["data", "validate", str(out)]) == 0
    capsys.readouterr()
    assert main(["data", "stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["conversations"] == 2 and stats["messages"] == 180
    assert stats["tokens"] > 180 and sum(stats["probes_by_category"].values()) == stats["probes"]


@pytest.mark.parametrize("text, message", [
    ("{\n", r"m.json:2: invalid JSON at column 1: .* \(expected a datasets manifest"),
    ("[1]\n", r"m.json: expected a datasets manifest, an object with \"files\""),
    ('{"files": []}\n', r"m.json: expected a datasets manifest"),
])
def test_synth_with_an_unusable_manifest_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    # was a JSONDecodeError traceback, after the set had been written
    manifest, out = tmp_path / "m.json", tmp_path / "s.jsonl"
    manifest.write_text(text)
    assert main(["data", "synth", "--messages", "20", "--out", str(out), "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert re.search(message, err) and not out.exists() and manifest.read_text() == text


def test_convert_locomo_to_canonical_jsonl_and_hf(tmp_path: Path) -> None:
    out = tmp_path / "l.jsonl"
    assert main(["data", "convert", "--from", "locomo", str(FIX / "locomo_tiny.json"), str(out)]) == 0
    assert load(out) == load(FIX / "locomo_tiny.json")
    hf_dir = tmp_path / "hf"
    assert main(["data", "convert", "--to", "hf", str(out), str(hf_dir)]) == 0
    assert load(hf_dir) == load(out)


def test_convert_a_synth_spec(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    assert main(["data", "convert", "synth:chat?messages=40&seed=2", str(out)]) == 0
    assert len(load(out)[0].messages) == 40


def test_what_synth_and_convert_wrote_is_named_by_its_absolute_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["data", "synth", "--conversations", "1", "--messages", "40", "--out", "s.jsonl",
                 "--manifest", "m.json"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"wrote 1 conversation(s) to {tmp_path.resolve() / 's.jsonl'} (")
    assert out[1].endswith(f" in {tmp_path.resolve() / 'm.json'}")
    assert main(["data", "convert", "s.jsonl", "chat.json", "--to", "openai"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"wrote 1 conversation(s) to {tmp_path.resolve() / 'chat.json'} (openai)"
    assert out[1].startswith(f"wrote their questions to {tmp_path.resolve() / 'chat.questions.jsonl'} (")


@pytest.mark.parametrize("text, fmt, to", [('{"role": "user"\n', [], "jsonl"), ("hello\n", [], "hf"),
                                          ("[]\n", ["--from", "locomo"], "jsonl")])
def test_convert_with_no_conversation_left_writes_nothing_and_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fmt: list[str], to: str) -> None:
    # not strict, a bad record is skipped with a warning; when that leaves nothing, "wrote 0
    # conversation(s)" with exit 0 and an empty output would hide the mistake
    src, out = tmp_path / "in.json", tmp_path / "out"
    src.write_text(text)
    assert main(["data", "convert", *fmt, str(src), str(out), "--to", to]) == 2
    err = capsys.readouterr().err
    assert f"{src}: no conversation to convert" in err and "Traceback" not in err
    assert not out.exists()


def test_convert_to_hf_refuses_a_directory_holding_other_files(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # save_to_disk would write the dataset among them (a run directory, say)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "manifest.json").write_text("{}")
    assert main(["data", "convert", "synth:chat?messages=40&seed=2", str(busy), "--to", "hf"]) == 2
    assert "not empty and holds no Hugging Face dataset" in capsys.readouterr().err
    assert [p.name for p in busy.iterdir()] == ["manifest.json"]
    hf_dir = tmp_path / "hf"  # an earlier --to hf output is replaced
    assert main(["data", "convert", "synth:chat?messages=40&seed=2", str(hf_dir), "--to", "hf"]) == 0
    assert main(["data", "convert", "synth:chat?messages=30&seed=2", str(hf_dir), "--to", "hf"]) == 0
    assert len(load(hf_dir)[0].messages) == 30


def test_user_mistakes_exit_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "stats", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["data", "convert", "--from", "nonsense", str(FIX / "valid.jsonl"), str(tmp_path / "o")]) == 2
    assert main(["data", "synth", "--messages", "0", "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 3


def test_strict_convert_fails_on_a_bad_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "b.jsonl"
    bad.write_text((FIX / "valid.jsonl").read_text() + "{oops\n")
    assert main(["data", "convert", str(bad), str(tmp_path / "ok.jsonl")]) == 0
    assert len(load(tmp_path / "ok.jsonl")) == 2
    assert main(["data", "convert", "--strict", str(bad), str(tmp_path / "no.jsonl")]) == 2
    assert not (tmp_path / "no.jsonl").exists()


def test_validate_warns_of_the_empty_messages_convert_drops_and_convert_says_it_dropped_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    # validate said ok and convert dropped messages[1] and [3] without a word; both now say it,
    # in one sentence (`exports.empty_messages_dropped`)
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "content": "My locker code is 4417"}, {"role": "assistant", "content": ""},
        {"role": "user", "content": "thanks"}, {"role": "assistant", "content": [{"type": "thinking"}]},
        {"role": "user", "content": "bye"}]}) + "\n")
    assert main(["data", "validate", str(chat)]) == 0
    out = capsys.readouterr().out
    said = ("2 empty message(s) (no text, tool call or tool result): messages[1], messages[3]; left out when the "
            "file is loaded, so `rollsum data convert` does not write them")
    assert f"warning: {chat}:1: conversation 'chat-1': {said}" in out and "1 warning(s)" in out
    assert main(["data", "validate", "--strict", str(chat)]) == 2  # a warning is an error with --strict
    capsys.readouterr()
    out_file = tmp_path / "out.jsonl"
    with caplog.at_level("WARNING"):
        assert main(["data", "convert", str(chat), str(out_file)]) == 0
    assert [len(c.messages) for c in load(out_file)] == [3]
    logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert logged == [f"{chat}: dropped 2 empty message(s) (no text, tool call or tool result) in 1 "
                      f"conversation(s): the canonical format has no empty messages; `rollsum data validate "
                      f"{chat}` lists them"]
