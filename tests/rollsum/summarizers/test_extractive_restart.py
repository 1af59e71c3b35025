"""A conversation resumed from its store gets the summaries (and the context) an uninterrupted
one gets.

The extractive summarizer weighs words by how often the conversation has said them (its
statistics follow the summary chain, `rollsum.summarizers.corpus`). A new engine -- a process
restart, or a server that rebuilds its engine from the store for every request -- has not
seen those messages; before it counted them again from the store (`SummaryRequest.covered`)
and took the sentence positions the previous record saved, it weighed words by the previous
summary's lines alone, and on LoCoMo a per-request rebuild lost up to 0.07 of retention.
"""

from __future__ import annotations

from array import array
from base64 import b64decode
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import RollingSummarizer
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.store.base import Store
from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
from rollsum.summarizers.extractive import POSITIONS_META
from rollsum.types import Message, SummaryRecord
from tests.support.opening import Spy

_WORDS = ("cabin", "Tromsø", "budget", "deploy", "build", "Omar", "Priya", "review", "Tuesday", "landlord",
          "invoice", "INC-2093", "router", "garden", "violin", "marathon", "pasta", "Lisbon", "kernel", "ticket",
          "dentist", "quarterly", "sprint", "parcel", "ferry", "museum", "lecture", "yoga", "oven", "bike")
_TOOLS = (("grep", "src/app.py:12:    token = load_token(items)"),
          ("execute_bash", "make: ruff: No such file or directory\nError 127"),
          ("read_file", "   1  timeout = 30\n   2  region = \"eu-west-1\""))
PRESETS = ("since-last", "count-and-tokens", "evict-window", "budget-rule-based", "token-ratio",
           "clear+since-last", "clear-tool-results")
"""Every preset that summarizes, and the two that clear tool results (clearing is sticky: a
resumed engine clears again what the one before had cleared, `Window.clear_through`)."""
WINDOW = 1_500


def _message(i: int, a: int, b: int, c: int) -> Message:
    """Varied words (so frequencies differ and decide what is kept), days, speakers and tools."""
    stamp = (date(2024, 3, 1) + timedelta(days=i // 9)).isoformat() + f"T09:{i % 60:02d}:00Z"
    if c % 5 == 4:
        name, text = _TOOLS[a % len(_TOOLS)]  # long enough to be cleared, of varied length
        return Message("tool", "\n".join([f"{text} {_WORDS[b % len(_WORDS)]}"] * (1 + (a + b) % 6)), name=name,
                       created_at=stamp)
    words = [_WORDS[(a * k + b) % len(_WORDS)] for k in range(1, 2 + c % 4)]
    text = (f"Yesterday I talked about the {words[0]} with {_WORDS[(b + 3) % len(_WORDS)]}. "
            f"The {' and the '.join(words)} matter to me, number {a * 7 + b}.")
    return Message("user" if i % 2 == 0 else "assistant", text, name=("Priya", "Omar")[i % 2], created_at=stamp)


def _stream(plan: list[tuple[int, int, int]]) -> list[Message]:
    return [_message(i, a, b, c) for i, (a, b, c) in enumerate(plan)]


def _engine(preset: str, store: Store) -> RollingSummarizer:
    return RollingSummarizer.from_preset(preset, context_window=WINDOW, store=store, conversation_id="c")


def _replay(preset: str, messages: list[Message], store: Store, restarts: set[int]) -> Iterator[tuple[str, ...]]:
    """After each message: the chain's texts and the context, with the engine rebuilt from
    `store` right after the messages in `restarts`."""
    rs = _engine(preset, store)
    for i, m in enumerate(messages):
        rs.add(m)
        if i in restarts:
            rs.close()
            rs = _engine(preset, store)
        yield tuple(r.text for r in rs.history) + tuple(f"{m.role}:{m.content}" for m in rs.context())
    rs.close()


_PLAN = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 9)), min_size=30, max_size=120)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAN, st.sets(st.integers(0, 119), max_size=12), st.sampled_from(PRESETS))
def test_a_resumed_conversation_gets_the_summaries_of_an_uninterrupted_one(
        plan: list[tuple[int, int, int]], restarts: set[int], preset: str) -> None:
    messages = _stream(plan)
    assert list(_replay(preset, messages, MemoryStore(), restarts)) == \
        list(_replay(preset, messages, MemoryStore(), set()))


