from __future__ import annotations

import io
import json
import logging
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    # the environment's secrets are known without being passed
    assert "plain-looking-value-42" not in redact_obj("token plain-looking-value-42")


# ----------------------------------------------------------------------------------------------
# every piece of a known secret (issue #11: a summary quoting the key's tail leaked)

SECRET = "sk-ant-api03-REDTEAMSECRET123-Zq8vLw0pXr4Nd7Km2Ty"


def _pieces(secret: str, n: int = 8) -> set[str]:
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def _leaks(text: str, secret: str) -> list[str]:
    return sorted(p for p in _pieces(secret) if p in text)


def test_the_tail_of_an_env_key_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    text = "The summary says the code is REDTEAMSECRET123 and Zq8vLw0p, not 'Ty'."
    out = redact(text)
    assert not _leaks(out, SECRET), out
    assert out == "The summary says the code is *** and ***, not 'Ty'."


def test_pieces_shorter_than_eight_characters_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert redact("SECRET1 and Zq8vLw0 stay") == "SECRET1 and Zq8vLw0 stay"


@settings(max_examples=300, deadline=None)
@given(secret=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=8, max_size=120),
       data=st.data())
def test_no_eight_character_piece_of_a_secret_survives(secret: str, data: st.DataObject) -> None:
    """Whatever the secret and wherever a piece of it sits: the masked text holds no 8-character
    substring of it, and text around it is kept."""
    start = data.draw(st.integers(0, len(secret) - 8))
    end = data.draw(st.integers(start + 8, len(secret)))
    before = data.draw(st.text(alphabet=" .,:;!?()[]{}", max_size=30))
    after = data.draw(st.text(alphabet=" .,:;!?()[]{}", max_size=30))
    text = before + secret[start:end] + after + secret
    out = redact(text, [secret])
    assert not _leaks(out, secret), (text, out)
    assert out.startswith(before) and out.count("***") >= 1


def test_escaped_forms_of_a_secret_are_masked_too() -> None:
    secret = 'quote"and\\slash-secret-9876'
    dumped = json.dumps({"content": f"the key is {secret}"})
    out = redact(dumped, [secret])
    assert not _leaks(out, json.dumps(secret)[1:-1]) and not _leaks(out, secret), out
    assert json.loads(out)  # still valid JSON


def test_mapping_keys_are_redacted_and_colliding_keys_keep_both_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum.redact import redact_obj

    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    data = {"datasets": {f"d-{SECRET}": {"n": 1}, f"e-{SECRET}": {"n": 2}}, "plain": ["x"]}
    out = redact_obj(data)
    assert SECRET[:8] not in json.dumps(out) and "REDTEAMS" not in json.dumps(out)
    assert sorted(v["n"] for v in out["datasets"].values()) == [1, 2]


def test_a_traceback_logged_by_the_library_is_masked_for_any_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """`exc_text` is rendered after every handler filter ran: the library's loggers render and
    mask it themselves, so an application's own handler (no CLI, no install) sees no key."""
    import asyncio

    from rollsum import RollingSummarizer
    from rollsum.aio import AsyncRollingSummarizer
    from rollsum.types import Message

    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # a plain handler: no redaction of its own
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        core = RollingSummarizer.from_preset("since-last", messages_per_summary=2, keep_last=1,
                                             min_messages_per_attempt=0)
        core._run = lambda job: (_ for _ in ()).throw(RuntimeError(  # type: ignore[method-assign]
            f"proxy said: invalid key {SECRET} (tail REDTEAMSECRET123)"))
        chat = AsyncRollingSummarizer(core)

        async def go() -> None:
            for i in range(6):
                await chat.add(Message("user", f"message {i}"))
            await chat.wait_idle()

        asyncio.run(go())
    finally:
        root.removeHandler(handler)
    logged = stream.getvalue()
    assert "background summary crashed" in logged and "Traceback" in logged
    assert not _leaks(logged, SECRET), logged


def test_a_redacting_handler_masks_tracebacks_of_any_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum.redact import install_log_redaction

    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    stream = io.StringIO()
    logger = logging.getLogger("some.application.module")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    install_log_redaction(logger)
    try:
        try:
            raise ValueError(f"bad header x-auth {SECRET[5:30]}")
        except ValueError:
            logger.exception("call failed for %s", SECRET[-12:])
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert "Traceback" in stream.getvalue() and not _leaks(stream.getvalue(), SECRET), stream.getvalue()


def test_a_redacting_stream_sees_a_key_written_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    from rollsum.redact import RedactingStream

    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    inner = io.StringIO()
    stream = RedactingStream(inner)
    stream.write("error: " + SECRET[:20])
    stream.write(SECRET[20:] + "\nnext ")
    stream.write("line REDTEAMSECRET123")
    stream.flush()
    assert inner.getvalue() == "error: ***\nnext line ***", inner.getvalue()
