from __future__ import annotations

import pytest

from rollsum.errors import ErrorKind, ModelError, SummarizeError
from rollsum.summarizers import PromptedSummarizer, SummaryRequest
from rollsum.types import Message, SummaryRecord, Usage
from tests.rollsum.summarizers.stub_model import StubModel


def msgs(n: int, size: int = 20) -> list[Message]:
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(Message(role, f"message {i} " + "x" * size, id=f"m{i}"))  # type: ignore[arg-type]
    return out


def test_transcript_lines_are_labelled_by_speaker_and_tool() -> None:
    model = StubModel()
    span = [Message("user", "Book a table for Dana", id="1"), Message("assistant", "Done", id="2"),
            Message("tool", "line1\nline2", id="3", name="read_file")]
    PromptedSummarizer(model).summarize(SummaryRequest("c", span))
    prompt = model.prompts[0]
    assert "User: Book a table for Dana\nAssistant: Done\nTool (read_file): line1\nline2" in prompt


def test_first_summary_says_no_previous_and_later_ones_include_it() -> None:
    model = StubModel(["first", "second"])
    s = PromptedSummarizer(model)
    s.summarize(SummaryRequest("c", msgs(2)))
    assert "None (start of conversation)" in model.prompts[0]
    prev = SummaryRecord(id="r1", conversation_id="c", text="Dana moved to Lisbon.", pinned_facts=("PAY-1",))
    s.summarize(SummaryRequest("c", msgs(2), previous=prev))
    assert "Dana moved to Lisbon." in model.prompts[1] and "PAY-1" in model.prompts[1]
    assert "None (start of conversation)" not in model.prompts[1]


def test_must_keep_facts_are_listed_for_verbatim_keeping() -> None:
    model = StubModel()
    PromptedSummarizer(model).summarize(SummaryRequest("c", msgs(2), must_keep=("PAY-4821", "March 14")))
    assert "Keep these verbatim if still relevant:\n- PAY-4821\n- March 14" in model.prompts[0]


def test_draft_carries_model_prompt_identity_and_usage() -> None:
    model = StubModel(["  The user asked about X.  "])
    s = PromptedSummarizer(model, "count-and-tokens/v1", max_output_tokens=333)
    d = s.summarize(SummaryRequest("c", msgs(3)))
    assert d.text == "The user asked about X."
    assert d.model == "stub:model" and d.prompt_id == "count-and-tokens/v1"
    assert d.prompt_hash == s.template.sha256 and d.notes == ()
    assert d.usage == Usage(100, 10, calls=1)
    req = model.requests[0]
    assert req.max_tokens == 333 and req.prompt_id == "count-and-tokens/v1" and req.temperature == 0.0
    assert req.system == s.template.system and [m.role for m in req.messages] == ["user"]


def test_word_limit_shrinks_to_the_summary_token_share() -> None:
    model = StubModel()
    PromptedSummarizer(model, "count-and-tokens/v1").summarize(SummaryRequest("c", msgs(2), max_tokens=200))
    assert "under 150 words" in model.prompts[0]


@pytest.mark.parametrize("reply", ["", "   \n "])
def test_empty_output_is_a_validation_error(reply: str) -> None:
    with pytest.raises(SummarizeError) as e:
        PromptedSummarizer(StubModel([reply])).summarize(SummaryRequest("c", msgs(2)))
    assert e.value.transport is False and e.value.kind is ErrorKind.EMPTY


@pytest.mark.parametrize(("kind", "transport"), [(ErrorKind.TIMEOUT, True), (ErrorKind.RATE_LIMIT, True),
                                                  (ErrorKind.CLIENT, False)])
def test_model_errors_are_classified(kind: ErrorKind, transport: bool) -> None:
    model = StubModel([ModelError("boom", kind)])
    with pytest.raises(SummarizeError) as e:
        PromptedSummarizer(model).summarize(SummaryRequest("c", msgs(2)))
    assert e.value.transport is transport and e.value.kind is kind


def test_span_too_big_for_the_window_is_chunked_and_folded() -> None:
    span = msgs(40, size=400)  # ~40 × 105 tokens, far more than a 2,000-token window
    small = StubModel([f"part {i}" for i in range(1, 20)], context_window=2000)
    d = PromptedSummarizer(small, max_output_tokens=200).summarize(SummaryRequest("c", span))
    n = len(small.requests)
    assert n > 1 and f"chunked into {n} parts" in d.notes
    assert d.text == f"part {n}" and d.usage.calls == n
    # every message appears in exactly one chunk, in order, and each chunk folds the previous output
    joined = "\n".join(small.prompts)
    assert all(joined.count(f"message {i} ") == 1 for i in range(40))
    for i in range(1, n):
        assert f"part {i}" in small.prompts[i]
    assert all(len(p) / 4 < 2000 - 200 for p in small.prompts)


def test_transcript_budget_forces_chunking() -> None:
    model = StubModel([f"p{i}" for i in range(50)])
    d = PromptedSummarizer(model, transcript_budget=300).summarize(SummaryRequest("c", msgs(20, size=200)))
    assert len(model.requests) > 1 and any(n.startswith("chunked into") for n in d.notes)


def test_single_huge_message_is_truncated_from_the_middle_visibly() -> None:
    big = Message("user", "START " + "y" * 40_000 + " END", id="big")
    d = PromptedSummarizer(StubModel(["ok"], context_window=4000), max_output_tokens=200).summarize(
        SummaryRequest("c", [big]))
    assert any(n.startswith("truncated message big from ") for n in d.notes)


def test_truncated_prompt_keeps_start_end_and_marker() -> None:
    model = StubModel(["ok"], context_window=4000)
    big = Message("user", "START " + "y" * 40_000 + " END", id="big")
    PromptedSummarizer(model, max_output_tokens=200).summarize(SummaryRequest("c", [big]))
    p = model.prompts[0]
    assert "User: START" in p and "END" in p and "characters omitted" in p


def test_window_too_small_for_any_transcript_is_an_overflow_error() -> None:
    model = StubModel(["ok"], context_window=500)
    with pytest.raises(SummarizeError) as e:
        PromptedSummarizer(model, max_output_tokens=400).summarize(SummaryRequest("c", msgs(3)))
    assert e.value.kind is ErrorKind.OVERFLOW and e.value.transport is False
    assert model.requests == []


def test_params_identify_the_configuration() -> None:
    s = PromptedSummarizer(StubModel(), "evict-window/v1", max_output_tokens=512)
    p = s.params()
    assert p["prompt"] == "evict-window/v1" and p["model"] == "stub:model" and p["max_output_tokens"] == 512
    assert len(p["prompt_sha256"]) == 64 and s.name == "prompted"
