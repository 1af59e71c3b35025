"""A preset's components come from the registries: ``policy=``, ``summarizer=`` (registry name or
import path, with ``summarizer_params``) and ``store=`` (a spec string) reach the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollsum import ConfigError, RollingSummarizer, presets
from rollsum.policies import EvictionWindow, SinceLast, TokenRatio
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.summarizers import ExtractiveSummarizer, StructuredSummarizer
from tests.support.helpers import chat, fake
from tests.support.plugin_components import MarkSummarizer

MARK = "tests.support.plugin_components:MarkSummarizer"


def test_presets_name_their_policy_through_the_registry() -> None:
    for preset in presets.PRESETS.values():
        rs = RollingSummarizer.from_preset(preset.name)
        assert rs.policy.name == preset.policy


def test_a_policy_override_swaps_the_trigger_and_keeps_the_format() -> None:
    rs = RollingSummarizer.from_preset("since-last", policy="token-ratio", context_window=4000, trigger_ratio=0.9)
    assert isinstance(rs.policy, TokenRatio) and rs.policy.trigger_ratio == 0.9
    assert rs.format.name == presets.get("since-last").context_format
    assert isinstance(RollingSummarizer.from_preset("evict-window").policy, EvictionWindow)
    assert isinstance(RollingSummarizer.from_preset("since-last").policy, SinceLast)
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        RollingSummarizer.from_preset("since-last", policy="nope")
    with pytest.raises(ConfigError, match="baseline"):
        RollingSummarizer.from_preset("truncate", policy="since-last")


def test_a_summarizer_by_import_path_makes_the_summaries() -> None:
    rs = RollingSummarizer.from_preset("since-last", summarizer=MARK, summarizer_params={"mark": "Z"},
                                       context_window=3000)
    assert isinstance(rs.summarizer, MarkSummarizer) and rs.summarizer.context_window == 3000
    for m in chat(60):
        rs.add(m)
    assert rs.history and all(r.text.startswith("[Z] ") for r in rs.history)
    assert rs.config()["summarizer"]["name"] == "mark"


def test_summarizer_names_resolve_through_the_registry() -> None:
    assert isinstance(RollingSummarizer.from_preset("since-last", fake("json"), summarizer="structured").summarizer,
                      StructuredSummarizer)
    extractive = RollingSummarizer.from_preset("since-last", summarizer="extractive",
                                               summarizer_params={"merge": "append"}).summarizer
    assert isinstance(extractive, ExtractiveSummarizer) and extractive.merge == "append"
    with pytest.raises(ConfigError, match="expected one of extractive, prompted, structured or an import path"):
        RollingSummarizer.from_preset("since-last", summarizer="abstractive")


def test_built_in_shaping_parameters_do_not_silently_miss_a_plugged_summarizer() -> None:
    with pytest.raises(ConfigError, match="max_output_tokens shape the built-in summarizers"):
        RollingSummarizer.from_preset("since-last", summarizer=MARK, max_output_tokens=300)
    with pytest.raises(ConfigError, match="summarizer_params: expected a table"):
        RollingSummarizer.from_preset("since-last", summarizer=MARK, summarizer_params=3)


def test_a_store_spec_string_opens_the_store(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    rs = RollingSummarizer.from_preset("since-last", store=f"sqlite:{db}", conversation_id="c1")
    assert isinstance(rs.store, SQLiteStore)
    for m in chat(5):
        rs.add(m)
    rs.close()
    again = RollingSummarizer.from_preset("since-last", store=str(db), conversation_id="c1")
    assert len(again.messages) == 5
    assert isinstance(RollingSummarizer.from_preset("since-last", store="memory:").store, MemoryStore)
