import hashlib
import json
import re
from pathlib import Path

import pytest
from rollsum_evals.data import load, parse_synth_spec, write_jsonl, write_streamed
from rollsum_evals.data.synth import (
    AGENT_CATEGORIES,
    CATEGORIES,
    SyntheticConversation,
    generate,
    make_conversation,
)
from rollsum_evals.data.types import Conversation

from rollsum.errors import ConfigError


@pytest.fixture(scope="module", params=["chat", "agent", "mixed"])
def conv(request: pytest.FixtureRequest) -> Conversation:
    return make_conversation(request.param, n_messages=600, seed=11)


def test_same_seed_same_conversation_different_seed_different() -> None:
    a = make_conversation("mixed", n_messages=300, seed=5)
    b = make_conversation("mixed", n_messages=300, seed=5)
    c = make_conversation("mixed", n_messages=300, seed=6)
    assert a == b
    assert a.messages != c.messages


def test_known_bytes_pin_cross_platform_determinism() -> None:
    # If this changes, the generator's output changed: bump GENERATOR_VERSION, regenerate
    # datasets/synthetic and its manifest (see datasets/README.md).
    from rollsum_evals.data.jsonl import dumps

    raw = dumps(make_conversation("mixed", n_messages=200, seed=1)).encode()
    assert hashlib.sha256(raw).hexdigest() == "888f71239dad43580a85b710fd3b83fdbf582089ad9fb47e342a02b9cc48cd53"


def test_exact_length_and_unique_ids(conv: Conversation) -> None:
    assert len(conv.messages) == 600
    ids = [m.id for m in conv.messages]
    assert len(set(ids)) == len(ids)
    assert ids[7] == f"{conv.id}:7"


def test_timestamps_never_go_backwards(conv: Conversation) -> None:
    stamps = [m.created_at or "" for m in conv.messages]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s or "") for s in stamps)
    assert stamps == sorted(stamps)


def test_every_category_is_probed(conv: Conversation) -> None:
    # the agent flavor also asks what an agent needs after a compaction (issue #23)
    agent = set(AGENT_CATEGORIES) if conv.meta["flavor"] == "agent" else set()
    assert {p.category for p in conv.probes} == set(CATEGORIES) | agent


def test_answers_appear_verbatim_in_their_evidence(conv: Conversation) -> None:
    by_id = {m.id: m for m in conv.messages}
    for p in conv.probes:
        assert p.evidence, p
        assert all(p.answer in by_id[e].content for e in p.evidence), p


def test_answers_are_not_leaked_elsewhere(conv: Conversation) -> None:
    """Retention is only a real test if the answer is found only where it was planted."""
    for p in conv.probes:
        holders = {m.id for m in conv.messages if p.answer.lower() in m.content.lower()}
        if p.category == "current-task":  # the latest request/command; earlier identical ones restate it
            assert set(p.evidence) <= holders and len(p.evidence) == 1, p
            continue
        assert holders == set(p.evidence), p


def test_superseded_probes_answer_the_latest_value(conv: Conversation) -> None:
    by_id = {m.id: i for i, m in enumerate(conv.messages)}
    sup = [p for p in conv.probes if p.category == "superseded"]
    assert sup
    for p in sup:
        assert p.stale_answers and p.answer not in p.stale_answers
        old = conv.messages[by_id[p.meta["stale_evidence"]]]
        new = conv.messages[by_id[p.evidence[-1]]]
        assert p.stale_answers[0] in old.content and p.stale_answers[0] not in new.content
        assert by_id[old.id] < by_id[new.id]


def test_facts_are_planted_in_the_first_70_percent_by_default(conv: Conversation) -> None:
    n = len(conv.messages)
    index = {m.id: i for i, m in enumerate(conv.messages)}
    # planted facts only: the agent probes are read off tool traffic anywhere in the session
    planted = [index[p.meta["planted_at"]] for p in conv.probes if p.category in CATEGORIES]
    assert max(planted) <= 0.75 * n and min(planted) < 0.2 * n


def test_distractors_are_the_bulk(conv: Conversation) -> None:
    evidence = {e for p in conv.probes for e in (*p.evidence, p.meta["planted_at"])}
    assert len(evidence) < 0.1 * len(conv.messages)


def test_realistic_message_lengths() -> None:
    c = make_conversation("chat", n_messages=400, seed=2)
    user = [len(m.content.split()) for m in c.messages if m.role == "user"]
    asst = [len(m.content.split()) for m in c.messages if m.role == "assistant"]
    assert 10 <= sum(user) / len(user) <= 60
    assert 30 <= sum(asst) / len(asst) <= 150


def test_agent_tool_calls_pair_with_results() -> None:
    c = make_conversation("agent", n_messages=500, seed=3)
    tools = {m.name for m in c.messages if m.role == "tool"}
    assert {"read_file", "execute_bash", "grep", "edit_file", "create_file", "search_files"} <= tools
    for i, m in enumerate(c.messages[:-1]):
        if m.meta.get("tool_calls"):
            nxt = c.messages[i + 1]
            assert nxt.role == "tool" and nxt.meta["tool_call_id"] == m.meta["tool_calls"][0]
    bash = [m for m in c.messages if m.name == "execute_bash"]
    assert all(isinstance(m.meta["exit_code"], int) and "command" in m.meta for m in bash)
    assert any(m.meta["exit_code"] != 0 for m in bash)
    assert all("path" in m.meta for m in c.messages if m.name in ("read_file", "edit_file", "create_file"))


