"""Properties: whatever the stream, parameters, triggers and failures,

1. no message is ever lost: every message ever added is, in the store, exactly one of: active
   (in the window), pending (evicted, awaiting a summary), covered by exactly one summary
   record (whose covered_ids name it), or dropped by a policy whose design drops (truncation,
   tool-only evictions). Failures never drop or cover anything. The window agrees with the store;
2. (issue #14) every preset with a window keeps it: after every `add()`,
   ``context_tokens() <= context_window − reserved_output_tokens`` (issue #19: seed 002's
   budget), counted on the context actually assembled; only when
   the newest message (or the pinned system messages) alone is larger does the window guard
   clip, in the context only, and says so with a ``clip`` event;
3. (issue #14) the summarizer is called at a bounded rate, success or failure: since-last at
   most once per `messages_per_summary` messages added, evict-window once per `min_evicted`
   evictions, the window guard once per ``(1 - guard_low_water) × window`` tokens added, and
   (issue #19) every preset: the k-th attempt needs k × `min_messages_per_attempt` messages.

The tool-result clearing presets (issue #23: `clear-tool-results`, `clear+since-last`) are held
to the same three, and a cleared result is only ever a placeholder in the context: its call
stays, the newest `clear_keep` results are never cleared, the stored message is intact.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsum import Message, RollingSummarizer
from rollsum.clearing import PLACEHOLDER
from rollsum.context import CLIP_MARKER
from rollsum.errors import ErrorKind, SummarizeError
from rollsum.store.memory import MemoryStore
from rollsum.store.sqlite import SQLiteStore
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.summarizers.extractive import ExtractiveSummarizer
from rollsum.types import SummaryEvent

DROPPING = {"truncate", "evict-window", "budget-rule-based", "clear-tool-results"}
WINDOWED = ("token-ratio", "budget-rule-based", "evict-window", "since-last", "count-and-tokens",
            "clear-tool-results", "clear+since-last")
CLEARING = ("clear-tool-results", "clear+since-last")
TOOLS = ("execute_bash", "read_file")
EXAMPLES_PER_PRESET = 200
FAILURES = ("ok", "ok", "ok", "transport", "validation", "empty", "timeout", "reset", "value", "locked", "bug")


class Flaky:
    """Wraps the extractive summarizer and fails on the calls a test chose, with our own
    errors and with the exceptions a real model or cache raises."""

    name = "flaky"

    def __init__(self, failures: list[str]) -> None:
        self.inner = ExtractiveSummarizer()
        self.failures = failures
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        kind = self.failures[self.calls % len(self.failures)] if self.failures else "ok"
        self.calls += 1
        if kind == "transport":
            raise SummarizeError("injected 500", transport=True, kind=ErrorKind.SERVER)
        if kind == "validation":
            raise SummarizeError("injected bad JSON", transport=False, kind=ErrorKind.MALFORMED)
        if kind == "empty":
            return SummaryDraft(text="  ")
        if kind == "timeout":
            raise TimeoutError("read timed out")
        if kind == "reset":
            raise ConnectionResetError(104, "Connection reset by peer")
        if kind == "value":
            raise ValueError("unparseable answer")
        if kind == "locked":
            raise sqlite3.OperationalError("database is locked")
        if kind == "bug":
            raise KeyError("content")
        return self.inner.summarize(request)


roles = st.sampled_from(["user", "assistant", "assistant", "tool", "system"])
messages = st.lists(st.tuples(roles, st.integers(1, 120)), min_size=1, max_size=120)
presets = st.sampled_from(["count-and-tokens", "since-last", "budget-rule-based", "token-ratio",
                           "evict-window", "full-context", "truncate", *CLEARING])


def params_for(preset: str, data: st.DataObject) -> dict[str, Any]:
    d: dict[str, Any] = {"context_window": data.draw(st.integers(300, 3000), label="window"),
                         "ledger": data.draw(st.sampled_from(["pin", "retry", "off"]), label="ledger"),
                         "lag_turns": data.draw(st.sampled_from([0, 0, 1, 3]), label="lag")}
    if preset == "count-and-tokens":
        d |= {"message_count_threshold": data.draw(st.integers(2, 20)),
              "messages_to_summarize": data.draw(st.integers(1, 10)),
              "recent_messages_to_keep": data.draw(st.integers(0, 6)),
              "token_threshold": data.draw(st.integers(0, 300))}
    if preset in CLEARING:
        d |= {"clear_trigger": data.draw(st.sampled_from([None, 0, 100, 600]), label="clear_trigger"),
              "clear_keep": data.draw(st.integers(0, 4), label="clear_keep"),
              "clear_at_least": data.draw(st.sampled_from([0, 0, 50, 400]), label="clear_at_least"),
              "clear_exclude_tools": data.draw(st.sampled_from([(), ("read_file",)]), label="exclude")}
    if preset in ("since-last", "clear+since-last"):
        d |= {"messages_per_summary": data.draw(st.integers(1, 15)), "keep_last": data.draw(st.integers(0, 8)),
              "count_since": data.draw(st.sampled_from(["covered", "event"]))}
    elif preset == "token-ratio":
        d |= {"min_messages": data.draw(st.integers(1, 12)), "preserve_recent": data.draw(st.integers(2, 6)),
              "cooldown_messages": data.draw(st.integers(0, 5)),
              "max_depth": data.draw(st.sampled_from([1, 3, None]))}
    elif preset == "evict-window":
        d |= {"head": data.draw(st.integers(0, 3)), "tail": data.draw(st.integers(1, 6)),
              "min_evicted": data.draw(st.integers(1, 10))}
    elif preset == "truncate":
        d |= {"keep": data.draw(st.integers(1, 10))}
    elif preset == "budget-rule-based":
        d |= {"min_keep": data.draw(st.integers(0, 5)), "reserved_output_tokens": data.draw(st.integers(0, 200))}
    return d


def check(rs: RollingSummarizer, added: list[Message], preset: str, failures: list[str]) -> None:
    rs.flush()
    rows = rs.store.messages(rs.conversation_id)
    # every message, once, with its content intact and in order
    assert [r.message.id for r in rows] == [m.id for m in added]
    assert [r.message.content for r in rows] == [m.content for m in added]
    records = rs.store.summaries(rs.conversation_id)
    assert [r.id for r in records] == [r.id for r in rs.history]
    in_records = Counter(mid for rec in records for mid in rec.covered_ids)
    assert all(n == 1 for n in in_records.values()), "a message is covered by two records"
    by_state = Counter(r.state for r in rows)
    for r in rows:
        if r.state == "covered":
            assert in_records[r.message.id or ""] == 1 and r.summary_id in {x.id for x in records}
            assert r.message.id in next(x for x in records if x.id == r.summary_id).covered_ids
        else:
            assert r.message.id not in in_records
    if preset not in DROPPING:
        assert by_state["dropped"] == 0
    if preset in ("full-context",):
        assert by_state["active"] == len(added)
    # the window agrees with the store
    active_ids = [r.message.id for r in rows if r.state == "active" and r.message.role != "system"]
    assert [m.id for m in rs.messages] == active_ids
    assert [m.id for m in rs.pending] == [r.message.id for r in rows if r.state == "pending"]
    # messages_covered is cumulative and consistent
    if records:
        assert records[-1].messages_covered == sum(len(r.covered_ids) for r in records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=messages, preset=presets, failures=st.lists(
    st.sampled_from(FAILURES), max_size=6), data=st.data())
def test_no_message_is_lost_or_duplicated(stream: list[tuple[str, int]], preset: str, failures: list[str],
                                          data: st.DataObject) -> None:
    params = params_for(preset, data)
    rs = RollingSummarizer.from_preset(preset, store=MemoryStore(), sleep=lambda s: None, **params)
    rs.summarizer = Flaky(failures)
    added = []
    for i, (role, words) in enumerate(stream):
        m = Message(role, f"m{i} " + " ".join(f"w{j}" for j in range(words)),  # type: ignore[arg-type]
                    name=TOOLS[i % 2] if role == "tool" else None)
        rs.add(m)
        added.append(rs.store.messages(rs.conversation_id)[-1].message)
    check(rs, added, preset, failures)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=messages, failures=st.lists(st.sampled_from(FAILURES), max_size=4),
       restart_at=st.integers(0, 120), data=st.data())
def test_sqlite_survives_restarts_mid_stream(stream: list[tuple[str, int]], failures: list[str],
                                             restart_at: int, data: st.DataObject) -> None:
    preset = data.draw(st.sampled_from(["since-last", "evict-window", "token-ratio"]))
    params = {**params_for(preset, data), "lag_turns": 0}
    with TemporaryDirectory() as tmp:
        db = Path(tmp) / "rs.db"

        def open_engine() -> RollingSummarizer:
            rs = RollingSummarizer.from_preset(preset, store=SQLiteStore(db), conversation_id="c",
                                               sleep=lambda s: None, **params)
            rs.summarizer = Flaky(failures)
            return rs

        rs = open_engine()
        added = []
        for i, (role, words) in enumerate(stream):
            if i == restart_at:
                rs.store.close()
                rs = open_engine()
            rs.add(Message(role, f"m{i} " + "x " * words))  # type: ignore[arg-type]
            added.append(rs.store.messages("c")[-1].message)
        check(rs, added, preset, failures)
        rs.store.close()


# ------------------------------------------------------------------------------------ window

# mostly chat-sized messages, sometimes one far larger than any window drawn below
sizes = st.one_of(st.integers(1, 90), st.integers(1, 90), st.integers(1, 90), st.integers(1, 90),
                  st.integers(1, 90), st.integers(1, 90), st.integers(1, 90), st.integers(1, 90),
                  st.integers(1, 90), st.integers(600, 2500))
window_streams = st.lists(st.tuples(roles, sizes), min_size=1, max_size=45)


def window_params(preset: str, data: st.DataObject) -> dict[str, Any]:
    d = params_for(preset, data)
    d["guard_low_water"] = data.draw(st.sampled_from([0.5, 0.6, 0.75]), label="low_water")
    if preset in ("since-last", "clear+since-last"):
        # degenerate combinations included: keep_last >= messages_per_summary - 1
        d["keep_last"] = data.draw(st.integers(0, 25), label="keep_last")
    if preset == "budget-rule-based":
        d["reserved_output_tokens"] = min(d["reserved_output_tokens"], d["context_window"] // 2)
    if preset == "evict-window":
        d["tail"] = data.draw(st.integers(1, 12), label="tail")
    d["max_request_tokens"] = data.draw(st.sampled_from([None, None, 150, 600]), label="request cap")
    d["min_messages_per_attempt"] = data.draw(st.sampled_from([10, 10, 3, 0]), label="attempt cap")
    return d


def check_cleared(rs: RollingSummarizer, added: list[Message], context: list[Message],
                  params: dict[str, Any]) -> None:
    """A cleared result is its placeholder in place (its call and every other message as
    they were), never one of the newest `clear_keep` results, never an excluded tool's."""
    stored = {m.id: m for m in added}
    results = [x for x in context if x.role == "tool"]
    keep = params["clear_keep"]
    for k, x in enumerate(results):
        original = stored[x.id]
        if x.meta.get("cleared_chars") is None:
            assert x.content == original.content or x.meta.get("clipped_chars"), "only clearing/clipping alter"
            continue
        assert x.content.startswith(PLACEHOLDER.split("{")[0])
        assert x.meta["cleared_chars"] == len(original.content)
        assert k < len(results) - keep, f"one of the newest {keep} results was cleared"
        assert x.name not in params["clear_exclude_tools"], "an excluded tool's result was cleared"
    assert all(r.message.content == stored[r.message.id].content
               for r in rs.store.messages(rs.conversation_id)), "the store holds every original"


