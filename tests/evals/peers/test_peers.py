"""The real LangChain and LlamaIndex memories, through rollsum's Model and counter, in a sweep.

Skipped (with the reason) when the ``peers`` extra is absent; ``nox -s peers`` installs it.
The suite's socket guard stays on: nothing here may download a tokenizer or call a provider.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.replay import replay
from rollsum_evals.run import run_sweep
from rollsum_evals.rundir import load_run
from rollsum_evals.spec.parse import load_spec, parse_spec
from rollsum_evals.units import Unit

from rollsum import plugins
from rollsum.errors import ConfigError
from rollsum.memory import Memory
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryEvent
from tests.support.helpers import Recording, chat, fake

ROOT = Path(__file__).resolve().parents[3]
PEERS = {"langchain": ("langchain_classic", "rollsum_evals.peers.langchain:SummaryBufferMemory"),
         "llamaindex": ("llama_index.core", "rollsum_evals.peers.llamaindex:ChatSummaryMemory"),
         "langchain-middleware": ("langchain.agents.middleware",
                                  "rollsum_evals.peers.langchain_middleware:SummarizationMiddlewareMemory"),
         "llamaindex-memory": ("llama_index.core", "rollsum_evals.peers.llamaindex:LlamaMemory")}
API_PEERS = {"rollsum_evals.peers.anthropic_api:ContextEditingMemory",
             "rollsum_evals.peers.anthropic_api:CompactionMemory"}
MISSING = "peers extra not installed (pip install -e '.[peers]' or nox -s peers)"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


needs_extra = pytest.mark.skipif(not all(_installed(m) for m, _ in PEERS.values()), reason=MISSING)
BOTH = pytest.mark.parametrize("peer", sorted(PEERS))  # every local peer


FACTS = "llamaindex-memory"
"""Its LLM extracts facts and keeps only what it answers in LlamaIndex's XML (a fake extractive
model's answer has none, so it would never summarize): scripted answers in that form."""


def model_for(peer: str, *answers: str) -> Recording:
    if peer == FACTS:
        return fake("scripted", script=[f"<facts><fact>{a}</fact></facts>" for a in answers or ("fact one",
                                                                                               "fact two")])
    return fake("scripted", script=list(answers)) if answers else fake("extractive")


def build(peer: str, model: Recording, window: int, events: list[SummaryEvent]) -> Any:
    factory = plugins.load(PEERS[peer][1])
    return factory(model=model, context_window=window, counter=HeuristicCounter(), on_event=events.append)


@needs_extra
@BOTH
def test_the_peer_keeps_the_window_and_calls_only_rollsums_model(peer: str) -> None:
    model, counter = model_for(peer), HeuristicCounter()
    events: list[SummaryEvent] = []
    memory = build(peer, model, 1200, events)
    assert isinstance(memory, Memory)
    messages = [m.with_id(f"m{i}") for i, m in enumerate(chat(90, words=25))]
    for i, m in enumerate(messages):
        memory.add(m)
        context = memory.context()
        # the same budget as the presets, measured with the presets' ruler, every turn
        assert sum(counter.count_message(x) for x in context) <= 1200, i
        # verbatim messages come back as themselves; the rest is the peer's summary
        verbatim = [x for x in context if x.id is not None]
        assert all(x is messages[int(str(x.id)[1:])] for x in verbatim)
        assert verbatim == messages[i + 1 - len(verbatim):i + 1]
    assert events and model.inner.calls >= len(events)  # type: ignore[attr-defined]
    # every summary call went through rollsum's Model, capped at the summary's share
    assert all(r.max_tokens <= 120 for r in model.requests)
    # each reported summary covers what left the buffer, once, in order
    covered = [mid for e in events for mid in (e.record.covered_ids if e.record else ())]
    assert covered == [m.id for m in messages[:len(covered)]]
    assert len(covered) == len(messages) - len([x for x in memory.context() if x.id is not None])
    summary = [x for x in memory.context() if x.id is None]
    assert len(summary) == 1 and summary[0].role in ("system", "user")  # LangChain v1 sends it as a human turn
    assert events[-1].record is not None and summary[0].content == events[-1].record.text
    getattr(memory, "close", lambda: None)()


@needs_extra
@BOTH
def test_the_peers_summary_is_what_rollsums_model_answered(peer: str) -> None:
    model = model_for(peer, "SUMMARY-A", "SUMMARY-B")
    events: list[SummaryEvent] = []
    memory = build(peer, model, 600, events)
    for m in (x.with_id(f"m{i}") for i, x in enumerate(chat(40, words=25))):
        memory.add(m)
        memory.context()
    getattr(memory, "close", lambda: None)()
    texts = {e.record.text for e in events if e.record is not None}
    assert texts
    if peer == FACTS:  # the facts, in the block's frame
        assert all("<fact>SUMMARY-A</fact>" in t for t in texts)
    elif peer == "langchain-middleware":  # in the human turn the middleware writes
        assert {t.partition("to date:\n\n")[2] for t in texts} <= {"SUMMARY-A", "SUMMARY-B"}
    else:
        assert texts <= {"SUMMARY-A", "SUMMARY-B"}


