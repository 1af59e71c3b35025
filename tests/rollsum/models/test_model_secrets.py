"""With a real-looking key in the environment, nothing this layer writes contains it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from rollsum.errors import ModelError
from rollsum.models import CachedModel, CompletionRequest, ReplayModel
from rollsum.models.anthropic_model import AnthropicModel
from rollsum.redact import RedactingFilter
from rollsum.types import Message

KEY = "sk-ant-test-SECRET"


def test_cassettes_caches_and_logs_never_contain_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        sdk_client: Callable[..., anthropic.Anthropic], msg: Callable[..., dict[str, Any]]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(RedactingFilter())  # what the CLI installs on its log handlers
    calls = {"n": 0}

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls["n"] += 1
        if calls["n"] == 3:
            return httpx2.Response(401, json={"type": "error", "error": {
                "type": "authentication_error", "message": f"invalid x-api-key {KEY}"}})
        # a response that echoes the key must not carry it into a file either
        return httpx2.Response(200, json=msg(f"Summary (debug: {KEY})"))

    model = AnthropicModel(sdk_client(handler, api_key=KEY), "claude-haiku-4-5")
    cassette, cache = tmp_path / "run.jsonl", tmp_path / "cache.sqlite"
    cached = CachedModel(ReplayModel.record(model, cassette), cache)
    req = CompletionRequest(system="S", messages=[Message("user", f"my key is {KEY}, remember it")],
                            metadata={"authorization": f"Bearer {KEY}"})
    cached.complete(req)
    cached.complete(CompletionRequest(system="S2", messages=[Message("user", "hi")]))
    with pytest.raises(ModelError) as info:
        cached.complete(CompletionRequest(system="S3", messages=[Message("user", "hi")]))
    cached.close()
    assert "SECRET" not in str(info.value)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert cassette in written and cache in written
    for path in written:
        assert b"SECRET" not in path.read_bytes(), path
    assert "SECRET" not in caplog.text
