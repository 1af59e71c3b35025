"""The policy, preset, context-format and model-backend registries are public `Registry`s that the library reads.

Each test adds one component with one registration (for the test's duration: ``with
REGISTRY.registered(name, entry):``) and uses it through `RollingSummarizer.from_preset` only:
if any reader (``policies.get``, ``presets.get``/``names``, ``get_format``, the parameter checks
of `rollsum.presets`, ``from_spec``/``capabilities``/pricing) read a copy or a list of its own,
the new name would be refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollsum import ConfigError, RollingSummarizer, presets
from rollsum.capabilities import OFFLINE_SCRIPTED
from rollsum.context import FORMATS, ContextFormat
from rollsum.models.pricing import price_for
from rollsum.models.spec import BACKENDS, capabilities, from_spec
from rollsum.policies import POLICIES, SinceLast
from rollsum.presets import PRESETS, Preset
from rollsum.registry import Registry
from tests.support.helpers import chat
from tests.support.plugin_components import PARROT, EveryFive

NOTE = ContextFormat("note", "user", "NOTE ({depth}): {summary}")
QUICK = Preset("quick", "-", "since-last every 6 messages, summary as a NOTE", "since-last", "note", None,
               "extractive", engine={"max_summary_tokens": 300})


def fed(preset: str, **overrides: Any) -> RollingSummarizer:
    """An engine of `preset` (with `overrides`) after 12 chat messages: a summary every 6, 2 kept."""
    rs = RollingSummarizer.from_preset(preset, messages_per_summary=6, keep_last=2, min_messages_per_attempt=0,
                                       **overrides)
    for message in chat(12):
        rs.add(message)
    return rs


def test_a_policy_registered_once_is_built_by_from_preset_and_drives_the_engine() -> None:
    with POLICIES.registered(EveryFive.name, EveryFive):
        rs = RollingSummarizer.from_preset("since-last", policy="every-five", keep=3, min_messages_per_attempt=0)
        for message in chat(25):
            rs.add(message)
    assert rs.policy == EveryFive(keep=3)
    assert rs.config()["policy"] == {"name": "every-five", "params": {"keep": 3}}
    assert len(rs.history) == 5 and len(rs.messages) == 3  # since-last alone: one summary at most
    assert EveryFive.name not in POLICIES  # the block put the registry back
    with pytest.raises(ConfigError, match="unknown policy 'every-five'; known: count-and-tokens, since-last"):
        RollingSummarizer.from_preset("since-last", policy="every-five")


def test_a_context_format_registered_once_shapes_the_context() -> None:
    with FORMATS.registered(NOTE.name, NOTE):
        rs = fed("since-last", context_format="note")
    assert rs.config()["context_format"] == "note"
    shown = [m for m in rs.context() if m.meta.get("rollsum") == "summary"]
    assert len(shown) == 1 and shown[0].role == "user" and shown[0].content.startswith("NOTE (")
    with pytest.raises(ConfigError, match=r"context_format: expected one of .*plain"):
        RollingSummarizer.from_preset("since-last", context_format="note")


def test_a_preset_registered_once_is_built_listed_and_checked_like_a_built_in() -> None:
    with PRESETS.registered(QUICK.name, QUICK), FORMATS.registered(NOTE.name, NOTE):
        assert presets.names()[-1] == "quick" and presets.get("quick") is QUICK
        with pytest.raises(ConfigError, match="preset quick: keep_last: expected"):
            RollingSummarizer.from_preset("quick", keep_last=-1)
        rs = fed("quick")
        assert rs.preset == "quick" and rs.settings.max_summary_tokens == 300
        assert rs.context()[0].content.startswith("NOTE (")
    with pytest.raises(ConfigError, match="unknown preset 'quick'; known presets: count-and-tokens"):
        RollingSummarizer.from_preset("quick")


def test_a_model_backend_registered_once_is_built_from_its_spec_priced_and_listed_in_errors() -> None:
    with BACKENDS.registered(PARROT.prefix, PARROT):
        rs = fed("since-last", model="parrot:polly")
        assert capabilities("record:c.jsonl:parrot:polly") == OFFLINE_SCRIPTED  # its registration says what it is
        assert price_for("parrot:polly").input == 0.0 and price_for("parrot:polly").known  # free, by declaration
        with pytest.raises(ConfigError, match=r"unknown prefix 'nope'; expected one of anthropic:.*; "
                                              r"parrot:NAME \(a test model that repeats\)$"):
            from_spec("nope:x")
    assert rs.history and all(r.text.startswith("PARROT polly: ") for r in rs.history)
    assert PARROT.prefix not in BACKENDS  # the block put the registry back
    with pytest.raises(ConfigError, match=r"unknown prefix 'parrot'; expected one of anthropic:.*'local'\)$"):
        from_spec("parrot:polly")


@pytest.mark.parametrize(("registry", "taken", "entry"), [
    (POLICIES, "since-last", EveryFive), (PRESETS, "since-last", QUICK), (FORMATS, "plain", NOTE),
    (BACKENDS, "fake", PARROT)],
    ids=["policy", "preset", "format", "backend"])
def test_a_built_in_name_is_not_taken_over_silently(registry: Registry[Any], taken: str, entry: Any) -> None:
    before = registry[taken]
    with pytest.raises(ConfigError, match=f"'{taken}' is already registered .*replace=True"):
        registry.register(taken, entry)
    assert registry[taken] is before


@pytest.mark.parametrize(("registry", "entry", "own"), [
    (POLICIES, EveryFive, "every-five"), (PRESETS, QUICK, "quick"), (FORMATS, NOTE, "note"),
    (BACKENDS, PARROT, "parrot")],
    ids=["policy", "preset", "format", "backend"])
def test_an_entry_is_registered_under_its_own_name(registry: Registry[Any], entry: Any, own: str) -> None:
    """The engine's `config()` records a component by its own name; registered under another,
    a rerun from that record would find something else or nothing."""
    with pytest.raises(ConfigError, match=f"'alias': the entry calls itself '{own}'"):
        registry.register("alias", entry)
    assert "alias" not in registry


def test_the_listing_order_is_the_registration_order() -> None:
    assert presets.names() == ["count-and-tokens", "since-last", "budget-rule-based", "token-ratio", "evict-window",
                               "clear-tool-results", "clear+since-last", "full-context", "truncate"]
    assert list(POLICIES)[:2] == ["count-and-tokens", "since-last"] and POLICIES["since-last"] is SinceLast
    assert next(iter(FORMATS.items()))[0] == "bracketed-assistant" and FORMATS.get("nope") is None
    assert list(BACKENDS) == ["anthropic", "fake", "replay", "record", "local"]  # `rollsum list models`' order
