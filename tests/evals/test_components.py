"""The harness reads what a configuration is from the components' own declarations."""

from __future__ import annotations

from rollsum_evals.spec import components

from rollsum.summarizers.extractive import ExtractiveSummarizer


def test_baselines_summarize_nothing_whatever_the_model() -> None:
    assert components.is_baseline("full-context") and components.is_baseline("truncate")
    assert not components.is_baseline("since-last") and not components.is_baseline("no-such-preset")
    assert components.of_config("truncate", "anthropic:claude-haiku-4-5") == components.NO_SUMMARIZER


def test_the_builtin_summarizer_and_backends_answer_for_themselves() -> None:
    assert components.is_builtin("extractive") and components.is_builtin("")
    assert components.of_model("extractive") == ExtractiveSummarizer.capabilities
    assert not components.of_model("extractive").follows_prompt
    paid = components.of_config("since-last", "anthropic:claude-haiku-4-5")
    assert not paid.free and not paid.offline and paid.follows_prompt
