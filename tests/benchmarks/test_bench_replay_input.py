"""bench_replay's two inputs (benchmarks/bench_replay.py): a message made per add() from its
compact row is the premade message, with its own meta containers (as an application's are)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_replay as br


def test_a_message_made_from_its_row_equals_the_premade_one_on_both_streams() -> None:
    for stream in (br.stream, br.mixed_stream):
        premade = stream(300)
        made = list(map(br.make, br.compact(premade)))
        assert made == premade
    assert any(m.meta.get("tool_calls") for m in premade)  # the mixed stream's meta holds lists


def test_each_made_message_has_fresh_meta_containers() -> None:
    premade = br.mixed_stream(300)
    rows = br.compact(premade)
    first, again = br.make(rows[1]), br.make(rows[1])
    assert first == again and first is not again
    calls = [m for m in map(br.make, rows) if m.meta.get("tool_calls")]
    m = calls[0]
    twin = br.make(rows[[p.id for p in premade].index(m.id)])
    assert m.meta is not twin.meta and m.meta["tool_calls"] is not twin.meta["tool_calls"]
    assert type(m.meta["tool_calls"]) is list


def test_a_nested_meta_value_comes_back_as_it_was() -> None:
    msg = br.Message("tool", "ok", id="t1", name="read", meta={"a": [1, {"b": [2, (3, 4)]}], "c": {"d": "e"}})
    again = br.make(br.compact([msg])[0])
    assert again == msg
    assert type(again.meta["a"]) is list and type(again.meta["a"][1]) is dict and again.meta["a"][1]["b"][1] == (3, 4)


def test_the_keep_only_reference_keeps_made_messages_and_is_never_judged() -> None:
    rows = br.compact(br.mixed_stream(200))
    secs, summaries, after, n_after, first = br.run(br.KEEP_ONLY, rows, None)
    assert secs >= 0 and after == secs and summaries == 0 and n_after == 0 and first is None
    assert not br.is_judged(br.KEEP_ONLY, "made-per-add", ["made-per-add"])
    assert br.is_judged("since-last", "made-per-add", ["made-per-add", "premade"])
    assert not br.is_judged("since-last", "premade", ["made-per-add", "premade"])
    assert br.is_judged("since-last", "premade", ["premade"])
