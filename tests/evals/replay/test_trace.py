"""The trace codec: any sequence of contexts an engine (or a third-party memory) can produce is
rebuilt exactly from the conversation plus what the run directory stores."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from rollsum_evals.replay.trace import ContextEncoder, Text, TextRef, Trace, TurnRecord, text_id

from rollsum.types import Message

MESSAGES = tuple(Message("user" if i % 3 else "assistant", f"message {i % 7}", id=f"m{i}",
                         name="tool" if i % 5 == 0 else None) for i in range(12))


def _roundtrip(contexts: list[list[Message]]) -> Trace:
    enc = ContextEncoder(MESSAGES)
    live = Trace(unit_id="u", messages=MESSAGES)
    for t, ctx in enumerate(contexts):
        live.turns.append(TurnRecord(t, MESSAGES[t].role, t, 0, 0, 0, enc.encode(ctx, t)))
    live.texts = enc.texts
    record = json.loads(json.dumps(live.to_record()))
    texts = {k: Text(**v) for k, v in json.loads(json.dumps(
        {k: v.to_dict() for k, v in live.used_texts().items()})).items()}
    return Trace.from_record(record, MESSAGES, texts)


def _item(draw: st.DrawFn, turn: int) -> Message:
    i = draw(st.integers(0, turn))
    kind = draw(st.sampled_from(["verbatim", "verbatim", "verbatim", "clipped", "summary", "id-less", "renamed"]))
    m = MESSAGES[i]
    if kind == "clipped":
        return Message(m.role, m.content[:4] + " [clipped]", id=m.id, name=m.name)
    if kind == "summary":
        return Message(draw(st.sampled_from(["system", "assistant"])), f"summary {draw(st.integers(0, 3))}",
                       id=draw(st.sampled_from([None, "summary:x"])))
    if kind == "id-less":
        return Message(m.role, m.content, name=m.name)
    if kind == "renamed":  # same id and content, another role: not verbatim
        return Message("system" if m.role != "system" else "user", m.content, id=m.id)
    return m


@st.composite
def _contexts(draw: st.DrawFn) -> list[list[Message]]:
    out: list[list[Message]] = []
    for t in range(len(MESSAGES)):
        grow = bool(out) and draw(st.booleans())
        ctx = [*out[-1], MESSAGES[t]] if grow else [_item(draw, t) for _ in range(draw(st.integers(0, 8)))]
        out.append(ctx)
    return out


@settings(max_examples=200, deadline=None)
@given(_contexts())
def test_any_context_sequence_is_rebuilt_exactly(contexts: list[list[Message]]) -> None:
    rebuilt = _roundtrip(contexts)
    for t, ctx in enumerate(contexts):
        assert [(i.role, i.name, i.text) for i in rebuilt.context_at(t)] == [
            (m.role, m.name, m.content) for m in ctx]


def test_a_clipped_message_is_a_text_that_remembers_its_message() -> None:
    clipped = Message(MESSAGES[2].role, "mess… [clipped]", id="m2")
    items = _roundtrip([[MESSAGES[0]], [MESSAGES[0], MESSAGES[1]], [MESSAGES[0], clipped, MESSAGES[2]]]).context_at(2)
    assert [(i.message_index, i.verbatim) for i in items] == [(0, True), (2, False), (2, True)]
    assert items[1].text_id == text_id(clipped.role, None, clipped.content)


def test_verbatim_runs_are_ranges_and_growth_is_one_character() -> None:
    enc = ContextEncoder(MESSAGES)
    summary = Message("system", "the story so far", id="summary:1")
    comps = [enc.encode(list(MESSAGES[: t + 1]), t) for t in range(4)]
    comps.append(enc.encode([summary, *MESSAGES[2:5]], 4))
    comps.append(enc.encode([summary, *MESSAGES[2:6]], 5))
    assert comps[3] == ((0, 4),)
    tid = text_id("system", None, "the story so far")
    assert comps[4] == (TextRef(tid), (2, 5))
    trace = Trace(unit_id="u", messages=MESSAGES, texts=enc.texts,
                  turns=[TurnRecord(t, "user", 0, 0, 0, 0, c) for t, c in enumerate(comps)])
    assert trace.to_record()["turns"]["context"] == ["+", "+", "+", "+", "#0,2-4", "+"]
    assert trace.to_record()["text_ids"] == [tid]
