"""Transcript shaping from the seeds: per-message caps, noise filtering, trimming oldest first."""

from __future__ import annotations

from rollsum.summarizers.transcript import filter_noise, render_line, trim_oldest
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message

counter = HeuristicCounter()


def test_render_line_caps_a_message_with_a_marker() -> None:
    m = Message("tool", "x" * 1500, name="bash")
    line = render_line(m, 1000)
    assert line == "Tool (bash): " + "x" * 1000 + " [... 500 more characters cut]"
    assert render_line(Message("user", "hi"), 1000) == "User: hi"


def test_filter_noise_keeps_what_was_said_and_the_essential_of_tool_output() -> None:
    msgs = [Message("system", "be brief"), Message("user", "run it"), Message("assistant", "running"),
            Message("tool", "$ pytest -q\n" + "ok\n" * 500 + "E   AssertionError: 3 != 4\nmore", name="bash"),
            Message("tool", "tiny", name="bash")]
    out, changed = filter_noise(msgs)
    assert [m.role for m in out] == ["user", "assistant", "tool", "tool"] and changed == 2
    digest = out[2].content
    assert digest.startswith("$ pytest -q [tool output filtered: 503 lines")
    assert "error: E   AssertionError: 3 != 4" in digest and "ok\nok" not in digest
    assert out[3].content == "tiny"  # nothing to gain: left as it was


def test_trim_oldest_keeps_the_newest_lines_within_budget() -> None:
    lines = [f"User: message {i} " + "word " * 30 for i in range(100)]
    kept, note = trim_oldest(lines, 500, counter)
    assert sum(counter.count(ln) + 1 for ln in kept) <= 500
    assert kept[0].startswith("[... ") and kept[-1] == lines[-1]
    dropped = 100 - (len(kept) - 1)
    assert kept[0] == f"[... {dropped} earlier messages trimmed from this transcript ...]"
    assert note is not None and f"the oldest {dropped} of 100" in note
    assert trim_oldest(lines[:2], 500, counter) == (tuple(lines[:2]), None)
