"""`EngineSettings`: one frozen, validated value behind the engine's keyword parameters (issue #20, item 4)."""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any

import anthropic
import pytest

from rollsum import ConfigError, Message, RollingSummarizer, policies, presets
from rollsum.params import RANGES
from rollsum.settings import SETTING_NAMES, WIRING_NAMES, EngineSettings, EngineWiring, engine_parameters
from rollsum.summarizers.extractive import ExtractiveSummarizer


def test_the_constructor_takes_exactly_the_settings_and_the_wiring_with_the_same_types_and_defaults() -> None:
    """`rollsum.presets` validates engine parameters against `rollsum.settings` (it does not
    import the engine): a keyword added to the constructor but not to the settings, or a default
    or type that differs, would be checked against the wrong declaration."""
    params = inspect.signature(RollingSummarizer).parameters
    names = set(params) - {"self", "policy", "summarizer", "preset"}
    assert names == engine_parameters() == set(SETTING_NAMES) | set(WIRING_NAMES)
    init_hints = typing.get_type_hints(RollingSummarizer.__init__)
    settings_hints = typing.get_type_hints(EngineSettings)
    wiring_hints = typing.get_type_hints(EngineWiring)
    for f in dataclasses.fields(EngineSettings):
        assert params[f.name].default == f.default, f.name
        assert init_hints[f.name] == settings_hints[f.name], f.name
    for name in WIRING_NAMES:
        assert init_hints[name] == wiring_hints[name], name


def test_presets_see_the_same_engine_parameters_with_or_without_the_engine_class() -> None:
    for name, preset in presets.PRESETS.items():
        policy = policies.get(preset.policy)
        assert presets.valid_params(policy) == presets.valid_params(policy, RollingSummarizer), name
    for key, value in (("retries", 101), ("guard_low_water", 1.0), ("store", 3), ("summary_share", True)):
        assert presets.param_problem("since-last", key, value) == \
            presets.param_problem("since-last", key, value, engine_cls=RollingSummarizer) is not None, key


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("max_passes", 0, "max_passes: expected an integer >= 1, got 0"),
    ("ledger_share", 1.5, "ledger_share: expected a number in (0, 1], got 1.5"),
    ("backoff_s", -1.0, "backoff_s: expected a number in [0, 3600], got -1.0"),
    ("context_window", True, "context_window: expected an integer >= 1, got True"),
    ("max_summary_tokens", 2.5, "max_summary_tokens: expected an integer >= 1, got 2.5"),
    ("clear_keep", -1, "clear_keep: expected an integer >= 0, got -1"),
    ("guard_low_water", 1, "guard_low_water: expected a number in (0, 1), got 1"),
])
def test_each_number_is_checked_against_the_range_in_params(key: str, value: Any, expected: str) -> None:
    """The ranges live in `rollsum.params.RANGES` only: a hand-written check per setting left
    most of them (max_passes=0, ledger_share=1.5, backoff_s=-1) unchecked before."""
    assert key in RANGES
    with pytest.raises(ConfigError) as err:
        EngineSettings(**{key: value})
    assert str(err.value) == expected
    with pytest.raises(ConfigError):
        RollingSummarizer(policies.get("full-context")(), ExtractiveSummarizer(), **{key: value})


def test_rules_that_tie_two_settings_together() -> None:
    with pytest.raises(ConfigError, match="reserved_output_tokens"):
        EngineSettings(context_window=100, reserved_output_tokens=100)
    with pytest.raises(ConfigError, match="ledger"):
        EngineSettings(ledger="sometimes")  # type: ignore[arg-type]
    small = EngineSettings(context_window=100, reserved_output_tokens=50)  # fine while nothing keeps it
    assert small.problem() is None and small.problem(windowed=True) is not None
    with pytest.raises(ConfigError, match="at least 64"):
        RollingSummarizer.from_settings(policies.get("full-context")(), ExtractiveSummarizer(), dataclasses.replace(
            small, enforce_window=True))


@pytest.mark.parametrize("tools", [5, None, ["grep", 3]])
def test_excluded_tools_that_are_not_tool_names_are_a_config_error(tools: Any) -> None:
    """Not a bare TypeError from deep inside (5 is not iterable), nor a list that never matches."""
    with pytest.raises(ConfigError, match="clear_exclude_tools: expected a list of tool names, got"):
        EngineSettings(clear_exclude_tools=tools)
    with pytest.raises(ConfigError, match="clear_exclude_tools: expected a list of tool names"):
        RollingSummarizer.from_preset("clear-tool-results", clear_exclude_tools=tools)


@pytest.mark.parametrize(("parts", "words"), [
    (lambda: (policies.get("since-last")(), ExtractiveSummarizer(), {"context_window": 8000}),
     "settings: expected an EngineSettings, got dict"),
    (lambda: (None, ExtractiveSummarizer(), EngineSettings()),
     "policy: expected a Policy (with decide()), got NoneType"),
    (lambda: (policies.get("since-last")(), "extractive", EngineSettings()),
     "summarizer: expected a Summarizer (with summarize()), got str"),
])
def test_an_engine_refuses_parts_of_the_wrong_kind_when_it_is_made(parts: Any, words: str) -> None:
    """Not an AttributeError from inside (a dict for the settings), nor a failure on every
    summary later (a summarizer's name instead of one)."""
    policy, summarizer, settings = parts()
    with pytest.raises(ConfigError, match=re.escape(words)):
        RollingSummarizer.from_settings(policy, summarizer, settings)


