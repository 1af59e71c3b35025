from __future__ import annotations

import pytest

from rollsum.errors import ConfigError
from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
from rollsum.summarizers.extractive import score_sentence
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord

FILLER = "That sounds like a really nice thing to talk about today honestly."


def chat() -> list[Message]:
    return [
        Message("user", "Hi! My order PAY-4821 never arrived. I'm allergic to peanuts.", id="1"),
        Message("assistant", "Sorry to hear that. " + FILLER, id="2"),
        Message("user", "Ok.", id="3"),
        Message("assistant", "We decided to refund $42 by March 14.", id="4"),
        Message("tool", "src/a.py:1:x", id="5", name="grep", meta={"pattern": "x"}),
    ]


def test_keeps_fact_sentences_with_speaker_in_original_order() -> None:
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", chat()))
    lines = d.text.split("\n")
    assert "User: Hi! My order PAY-4821 never arrived." not in lines  # split into sentences
    assert lines.index("User: My order PAY-4821 never arrived.") < lines.index(
        "Assistant: We decided to refund $42 by March 14.")
    assert "User: I'm allergic to peanuts." in lines
    assert '[✓ grep: Pattern: "x" | Matches: 1 | Files: 1 | Top files: src/a.py]' in lines
    assert "User: Ok." not in lines  # filler without signal is dropped
    assert d.model == "extractive" and d.usage.calls == 0


def test_is_deterministic() -> None:
    a = ExtractiveSummarizer(max_tokens=40).summarize(SummaryRequest("c", chat()))
    b = ExtractiveSummarizer(max_tokens=40).summarize(SummaryRequest("c", chat()))
    assert a == b


def test_scoring_prefers_facts_over_filler() -> None:
    assert score_sentence("Let's go with Postgres 16 on 2024-05-01.") > score_sentence(FILLER) > 0
    assert score_sentence("Ok thanks") == 0
    assert score_sentence("I prefer window seats, never aisle.", user=True) > score_sentence(
        "I prefer window seats, never aisle.")


@pytest.mark.parametrize("budget", [10, 25, 60, 500])
def test_select_never_exceeds_max_tokens_and_notes_cuts(budget: int) -> None:
    counter = HeuristicCounter()
    span = chat() * 5
    d = ExtractiveSummarizer(max_tokens=budget).summarize(SummaryRequest("c", span))
    assert counter.count(d.text) <= budget or d.text.startswith("[")
    total = ExtractiveSummarizer(max_tokens=10_000).summarize(SummaryRequest("c", span))
    assert (len(d.text) < len(total.text)) == any(n.startswith("kept ") for n in d.notes)


def test_request_share_lowers_the_budget() -> None:
    d = ExtractiveSummarizer(max_tokens=500).summarize(SummaryRequest("c", chat() * 5, max_tokens=20))
    assert HeuristicCounter().count(d.text) <= 20


def test_select_merges_previous_and_prefers_older_on_ties() -> None:
    s = ExtractiveSummarizer(max_tokens=500)
    first = s.summarize(SummaryRequest("c", chat()))
    prev = SummaryRecord(id="r", conversation_id="c", text=first.text)
    later = [Message("user", f"My order PAY-{i} never arrived.", id=f"n{i}") for i in range(100, 140)]
    tight = ExtractiveSummarizer(max_tokens=120).summarize(SummaryRequest("c", later, previous=prev))
    assert "PAY-4821" in tight.text  # early identifier survives the second summarization
    assert "PAY-100 " in tight.text and "PAY-139" not in tight.text  # equal scores: older wins
    assert tight.text.index("PAY-4821") < tight.text.index("PAY-100 ")  # original order kept


def test_higher_scoring_new_lines_displace_weaker_old_ones() -> None:
    prev = SummaryRecord(id="r", conversation_id="c", text="Assistant: " + FILLER)
    later = [Message("user", f"Ticket ABC-{i} is due on May {i}.", id=f"n{i}") for i in range(1, 9)]
    d = ExtractiveSummarizer(max_tokens=80).summarize(SummaryRequest("c", later, previous=prev))
    assert FILLER not in d.text and "ABC-1 " in d.text


def test_previous_lines_from_a_narrative_summary_are_split() -> None:
    prev = SummaryRecord(id="r", conversation_id="c", text=("The user lives in Lisbon since 2019. " * 20))
    d = ExtractiveSummarizer(max_tokens=30).summarize(SummaryRequest("c", chat()[:1], previous=prev))
    assert HeuristicCounter().count(d.text) <= 30


def test_nothing_salient_still_yields_text_and_a_note() -> None:
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", [Message("user", "ok"), Message("assistant", "k")]))
    assert d.text == "[2 messages with no extractable content]" and "no salient sentences found" in d.notes


def test_append_mode_versions_and_condenses_like_seed_002() -> None:
    s = ExtractiveSummarizer(max_tokens=60, merge="append", conversational=False)
    one = s.summarize(SummaryRequest("c", chat()[:2]))
    assert one.text.startswith("--- Summarized Context (2 items) ---")
    prev = SummaryRecord(id="r", conversation_id="c", text=one.text, seq=0)
    two = s.summarize(SummaryRequest("c", chat()[2:3], previous=prev))
    assert two.text.startswith(one.text) and "\n\n[Update 2]\n--- Summarized Context (1 items)" in two.text
    big = SummaryRecord(id="r", conversation_id="c", text="x " * 400, seq=4)
    three = s.summarize(SummaryRequest("c", chat()[2:3], previous=big))
    assert three.text.startswith("[Condensed history]\n--- Summarized Context (1 items)")
    assert any("condensed" in n for n in three.notes)


def test_conversational_off_uses_one_line_per_message() -> None:
    d = ExtractiveSummarizer(conversational=False, merge="append").summarize(SummaryRequest("c", chat()))
    assert d.text.count("\n") == 5 and "[✓ user: Hi! My order PAY-4821" in d.text


@pytest.mark.parametrize("kw", [{"max_tokens": 0}, {"merge": "mix"}])
def test_bad_parameters_are_config_errors(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ExtractiveSummarizer(**kw)  # type: ignore[arg-type]