@needs_extra
@BOTH
def test_a_replay_of_the_peer_through_the_harness(peer: str) -> None:
    from rollsum_evals.data.formats import parse_synth_spec

    conv = next(iter(parse_synth_spec("synth:chat?conversations=1&messages=120&seed=5"))).conversation()
    # the middleware keeps 20 messages whatever their size (its default), more than 2,000 tokens
    # of these: a user at this window keeps tokens instead (a TOML list, as in a spec)
    params = '{"keep": ["tokens", 1000]}' if peer == "langchain-middleware" else "{}"
    unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=peer,
                preset=PEERS[peer][1], params_json=params, prompt="", model="fake:mode=extractive", seed=0,
                context_window=2000)
    model = model_for(peer)
    trace = replay(unit, conv, model=model)
    assert max(t.context_tokens for t in trace.turns) <= 2000
    assert trace.summaries and trace.model_calls == model.inner.calls > 0  # type: ignore[attr-defined]
    assert trace.engine_config["memory"] == PEERS[peer][1] and trace.engine_config["versions"]
    assert trace.engine_config["capabilities"]["offline"] is True
    # the context the trace rebuilds holds the peer's summary as a text and the rest verbatim
    last = trace.context_at(len(trace.turns) - 1)
    assert any(not item.verbatim for item in last) and sum(item.verbatim for item in last) > 5


@needs_extra
def test_the_shipped_peers_spec_compares_the_peers_with_the_presets_at_one_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    spec = load_spec(ROOT / "evals" / "sweeps" / "peers.toml")
    presets = {c.preset for c in spec.configs if not plugins.is_import_path(c.preset)}
    assert {"count-and-tokens", "since-last", "budget-rule-based", "token-ratio", "evict-window"} <= presets
    local = {c.preset for c in spec.configs if plugins.is_import_path(c.preset)}
    assert local == {p for _, p in PEERS.values()}  # the API peers are skipped without a key, and said to be
    assert {line.split("'")[1] for line in spec.skipped} == {"anthropic-context-editing", "anthropic-compaction"}
    assert len(spec.context_windows) == 1 and len(spec.models) == 1 and spec.models[0].startswith("fake")
    # a cut-down copy runs end to end and scores both peers
    text = (ROOT / "evals" / "sweeps" / "peers.toml").read_text()
    text = text.replace("context_window = 8000", 'context_window = 3000\ncache = "off"')
    text = text.replace("conversations=3&messages=300", "conversations=1&messages=120")
    small = parse_spec(text, str(tmp_path / "peers.toml"))
    run_sweep(small, tmp_path / "run", progress=False)
    units = load_run(tmp_path / "run").units
    assert (units["status"] == "ok").all(), units["error"].tolist()
    peers = units[units["config"].isin(["langchain-summary-buffer", "llamaindex-chat-summary",
                                        "langchain-summarization-middleware", "llamaindex-memory"])]
    assert len(peers) == 8 and peers["retention"].notna().all()
    # LlamaIndex's fact block keeps only facts in its XML: a fake extractive answer has none
    assert (peers[peers["config"] != "llamaindex-memory"]["n_summaries"] > 0).all()
    kept = units[units["config"] != "full-context"]  # the one config that promises no budget
    assert (kept["max_context_tokens"] <= 3000).all()


@BOTH
def test_without_the_extra_the_spec_says_which_extra_to_install(peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    third_party, path = PEERS[peer]
    top = third_party.split(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")] or [top]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it fails, as when not installed
    monkeypatch.delitem(sys.modules, path.partition(":")[0], raising=False)
    text = (ROOT / "evals" / "sweeps" / "peers.toml").read_text()
    with pytest.raises(ConfigError) as err:
        parse_spec(text, "peers.toml")
    msg = str(err.value)
    assert "peers.toml:" in msg and "pip install 'rollsum[peers]'" in msg and "\n" not in msg


def test_message_roles_survive_the_round_trip() -> None:
    if not _installed("langchain_classic"):
        pytest.skip(MISSING)
    lc = importlib.import_module("rollsum_evals.peers.langchain")
    for role in ("user", "assistant", "system", "tool"):
        m = lc.to_langchain(Message(role, "x", id="a", name="Bob"))
        assert m.id == "a" and m.content == "x"



@pytest.mark.skipif(not _installed("langchain.agents.middleware"), reason=MISSING)
def test_the_middleware_moves_its_cut_back_to_the_call_of_the_results_it_keeps() -> None:
    """LangChain v1's promise: its cut never separates a tool call from its results. Keeping the
    last 2 of [user, assistant (the call), tool, tool], the cut falls on a result: the middleware
    moves it back to the assistant message that made the calls, which it can only find if the
    adapter records the calls on it (``tool_calls``); otherwise it drops the results too."""
    from rollsum_evals.peers.langchain_middleware import SummarizationMiddlewareMemory

    memory = SummarizationMiddlewareMemory(model=fake("extractive"), context_window=8000, counter=HeuristicCounter(),
                                           trigger=["messages", 4], keep=["messages", 2])
    turns = [Message("user", "Fix it.", id="u0"), Message("assistant", "Reading two files.", id="a1"),
             Message("tool", "one", name="read_file", id="t2"), Message("tool", "two", name="read_file", id="t3")]
    for m in turns:
        memory.add(m)
        context = memory.context()
    assert [m.id for m in context] == [None, "a1", "t2", "t3"]
    assert context[1] is turns[1] and context[0].content.startswith("Here is a summary")
