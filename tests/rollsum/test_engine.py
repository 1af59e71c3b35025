"""RollingSummarizer behaviours beyond the seeds: lag, lineage, ledger, tool pairs, presets."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from rollsum import ConfigError, Message, RollingSummarizer, presets
from rollsum.errors import ErrorKind, SummarizeError
from rollsum.store import SQLiteStore
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from tests.support.helpers import chat, fake


class Scripted:
    """A summarizer that returns canned drafts and keeps every request it saw."""

    name = "scripted"

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        self.requests.append(request)
        text = self.texts[min(len(self.requests) - 1, len(self.texts) - 1)]
        return SummaryDraft(text=text, model="scripted")

    def params(self) -> dict[str, Any]:
        return {"texts": len(self.texts)}


def engine(preset: str = "since-last", summarizer: Any = None, **kw: Any) -> RollingSummarizer:
    rs = RollingSummarizer.from_preset(preset, **kw)
    if summarizer is not None:
        rs.summarizer = summarizer
    return rs


def test_every_preset_builds_offline_and_with_a_model() -> None:
    assert set(presets.names()) >= {"count-and-tokens", "since-last", "budget-rule-based", "token-ratio",
                                    "evict-window", "full-context", "truncate"}
    for name in presets.names():
        offline = RollingSummarizer.from_preset(name)
        assert offline.summarizer.name == "extractive"
        online = RollingSummarizer.from_preset(name, fake("json"))
        assert online.config()["preset"] == name
        for m in chat(60, words=40):
            offline.add(m)
            online.add(m)


def test_unknown_preset_and_parameter_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="known presets"):
        RollingSummarizer.from_preset("since-lats")
    with pytest.raises(ConfigError, match="keep_last"):
        RollingSummarizer.from_preset("since-last", keep_lats=3)


def test_config_records_what_recreates_the_engine() -> None:
    rs = RollingSummarizer.from_preset("since-last", keep_last=4, context_window=9000)
    cfg = rs.config()
    assert cfg["policy"] == {"name": "since-last", "params": {"messages_per_summary": 20, "keep_last": 4,
                                                              "count_since": "covered"}}
    assert cfg["context_window"] == 9000 and cfg["summarizer"]["name"] == "extractive"
    again = RollingSummarizer.from_preset(cfg["preset"], **cfg["policy"]["params"],
                                          context_window=cfg["context_window"])
    assert again.config() == cfg


def test_lagged_summary_lands_later_and_keeps_new_messages() -> None:
    rs = engine(lag_turns=3)
    for m in chat(20):
        rs.add(m)
    assert rs.summary is None  # triggered at the 20th message, not landed yet
    for m in chat(3, start=20):
        ev = rs.add(m)
    assert ev is not None and ev.kind == "summary" and ev.lag_turns == 3
    assert rs.summary is not None and rs.summary.messages_covered == 10
    assert len(rs.messages) == 13  # 10 verbatim + the 3 that arrived meanwhile


def test_flush_lands_an_inflight_summary() -> None:
    rs = engine(lag_turns=50)
    for m in chat(20):
        rs.add(m)
    assert rs.summary is None
    ev = rs.flush()
    assert ev is not None and ev.kind == "summary" and rs.summary is not None


def test_closing_with_a_lagged_summary_in_flight_says_it_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    """A closed engine lands nothing (its writes would collide with the next owner's), so an
    engine rebuilt per request with `lag_turns` never summarizes: close() says so instead of
    dropping the summary in silence; an engine with nothing in flight says nothing."""
    import logging

    rs = engine(lag_turns=3)
    for m in chat(20):
        rs.add(m)
    with caplog.at_level(logging.WARNING, logger="rollsum.engine"):
        rs.close()
    said = [r.getMessage() for r in caplog.records if "lagged summary" in r.getMessage()]
    assert len(said) == 1 and "3 turn(s) from landing: dropped (lag_turns=3" in said[0]
    caplog.clear()
    flushed = engine(lag_turns=3)
    for m in chat(20):
        flushed.add(m)
    flushed.flush()
    with caplog.at_level(logging.WARNING, logger="rollsum.engine"):
        flushed.close()
        engine().close()
    assert not [r for r in caplog.records if "lagged summary" in r.getMessage()]


def test_rebuild_from_raw_resummarizes_archived_messages() -> None:
    s = Scripted("first", "second")
    rs = engine(summarizer=s, rebuild_from_raw=True)
    for m in chat(40):
        rs.add(m)
    assert len(s.requests) == 2
    second = s.requests[1]
    assert second.previous is None and len(second.messages) == 30  # 10 archived + 20 new
    assert [r.depth for r in rs.history] == [0, 0]


def test_folding_increments_depth_and_links_parents() -> None:
    rs = engine(summarizer=Scripted("a", "b", "c"))
    for m in chat(60):
        rs.add(m)
    assert [r.depth for r in rs.history] == [0, 1, 2]
    assert rs.history[2].parent_id == rs.history[1].id


def facts_chat() -> list[Message]:
    out = [Message("user", "My order number is ORD-48213 and the courier is Dana Whitfield."),
           Message("assistant", "Noted: order ORD-48213, courier Dana Whitfield.")]
    return out + list(chat(30, start=2))


def test_ledger_pins_what_the_summary_dropped() -> None:
    rs = engine(summarizer=Scripted("They talked about lorem ipsum."), ledger="pin")
    for m in facts_chat():
        rs.add(m)
    first = rs.history[0]
    assert "ORD-48213" in first.pinned_facts and "Dana Whitfield" in first.pinned_facts
    assert "ORD-48213" in rs.summary_text()
    assert first.ledger["pinned"] >= 2 and first.ledger["kept"] == 0


def test_ledger_retry_names_the_lost_facts_then_pins() -> None:
    s = Scripted("They talked about lorem ipsum.", "Order ORD-48213 with Dana Whitfield.")
    rs = engine(summarizer=s, ledger="retry")
    for m in facts_chat():
        rs.add(m)
    assert "ORD-48213" in s.requests[1].must_keep
    first = rs.history[0]
    assert first.text.startswith("Order ORD-48213")
    assert "ORD-48213" not in first.pinned_facts and "Dana Whitfield" not in first.pinned_facts


def test_ledger_off_and_auto() -> None:
    rs = engine(summarizer=Scripted("nothing"), ledger="off")
    for m in facts_chat():
        rs.add(m)
    assert rs.history[0].pinned_facts == () and rs.history[0].facts == ()
    assert RollingSummarizer.from_preset("since-last").ledger_mode == "off"  # extractive
    assert RollingSummarizer.from_preset("since-last", fake()).ledger_mode == "pin"


def test_pinned_facts_never_overflow_the_summary_budget() -> None:
    many = " ".join(f"ticket INC-{1000 + i}" for i in range(200))
    rs = engine(summarizer=Scripted("short"), ledger="pin", max_summary_tokens=120)
    rs.add(Message("user", many))
    for m in chat(30, start=1):
        rs.add(m)
    assert rs.history and rs.history[0].tokens <= 120
    assert rs.history[0].ledger["lost"] > 0  # honest: what did not fit is counted as lost


def test_tool_call_and_result_are_never_split() -> None:
    rs = engine(keep_last=3, messages_per_summary=6, min_messages_per_attempt=0)
    msgs = [Message("user", "look at the config"), Message("assistant", "reading", meta={"tool_calls": ["t1"]}),
            Message("tool", "a=1\nb=2", name="read_file", meta={"tool_call_id": "t1", "path": "cfg.toml"}),
            Message("tool", "c=3", name="read_file", meta={"tool_call_id": "t1", "path": "cfg2.toml"}),
            Message("assistant", "the config sets a, b, c"), Message("user", "thanks")]
    for m in msgs:
        rs.add(m)
    # keep_last=3 would cut between the call and its second result: the pair stays whole
    assert rs.summary is not None
    covered = set(rs.summary.covered_ids)
    ids = [s.message.id for s in rs.store.messages(rs.conversation_id)]
    assert (ids[1] in covered) == (ids[2] in covered) == (ids[3] in covered)


def test_system_messages_are_pinned_and_never_summarized() -> None:
    rs = engine()
    rs.add(Message("system", "You are a travel agent. " * 50))
    for m in chat(40):
        rs.add(m)
    ctx = rs.context()
    assert ctx[0].role == "system" and ctx[0].content.startswith("You are a travel agent.")
    assert all(s.state == "active" for s in rs.store.messages(rs.conversation_id) if s.message.role == "system")


def test_a_large_system_prompt_does_not_fire_the_token_trigger_every_turn() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", fake("json"), context_window=4000)
    rs.add(Message("system", "policy " * 1570))  # ~2,750 of the 4,000 tokens
    turns = []
    for i, m in enumerate(chat(60, words=15)):
        ev = rs.add(m)
        if ev and ev.kind == "summary":
            turns.append(i)
    assert 1 <= len(turns) <= 4  # spaced by the room left, not every turn
    assert all(b - a > 4 for a, b in itertools.pairwise(turns))
    assert rs.context_tokens() <= 4000


def test_context_tokens_count_the_system_prompt_when_given() -> None:
    rs = engine()
    for m in chat(5):
        rs.add(m)
    base = rs.context_tokens()
    assert rs.context_tokens(system="x" * 400) == base + 100 + rs.counter.count_message(Message("user", ""))


def test_transport_failure_is_retried_with_backoff_then_kept() -> None:
    class Down:
        name = "down"
        calls = 0

        def summarize(self, request: SummaryRequest) -> SummaryDraft:
            Down.calls += 1
            raise SummarizeError("503 from upstream", transport=True, kind=ErrorKind.SERVER)

    sleeps: list[float] = []
    rs = engine(summarizer=Down(), sleep=sleeps.append, retries=2)
    for m in chat(20):
        rs.add(m)
    assert Down.calls == 3 and sleeps == [0.25, 0.5]
    assert rs.last_events[-1].kind == "failure" and rs.last_events[-1].attempts == 3
    assert len(rs.messages) == 20


def test_failure_cooldown_spaces_retries() -> None:
    class Down:
        name = "down"

        def __init__(self) -> None:
            self.calls = 0

        def summarize(self, request: SummaryRequest) -> SummaryDraft:
            self.calls += 1
            raise SummarizeError("bad json", transport=False, kind=ErrorKind.MALFORMED)

    d = Down()
    # count-and-tokens would fire on every message while failing; the backoff spaces it
    rs = engine("count-and-tokens", summarizer=d, failure_cooldown=5, max_failure_backoff=5,
                message_count_threshold=10, messages_to_summarize=5, recent_messages_to_keep=3,
                token_threshold=0, min_messages_per_attempt=0)  # the backoff alone is tested
    for m in chat(30):
        rs.add(m)
    assert d.calls == 4  # at messages 11, 16, 21 and 26: not on every turn


def test_error_text_is_redacted(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-SECRET-value")

    class Leaky:
        name = "leaky"

        def summarize(self, request: SummaryRequest) -> SummaryDraft:
            raise SummarizeError("401 invalid x-api-key: sk-ant-test-SECRET-value", transport=False)

    rs = engine(summarizer=Leaky())
    for m in chat(20):
        rs.add(m)
    assert "SECRET" not in (rs.last_events[-1].error or "")
    assert "SECRET" not in caplog.text


def test_the_window_guard_compacts_to_its_low_water_mark() -> None:
    """count-and-tokens' 15,000-token condition never fires here: only the guard acts, and each
    guard summary brings the context down to the low-water mark, not just under the window."""
    events: list[Any] = []
    rs = RollingSummarizer.from_preset("count-and-tokens", context_window=3000, on_event=events.append)
    for m in chat(300, words=40):
        rs.add(m)
        assert rs.context_tokens() <= 3000
    compactions = [e for e in events if e.kind == "summary"]
    assert compactions and all(e.guard and e.record.meta.get("guard") for e in compactions)
    assert all(e.tokens_after <= 0.6 * 3000 for e in compactions)
    assert not any(e.kind == "evict" for e in events)  # the summarizer worked: nothing left out


def test_the_window_guard_moves_the_middle_out_before_a_preserved_head() -> None:
    events: list[Any] = []
    rs = RollingSummarizer.from_preset("evict-window", context_window=1500, summarize_on_trim=False,
                                       on_event=events.append)
    task = Message("user", "Task: port the billing service. " * 3)
    rs.add(task)
    rs.add(Message("assistant", "On it."))
    for m in chat(30, words=120):  # ten of these are over the window: the tail alone overflows
        rs.add(m)
        assert rs.context_tokens() <= 1500
        assert rs.context()[0].content == task.content  # the head stays while the middle goes
    assert any(e.guard and e.kind == "evict" for e in events)


def test_guard_events_and_clips_are_reported_in_the_config_and_events() -> None:
    rs = RollingSummarizer.from_preset("token-ratio", context_window=800)
    ev = rs.add(Message("user", "word " * 2000))
    assert ev is not None and ev.kind == "clip" and ev.guard and ev.to_dict()["guard"] is True
    assert rs.config()["enforce_window"] is True and rs.context_tokens() <= 800


def test_a_summarizers_own_record_of_what_it_did_reaches_the_record_and_survives_a_restart(
        tmp_path: Path) -> None:
    """Drafts carry what the summarizer dropped (and the like) in `meta`: the engine copies it
    onto the record as plain JSON, so the record read back from a store is the same record."""

    class Noting:
        name = "noting"

        def summarize(self, request: SummaryRequest) -> SummaryDraft:
            return SummaryDraft(text=f"{len(request.messages)} messages",
                                meta={"dropped": 2, "dropped_lines": ("a", "b")})

    store = SQLiteStore(tmp_path / "chat.db")
    rs = engine("since-last", summarizer=Noting(), store=store, conversation_id="c")
    for m in chat(25):
        rs.add(m)
    assert rs.summary is not None
    assert rs.summary.meta["dropped"] == 2 and rs.summary.meta["dropped_lines"] == ["a", "b"]
    assert rs.summary.meta["preset"] == "since-last"
    made = rs.summary
    rs.close()
    assert SQLiteStore(tmp_path / "chat.db").summaries("c")[-1] == made


def test_adding_something_that_is_not_a_message_is_a_type_error_naming_it() -> None:
    # an app's slip (the text itself, or the API's {"role", "content"} dict) was
    # "AttributeError: 'str' object has no attribute 'id'"
    rs = RollingSummarizer.from_preset("since-last")
    for wrong in ("hello", {"role": "user", "content": "hello"}):
        with pytest.raises(TypeError, match=r"add\(\) takes a rollsum.Message, got (str|dict)"):
            rs.add(wrong)  # type: ignore[arg-type]
    assert rs.turn == 0 and rs.context() == []


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_an_id_the_app_gave_does_not_block_the_messages_it_adds_without_one(kind: str, tmp_path: Path) -> None:
    # "x/1" given at turn 0 is the id turn 1 would get: every id-less message was then refused
    # ("duplicate message id") and the conversation could not go on
    store = SQLiteStore(tmp_path / "chat.db") if kind == "sqlite" else "memory"
    rs = RollingSummarizer.from_preset("since-last", store=store, conversation_id="x")
    rs.add(Message("user", "hi", id="x/1"))
    rs.add(Message("assistant", "hello"))
    rs.add(Message("user", "and then?"))
    assert [m.content for m in rs.context()] == ["hi", "hello", "and then?"]
    with pytest.raises(ConfigError, match="duplicate message id 'x/1'"):
        rs.add(Message("user", "again", id="x/1"))  # an id the app gives twice is still its mistake
    with pytest.raises(ConfigError, match=r"message 'x/3': meta is not JSON"):  # other refusals: its own id
        rs.add(Message("user", "odd meta", meta={"s": {1, 2}}))
    if kind == "sqlite":
        rs.close()
        again = RollingSummarizer.from_preset("since-last", store=store, conversation_id="x")
        assert [m.content for m in again.context()] == ["hi", "hello", "and then?"]
        assert again.context_tokens() == rs.context_tokens()
