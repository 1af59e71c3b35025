"""Containment scoring finds answers wherever the context holds them verbatim."""

from __future__ import annotations

from rollsum_evals.scoring.text import contains, normalize_answer, normalize_text


def test_punctuation_separates_words_so_paths_in_tool_output_are_found() -> None:
    hay = normalize_text("src/reports/window_bridge.py:163:def build_payload_reports(")
    assert contains(hay, "src/reports/window_bridge.py")
    # LoCoMo's own normalization glues the neighbours together: the reason for normalize_text
    assert "srcreportswindowbridgepy163def" in normalize_answer("src/reports/window_bridge.py:163:def")


def test_word_boundaries_and_commas() -> None:
    hay = normalize_text("Order 1234 shipped; the total was 4,417 dollars (ticket INC-20931).")
    assert not contains(hay, "12")
    assert contains(hay, "4417") and contains(hay, "4,417")
    assert contains(hay, "INC-20931") and contains(hay, "inc 20931")
    assert not contains(hay, "INC-2093")


def test_joining_commutes_with_normalization() -> None:
    a, b = "Priya's flight: BA-2490.", "Lands at 7:45pm"
    assert normalize_text(a + "\n" + b) == normalize_text(a) + " " + normalize_text(b)