def attempts(events: list[SummaryEvent]) -> list[SummaryEvent]:
    """One summary or failure event per summarizer attempt, at the turn it was planned."""
    return sorted((e for e in events if e.kind in ("summary", "failure") and e.error_kind != "internal"),
                  key=lambda e: e.turn)


def check_cadence(rs: RollingSummarizer, preset: str, added: list[Message], events: list[SummaryEvent],
                  params: dict[str, Any]) -> None:
    nonsystem_upto: list[int] = []
    tokens_upto: list[int] = []
    n = t = 0
    for m in added:
        n += m.role != "system"
        t += rs.counter.count_message(m)
        nonsystem_upto.append(n)
        tokens_upto.append(t)
    tried = attempts(events)
    per_turn = Counter(e.turn for e in tried)
    assert max(per_turn.values(), default=0) <= rs.max_passes + 1
    cap = rs.min_messages_per_attempt  # issue #19: under every policy, at every prefix of any stream
    for k, e in enumerate(tried, start=1):
        assert k * cap <= nonsystem_upto[e.turn], f"attempt {k} at turn {e.turn}: over the attempt cap {cap}"
    if preset in ("since-last", "clear+since-last"):
        every = params.get("messages_per_summary", 20)
        for k, e in enumerate(tried, start=1):
            assert k * every <= nonsystem_upto[e.turn], f"attempt {k} at turn {e.turn}: rate limit broken"
    if preset == "evict-window":
        every = params.get("min_evicted", 10)
        for k, e in enumerate(tried, start=1):
            evicted = sum(x.messages for x in events if x.kind == "evict" and x.turn <= e.turn)
            assert k * every <= evicted, f"attempt {k} at turn {e.turn}: {evicted} evictions"
    guard = [e for e in tried if e.guard]
    gap = int((1 - rs.guard_low_water) * (rs.context_window - rs.reserved_output_tokens))
    for a, b in itertools.pairwise(guard):
        assert tokens_upto[b.turn] - tokens_upto[a.turn] >= gap, "guard compactions too close"


