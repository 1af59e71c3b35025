from __future__ import annotations

import json
import logging

import pytest

from rollsum.errors import ErrorKind, SummarizeError
from rollsum.summarizers import StructuredSummarizer, SummaryRequest
from rollsum.types import FACET_NAMES, Message
from tests.rollsum.summarizers.stub_model import StubModel

SPAN = [Message("user", "Rename parse_invoice in src/billing.py by 2024-03-14", id="1"),
        Message("assistant", "Will do.", id="2")]
GOOD = {
    "summary": "The user asked to rename parse_invoice in src/billing.py by 2024-03-14.",
    "key_points": ["rename parse_invoice"],
    "participants": ["user", "assistant"],
    "decisions": [],
    "action_items": [{"task": "rename parse_invoice", "owner": "assistant", "due": "2024-03-14"}],
    "unresolved": [],
    "entities": ["src/billing.py", "parse_invoice"],
}


def run(reply: str) -> tuple[StubModel, object]:
    model = StubModel([reply])
    return model, StructuredSummarizer(model).summarize(SummaryRequest("c", SPAN, total_tokens=321, depth=1))


def test_valid_json_becomes_text_key_points_and_facets() -> None:
    model, d = run(json.dumps(GOOD))
    assert d.text == GOOD["summary"]  # type: ignore[attr-defined]
    assert d.key_points == ("rename parse_invoice",)  # type: ignore[attr-defined]
    facets = d.facets  # type: ignore[attr-defined]
    assert set(facets) == set(FACET_NAMES)
    assert facets["decisions"] == () and facets["entities"] == ("src/billing.py", "parse_invoice")
    assert facets["action_items"] == ("rename parse_invoice (owner: assistant, due: 2024-03-14)",)
    assert d.prompt_id == "structured/v1" and d.notes == ()  # type: ignore[attr-defined]
    assert "<meta total_messages=2 total_tokens=321 depth=1 />" in model.prompts[0]


@pytest.mark.parametrize(("before", "after"), [
    ("```json\n", "\n```"),
    ("```\n", "\n```"),
    ("Here is the summary:\n", "\nHope this helps!"),
    ("Sure {not json} then: ", ""),
])
def test_fences_and_surrounding_prose_are_tolerated(before: str, after: str) -> None:
    _, d = run(before + json.dumps(GOOD) + after)
    assert d.text == GOOD["summary"]  # type: ignore[attr-defined]


def test_missing_arrays_are_empty_not_invented() -> None:
    _, d = run(json.dumps({"summary": "Short."}))
    assert d.key_points == () and all(v == () for v in d.facets.values())  # type: ignore[attr-defined]


def test_over_long_arrays_and_items_are_capped_with_notes() -> None:
    bad = dict(GOOD, key_points=[f"point {i}" for i in range(45)], entities=[f"e{i}" for i in range(25)],
               decisions=["d" * 500])
    _, d = run(json.dumps(bad))
    assert len(d.key_points) == 30 and d.key_points[0] == "point 0"  # type: ignore[attr-defined]
    assert len(d.facets["entities"]) == 20  # type: ignore[attr-defined]
    assert len(d.facets["decisions"][0]) == 300  # type: ignore[attr-defined]
    notes = d.notes  # type: ignore[attr-defined]
    assert "capped key_points from 45 to 30 items" in notes and "capped entities from 25 to 20 items" in notes
    assert "cut 1 decisions item(s) to 300 chars" in notes


@pytest.mark.parametrize(("reply", "why"), [
    ("no json here at all", "no JSON object"),
    ('{"summary": ""}', "'summary'"),
    ('{"summary": 3}', "'summary'"),
    ('{"summary": "ok", "decisions": "one"}', "'decisions': expected an array"),
    ('{"summary": "ok", "entities": [null]}', "'entities' item 0"),
    ('{"summary": "ok", "key_points": [{"x": 1}]}', "'key_points' item 0"),
    ('{"summary": "ok", ', "malformed JSON"),
    ("[1, 2]", "no JSON object"),
])
def test_invalid_output_is_a_validation_error_with_raw(reply: str, why: str) -> None:
    with pytest.raises(SummarizeError) as e:
        run(reply)
    assert e.value.transport is False and e.value.kind is ErrorKind.MALFORMED
    assert why in str(e.value) and e.value.raw == reply


def test_empty_output_is_classified_empty() -> None:
    with pytest.raises(SummarizeError) as e:
        run("  ")
    assert e.value.kind is ErrorKind.EMPTY and e.value.transport is False


def test_rejected_output_is_logged_truncated_and_redacted(caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-ant-api03-" + "A" * 40
    raw = f"oops {key} " + "z" * 500
    with caplog.at_level(logging.WARNING, logger="rollsum.summarizers.structured"), \
            pytest.raises(SummarizeError) as e:
        run(raw)
    logged = caplog.text
    assert "structured summary rejected" in logged and "oops sk-ant-***" in logged
    assert key not in logged and "z" * 300 not in logged
    assert e.value.raw is not None and key not in e.value.raw


def test_validation_failure_makes_exactly_one_call() -> None:
    model = StubModel(["not json", json.dumps(GOOD)])
    with pytest.raises(SummarizeError):
        StructuredSummarizer(model).summarize(SummaryRequest("c", SPAN))
    assert len(model.requests) == 1


def test_chunked_structured_summary_unions_facets() -> None:
    first = dict(GOOD, entities=["A.py"], summary="first")
    second = dict(GOOD, entities=["B.py", "A.py"], summary="second")
    model = StubModel([json.dumps(first), json.dumps(second)] * 10, context_window=3000)
    span = [Message("user", f"msg {i} " + "w" * 800, id=str(i)) for i in range(12)]
    d = StructuredSummarizer(model, max_output_tokens=300).summarize(SummaryRequest("c", span))
    assert len(model.requests) > 1 and d.facets["entities"][:2] in (("B.py", "A.py"), ("A.py", "B.py"))
    assert "first" in model.prompts[1]  # the first part's narrative folded into the second
