"""from_spec: one string names every model; mistakes say what is valid."""

from __future__ import annotations

import pytest

from rollsum.errors import ConfigError, MissingCredentials
from rollsum.models import FakeModel, Model, from_spec


def test_extractive_is_not_a_model() -> None:
    with pytest.raises(ConfigError, match="summarizer"):
        from_spec("extractive")


@pytest.mark.parametrize("spec", ["gpt-4:foo", "openai:gpt-4", "", "   ", "replay:", "record:only-path"])
def test_unknown_or_incomplete_specs_list_valid_forms(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_spec(spec)
    assert "anthropic:" in str(info.value) or "record:PATH:INNER_SPEC" in str(info.value)


def test_bare_claude_name_gets_a_hint() -> None:
    with pytest.raises(ConfigError, match="did you mean anthropic:claude-haiku-4-5"):
        from_spec("claude-haiku-4-5")


def test_fake_spec_gives_a_model() -> None:
    model = from_spec("fake:mode=echo")
    assert isinstance(model, FakeModel) and isinstance(model, Model)


def test_anthropic_spec_without_key_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY is not set"):
        from_spec("anthropic:claude-haiku-4-5")


def test_local_spec_with_missing_file_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        from_spec("local:/nonexistent/model.gguf")