@pytest.mark.parametrize("preset", WINDOWED)
@settings(max_examples=EXAMPLES_PER_PRESET, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=window_streams, failures=st.lists(st.sampled_from(FAILURES), max_size=6), data=st.data())
def test_every_windowed_preset_keeps_its_window_on_every_turn(
        preset: str, stream: list[tuple[str, int]], failures: list[str], data: st.DataObject) -> None:
    params = window_params(preset, data)
    events: list[SummaryEvent] = []
    rs = RollingSummarizer.from_preset(preset, store=MemoryStore(), sleep=lambda s: None,
                                       on_event=events.append, **params)
    assert rs.enforce_window and rs.config()["context_window"] == params["context_window"]
    window = rs.context_window - rs.reserved_output_tokens  # seed 002: the budget (0 reserved elsewhere)
    rs.summarizer = Flaky(failures)
    added: list[Message] = []
    for i, (role, words) in enumerate(stream):
        m = Message(role, f"m{i} " + " ".join(f"w{j}" for j in range(words)),  # type: ignore[arg-type]
                    name=TOOLS[i % 2] if role == "tool" else None)
        rs.add(m)
        added.append(rs.store.messages(rs.conversation_id)[-1].message)
        context = rs.context()
        counted = sum(rs.counter.count_message(x) for x in context)
        assert counted == rs.context_tokens(), "context_tokens() must count the context sent"
        assert counted <= window, f"turn {i}: {counted} tokens in a {window}-token window"
        clipped = [x for x in context if x.meta.get("clipped_chars")]
        kinds = [e.kind for e in rs.last_events]
        assert bool(clipped) == ("clip" in kinds), "a clip is always announced, and only then"
        if clipped:
            assert all(CLIP_MARKER.split("{")[0] in x.content for x in clipped)
            assert len(rs.messages) <= 1, "clipping is the last resort: everything else moved out first"
        if preset in CLEARING:
            check_cleared(rs, added, context, params)
    check(rs, added, preset, failures)
    check_cadence(rs, preset, added, events, params)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=window_streams, preset=st.sampled_from(WINDOWED),
       failures=st.lists(st.sampled_from(FAILURES), max_size=4), data=st.data())
