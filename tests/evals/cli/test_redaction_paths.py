"""Redaction masks secrets, never paths or ordinary values, and finds encoded keys (issue #19 item 2).

A credential-named variable that holds a path (``SSH_KEY=/home/me/.ssh/id_ed25519``) used to be
taken for a secret: every printed path under that folder became ``***run``, the manifest's
dataset ``source`` became ``***data/chat.json`` and `rollsum score` could no longer find the
data. Meanwhile a real key passed through whenever it was base64- or percent-encoded, and
`rollsum init` on a chat file whose name held a piece of a key wrote the piece into the spec's
name while printing a masked path that did not exist.
"""

from __future__ import annotations

import base64
import json
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from rollsum_evals.cli import main
from rollsum_evals.data import load

from rollsum.redact import MASK, RedactingStream, env_secrets, redact, redact_obj

KEY = "sk-ant-api03-Zq7Xw9LmKw2PvYtR4nB8cD1eF6gH0jK3-abc"

SPEC = """
name = "paths"
context_window = 1500
cache = "off"
models = ["fake:mode=extractive"]

[[datasets]]
name = "chat"
source = "data/chat.json"

[[configs]]
preset = "since-last"
"""


def _chat(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (conv,) = load("synth:chat?conversations=1&messages=30&seed=8")
    path.write_text(json.dumps([{"role": m.role, "content": m.content} for m in conv.messages]))


def test_a_path_in_a_credential_named_variable_masks_nothing_and_the_run_can_be_scored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SSH_KEY", str(tmp_path / "id_ed25519"))  # shares its folder with everything below
    monkeypatch.setenv("FEATURE_TOKEN", "disabled")  # an ordinary value in a credential-named variable
    monkeypatch.setenv("RETRIES_SECRET", "12345678")
    _chat(tmp_path / "data" / "chat.json")
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == str(out)  # not "***run"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["datasets"]["chat"]["source"] == str(tmp_path / "data" / "chat.json")
    assert MASK not in json.dumps(manifest)
    assert main(["score", str(out)]) == 0, capsys.readouterr().err
    assert env_secrets() == []


def test_recorded_paths_are_never_rewritten_even_when_they_hold_a_secret_piece() -> None:
    """The manifest keeps its paths exact (they must find the files again); the rest is masked."""
    from rollsum_evals.rundir.redaction import redact_manifest

    source = f"/data/chat-{KEY[10:37]}.json"
    manifest: dict[str, Any] = {"name": f"n-{KEY}", "spec_path": f"/specs/{KEY[5:30]}.toml",
                "datasets": {"chat": {"source": source, "questions": source + "l", "sha256": KEY}},
                "spec": {"datasets": [{"name": "chat", "source": source}]},
                "cache": {"mode": "user", "path": f"/c/{KEY[3:20]}"}, "unit_cache": {"path": None}}
    out = redact_manifest(manifest, [KEY])
    assert out["datasets"]["chat"]["source"] == source and out["datasets"]["chat"]["questions"] == source + "l"
    assert out["spec"]["datasets"][0]["source"] == source
    assert out["spec_path"] == manifest["spec_path"] and out["cache"]["path"] == f"/c/{KEY[3:20]}"
    assert KEY[5:13] not in out["name"] and out["datasets"]["chat"]["sha256"] == MASK


@pytest.mark.parametrize("prefix", ["", "a", "ab", "Authorization: Basic "])
def test_a_known_key_is_masked_in_base64_base64url_and_percent_encoded_forms(
        prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    payload = (prefix + "user:" + KEY + " and more").encode()
    encoded = {
        "base64": base64.b64encode(payload).decode(),
        "base64url": base64.urlsafe_b64encode(payload).decode(),
        "percent": quote(payload.decode(), safe=""),
        "percent-plus": quote_plus(payload.decode()),
        "percent-path": quote("/v1?key=" + KEY),
    }
    for name, text in encoded.items():
        masked = redact(text)
        assert MASK in masked, name
        # no 12-character run of the encoded key survives
        whole = {"base64": base64.b64encode(KEY.encode()).decode(), "percent": quote(KEY, safe="")}
        for form in whole.values():
            assert not any(form[i:i + 12] in masked for i in range(4, len(form) - 16)), name
    sink: list[str] = []

    class Inner:
        def write(self, s: str) -> int:
            sink.append(s)
            return len(s)

        def flush(self) -> None:
            pass

    stream = RedactingStream(Inner())  # type: ignore[arg-type]
    stream.write(f"stderr: {encoded['base64url']}\n")
    assert MASK in "".join(sink)
    assert redact_obj({"summary": encoded["base64"]})["summary"] != encoded["base64"]


def test_ordinary_text_is_not_masked_by_encoded_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    text = "The meeting moved to 14:30 in room 4B; see https://example.com/a%20b?x=1 and aGVsbG8gd29ybGQ="
    assert redact(text) == text


def test_init_masks_names_derived_from_the_chat_file_and_prints_a_command_that_exists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    chat = tmp_path / f"chat-{KEY[10:37]}.json"
    _chat(chat)
    assert main(["init", str(chat)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    words = shlex.split(last)
    assert words[:3] == ["next:", "rollsum", "run"]
    spec_path = Path(words[3])
    assert spec_path.is_file(), last
    text = spec_path.read_text()
    pieces = {KEY[i:i + 8] for i in range(len(KEY) - 7)}
    named = [line for line in text.splitlines() if line.startswith(("name", "#"))]
    assert named and not any(p in line for p in pieces for line in named), named
    assert not any(p in spec_path.name for p in pieces)
    # the data file itself is found (its path is recorded exactly)
    assert f'source = "{chat.name}"' in text
