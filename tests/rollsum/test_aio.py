"""`rollsum.aio.AsyncRollingSummarizer` as an application restarts it: close, reopen, go on."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path

import pytest

from rollsum import ConfigError, Message, RollingSummarizer
from rollsum.aio import AsyncRollingSummarizer
from rollsum.store.sqlite import SQLiteStore
from rollsum.summarizers.base import SummaryDraft, SummaryRequest

SINCE_LAST = dict(messages_per_summary=5, keep_last=2, min_messages_per_attempt=0)


class Gated:
    """A summarizer that answers only once the test opens its gate (no clock in the test)."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        self.gate.wait(30)
        return SummaryDraft(text="covered " + " ".join(str(m.id) for m in request.messages))


async def _six_added_with_a_gated_summary(tmp_path: Path) -> tuple[SQLiteStore, AsyncRollingSummarizer, Gated]:
    """An async since-last engine on a SQLite store whose sixth message started a summary that
    waits for `Gated.gate`."""
    store = SQLiteStore(tmp_path / "chat.db")
    ars = AsyncRollingSummarizer.from_preset("since-last", conversation_id="c", store=store, **SINCE_LAST)
    gated = Gated()
    ars.core.summarizer = gated
    for i in range(6):
        await ars.add(Message("user", f"m{i}"))
    return store, ars, gated


