"""Context helpers the window guard and the depth cap rely on: cuts are bounded and visible."""

from __future__ import annotations

from rollsum.context import APPEND_MARKER, append_summary, clip_text
from rollsum.tokens import HeuristicCounter

count = HeuristicCounter().count


def test_clip_text_fits_keeps_both_ends_and_says_how_much_went() -> None:
    text = "BEGIN " + "middle words " * 2000 + " END"
    for budget in (40, 200, 1000):
        out = clip_text(text, budget, count)
        assert count(out) <= budget
        assert out.startswith("BEGIN") and out.endswith("END")
        cut = len(text) - (len(out) - len(out[out.index("[…"):out.index("…]") + 2]))
        assert f"[…{cut} chars clipped to fit the context window…]" in out
    assert clip_text("short", 10, count) == "short"


def test_append_summary_keeps_the_newest_and_cuts_the_oldest_visibly() -> None:
    old = " ".join(f"old{i}" for i in range(400))
    new = "The newest span: Priya moved the launch to May 3."
    text, note = append_summary(old, new, 300, count)
    assert count(text) <= 300
    assert text.endswith(new) and text.startswith(APPEND_MARKER)
    assert "old399" in text and "old0 " not in text  # the oldest went first
    assert note is not None and "cut the oldest" in note
    whole, none = append_summary("a short story.", new, 300, count)
    assert whole == "a short story.\n\n" + new and none is None
    only_new, dropped = append_summary(old, new, count(new) + 2, count)
    assert only_new == new and dropped is not None and "dropped" in dropped


def test_append_summary_cuts_whole_lines_never_half_a_statement() -> None:
    old = "\n".join(f"[{i} May 2023] Caroline: fact number {i} is about the garden party plans." for i in range(1, 40))
    new = "[9 June 2023] Melanie: the newest span."
    text, _ = append_summary(old, new, 200, count)
    kept = text.split("\n\n")[1].splitlines()
    assert kept and all(line.startswith("[") and line.endswith("plans.") for line in kept)
    assert kept[-1].startswith("[39 May")  # the newest old lines stay
    prose = " ".join(f"Sentence {i} says the budget was {i}00 euros." for i in range(60))
    text, _ = append_summary(prose, new, 150, count)
    assert text.split("\n\n")[1].startswith("Sentence ")  # a whole sentence, not its middle


def test_shown_summary_fits_the_budget_and_says_what_it_cut() -> None:
    """The summary message a context shows: within its budget (framing aside), with a note only
    when something was cut; `summary_room` holds that message whatever the record says."""
    from rollsum.context import get_format, shown_summary, summary_room
    from rollsum.types import SummaryRecord

    counter, fmt = HeuristicCounter(), get_format("earlier-heading")
    short = SummaryRecord("s1", "c", "Alice moved to Lisbon.")
    message, note = shown_summary(short, fmt, 200, min_tokens=50, count=counter.count)
    assert note is None and "Alice moved to Lisbon." in message.content
    long = SummaryRecord("s2", "c", "Alice said many things. " * 200)
    message, note = shown_summary(long, fmt, 100, min_tokens=50, count=counter.count)
    assert note is not None and "truncated" in note
    assert counter.count_message(message) <= summary_room(fmt, 100, counter.count, counter.count_message)
