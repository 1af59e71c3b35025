"""A sweep whose model cannot work at all (401, 403, 404, a 400 on every call, no connection) stops on the first calls
with one line and exit 2, through the real anthropic SDK on an httpx2 MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest
from rollsum_evals.cli import main

from tests.support.anthropic import Handler

SPEC = """
name = "ff"
models = ["anthropic:claude-haiku-4-5"]
context_window = 4000
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=4&messages=120&seed=3"

[[configs]]
preset = "since-last"

[[configs]]
preset = "full-context"
"""

def _error(status: int, kind: str, message: str) -> Handler:
    return lambda request: httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": message}})


def _run(tmp_path: Path) -> int:
    spec = tmp_path / "ff.toml"
    spec.write_text(SPEC)
    return main(["run", str(spec), "--out", str(tmp_path / "run"), "--jobs", "2", "--no-progress",
                 "--executor", "thread"])


@pytest.mark.parametrize(("status", "kind", "message"), [
    (401, "authentication_error", "invalid x-api-key"),
    (403, "permission_error", "your API key does not have permission to use the specified resource"),
])
def test_a_refused_key_stops_the_sweep_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]],
        status: int, kind: str, message: str) -> None:
    calls = served(_error(status, kind, message))
    assert _run(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"rollsum: error: sweep stopped: anthropic:claude-haiku-4-5: Anthropic API returned "
                             f"{status}: {message}")
    assert "ANTHROPIC_API_KEY" in err[0] and "--resume" in err[0] and "SECRET" not in err[0]
    assert 1 <= len(calls) <= 2  # the first call of each Unit in flight, then nothing
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "stopped: auth"


def test_a_model_the_api_does_not_serve_stops_the_sweep_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]]) -> None:
    """A 404 (a misspelt, retired or not-yet-available model) can never succeed: the sweep went on
    calling it for every summary, ended "complete" with exit 0 and Units without summaries."""
    calls = served(_error(404, "not_found_error", "model: claude-haiku-4-5"))
    assert _run(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rollsum: error: sweep stopped: anthropic:claude-haiku-4-5: Anthropic API returned "
                             "404: model: claude-haiku-4-5 (the API does not serve this model: check the model name")
    assert "--resume" in err[0]
    assert 1 <= len(calls) <= 2
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "stopped: not_found"


def test_a_request_the_api_always_refuses_as_invalid_stops_the_sweep_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]]) -> None:
    """A 400 on every call (here: max_tokens above the model's limit) is the spec's mistake: the
    sweep failed every summary on it and ended "complete", exit 0."""
    calls = served(_error(400, "invalid_request_error",
                          "max_tokens: 64000 > 32000, which is the maximum allowed number of output tokens"))
    assert _run(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "sweep stopped: anthropic:claude-haiku-4-5: Anthropic API returned 400: max_tokens: 64000 > 32000" in err[0]
    assert "refused 3 requests as invalid and accepted none" in err[0] and "--resume" in err[0]
    assert 3 <= len(calls) <= 4
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "stopped: invalid_request"


def test_an_invalid_request_after_successes_is_left_to_the_unit(
        tmp_path: Path, served: Callable[[Handler], list[httpx2.Request]]) -> None:
    """One request the API refuses (its own content) in a sweep that works is that Unit's failure."""
    from tests.support.anthropic import message_json

    n = [0]

    def sometimes(request: httpx2.Request) -> httpx2.Response:
        n[0] += 1
        if n[0] % 2 == 0:
            return _error(400, "invalid_request_error", "messages: text content blocks must be non-empty")(request)
        return httpx2.Response(200, json=message_json("A summary of the earlier talk."))

    served(sometimes)
    assert _run(tmp_path) == 0
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "complete"


def test_no_connection_stops_the_sweep_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]]) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    calls = served(refuse)
    assert _run(tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "sweep stopped: anthropic:claude-haiku-4-5: cannot reach the Anthropic API" in err[0]
    assert "no call has succeeded" in err[0]
    assert 2 <= len(calls) <= 3
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "stopped: connection"


def test_a_connection_failure_after_successes_is_left_to_the_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]]) -> None:
    """A blip in a sweep that has been working is transient: the sweep finishes."""
    from tests.support.anthropic import message_json

    n = [0]

    def flaky(request: httpx2.Request) -> httpx2.Response:
        n[0] += 1
        if n[0] in (3, 4, 5):
            raise httpx2.ConnectError("reset", request=request)
        return httpx2.Response(200, json=message_json("A summary of the earlier talk."))

    served(flaky)
    assert _run(tmp_path) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["units_done"] == manifest["units_total"]


def test_rescoring_with_a_refused_key_stops_with_one_line_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], served: Callable[[Handler], list[httpx2.Request]]) -> None:
    spec = tmp_path / "offline.toml"
    spec.write_text(SPEC.replace('models = ["anthropic:claude-haiku-4-5"]', 'models = ["extractive"]'))
    run = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(run), "--no-progress"]) == 0
    before = (run / "units.jsonl").read_bytes()
    calls = served(_error(401, "authentication_error", "invalid x-api-key"))
    capsys.readouterr()
    assert main(["score", str(run), "--scorers", "answer_retention,qa", "--model", "anthropic:claude-haiku-4-5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "re-scoring stopped: anthropic:claude-haiku-4-5: Anthropic API returned 401" in err[0]
    assert len(calls) == 1 and (run / "units.jsonl").read_bytes() == before
