"""The trace records how the context showed times, so a scorer rebuilding the context at any turn
sees the same stamps the main model would have seen (issue #18, item 2)."""

from __future__ import annotations

import json

import pytest
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay import replay
from rollsum_evals.replay.seam import default_engine
from rollsum_evals.replay.trace import DEFAULT_TIMESTAMPS, Trace
from rollsum_evals.units import Unit

from rollsum import RollingSummarizer
from rollsum.context import with_timestamps
from rollsum.errors import ConfigError
from rollsum.types import Message

MSGS = tuple(Message("user" if i % 2 == 0 else "assistant", f"message {i} " * 30, id=f"m{i}",
                     created_at=f"2023-05-{8 + i // 4:02d}T10:{i:02d}:00") for i in range(24))
CONV = Conversation("c", MSGS)


def _unit(params: str = "{}", preset: str = "since-last") -> Unit:
    return Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="cfg", preset=preset,
                params_json=params, prompt="", model="extractive", seed=0, context_window=600)


@pytest.mark.parametrize("mode", ["session", "message", "none"])
def test_the_rebuilt_context_shows_the_stamps_the_engine_would_have_sent(mode: str) -> None:
    trace = replay(_unit(json.dumps({"timestamps": mode})), CONV)
    assert trace.timestamps == mode
    back = Trace.from_record(json.loads(json.dumps(trace.to_record())), MSGS, trace.texts)
    assert back.timestamps == mode
    last = len(MSGS) - 1
    items = back.context_at(last)
    sent = with_timestamps([Message(i.role, i.text, name=i.name,  # type: ignore[arg-type]
                                    created_at=MSGS[i.message_index].created_at if i.message_index is not None
                                    else None) for i in items], mode)
    assert [f"{i.shown_time} {i.text}" if i.shown_time else i.text for i in items] == [m.content for m in sent]
    assert any(i.shown_time for i in items) is (mode != "none")
    assert all(i.shown_time is None for i in items if i.message_index is None)  # a summary has no time


def test_the_default_and_an_old_trace_show_session_stamps_and_a_wrong_mode_is_refused() -> None:
    trace = replay(_unit(), CONV)
    assert trace.timestamps == DEFAULT_TIMESTAMPS == "session"
    record = trace.to_record()
    del record["timestamps"]  # written before the mode was recorded
    assert Trace.from_record(record, MSGS, trace.texts).timestamps == "session"
    with pytest.raises(ConfigError, match="timestamps = 'always'"):
        replay(_unit(json.dumps({"timestamps": "always"})), CONV)


# long enough that a window of 600 holds only a few, so some contexts sit at the window's brim:
# there the window has no room for every stamp and the engine leaves the oldest out
BRIM = tuple(Message("user" if i % 2 == 0 else "assistant", f"said {i} " + "word " * (60 + 7 * (i % 5)), id=f"m{i}",
                     created_at=f"2023-05-{8 + i // 2:02d}T10:{i:02d}:00") for i in range(30))


@pytest.mark.parametrize(("preset", "mode"), [("evict-window", "message"), ("evict-window", "session"),
                                              ("since-last", "message"), ("truncate", "session")])
def test_every_turn_rebuilt_is_the_context_the_library_sends_with_stamps_within_the_window(
        preset: str, mode: str) -> None:
    """One rule for both: the harness scores exactly `RollingSummarizer.context(timestamps=...)`
    of each turn, stamps the window had no room for left out, oldest first; and
    `undated_at` names exactly the messages that lost their day that way."""
    unit = _unit(json.dumps({"timestamps": mode}), preset=preset)
    live = replay(unit, Conversation("c", BRIM))
    trace = Trace.from_record(json.loads(json.dumps(live.to_record())), BRIM, live.texts)  # as a run reads it
    engine = default_engine(unit, None, lambda e: None)
    assert isinstance(engine, RollingSummarizer)
    dropped = 0
    for turn, m in enumerate(BRIM):
        engine.add(m)
        sent = [x.content for x in engine.context(timestamps=mode)]
        items = trace.context_at(turn)
        assert [f"{i.shown_time} {i.text}" if i.shown_time else i.text for i in items] == sent, turn
        every = with_timestamps([Message(i.role, i.text, created_at=BRIM[i.message_index].created_at  # type: ignore[arg-type]
                                         if i.message_index is not None else None) for i in items], mode)
        lost = {i.message_index for i, full, shown in zip(items, every, sent, strict=True)
                if full.content != i.text and shown == i.text}
        undated = trace.undated_at(turn)
        if mode == "message":
            assert undated == lost, turn
        assert lost <= undated, turn
        dropped += bool(undated)
    if preset != "truncate":
        assert dropped, "no turn at the window's brim: the test would not see a stamp left out"
