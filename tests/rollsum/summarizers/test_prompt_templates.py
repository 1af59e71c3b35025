from __future__ import annotations

from pathlib import Path

import pytest

from rollsum import prompts
from rollsum.errors import ConfigError

SHIPPED = ["budget-rule-based/v1", "count-and-tokens/v1", "evict-window/v1", "since-last/v1", "structured/v1"]


def render(prompt_id: str, max_words: int | None = None) -> str:
    tpl = prompts.get(prompt_id)
    body = tpl.render(transcript="User: hi", previous_summary="None (start of conversation)",
                      max_words=max_words)
    return tpl.system + "\n" + body


def test_names_lists_one_template_per_seed() -> None:
    assert prompts.names() == SHIPPED


@pytest.mark.parametrize("prompt_id", SHIPPED)
def test_every_template_renders_transcript_previous_summary_and_must_keep(prompt_id: str) -> None:
    tpl = prompts.get(prompt_id)
    out = tpl.render(transcript="User: TRANSCRIPT-MARK", previous_summary="PREV-MARK",
                     must_keep="KEEP-MARK")
    assert "TRANSCRIPT-MARK" in out and "PREV-MARK" in out and "KEEP-MARK" in out
    assert tpl.id == prompt_id and len(tpl.sha256) == 64 and tpl.system


def test_count_and_tokens_meets_seed_000() -> None:
    text = render("count-and-tokens/v1")
    for phrase in ("Key topics", "decisions", "emotional tone", "third person", "500 words",
                   "previous summary"):
        assert phrase in text, phrase
    assert "action items" in text.lower()


def test_since_last_meets_seed_001() -> None:
    text = render("since-last/v1")
    assert "300 words" in text
    assert "plain text" in text and "JSON" in text  # plain text, not JSON
    for word in ("names", "dates", "places"):
        assert word in text
    assert "Integrate" in text and "memory so far" in text.lower()


def test_evict_window_meets_seed_004() -> None:
    text = render("evict-window/v1").lower()
    for phrase in ("files read", "written", "decisions", "problems encountered", "current task state",
                   "factual and brief"):
        assert phrase in text, phrase


def test_budget_rule_based_meets_seed_002_llm_mode() -> None:
    text = render("budget-rule-based/v1", max_words=123).lower()
    for phrase in ("files read", "modified", "succeeded", "failed", "key decisions", "current state",
                   "under 123 words"):
        assert phrase in text, phrase


def test_structured_meets_seed_003() -> None:
    text = render("structured/v1")
    assert "strict JSON" in text and "exactly as written" in text
    assert "empty array" in text and "never make an item up" in text
    for key in ("summary", "key_points", "participants", "decisions", "action_items", "unresolved",
                "entities"):
        assert f'"{key}"' in text
    assert "numbers" in text and "dates" in text and "identifiers" in text


def test_max_words_override_reaches_the_prompt() -> None:
    assert "under 42 words" in render("since-last/v1", max_words=42)


def test_custom_template_from_a_file(tmp_path: Path) -> None:
    f = tmp_path / "mine.txt"
    f.write_text("max_words: 50\n--- system ---\nBe terse.\n--- user ---\n"
                 "Summary {{json}} of {transcript} after {previous_summary} in {max_words} words\n")
    tpl = prompts.get(str(f))
    assert tpl.system == "Be terse." and tpl.max_words == 50
    assert tpl.render(transcript="T", previous_summary="P") == "Summary {json} of T after P in 50 words"


def test_plain_text_file_without_sections_is_the_user_template(tmp_path: Path) -> None:
    f = tmp_path / "plain.txt"
    f.write_text("Summarize: {transcript}\nBefore: {previous_summary}\n")
    tpl = prompts.get(str(f))
    assert tpl.render(transcript="T", previous_summary="P") == "Summarize: T\nBefore: P"


def test_sha_changes_when_the_template_changes(tmp_path: Path) -> None:
    f = tmp_path / "p.txt"
    f.write_text("{transcript} {previous_summary}")
    a = prompts.get(str(f)).sha256
    f.write_text("{transcript} {previous_summary}!")
    assert prompts.get(str(f)).sha256 != a


@pytest.mark.parametrize(("body", "expected"), [
    ("{transcript} {previous_summary} {typo}", "unknown placeholder {typo}"),
    ("# x\n--- user ---\n{transcript}\n{previous_summary} {typo}", ":4: unknown placeholder {typo}"),
    ("{previous_summary} only", "must contain {transcript}"),
    ("{transcript} {previous_summary} {", "malformed braces"),
    ("max_words: lots\n--- user ---\n{transcript} {previous_summary}", "max_words"),
    ("nonsense header\n--- user ---\n{transcript} {previous_summary}", ":1:"),
    ("--- system ---\nx\n", "missing '--- user ---'"),
])
def test_bad_template_file_is_a_config_error_naming_the_file(tmp_path: Path, body: str, expected: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_text(body)
    with pytest.raises(ConfigError) as e:
        prompts.get(str(f))
    assert str(f) in str(e.value) and expected in str(e.value)


def test_unknown_prompt_id_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="since-last/v1"):
        prompts.get("since-last/v9")


def test_a_template_with_a_byte_order_mark_reads_as_without_it(tmp_path: Path) -> None:
    # Notepad's UTF-8 starts with a BOM: it became the first character of the prompt sent
    f, plain = tmp_path / "bom.txt", tmp_path / "plain.txt"
    body = "max_words: 50\n--- system ---\nBe terse.\n--- user ---\n{transcript} after {previous_summary}\n"
    plain.write_text(body)
    f.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert prompts.get(str(f)).max_words == 50 and prompts.get(str(f)).system == prompts.get(str(plain)).system


def test_a_directory_given_as_a_template_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"prompt '{tmp_path}': a directory; expected one of budget-rule-based/v1"):
        prompts.get(str(tmp_path))