def test_closing_on_a_running_summary_warns_how_to_keep_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An async engine closed at the end of every request abandons every summary: 0 summaries in
    200 messages, 164 messages pending out of the context, and only an INFO line said so."""
    async def scenario() -> None:
        _, ars, gated = await _six_added_with_a_gated_summary(tmp_path)
        with caplog.at_level(logging.WARNING, logger="rollsum.aio"):
            ars.close()
        gated.gate.set()

    asyncio.run(scenario())
    assert any(r.levelno == logging.WARNING and "await wait_idle() before close()" in r.getMessage()
               for r in caplog.records)


def test_close_abandons_a_running_summary_so_the_next_engine_is_not_wedged(tmp_path: Path) -> None:
    """An app closes its async engine while a summary runs (the request is over) and the next
    request reopens the conversation from the store. The claim is released at close, so a
    summary landing after it would commit behind the new engine's back: the new engine's window
    would still show the covered messages and every summary it made would be refused ("summary
    id already exists"), its context growing without end. Closing abandons it instead: nothing
    lands, every message stays active in the store, and the new engine summarizes them."""
    async def scenario() -> None:
        store, old, gated = await _six_added_with_a_gated_summary(tmp_path)
        running = old._task
        assert old.busy and running is not None
        old.close()
        new = RollingSummarizer.from_preset("since-last", conversation_id="c", store=store, **SINCE_LAST)
        gated.gate.set()  # the abandoned call returns now: its summary must not land
        with contextlib.suppress(asyncio.CancelledError):
            await running
        assert store.summaries("c") == [] and not old.busy
        assert all(row.state == "active" for row in store.messages("c"))
        events = [new.add(Message("user", f"m{i}")) for i in range(6, 12)]
        assert [e.kind for e in events if e is not None] == ["summary"]
        assert [r.id for r in store.summaries("c")] == [new.summary.id if new.summary else None]
        new.close()

    asyncio.run(scenario())


def test_wait_idle_then_close_keeps_the_running_summary(tmp_path: Path) -> None:
    """What an app that wants the running summary does: `wait_idle()` first, then `close()`."""
    async def scenario() -> None:
        store, ars, gated = await _six_added_with_a_gated_summary(tmp_path)
        gated.gate.set()
        await ars.wait_idle()
        ars.close()
        assert len(store.summaries("c")) == 1
        again = RollingSummarizer.from_preset("since-last", conversation_id="c", store=store, **SINCE_LAST)
        assert again.summary is not None and [m.content for m in again.messages] == ["m3", "m4", "m5"]
        again.close()

    asyncio.run(scenario())


def test_the_wrapper_reads_like_the_engine_it_wraps() -> None:
    """An async app calls what the README shows on the engine: `to_anthropic` was missing."""
    async def scenario() -> None:
        ars = AsyncRollingSummarizer.from_preset("since-last")
        await ars.add(Message("assistant", "Hi, how can I help?"))
        await ars.add(Message("user", "Where is order #4411?"))
        assert ars.to_anthropic(system="Be brief.") == ars.core.to_anthropic(system="Be brief.")
        assert ars.to_anthropic(system="Be brief.")[1][-1] == {"role": "user", "content": "Where is order #4411?"}
        assert ars.pending == ars.core.pending == []
        ars.close()

    asyncio.run(scenario())


def test_a_simulated_lag_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="lag_turns: expected 0 with the async wrapper"):
        AsyncRollingSummarizer.from_preset("since-last", lag_turns=2)


def test_close_after_the_loop_is_gone_still_releases_the_conversation(tmp_path: Path) -> None:
    """An app that closes its event loop first, then the engine: cancelling the abandoned task
    raised RuntimeError ("Event loop is closed") and the claim was never released."""
    store = SQLiteStore(tmp_path / "chat.db")
    ars = AsyncRollingSummarizer.from_preset("since-last", conversation_id="c", store=store, **SINCE_LAST)
    gated = Gated()
    ars.core.summarizer = gated

    async def chat() -> None:
        for i in range(6):
            await ars.add(Message("user", f"m{i}"))

    loop = asyncio.new_event_loop()
    loop.run_until_complete(chat())
    assert ars.busy
    gated.gate.set()
    loop.close()
    ars.close()
    again = RollingSummarizer.from_preset("since-last", conversation_id="c", store=store, **SINCE_LAST)
    assert again.summary is None and len(again.messages) == 6
    again.close()


def test_async_engines_of_two_conversations_can_share_one_kept_summarizer() -> None:
    """A server keeps one summarizer (`rollsum.presets.summarizer_for`) for its async engines;
    their summaries run in worker threads at once. Each conversation's summaries hold only its
    own messages. (When a background summary lands depends on the threads, so
    the chains are not compared with another run's.)"""
    from rollsum import presets

    def chat(tag: str) -> list[Message]:
        return [Message("user" if i % 2 == 0 else "assistant",
                        f"{tag} note {i}: the {('cabin', 'ferry', 'invoice', 'router')[i % 4]} costs {i * 37 % 500} "
                        f"euros and ticket {tag.upper()}-{i * 7 % 13} is open.") for i in range(60)]

    async def replay() -> dict[str, list[str]]:
        kept = presets.summarizer_for("since-last", **SINCE_LAST)
        engines = {cid: AsyncRollingSummarizer.from_preset("since-last", conversation_id=cid, summarizer=kept,
                                                           **SINCE_LAST) for cid in ("a", "b")}
        assert engines["a"].core.summarizer is engines["b"].core.summarizer is kept
        chats = {cid: chat(cid) for cid in engines}
        for i in range(60):
            await asyncio.gather(*(engines[cid].add(chats[cid][i]) for cid in engines))
        out = {}
        for cid, ars in engines.items():
            await ars.wait_idle()
            out[cid] = [r.text for r in ars.core.history]
            ars.close()
        return out

    chains = asyncio.run(replay())
    for own, other in (("a", "b"), ("b", "a")):
        assert len(chains[own]) >= 3
        assert all(f"{other} note" not in text and f"{other.upper()}-" not in text for text in chains[own])
        assert any(f"{own.upper()}-" in text for text in chains[own])


def test_a_store_refusing_the_guards_eviction_still_leaves_the_async_context_inside_the_window() -> None:
    """As the engine's test (tests/rollsum/test_engine_failures.py): a round that broke on a
    refused eviction clips in the context, so the async engine stays inside its window too."""
    from tests.rollsum.test_engine_failures import RefusingChanges
    from tests.support.helpers import chat

    async def run() -> list[int]:
        store = RefusingChanges()
        a = AsyncRollingSummarizer.from_preset("since-last", store=store, conversation_id="c", context_window=2000)
        seen = []
        for i, m in enumerate(chat(120, words=60)):
            store.refusing = 40 <= i < 80
            await a.add(m)
            seen.append(a.context_tokens())
            await a.wait_idle()
        a.close()
        return seen

    assert max(asyncio.run(run())) <= 2000


def test_wait_idle_after_the_summary_task_was_cancelled_returns(tmp_path: Path) -> None:
    """Every other task cancelled mid-summary, as a loop's shutdown does: `wait_idle()` raised
    CancelledError into its caller then, and on every later call, as if the caller had been
    cancelled. Now it returns; nothing landed, every message is still active, and the next
    summary is made."""

    async def run() -> tuple[int, bool, int]:
        store, ars, gated = await _six_added_with_a_gated_summary(tmp_path)
        me = asyncio.current_task()
        for task in asyncio.all_tasks():
            if task is not me:
                task.cancel()
        await asyncio.sleep(0)  # let the cancellation reach the summary's task
        gated.gate.set()
        await ars.wait_idle()  # before: CancelledError
        await ars.wait_idle()
        active = len(ars.messages)
        for i in range(6, 12):
            await ars.add(Message("user", f"m{i}"))
        await ars.wait_idle()
        summarized = ars.summary is not None
        ars.close()
        return active, summarized, len(store.messages("c"))

    active, summarized, stored = asyncio.run(run())
    assert (active, summarized, stored) == (6, True, 12)