def test_a_resumed_engine_shows_the_context_it_left_inside_the_window(
        stream: list[tuple[str, int]], preset: str, failures: list[str], data: st.DataObject) -> None:
    """An app that reopens the conversation from its store (a restart, a new request) and asks
    for the context before adding anything gets the context the last engine left: inside the
    window, clips and cleared tool results shown as they were. Before, a resumed engine showed
    each clipped message whole and every cleared tool result again, past the window. (Clearing
    is sticky and its record is not stored: a resumed engine clears by the rule at its context,
    so under clearing only the window is held, not the exact placeholders.)"""
    params = {**window_params(preset, data), "lag_turns": 0}
    store = MemoryStore()

    def open_engine() -> RollingSummarizer:
        rs = RollingSummarizer.from_preset(preset, store=store, conversation_id="c", sleep=lambda s: None, **params)
        rs.summarizer = Flaky(failures)
        return rs

    rs = open_engine()
    limit = rs.context_window - rs.reserved_output_tokens
    for i, (role, words) in enumerate(stream):
        rs.add(Message(role, f"m{i} " + " ".join(f"w{j}" for j in range(words)),  # type: ignore[arg-type]
                       name=TOOLS[i % 2] if role == "tool" else None))
        left = [(x.role, x.content) for x in rs.context()]
        rs.close()
        rs = open_engine()
        assert rs.context_tokens() <= limit, f"turn {i}: resumed at {rs.context_tokens()} of {limit} tokens"
        assert sum(rs.counter.count_message(x) for x in rs.context()) == rs.context_tokens()
        if preset not in CLEARING:
            assert [(x.role, x.content) for x in rs.context()] == left, f"turn {i}: the resumed context differs"
    rs.close()