@pytest.mark.parametrize(("wiring", "words"), [
    ({"counter": "heuristic"}, "counter: expected a TokenCounter or None, got 'heuristic'"),
    ({"clock": 5}, "clock: expected a callable, got 5"),
    ({"sleep": None}, "sleep: expected a callable, got None"),
    ({"on_event": "print"}, "on_event: expected a callable or None, got 'print'"),
])
def test_an_engine_refuses_a_counter_or_callback_of_the_wrong_kind_when_it_is_made(wiring: Any, words: str) -> None:
    """from_preset checked these; from_settings and the keyword constructor did not: a counter by
    name was an AttributeError, and a clock of 5 failed every summary (an internal error after
    each stored message)."""
    policy, summarizer = policies.get("since-last")(), ExtractiveSummarizer()
    with pytest.raises(ConfigError, match=re.escape(words)):
        RollingSummarizer.from_settings(policy, summarizer, EngineSettings(), **wiring)
    with pytest.raises(ConfigError, match=re.escape(words)):
        RollingSummarizer(policy, summarizer, **wiring)
    with pytest.raises(ConfigError, match=re.escape(words)):  # one rule, one wording: from_preset's too
        RollingSummarizer.from_preset("since-last", **wiring)


@pytest.mark.parametrize("cid", ["", 7])
def test_an_empty_conversation_id_is_refused_not_replaced_by_a_new_one(cid: Any) -> None:
    """"" (an app's missing id) made a fresh random conversation on every open, so a conversation
    reopened that way never found its history."""
    with pytest.raises(ConfigError, match="conversation_id: expected a non-empty string or None"):
        RollingSummarizer.from_settings(policies.get("since-last")(), ExtractiveSummarizer(), EngineSettings(),
                                        conversation_id=cid)
    with pytest.raises(ConfigError, match="conversation_id"):
        RollingSummarizer.from_preset("since-last", conversation_id=cid)


@pytest.mark.parametrize(("model", "words"), [
    (5, "got int"),
    (anthropic.Anthropic(api_key="sk-ant-test"), "got Anthropic (an anthropic client: wrap it, "
                                                  "rollsum.models.AnthropicModel(client=...))"),
])
def test_a_preset_refuses_a_model_that_is_not_one(model: object, words: str) -> None:
    """An SDK client given as the model (an easy slip) failed every summary, as an internal error."""
    with pytest.raises(ConfigError, match=re.escape("model: expected a model spec string") + ".*" + re.escape(words)):
        RollingSummarizer.from_preset("token-ratio", model=model)


def test_excluded_tools_may_come_from_a_generator() -> None:
    tools = (t for t in ["grep", "bash"])  # read once: the tuple is made before the rules read it
    assert EngineSettings(clear_exclude_tools=tools).clear_exclude_tools == ("grep", "bash")  # type: ignore[arg-type]


def test_derived_numbers() -> None:
    s = EngineSettings(context_window=10_000, reserved_output_tokens=2_000, summary_share=0.1, max_summary_tokens=700)
    assert (s.limit, s.summary_budget, s.request_tokens) == (8_000, 700, 10_000)
    assert dataclasses.replace(s, max_summary_tokens=5_000).summary_budget == 800
    assert dataclasses.replace(s, max_request_tokens=3).request_tokens == 3


def test_an_engine_from_a_settings_value_is_the_engine_from_the_same_keywords() -> None:
    kw: dict[str, Any] = {"context_window": 900, "guard_min_tail": 3, "summary_share": 0.2, "retries": 0,
                          "context_format": "tagged-system", "min_messages_per_attempt": 2}
    policy = policies.get("since-last")(messages_per_summary=6, keep_last=2)
    by_kw = RollingSummarizer(policy, ExtractiveSummarizer(), enforce_window=True, conversation_id="c", **kw)
    by_value = RollingSummarizer.from_settings(policy, ExtractiveSummarizer(),
                                               EngineSettings(enforce_window=True, **kw), conversation_id="c")
    assert by_value.settings == by_kw.settings and by_value.config() == by_kw.config()
    assert by_value.context_window == 900 and by_value.guard_min_tail == 3  # attributes read the settings
    for i in range(60):
        m = Message("user" if i % 2 else "assistant", f"message {i} about item-{i} " * (1 + i % 9), id=f"m{i}")
        a, b = by_kw.add(m), by_value.add(m)
        assert (a and (a.kind, a.messages, a.tokens_after)) == (b and (b.kind, b.messages, b.tokens_after))
    assert [r.text for r in by_kw.history] == [r.text for r in by_value.history] and by_kw.history
    assert by_kw.context() == by_value.context()


def test_a_list_given_is_copied_so_the_value_stays_frozen() -> None:
    tools = ["grep"]
    s = EngineSettings(clear_tool_results=True, clear_exclude_tools=tools)
    tools.append("bash")
    assert s.clear_exclude_tools == ("grep",) and hash(s) == hash(EngineSettings(clear_tool_results=True,
                                                                                 clear_exclude_tools=("grep",)))


def test_ledger_for_resolves_auto_against_the_summarizer_only() -> None:
    """"auto" is off for the extractive summarizer and "pin" for others; an explicit mode wins."""
    extractive = ExtractiveSummarizer()
    other = type("Model", (), {"name": "llm"})()
    assert EngineSettings().ledger_for(extractive) == "off"
    assert EngineSettings().ledger_for(other) == "pin"
    assert EngineSettings(ledger="retry").ledger_for(extractive) == "retry"