@pytest.mark.parametrize("preset", PRESETS)
def test_an_engine_rebuilt_from_sqlite_for_every_message_matches_a_long_lived_one(preset: str, tmp_path: Path) -> None:
    """The saved positions go through the store's JSON: floats come back exactly."""
    messages = _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(150)])
    store = SQLiteStore(tmp_path / "chat.db")
    try:
        rebuilt = list(_replay(preset, messages, store, set(range(len(messages)))))
    finally:
        store.close()
    assert rebuilt == list(_replay(preset, messages, MemoryStore(), set()))
    assert rebuilt[-1] != rebuilt[0]


def test_without_the_covered_messages_a_restart_changes_the_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the tests above guard against: the fallback (the previous summary's lines alone)
    does change what is kept on this stream, so they would fail without the covered messages."""
    messages = _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(150)])
    whole = list(_replay("since-last", messages, MemoryStore(), set()))
    original = ExtractiveSummarizer.summarize

    def without_covered(self: ExtractiveSummarizer, request: SummaryRequest):  # type: ignore[no-untyped-def]
        return original(self, SummaryRequest(request.conversation_id, request.messages, request.previous,
                                             request.depth, request.max_tokens, request.must_keep,
                                             request.total_messages, request.total_tokens))

    monkeypatch.setattr(ExtractiveSummarizer, "summarize", without_covered)
    assert list(_replay("since-last", messages, MemoryStore(), set(range(0, 150, 5)))) != whole


def test_the_record_saves_where_each_sentence_of_the_summary_was_said() -> None:
    rs = RollingSummarizer.from_preset("since-last", context_window=WINDOW)
    for m in _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(80)]):
        rs.add(m)
    saved = [array("d", b64decode(str(r.meta[POSITIONS_META]))) for r in rs.history]
    assert saved and all(saved)
    assert all(p != p or 0 <= p <= 80 for s in saved for p in s)  # NaN: not known
    assert any(p == p for s in saved for p in s)  # and not all unknown: they are where sentences were said


def test_a_fallback_after_another_summarizers_summary_does_not_read_the_whole_conversation() -> None:
    """Standing in for a model that failed, the extractive summarizer meets a previous summary it
    did not write at every such call: counting every covered message there made a run with a
    flaky model 3.7x slower at 3,000 messages, and more the longer it ran. Only a chain of its
    own records (which save their positions) is rebuilt from the covered messages."""
    reads: list[int] = []
    span = _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(20)])
    earlier = _stream([(i * 5 % 41, i * 11 % 41, i % 10) for i in range(30)])

    def covered() -> list[Message]:
        reads.append(1)
        return earlier

    model_record = SummaryRecord(id="c/summary/0", conversation_id="c", text="Priya: The cabin is booked.",
                                 messages_covered=len(earlier), model="claude-haiku-4-5")
    ExtractiveSummarizer().summarize(SummaryRequest("c", span, model_record, covered=covered))
    assert reads == []
    own = ExtractiveSummarizer().summarize(SummaryRequest("c", earlier, None))
    own_record = SummaryRecord(id="c/summary/0", conversation_id="c", text=own.text, meta=dict(own.meta),
                               messages_covered=len(earlier), model="extractive")
    ExtractiveSummarizer().summarize(SummaryRequest("c", span, own_record, covered=covered))
    assert reads == [1]


def _per_request(preset: str, messages: list[Message], store: Store, summarizer: object) -> list[tuple[str, ...]]:
    """An engine built for every message, each around `summarizer` (a web server keeping one)."""
    out = []
    for m in messages:
        rs = RollingSummarizer.from_preset(preset, context_window=WINDOW, store=store, conversation_id="c",
                                           summarizer=summarizer)
        rs.add(m)
        out.append(tuple(r.text for r in rs.history) + tuple(f"{x.role}:{x.content}" for x in rs.context()))
        rs.close()
    return out


@pytest.mark.parametrize("preset", ("since-last", "evict-window", "budget-rule-based", "clear+since-last"))
def test_engines_built_per_request_around_one_kept_summarizer_continue_its_statistics(preset: str) -> None:
    """A process that keeps one summarizer (`rollsum.presets.summarizer_for`) and builds an
    engine around it for every request gets the long-lived engine's summaries, and no engine
    counts the covered messages again: the statistics are still in memory (a new summarizer per
    request reads them at the first summary of every request)."""
    from rollsum import presets

    messages = _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(150)])
    whole = list(_replay(preset, messages, MemoryStore(), set()))
    store = Spy(MemoryStore())
    kept = presets.summarizer_for(preset, context_window=WINDOW)
    assert _per_request(preset, messages, store, kept) == whole
    assert store.covered_reads == 0
    fresh = Spy(MemoryStore())  # what the kept summarizer saves: without it, every request's first summary reads them
    list(_replay(preset, messages, fresh, set(range(len(messages)))))
    assert fresh.covered_reads > 3


def test_one_summarizer_kept_for_two_interleaved_conversations_writes_what_two_would() -> None:
    """The statistics are per conversation: a summarizer shared by engines of different
    conversations, their messages interleaved, writes each conversation's own summaries, and
    keeps both conversations' statistics (neither is counted again)."""
    from rollsum import presets

    a = _stream([(i * 7 % 41, i * 13 % 41, i % 10) for i in range(120)])
    b = _stream([(i * 11 % 41, i * 3 % 41, (i + 3) % 10) for i in range(120)])
    kept = presets.summarizer_for("since-last", context_window=WINDOW)
    store = Spy(MemoryStore())
    for ma, mb in zip(a, b, strict=True):
        for cid, m in (("a", ma), ("b", mb)):
            rs = RollingSummarizer.from_preset("since-last", context_window=WINDOW, store=store, conversation_id=cid,
                                               summarizer=kept)
            rs.add(m)
            rs.close()
    assert store.covered_reads == 0
    for cid, msgs in (("a", a), ("b", b)):
        alone = RollingSummarizer.from_preset("since-last", context_window=WINDOW, conversation_id=cid)
        for m in msgs:
            alone.add(m)
        again = RollingSummarizer.from_preset("since-last", context_window=WINDOW, store=store, conversation_id=cid)
        assert [r.text for r in again.history] == [r.text for r in alone.history]
        assert len(alone.history) > 3


def test_a_kept_summarizer_makes_one_summary_at_a_time() -> None:
    """The asyncio engine calls summaries from worker threads, so engines sharing one summarizer
    can call it at once; its caches are the instance's, so a second call waits for the first.

    Synchronised on events, not on time: the second call is seen asking for the summarizer's
    lock while the first holds it (a lock taken too late or released too early is free then),
    and a second call that got into the summary while the first was still inside is recorded
    (no lock at all)."""
    import threading

    summarizer = ExtractiveSummarizer()
    inside, release, arrived = threading.Event(), threading.Event(), threading.Event()
    original = summarizer._new_pieces
    calls: list[str] = []
    overlapped: list[str] = []

    class Watched:
        """The summarizer's lock, noting whether it was held when the second call asked."""

        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.free_when_asked: list[bool] = []

        def __enter__(self) -> None:
            if inside.is_set():  # the second call (the first is paused inside its summary)
                self.free_when_asked.append(not self.lock.locked())
                arrived.set()
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    def paused(messages, speakers):  # type: ignore[no-untyped-def]
        calls.append(messages[0].content)
        if len(calls) == 1:
            inside.set()
            assert release.wait(60)
        elif not release.is_set():  # inside while the first call still is: no lock kept it out
            overlapped.append(messages[0].content)
            arrived.set()
        return original(messages, speakers)

    watched = Watched()
    summarizer._lock = watched  # type: ignore[assignment]
    summarizer._new_pieces = paused  # type: ignore[method-assign]
    span_a = _stream([(i, i + 1, 1) for i in range(10)])
    span_b = _stream([(i + 5, i, 2) for i in range(10)])
    first = threading.Thread(target=summarizer.summarize, args=(SummaryRequest("a", span_a, None),))
    first.start()
    second = threading.Thread(target=summarizer.summarize, args=(SummaryRequest("b", span_b, None),))
    try:
        assert inside.wait(60)
        second.start()
        assert arrived.wait(60)  # it asked for the lock (or, with none, got inside)
    finally:
        release.set()
    first.join(60)
    second.join(60)
    assert not overlapped and watched.free_when_asked == [False] and len(calls) == 2