def test_mixed_has_both_kinds_of_talk() -> None:
    c = make_conversation("mixed", n_messages=600, seed=4)
    roles = {m.role for m in c.messages}
    assert "tool" in roles
    assert {p.meta["channel"] for p in c.probes} == {"chat", "agent"}


def test_generate_streams_lazily() -> None:
    stream = generate("agent", n_messages=10_000_000, seed=1)
    first = [next(stream) for _ in range(5)]
    assert len(first) == 5


def test_streamed_file_equals_in_memory_file(tmp_path: Path) -> None:
    spec = "synth:mixed?conversations=2&messages=120-200&seed=9"
    write_streamed(parse_synth_spec(spec), tmp_path / "a.jsonl")
    write_jsonl(load(spec), tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert load(tmp_path / "a.jsonl") == load(spec)


def test_spec_string_gives_the_requested_shape() -> None:
    convs = load("synth:chat?conversations=3&messages=80&seed=1&facts=4")
    assert [len(c.messages) for c in convs] == [80, 80, 80]
    assert all(len(c.probes) == 4 for c in convs)
    assert len({c.id for c in convs}) == 3


@pytest.mark.parametrize("spec", ["synth:poetry?messages=5", "synth:chat?messages=lots",
                                  "synth:chat?colour=red", "synth:chat?conversations=0"])
def test_bad_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        load(spec)


def test_probes_are_available_without_holding_messages() -> None:
    sc = SyntheticConversation("chat", n_messages=300, seed=1)
    assert sc.probes() == make_conversation("chat", n_messages=300, seed=1).probes


def test_tiny_conversations_have_no_probes_but_are_valid() -> None:
    c = make_conversation("chat", n_messages=3, seed=1)
    assert len(c.messages) == 3 and c.probes == ()


def test_output_is_plain_json_without_platform_dependent_values(tmp_path: Path) -> None:
    write_streamed(parse_synth_spec("synth:agent?messages=50&seed=2"), tmp_path / "x.jsonl")
    raw = (tmp_path / "x.jsonl").read_bytes()
    json.loads(raw)
    assert hashlib.sha256(raw).hexdigest() == hashlib.sha256(
        (tmp_path / "x.jsonl").read_bytes()).hexdigest()


def test_agent_probes_leave_the_messages_and_planted_probes_as_they_were() -> None:
    """Issue #23's agent probes are read off the traffic: adding them changed no byte of the
    messages nor any planted probe, and `agent_probes=0` leaves them out (pinned numbers)."""
    (with_,) = load("synth:agent?conversations=1&messages=400&seed=9")
    (without,) = load("synth:agent?conversations=1&messages=400&seed=9&agent_probes=0")
    assert with_.messages == without.messages
    planted = [p for p in with_.probes if p.category in CATEGORIES]
    assert planted == list(without.probes) and len(with_.probes) > len(planted)
    assert {p.category for p in with_.probes} - set(CATEGORIES) <= set(AGENT_CATEGORIES)
    with pytest.raises(ConfigError, match="agent_probes"):
        list(parse_synth_spec("synth:agent?agent_probes=yes"))


def test_agent_probes_ask_what_the_tools_showed() -> None:
    conv = make_conversation("agent", n_messages=450, seed=42)
    by_id = {m.id: m for m in conv.messages}
    agent = [p for p in conv.probes if p.category in AGENT_CATEGORIES]
    assert {p.category for p in agent} == set(AGENT_CATEGORIES)
    for p in agent:
        assert p.meta["channel"] == "agent" and p.meta["planted_at"] in p.evidence
        if p.category in ("failed-approach", "tool-identifier"):  # read off a tool's output
            assert by_id[p.evidence[-1]].role == "tool"
    ends = [p for p in agent if p.category == "current-task"]
    assert [p.meta.get("ask_at") for p in ends] == ["end", "end"]
    last = max(i for i, m in enumerate(conv.messages) if m.role == "user" and ends[0].answer in m.content)
    assert ends[0].meta["planted_at"] == conv.messages[last].id, "the current task is the latest one asked"
    calls = [m.id for m in conv.messages if m.role == "assistant" and "Calling execute_bash(" in m.content]
    assert ends[1].meta["planted_at"] == calls[-1], "the step is the latest command run"


def test_a_whole_agent_conversation_is_generated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`conversation()` holds the messages, so the agent probes count their answers in them: the
    stream is generated once (a reader reloading a run's synthetic sets paid for it twice), and
    messages and probes are those of the streaming path."""
    streamed = SyntheticConversation("agent", n_messages=400, seed=9)
    messages = list(streamed.messages())
    calls = []
    stream = SyntheticConversation._stream

    def counted(self: SyntheticConversation, *args: object) -> object:
        calls.append(self.id)
        return stream(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SyntheticConversation, "_stream", counted)
    whole = SyntheticConversation("agent", n_messages=400, seed=9).conversation()
    assert len(calls) == 1
    assert list(whole.messages) == messages and whole.probes == streamed.probes()
    assert any(p.category in AGENT_CATEGORIES for p in whole.probes)
