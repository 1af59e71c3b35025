"""One meaning per parameter (issue #14): what `from_preset` (or a sweep, which passes a Unit's
params plus `context_window`) is given reaches every component that uses it, and `config()`
reports the resolved values.

Before: `context_window` given to token-ratio reached only the policy; the engine stayed at
200,000, so the summary's budget was 1,024 tokens instead of 10 % of the window.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollsum import ConfigError, RollingSummarizer, presets
from tests.support.helpers import chat, fake

# (preset, max_summary_tokens, reserved_output_tokens) at the preset's defaults
DEFAULTS = {"count-and-tokens": (1024, 0), "since-last": (600, 0), "budget-rule-based": (500, 1024),
            "token-ratio": (1024, 0), "evict-window": (1024, 0), "full-context": (1024, 0),
            "truncate": (1024, 0), "clear-tool-results": (1024, 0), "clear+since-last": (600, 0)}
WINDOWED_ALWAYS = {"token-ratio", "budget-rule-based", "evict-window", "clear-tool-results"}
WINDOWED_WHEN_GIVEN = {"since-last", "count-and-tokens", "clear+since-last"}


def test_every_preset_is_covered() -> None:
    assert set(presets.names()) == set(DEFAULTS)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
@pytest.mark.parametrize("window", [2_000, 8_000, 32_000])
def test_context_window_reaches_the_engine_the_budget_and_the_policy(name: str, window: int) -> None:
    rs = RollingSummarizer.from_preset(name, context_window=window)
    cfg = rs.config()
    max_summary, reserved = DEFAULTS[name]
    assert cfg["context_window"] == window
    assert cfg["reserved_output_tokens"] == reserved
    assert cfg["summary_budget"] == min(max_summary, int(0.10 * (window - reserved)))
    assert cfg["max_request_tokens"] == window
    assert cfg["enforce_window"] == (name in WINDOWED_ALWAYS | WINDOWED_WHEN_GIVEN)
    if "context_window" in cfg["policy"]["params"]:
        assert cfg["policy"]["params"]["context_window"] == window


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_without_a_window_only_the_windowed_presets_guard(name: str) -> None:
    rs = RollingSummarizer.from_preset(name)
    assert rs.config()["context_window"] == 200_000
    assert rs.enforce_window == (name in WINDOWED_ALWAYS)


def test_the_summary_in_context_takes_its_share_of_the_given_window() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=2000)
    for m in chat(60, words=60):
        rs.add(m)
        assert rs.counter.count(rs.summary_text()) <= 200 + 15  # 10 % of 2,000 (+ its tag)
    assert rs.summary is not None


def test_a_sweep_units_params_resolve_like_a_direct_call() -> None:
    unit_params: dict[str, Any] = {"trigger_ratio": 0.7, "reset_ratio": 0.5}
    rs = RollingSummarizer.from_preset("token-ratio", **unit_params, context_window=4000)
    cfg = rs.config()
    assert cfg["policy"]["params"]["trigger_ratio"] == 0.7 and cfg["summary_budget"] == 400


def test_shared_parameters_reach_every_owner() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", context_window=6000, reserved_output_tokens=2000,
                                       max_summary_tokens=300)
    cfg = rs.config()
    assert cfg["policy"]["params"]["reserved_output_tokens"] == 2000 and cfg["reserved_output_tokens"] == 2000
    assert cfg["policy"]["params"]["max_summary_tokens"] == 300 and cfg["max_summary_tokens"] == 300
    assert cfg["summary_budget"] == 300  # min(300, 10 % of 4,000)
    online = RollingSummarizer.from_preset("budget-rule-based", fake(), max_summary_tokens=300)
    assert online.config()["summarizer"]["params"]["max_output_tokens"] == 300


def test_the_policys_own_window_name_is_the_window() -> None:
    rs = RollingSummarizer.from_preset("budget-rule-based", max_context_tokens=5000)
    assert rs.config()["context_window"] == 5000 and rs.config()["summary_budget"] == int(0.1 * (5000 - 1024))
    with pytest.raises(ConfigError, match="max_context_tokens=5000 and context_window=6000"):
        RollingSummarizer.from_preset("budget-rule-based", max_context_tokens=5000, context_window=6000)


def test_guard_parameters_are_reported_and_checked() -> None:
    cfg = RollingSummarizer.from_preset("since-last", context_window=4000, guard_low_water=0.5).config()
    assert cfg["guard_low_water"] == 0.5 and cfg["enforce_window"] is True
    with pytest.raises(ConfigError, match="guard_low_water"):
        RollingSummarizer.from_preset("since-last", guard_low_water=1.5)
    with pytest.raises(ConfigError, match="at least 64"):
        RollingSummarizer.from_preset("token-ratio", context_window=50)
    assert RollingSummarizer.from_preset("since-last", enforce_window=False,
                                         context_window=4000).enforce_window is False


def test_model_summarizer_defaults_follow_the_seed() -> None:
    ratio = RollingSummarizer.from_preset("token-ratio", fake("json")).config()["summarizer"]["params"]
    assert (ratio["filter_noise"], ratio["transcript_budget"], ratio["transcript_overflow"]) == \
        (True, 8000, "trim-oldest")
    budget = RollingSummarizer.from_preset("budget-rule-based", fake()).config()["summarizer"]["params"]
    assert budget["max_message_chars"] == 1000
    plain = RollingSummarizer.from_preset("since-last", fake()).config()["summarizer"]["params"]
    assert (plain["filter_noise"], plain["max_message_chars"], plain["transcript_overflow"]) == (False, None, "chunk")


def test_a_summarizer_object_is_used_as_given_and_cannot_be_shaped_as_well() -> None:
    from rollsum.summarizers import ExtractiveSummarizer

    kept = ExtractiveSummarizer(merge="append")
    rs = RollingSummarizer.from_preset("since-last", summarizer=kept)
    assert rs.summarizer is kept
    with pytest.raises(ConfigError, match=r"merge shape\(s\) the summarizer the preset makes.*summarizer_for"):
        RollingSummarizer.from_preset("since-last", summarizer=kept, merge="select")
    with pytest.raises(ConfigError, match=r"expected a summarizer name, an import path or a Summarizer.*got int"):
        RollingSummarizer.from_preset("since-last", summarizer=3)
    with pytest.raises(ConfigError, match=r"got the class ExtractiveSummarizer \(make one"):
        RollingSummarizer.from_preset("since-last", summarizer=ExtractiveSummarizer)


def test_summarizer_for_makes_what_the_preset_would() -> None:
    made = presets.summarizer_for("since-last", merge="append")
    assert made.params() == RollingSummarizer.from_preset("since-last", merge="append").summarizer.params()  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="store connect"):
        presets.summarizer_for("since-last", store="memory")


@pytest.mark.parametrize("name", presets.names())
def test_a_kept_model_summarizer_brings_the_presets_fallback_without_the_model_again(name: str) -> None:
    # budget-rule-based's extractive fallback came only with `model` given to from_preset too:
    # from_preset(name, summarizer=summarizer_for(name, model)) had none (a failed summary stayed failed)
    kept = presets.summarizer_for(name, fake())
    built = RollingSummarizer.from_preset(name, summarizer=kept)
    assert built.config() == RollingSummarizer.from_preset(name, fake()).config()
    extractive = RollingSummarizer.from_preset(name, summarizer=presets.summarizer_for(name))
    assert extractive.fallback is None


@pytest.mark.parametrize("name", ["since-last", "budget-rule-based"])
def test_a_model_beside_a_kept_summarizer_made_without_it_is_refused_not_ignored(name: str) -> None:
    # from_preset(name, model, summarizer=summarizer_for(name)) made extractive summaries and never
    # called the model: the caller's model was silently unused
    with pytest.raises(ConfigError, match=r"model is not used: .* made without a model; make it with the model"):
        RollingSummarizer.from_preset(name, fake(), summarizer=presets.summarizer_for(name))
    kept = presets.summarizer_for(name, fake())  # the documented pattern: the model in both places
    assert RollingSummarizer.from_preset(name, fake(), summarizer=kept).summarizer is kept


def test_a_window_below_the_presets_own_reserved_room_says_the_preset_chose_that_room() -> None:
    # was "reserved_output_tokens (1024) must be >= 0 and below context_window (1000)": a parameter
    # the caller never gave, without the preset's name (the rule's ConfigError passed untouched)
    with pytest.raises(ConfigError, match=r"^preset budget-rule-based: reserved_output_tokens \(1024\) .*"
                                          r"\(reserved_output_tokens=1024 is this preset's default; give a value"):
        RollingSummarizer.from_preset("budget-rule-based", context_window=1000)
    with pytest.raises(ConfigError, match=r"context_window \(1000\)$"):  # given: nothing to explain
        RollingSummarizer.from_preset("budget-rule-based", context_window=1000, reserved_output_tokens=2000)
