"""Capability facts are declared once, at a backend's registration, and read from there."""

from __future__ import annotations

import pytest

from rollsum import ConfigError
from rollsum.capabilities import Capabilities
from rollsum.models import BACKENDS, Backend, capabilities, from_spec
from rollsum.models.fake import FakeModel
from rollsum.models.pricing import price_for


def test_every_registered_backend_declares_what_it_is() -> None:
    assert set(BACKENDS) == {"anthropic", "fake", "replay", "record", "local"}
    assert all(isinstance(b.capabilities, Capabilities) for b in BACKENDS.values())
    assert capabilities("anthropic:claude-haiku-4-5") == Capabilities()  # online, paid, follows prompts
    fake = capabilities("fake:mode=json")
    assert fake.offline and fake.free and fake.deterministic and not fake.follows_prompt
    assert capabilities("replay:c.jsonl").follows_prompt  # a recording of a real model's answers


def test_a_recording_is_what_its_inner_model_is() -> None:
    assert capabilities("record:c.jsonl:anthropic:claude-haiku-4-5") == capabilities("anthropic:x")
    assert capabilities("record:c.jsonl:fake") == capabilities("fake")


def test_unknown_specs_are_config_errors() -> None:
    for bad in ("gpt:4", "claude-haiku-4-5", "anthropic"):
        with pytest.raises(ConfigError):
            capabilities(bad)


def test_a_new_backend_is_one_registration() -> None:
    free = Capabilities(offline=True, free=True, deterministic=True)
    with BACKENDS.registered("mine", Backend("mine", "mine:NAME", lambda rest, **kw: FakeModel(), free)):
        assert isinstance(from_spec("mine:x"), FakeModel)
        assert capabilities("mine:x") == free
        assert price_for("mine:x").input == 0.0  # pricing reads the declaration, not a list of names
        paid = Capabilities()
        with BACKENDS.registered("mine", Backend("mine", "mine:NAME", lambda rest, **kw: FakeModel(), paid)):
            assert price_for("mine:x").known is False  # not free, and no price in the table
    assert "mine" not in BACKENDS
