"""Time in the context: `context(timestamps=...)` / `to_anthropic(timestamps=...)` show when
messages were said, as a chat application would (issue #18, item 2)."""

from __future__ import annotations

import pytest

from rollsum import Message, RollingSummarizer
from rollsum.context import shown_times, with_timestamps


def _msgs() -> list[Message]:
    times = ["2023-05-08T13:56:00", "2023-05-08T13:57:00", "2023-05-08T16:30:00",  # a pause > 1 h
             "2023-05-09T09:00:00", None, "2023-05-09T09:01:00Z"]
    return [Message("user" if i % 2 == 0 else "assistant", f"message {i}", id=f"m{i}", created_at=t)
            for i, t in enumerate(times)]


def test_session_stamps_the_first_message_and_every_new_sitting() -> None:
    got = shown_times(_msgs(), "session")
    assert got == ["[8 May 2023, 13:56]", None, "[8 May 2023, 16:30]", "[9 May 2023, 09:00]", None, None]
    # every message's day is readable from the stamp at or above it
    assert shown_times(_msgs()[1:], "session")[0] == "[8 May 2023, 13:57]"


def test_message_stamps_every_dated_message_and_none_stamps_nothing() -> None:
    assert shown_times(_msgs(), "message") == [
        "[8 May 2023, 13:56]", "[8 May 2023, 13:57]", "[8 May 2023, 16:30]", "[9 May 2023, 09:00]", None,
        "[9 May 2023, 09:01]"]
    assert shown_times(_msgs(), "none") == [None] * 6
    with pytest.raises(ValueError, match="timestamps 'sometimes'"):
        shown_times(_msgs(), "sometimes")


def test_the_stamp_is_written_before_the_content_and_the_stored_message_is_untouched() -> None:
    msgs = _msgs()
    out = with_timestamps(msgs, "session")
    assert out[0].content == "[8 May 2023, 13:56] message 0" and out[1] is msgs[1]
    assert msgs[0].content == "message 0"


def test_the_engine_shows_times_only_when_asked() -> None:
    rs = RollingSummarizer.from_preset("truncate")
    for m in _msgs():
        rs.add(m)
    plain = rs.context()
    assert [m.content for m in plain] == [f"message {i}" for i in range(6)]
    stamped = rs.context(timestamps="session")
    assert stamped[0].content.startswith("[8 May 2023, 13:56] ") and stamped[1].content == "message 1"
    _, api = rs.to_anthropic(timestamps="message")
    assert "[9 May 2023, 09:00] message 3" in api[-1]["content"] or any(
        "[9 May 2023, 09:00] message 3" in t["content"] for t in api)
    _, api_plain = rs.to_anthropic()
    assert not any("[8 May 2023" in t["content"] for t in api_plain)


@pytest.mark.parametrize("preset", ["evict-window", "token-ratio", "since-last"])
@pytest.mark.parametrize("mode", ["message", "session"])
def test_a_stamped_context_stays_within_the_window_and_keeps_the_newest_stamps(preset: str, mode: str) -> None:
    """The engine packs its window without stamps; a stamped context at the window passed it by
    every stamp (evict-window, 1,000 tokens, short messages, ``message``: 1,794 tokens). Stamps
    now get what the window has left, the oldest left out first, and no text is cut."""
    rs = RollingSummarizer.from_preset(preset, context_window=1500, reserved_output_tokens=0)
    count = rs.counter.count_message
    for i in range(400):
        rs.add(Message("user" if i % 2 == 0 else "assistant", f"ok {i}", id=f"m{i}",
                       created_at=f"2024-03-{1 + i // 16:02d}T{i % 16:02d}:00:00Z"))
        plain = rs.context()
        stamped = rs.context(timestamps=mode)
        extra = sum(count(s) - count(p) for s, p in zip(stamped, plain, strict=True))
        assert rs.context_tokens() + extra <= 1500
        assert [s.content.endswith(p.content) for s, p in zip(stamped, plain, strict=True)] == [True] * len(plain)
    assert stamped[-1].content.startswith("[") or mode == "session"  # the newest keeps its stamp
    assert any(s.content != p.content for s, p in zip(stamped, plain, strict=True))


def test_stamps_that_do_not_fit_are_left_out_oldest_first() -> None:
    msgs = _msgs()
    plain = len
    cost = [plain(s.content) - plain(m.content) for s, m in zip(with_timestamps(msgs, "message"), msgs, strict=True)]
    room = cost[-1] + cost[3]  # room for the two newest stamps
    out = with_timestamps(msgs, "message", room=room, count_message=lambda m: len(m.content))
    assert [o.content != m.content for o, m in zip(out, msgs, strict=True)] == [False, False, False, True, False, True]
    assert with_timestamps(msgs, "message", room=0, count_message=lambda m: len(m.content)) == msgs
