from __future__ import annotations

import pytest

from rollsum.redact import redact


@pytest.mark.parametrize("secret", [
    "sk-ant-api03-" + "Ab9_-" * 10,
    "sk-proj-" + "x" * 30,
    "AKIAIOSFODNN7EXAMPLE",
])
def test_key_shapes_are_masked(secret: str) -> None:
    out = redact(f"before {secret} after")
    assert secret not in out and out.startswith("before ") and out.endswith(" after")


@pytest.mark.parametrize("text", [
    "Authorization: Bearer abcdefgh.ijkl-mnop",
    "x-api-key: hunter2hunter2",
    '{"api_key": "plainvalue123"}',
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG",
])
def test_header_and_assignment_values_are_masked(text: str) -> None:
    value = text.rsplit(" ", 1)[-1].strip('"}')
    assert value not in redact(text) and "***" in redact(text)


def test_live_env_key_is_masked_whatever_its_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "weird-shaped-key-0000")
    assert "weird-shaped-key-0000" not in redact("echo weird-shaped-key-0000")


def test_ordinary_text_is_unchanged() -> None:
    text = "The task-sk list: skip sk-1, Bearer of bad news, api docs."
    assert redact(text) == text


def test_extra_secrets_and_env_secrets_mask_unknown_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum.redact import env_secrets, redact_obj

    monkeypatch.setenv("BILLING_SERVICE_TOKEN", "plain-looking-value-42")
    secrets = env_secrets()
    assert "plain-looking-value-42" in secrets
    out = redact_obj({"note": "token plain-looking-value-42 used", "n": [1, "short"]}, secrets)
    assert out == {"note": "token *** used", "n": [1, "short"]}
    assert "plain-looking-value-42" in redact_obj("token plain-looking-value-42")  # only when asked
