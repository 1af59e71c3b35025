"""Synthetic long conversations with planted facts whose answers we know.

Why synthetic: a retention score means something only when we know which facts were said,
where, and what their answer is. Facts are planted at controlled depths (by default spread over
the first 70 % of the conversation) between realistic distractors, and each fact becomes a
probe whose answer appears verbatim in its evidence message, so an offline scorer can check
whether it survived. Superseded facts are planted, then changed later; the probe's answer is the
new value and the old one is listed as stale (the change message never repeats the old value).

Determinism: all randomness comes from `random.Random` seeded with a string (hashed with SHA-512
by Python, not `hash()`), all pools are tuples, and timestamps are offsets from a fixed base, so
a (flavor, messages, seed, facts) tuple gives the same bytes on every platform.

Streaming: messages are produced one block at a time; only the fact plan (O(facts)) is held,
so a million-message conversation is generated in flat memory.

Over ~400 lines because it is one generator with one job: the fact plan, the chat and agent
block writers and the probe assembly share the seeded state and the fact records; the word
pools already live apart in `synth_text`. Splitting the writers out would thread that state
through every call without making any part reusable.
"""

from __future__ import annotations

import random
import re
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from rollsum.errors import ConfigError
from rollsum.types import Message
from rollsum_evals.data import synth_text as T
from rollsum_evals.data.types import Conversation, Probe

GENERATOR_VERSION = "1"
FLAVORS = ("chat", "agent", "mixed")
CATEGORIES = ("fact", "number", "identifier", "date", "decision", "superseded")
AGENT_CATEGORIES = ("file-changed", "failed-approach", "current-task", "tool-identifier")
"""Agent probes read off the generated tool traffic (`_Harvest`), after the planted facts."""
BASE_TIME = datetime(2024, 3, 4, 9, 0, 0, tzinfo=UTC)
DEFAULT_DEPTH = (0.02, 0.7)


def default_facts(n_messages: int) -> int:
    """Enough probes to measure retention, sparse enough that distractors are the bulk."""
    return max(1, min(240, n_messages // 30)) if n_messages >= 8 else 0


@dataclass(slots=True)
class _Fact:
    index: int
    category: str
    channel: str  # chat | agent
    how: str  # say | config | grep | git | edit
    question: str
    answer: str
    plant: str  # sentence or line that carries the first value
    stale: tuple[str, ...] = ()
    update: str = ""  # sentence or line that carries the new value (superseded only)
    extra: dict[str, str] = field(default_factory=dict)
    at: int = 0
    update_at: int = -1
    evidence: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Draft:
    role: str
    content: str
    name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    evidence_of: _Fact | None = None


class _Values:
    """Fact values unique within a conversation and never a substring of one another."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: list[str] = []

    def take(self, make: Any) -> str:
        for _ in range(200):
            v = str(make())
            low = v.lower()
            if all(low not in u and u not in low for u in self.used):
                self.used.append(low)
                return v
        raise ConfigError("synthetic generator ran out of distinct fact values; lower --facts")

    def number(self) -> str:
        return self.take(lambda: self.rng.randint(1000, 9999))

    def ident(self, prefix: str) -> str:
        return self.take(lambda: f"{prefix}-{self.rng.randint(10000, 99999)}")

    def date(self) -> str:
        return self.take(lambda: f"{self.rng.choice(T.MONTHS)} {self.rng.randint(1, 28)}")

    def name(self) -> str:
        return self.take(lambda: f"{self.rng.choice(T.FIRST_NAMES)} {self.rng.choice(T.LAST_NAMES)}")

    def pick(self, pool: tuple[str, ...]) -> str:
        return self.take(lambda: self.rng.choice(pool))


def _hash(rng: random.Random) -> str:
    """A commit-like hash with no two adjacent digits, so it never contains a planted number."""
    while True:
        h = f"{rng.getrandbits(28):07x}"
        if not re.search(r"\d\d", h):
            return h


# ---------------------------------------------------------------- fact makers

def _chat_fact(cat: str, rng: random.Random, v: _Values, slots: set[str]) -> _Fact | None:
    def slot(kind: str, pool: tuple[Any, ...]) -> Any:
        free = [p for p in pool if f"{kind}:{p}" not in slots]
        if not free:
            return None
        choice = rng.choice(free)
        slots.add(f"{kind}:{choice}")
        return choice

    if cat == "fact":
        pick = rng.randrange(3)
        if pick == 0 and (rel := slot("rel", T.RELATIONS)):
            val = v.name()
            return _Fact(0, cat, "chat", "say", f"What is the name of the user's {rel}?", val,
                         rng.choice((f"my {rel} is called {val}", f"my {rel}'s name is {val}",
                                     f"I finally met my {rel}, {val}")))
        if pick == 1 and (ev := slot("place", T.EVENT_PLACES)):
            val = v.pick(T.CITIES)
            return _Fact(0, cat, "chat", "say", f"Where is the user's {ev} taking place?", val,
                         f"the {ev} is going to be in {val}")
        pref = slot("pref", tuple(p for p, _ in T.PREFERENCES))
        if pref is None:
            return None
        val = v.pick(dict(T.PREFERENCES)[pref])
        return _Fact(0, cat, "chat", "say", f"What is the user's {pref}?", val, f"my {pref} is {val}")
    if cat == "number":
        thing = slot("num", T.NUMBER_THINGS)
        if thing is None:
            return None
        val = v.number()
        return _Fact(0, cat, "chat", "say", f"What is the user's {thing}?", val, f"the {thing} is {val}")
    if cat == "identifier":
        got = slot("id", T.ID_THINGS)
        if got is None:
            return None
        thing, prefix = got
        val = v.ident(prefix)
        return _Fact(0, cat, "chat", "say", f"What is the reference number of the user's {thing}?", val,
                     f"the reference for the {thing} is {val}")
    if cat == "date":
        ev = slot("date", T.DATE_EVENTS)
        if ev is None:
            return None
        val = v.date()
        return _Fact(0, cat, "chat", "say", f"When is the user's {ev}?", val, f"my {ev} is on {val}")
    if cat == "decision":
        got = slot("dec", T.DECISIONS)
        if got is None:
            return None
        topic, options = got
        val = v.pick(options)
        return _Fact(0, cat, "chat", "say", f"What did the user decide on for the {topic}?", val,
                     rng.choice((f"I've made up my mind about the {topic}: going with {val}",
                                 f"we decided on {val} for the {topic}")))
    got = slot("sup", T.SUPERSEDED)
    if got is None:
        return None
    thing, kind = got
    make = {"time": lambda: v.pick(T.TIMES), "gate": lambda: v.take(
        lambda: f"{rng.choice('ABCDEFG')}{rng.randint(10, 59)}"), "date": v.date, "number": v.number,
        "place": lambda: v.pick(("the north car park", "the old lighthouse", "the bakery on the corner",
                                 "the visitor centre", "the stone bridge", "the ferry terminal"))}[kind]
    old, new = make(), make()
    return _Fact(0, cat, "chat", "say", f"What is the current {thing}?", new, f"the {thing} is {old}",
                 stale=(old,), update=rng.choice((f"change of plans: the {thing} is now {new}",
                                                  f"update on the {thing}, it moved to {new}")))


def _agent_fact(cat: str, rng: random.Random, v: _Values, slots: set[str]) -> _Fact | None:
    module = rng.choice(T.MODULES)
    if cat in ("number", "superseded"):
        keys = [k for k in T.CONFIG_KEYS if f"cfg:{module}:{k}" not in slots]
        if not keys:
            return None
        key = rng.choice(keys)
        slots.add(f"cfg:{module}:{key}")
        path = f"config/{module}_settings.py"
        old = v.number()
        if cat == "number":
            return _Fact(0, cat, "agent", "config", f"What is {key} set to in {path}?", old,
                         f"{key} = {old}", extra={"path": path, "key": key})
        new = v.number()
        return _Fact(0, cat, "agent", "config", f"What is the current value of {key} in {path}?", new,
                     f"{key} = {old}", stale=(old,), update=f"{key} = {new}", extra={"path": path, "key": key})
    if cat == "fact":
        func = v.take(lambda: f"{rng.choice(T.FUNC_VERBS)}_{rng.choice(T.FUNC_NOUNS)}_{module}")
        path = v.take(lambda: f"src/{module}/{rng.choice(T.FUNC_NOUNS)}_"
                              f"{rng.choice(('codec', 'registry', 'policy', 'adapter', 'bridge'))}.py")
        return _Fact(0, cat, "agent", "grep", f"Which file defines the function {func}?", path,
                     f"{path}:{rng.randint(12, 240)}:def {func}(", extra={"pattern": f"def {func}"})
    if cat == "identifier":
        if rng.random() < 0.5:
            subject = f"{rng.choice(T.FUNC_VERBS)} {rng.choice(T.FUNC_NOUNS)}s in {module} before saving"
            if f"git:{subject}" in slots:
                return None
            slots.add(f"git:{subject}")
            val = v.take(lambda: _hash(rng))
            return _Fact(0, cat, "agent", "git", f"What is the hash of the commit '{subject}'?", val,
                         f"{val} {subject[0].upper()}{subject[1:]}")
        val = v.ident(rng.choice(("INC", "BUG", "OPS")))
        if f"ticket:{module}" in slots:
            return None
        slots.add(f"ticket:{module}")
        return _Fact(0, cat, "agent", "say", f"Which ticket tracks the {module} work?", val,
                     f"For the record, the {module} work is tracked in ticket {val}.")
    if cat == "date":
        things = ("release freeze", "security audit", "load test", "database migration window",
                  "customer demo", "dependency upgrade deadline")
        free = [t for t in things if f"when:{t}" not in slots]
        if not free:
            return None
        thing = rng.choice(free)
        slots.add(f"when:{thing}")
        val = v.date()
        return _Fact(0, cat, "agent", "say", f"When is the {thing}?", val,
                     f"Heads up: the {thing} is on {val}, so plan around it.")
    free_libs = [lib for lib in T.LIBRARIES if f"lib:{lib[0]}" not in slots]
    if not free_libs:
        return None
    purpose, options = rng.choice(free_libs)
    slots.add(f"lib:{purpose}")
    val = v.pick(options)
    return _Fact(0, cat, "agent", "say", f"Which {purpose} did they decide to use?", val,
                 f"Decision: let's go with {val} as the {purpose} and not revisit it.")


def _plan(flavor: str, n: int, n_facts: int, rng: random.Random,
          depth: tuple[float, float]) -> list[_Fact]:
    if n_facts <= 0 or n < 8:
        return []
    v, slots = _Values(rng), set[str]()
    facts: list[_Fact] = []
    misses = 0
    while len(facts) < n_facts and misses < 6 * n_facts + 20:
        cat = CATEGORIES[(len(facts) + misses) % len(CATEGORIES)]
        channel = flavor if flavor != "mixed" else rng.choice(("chat", "agent"))
        f = (_chat_fact if channel == "chat" else _agent_fact)(cat, rng, v, slots)
        if f is None:
            misses += 1
            continue
        f.index = len(facts)
        facts.append(f)
    lo, hi = depth
    k = len(facts)
    last = max(2, int(n * 0.9))
    for i, f in enumerate(facts):
        f.at = min(int(n * (lo + (hi - lo) * (i + rng.random()) / k)), n - 4)
        if f.stale:
            start = min(f.at + max(4, n // 10), last)
            f.update_at = rng.randint(start, max(start, last))
    return facts


# ---------------------------------------------------------------- text helpers

def _compose(rng: random.Random, pool: tuple[str, ...], lo: int, hi: int, lead: str = "",
             spare: tuple[str, ...] = ()) -> str:
    """Sentences drawn without repeats until a seeded word target is met (then from `spare`)."""
    target = rng.randint(lo, hi)
    parts = [lead] if lead else []
    words = len(lead.split())
    order = rng.sample(pool, len(pool)) + rng.sample(spare, len(spare))
    for s in order:
        if words >= target:
            break
        parts.append(s)
        words += len(s.split())
    return " ".join(parts)


def _sentence(s: str) -> str:
    s = s[0].upper() + s[1:]
    return s if s.endswith((".", "!", "?")) else s + "."


class SyntheticConversation:
    """One generated conversation: stream `messages()`, then read `probes()`.

    `messages()` can be iterated again and gives the same messages; probes are known once the
    messages have been generated (their evidence ids depend on where blocks fall).
    """

    def __init__(self, flavor: str, *, n_messages: int, seed: int | str,
                 conversation_id: str | None = None, facts: int | None = None,
                 depth: tuple[float, float] = DEFAULT_DEPTH, agent_probes: bool = True) -> None:
        if flavor not in FLAVORS:
            raise ConfigError(f"flavor: expected one of {', '.join(FLAVORS)}, got {flavor!r}")
        if n_messages < 1:
            raise ConfigError(f"messages: expected a positive number, got {n_messages}")
        if not 0.0 <= depth[0] < depth[1] <= 1.0:
            raise ConfigError(f"depth: expected 0 <= low < high <= 1, got {depth}")
        self.flavor = flavor
        self.n_messages = n_messages
        self.seed = seed
        self.id = conversation_id or f"synth-{flavor}-{seed}"
        self.n_facts = default_facts(n_messages) if facts is None else max(0, min(facts, n_messages // 8))
        self.depth = depth
        self.agent_probes = agent_probes
        self._probes: tuple[Probe, ...] | None = None

    @property
    def meta(self) -> dict[str, Any]:
        return {"source": "synthetic", "flavor": self.flavor, "seed": str(self.seed),
                "generator_version": GENERATOR_VERSION, "n_messages": self.n_messages}

    def messages(self) -> Iterator[Message]:
        return self._messages(None)

    def _messages(self, kept: list[Message] | None) -> Iterator[Message]:
        """`messages`; with `kept`, each message is also appended to it (`conversation` holds
        them anyway), and the agent probes count their answers in it instead of generating
        the stream a second time."""
        harvest = _Harvest() if self.flavor == "agent" and self.agent_probes else None
        facts = yield from self._stream(harvest, kept)
        probes = [_probe(self.id, f) for f in facts if f.evidence and (not f.stale or len(f.evidence) == 2)]
        if harvest is not None:
            probes += self._agent_probes(harvest, kept)
        self._probes = tuple(probes)

    def _agent_probes(self, harvest: _Harvest, kept: Sequence[Message] | None = None) -> list[Probe]:
        """The agent's questions after a compaction, from what its tools showed (`_Harvest`).

        Read off the messages already generated, with their own seeded choice, so the messages
        and the planted probes are the same bytes as before they existed. A candidate is kept
        only when its answer is in no message but its evidence (counted over `kept`, the
        messages when they were held, else a second, identical pass over the stream) and its
        question is asked once, so the answer is unambiguous.
        """
        rng = random.Random(f"rollsum-synth/{GENERATOR_VERSION}/{self.flavor}/{self.seed}/agent-probes")
        per_kind = max(1, self.n_facts // 4)
        pool = harvest.candidates()
        end = harvest.end()
        holders: dict[str, list[str]] = {c.answer.lower(): [] for c in pool}
        for m in self._stream(None, None) if kept is None else kept:
            low = m.content.lower()
            for a, held in holders.items():
                if a in low:
                    held.append(m.id or "")
        unique = [c for c in pool if set(holders[c.answer.lower()]) <= set(c.evidence)]
        chosen = [c for kind in ("file-changed", "failed-approach", "tool-identifier")
                  for c in _pick([c for c in unique if c.category == kind], per_kind, rng)]
        out: list[Probe] = []
        for k, c in enumerate(chosen):
            out.append(Probe(id=f"{self.id}:a{k}", question=c.question, answer=c.answer, evidence=c.evidence,
                             category=c.category, meta={"planted_at": c.evidence[0], "channel": "agent", "how": c.how}))
        # the current task and step: asked at the end, answered by the latest request or command
        # (an earlier identical one states the same task, so it is no leak of another answer)
        for k, c in enumerate(end, start=len(chosen)):
            out.append(Probe(id=f"{self.id}:a{k}", question=c.question, answer=c.answer,
                             evidence=c.evidence, category=c.category,
                             meta={"planted_at": c.evidence[0], "channel": "agent", "how": c.how, "ask_at": "end"}))
        return out

    def _stream(self, harvest: _Harvest | None,
                kept: list[Message] | None) -> Generator[Message, None, list[_Fact]]:
        rng = random.Random(f"rollsum-synth/{GENERATOR_VERSION}/{self.flavor}/{self.seed}")
        facts = _plan(self.flavor, self.n_messages, self.n_facts, rng, self.depth)
        events = sorted([(f.at, f.index, 0) for f in facts] + [(f.update_at, f.index, 1) for f in facts
                                                               if f.stale], key=lambda e: (e[0], e[1], e[2]))
        for f in facts:
            f.evidence = []
        ev_i = 0
        clock = 0
        i = 0
        segment_flavor, segment_left = ("chat" if self.flavor != "agent" else "agent"), 0
        calls = 0
        while i < self.n_messages:
            event: tuple[_Fact, bool] | None = None
            if ev_i < len(events) and events[ev_i][0] <= i:
                _, idx, is_update = events[ev_i]
                event = (facts[idx], bool(is_update))
                ev_i += 1
            if self.flavor == "mixed" and segment_left <= 0:
                segment_flavor = "agent" if segment_flavor == "chat" else "chat"
                segment_left = rng.randint(12, 60)
            channel = event[0].channel if event else (self.flavor if self.flavor != "mixed" else segment_flavor)
            if channel == "chat":
                block = _chat_block(rng, event)
                clock += rng.randint(60, 1800) if rng.random() > 0.06 else rng.randint(6 * 3600, 40 * 3600)
            else:
                block, calls = _agent_block(rng, event, calls, self.id)
                clock += rng.randint(20, 240)
            for d in block:
                if i >= self.n_messages:
                    break
                mid = f"{self.id}:{i}"
                if d.evidence_of is not None:
                    d.evidence_of.evidence.append(mid)
                stamp = (BASE_TIME + timedelta(seconds=clock)).strftime("%Y-%m-%dT%H:%M:%SZ")
                m = Message(role=d.role, content=d.content, id=mid, name=d.name, created_at=stamp,  # type: ignore[arg-type]
                            meta=d.meta)
                if harvest is not None:
                    harvest.see(m)
                if kept is not None:
                    kept.append(m)
                yield m
                clock += rng.randint(3, 45)
                i += 1
                segment_left -= 1
        return facts

    def probes(self) -> tuple[Probe, ...]:
        if self._probes is None:
            for _ in self.messages():
                pass
        assert self._probes is not None
        return self._probes

    def conversation(self) -> Conversation:
        """The whole conversation in memory: the stream is generated once (the agent probes
        count their answers in the messages held here, `_messages`)."""
        kept: list[Message] = []
        for _ in self._messages(kept):
            pass
        return Conversation(id=self.id, messages=tuple(kept), probes=self.probes(), meta=self.meta)


@dataclass(frozen=True, slots=True)
class _Candidate:
    category: str
    how: str
    question: str
    answer: str
    evidence: tuple[str, ...]


_EDIT = re.compile(r"^Edited (\S+): 1 replacement\n@@ def (\w+) @@")
_CREATED = re.compile(r"^Created (\S+) \((\d+) lines\)")
_TEST_FAILED = re.compile(r"^E {7}(ValueError: empty \w+ in \w+)$.*^FAILED (tests/\w+)/\w+\.py::(\w+) ",
                          re.M | re.S)
_NO_MODULE = re.compile(r"ModuleNotFoundError: (No module named '[\w.]+')")
_COMMIT = re.compile(r"^([0-9a-f]{7}) (\w+ \w+ handling in \w+)$", re.M)
_CALL = re.compile(r"Calling execute_bash\(command='([^']+)'\)\.$")


class _Harvest:
    """Collects agent-probe candidates while the stream is generated (flat memory: a bounded
    reservoir per kind, plus the latest task and command)."""

    CAP = 64

    def __init__(self) -> None:
        self.seen: dict[str, list[_Candidate]] = {}
        self.n: dict[str, int] = {}
        self.questions: dict[str, int] = {}
        self.task: _Candidate | None = None
        self.command: _Candidate | None = None
        self.call: list[str] = []
        self._rng = random.Random("rollsum-synth/harvest")

    def _add(self, c: _Candidate) -> None:
        self.questions[c.question] = self.questions.get(c.question, 0) + 1
        pool = self.seen.setdefault(c.category, [])
        n = self.n[c.category] = self.n.get(c.category, 0) + 1
        if len(pool) < self.CAP:
            pool.append(c)
        elif (j := self._rng.randrange(n)) < self.CAP:
            pool[j] = c

    def see(self, m: Message) -> None:
        mid, text = m.id or "", m.content
        if m.role == "user":
            task = next((t for t in T.AGENT_TASKS if text.startswith(t)), None)
            if task is not None:
                self.task = _Candidate("current-task", "task", "What is the task the user asked for last?",
                                       task, (mid,))
            return
        if m.role == "assistant":
            self.call = [mid] if m.meta.get("tool_calls") else []
            call = _CALL.search(text)
            if call:
                self.command = _Candidate("current-task", "step", "Which command did the agent run last?",
                                          call.group(1), (mid,))
            return
        if m.role != "tool":
            return
        if (e := _EDIT.match(text)) is not None:
            self._add(_Candidate("file-changed", "edit", f"Which function in {e.group(1)} did the agent edit "
                                 "to drop None results?", e.group(2), (*self.call[-1:], mid)))
        elif (c := _CREATED.match(text)) is not None:
            module = c.group(1).split("/")[1]
            self._add(_Candidate("file-changed", "create", f"Which test file did the agent create for {module}?",
                                 c.group(1), (*self.call[-1:], mid)))
        elif (f := _TEST_FAILED.search(text)) is not None:
            self._add(_Candidate("failed-approach", "test", f"Why did {f.group(3)} in {f.group(2)} fail?",
                                 f.group(1), (mid,)))
        elif (n := _NO_MODULE.search(text)) is not None and m.meta.get("command"):
            self._add(_Candidate("failed-approach", "command", f"Why did `{m.meta['command']}` fail?",
                                 n.group(1), (mid,)))
        for h in _COMMIT.finditer(text):
            self._add(_Candidate("tool-identifier", "git", f"What is the hash of the commit '{h.group(2)}'?",
                                 h.group(1), (mid,)))

    def candidates(self) -> list[_Candidate]:
        """Every kept candidate whose question is asked once (unambiguous)."""
        return [c for pool in self.seen.values() for c in pool if self.questions[c.question] == 1]

    def end(self) -> list[_Candidate]:
        """The questions asked at the end: the current task and the agent's latest step."""
        return [c for c in (self.task, self.command) if c is not None]


def _pick(pool: list[_Candidate], k: int, rng: random.Random) -> list[_Candidate]:
    """Up to `k` of `pool`, seeded, in conversation order."""
    return sorted(rng.sample(pool, min(k, len(pool))), key=lambda c: _position(c.evidence[0]))


def _position(mid: str) -> int:
    return int(mid.rsplit(":", 1)[1])


def _probe(cid: str, f: _Fact) -> Probe:
    return Probe(id=f"{cid}:p{f.index}", question=f.question, answer=f.answer,
                 evidence=tuple(f.evidence[-1:] if f.stale else f.evidence), category=f.category,
                 stale_answers=f.stale,
                 meta={"planted_at": f.evidence[0], "channel": f.channel, "how": f.how,
                       **({"stale_evidence": f.evidence[0]} if f.stale else {})})


# ---------------------------------------------------------------- blocks

def _chat_block(rng: random.Random, event: tuple[_Fact, bool] | None) -> list[_Draft]:
    user_pool, asst_pool = rng.choice(T.CHAT_TOPICS)
    spare_user, spare_asst = rng.choice(T.CHAT_TOPICS)
    opener = rng.choice(T.CHAT_OPENERS)
    if event is None:
        user = _Draft("user", _compose(rng, user_pool, 10, 60, opener, spare_user))
        asst_lead = rng.choice(T.ASSISTANT_OPENERS)
        return [user, _Draft("assistant", _compose(rng, asst_pool, 30, 150, asst_lead, spare_asst))]
    fact, is_update = event
    said = _sentence(fact.update if is_update else fact.plant)
    before = _compose(rng, user_pool, 0, 14, opener)
    text = f"{before} {said}" if before else said
    if rng.random() < 0.5:
        text += " " + rng.choice(user_pool)
    user = _Draft("user", text.strip(), evidence_of=fact)
    return [user, _Draft("assistant", _compose(rng, asst_pool, 30, 90, rng.choice(T.ACKS), spare_asst))]


def _numbered(lines: list[str]) -> str:
    return "\n".join(f"{n:>4}  {line}" for n, line in enumerate(lines, 1))


def _code_lines(rng: random.Random, module: str, n: int) -> list[str]:
    lines = ["import logging", "from dataclasses import dataclass", "",
             "log = logging.getLogger(__name__)", ""]
    while len(lines) < n:
        verb, noun = rng.choice(T.FUNC_VERBS), rng.choice(T.FUNC_NOUNS)
        lines += [f"def {verb}_{noun}(items, *, strict=False):",
                  f'    """{verb.capitalize()} the {noun} for the {module} pipeline."""',
                  "    result = []",
                  "    for item in items:",
                  "        if item is None and strict:",
                  f'            raise ValueError("empty {noun} in {module}")',
                  "        result.append(item)",
                  f'    log.debug("{verb} %d {noun}s", len(result))',
                  "    return result", ""]
    return lines[:n]


def _call(rng: random.Random, calls: int, cid: str, thought: str, tool: str,
          args: dict[str, Any], output: str, evidence_of: _Fact | None = None,
          extra_meta: dict[str, Any] | None = None) -> tuple[list[_Draft], int]:
    call_id = f"call_{calls}"
    described = ", ".join(f"{k}={v!r}" for k, v in args.items())
    asst = _Draft("assistant", f"{thought} Calling {tool}({described}).",
                  meta={"tool_calls": [call_id]})
    meta: dict[str, Any] = {"tool_call_id": call_id, **args, **(extra_meta or {})}
    return [asst, _Draft("tool", output, name=tool, meta=meta, evidence_of=evidence_of)], calls + 1


def _bash_output(rng: random.Random, module: str) -> tuple[str, str, int]:
    kind = rng.randrange(6)
    if kind == 0:
        passed = rng.randint(12, 96)
        lines = ["============================= test session starts ==============================",
                 f"collected {passed} items", ""]
        lines += [f"tests/{module}/test_{rng.choice(T.FUNC_NOUNS)}.py {'.' * rng.randint(3, 20)}"
                  for _ in range(rng.randint(2, 8))]
        lines.append(f"============================== {passed} passed in {rng.randint(1, 9)}.{rng.randint(10, 99)}s "
                     "===============================")
        return f"pytest tests/{module} -q", "\n".join(lines), 0
    if kind == 1:
        noun = rng.choice(T.FUNC_NOUNS)
        lines = [f"tests/{module}/test_{noun}.py ..F.", "", "=================================== FAILURES "
                 "===================================", f"___________________ test_{noun}_roundtrip "
                 "___________________", "", f"    def test_{noun}_roundtrip():",
                 f"        got = {rng.choice(T.FUNC_VERBS)}_{noun}([None], strict=True)",
                 f"E       ValueError: empty {noun} in {module}", "",
                 f"src/{module}/core.py:{rng.randint(20, 99)}: ValueError",
                 "=========================== short test summary info ============================",
                 f"FAILED tests/{module}/test_{noun}.py::test_{noun}_roundtrip - ValueError",
                 f"========================= 1 failed, {rng.randint(5, 40)} passed in 2.{rng.randint(10, 99)}s "
                 "========================="]
        return f"pytest tests/{module} -q", "\n".join(lines), 1
    if kind == 2:
        files = [f"src/{module}/{n}.py" for n in rng.sample(("core", "api", "models", "utils", "cli",
                                                             "tasks", "views"), rng.randint(1, 4))]
        lines = ["On branch main", "Changes not staged for commit:",
                 '  (use "git add <file>..." to update what will be committed)', ""]
        lines += [f"\tmodified:   {f}" for f in files]
        return "git status", "\n".join(lines), 0
    if kind == 3:
        return (f"python -m {module}.cli --dry-run",
                f"Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\n"
                f"ModuleNotFoundError: No module named '{module}.cli'", 1)
    if kind == 4:
        return (f"ls src/{module}", "\n".join(rng.sample(("__init__.py", "core.py", "api.py", "models.py",
                                                          "utils.py", "tasks.py", "views.py", "README.md"),
                                                         rng.randint(5, 8))), 0)
    return ("make lint", f"make: ruff: No such file or directory\nmake: *** [Makefile:{rng.randint(5, 40)}: lint] "
                         "Error 127", 127)


def _agent_block(rng: random.Random, event: tuple[_Fact, bool] | None, calls: int,
                 cid: str) -> tuple[list[_Draft], int]:
    module = rng.choice(T.MODULES)
    thought = rng.choice(T.AGENT_THOUGHTS)
    if event is not None:
        fact, is_update = event
        if fact.how == "say":
            return [_Draft("user", f"{rng.choice(T.AGENT_USER_FOLLOWUPS)} {fact.plant}", evidence_of=fact),
                    _Draft("assistant", _compose(rng, T.AGENT_SUMMARIES, 30, 80, "Understood."))], calls
        if fact.how == "config" and is_update:
            path, key = fact.extra["path"], fact.extra["key"]
            out = f"Edited {path}: 1 replacement\n@@ {key} @@\n{fact.update}"
            return _call(rng, calls, cid, "I'll update the setting as agreed.", "edit_file",
                         {"path": path}, out, fact)
        if fact.how == "config":
            path = fact.extra["path"]
            lines = ['"""Settings for the service; values are read once at start-up."""', ""]
            others = [k for k in T.CONFIG_KEYS if k != fact.extra["key"]]
            rng.shuffle(others)
            lines += [f"{k} = {rng.randint(2, 99)}" for k in others[:rng.randint(2, 6)]]
            lines.insert(rng.randint(2, len(lines)), fact.plant)
            return _call(rng, calls, cid, "Let me check the configured values.", "read_file",
                         {"path": path}, _numbered(lines), fact)
        if fact.how == "grep":
            pattern = fact.extra["pattern"]
            out = "\n".join([fact.plant] + [f"tests/{module}/test_{rng.choice(T.FUNC_NOUNS)}.py:"
                                            f"{rng.randint(5, 90)}:    # uses {pattern[4:]}"
                                            for _ in range(rng.randint(0, 3))])
            return _call(rng, calls, cid, "I'll find where that function is defined.", "grep",
                         {"pattern": pattern}, out, fact)
        # git
        lines = [fact.plant] + [f"{_hash(rng)} {rng.choice(T.FUNC_VERBS).capitalize()} "
                                f"{rng.choice(T.FUNC_NOUNS)} handling in {rng.choice(T.MODULES)}"
                                for _ in range(rng.randint(3, 9))]
        rng.shuffle(lines)
        return _call(rng, calls, cid, "Let me look at the recent history.", "execute_bash",
                     {"command": "git log --oneline -n 10"}, "\n".join(lines), fact, {"exit_code": 0})
    kind = rng.randrange(10)
    if kind == 0:
        return [_Draft("user", _compose(rng, T.AGENT_USER_FOLLOWUPS, 10, 30, rng.choice(T.AGENT_TASKS))),
                _Draft("assistant", _compose(rng, T.AGENT_THOUGHTS, 30, 70))], calls
    if kind == 1:
        return [_Draft("user", _compose(rng, T.AGENT_USER_FOLLOWUPS, 10, 25)),
                _Draft("assistant", _compose(rng, T.AGENT_SUMMARIES, 30, 150, spare=T.AGENT_THOUGHTS))], calls
    if kind in (2, 3):
        path = f"src/{module}/{rng.choice(('core', 'api', 'models', 'utils', 'tasks'))}.py"
        return _call(rng, calls, cid, thought, "read_file", {"path": path},
                     _numbered(_code_lines(rng, module, rng.randint(5, 60))))
    if kind in (4, 5):
        command, out, code = _bash_output(rng, module)
        block, calls = _call(rng, calls, cid, thought, "execute_bash", {"command": command}, out,
                             extra_meta={"exit_code": code})
        if code != 0:
            block.append(_Draft("assistant", _compose(rng, T.AGENT_SUMMARIES, 30, 110,
                                                      f"The command exited with code {code}.")))
        return block, calls
    if kind == 6:
        noun = rng.choice(T.FUNC_NOUNS)
        hits = [f"src/{rng.choice(T.MODULES)}/{rng.choice(('core', 'api', 'utils'))}.py:{rng.randint(3, 99)}:"
                f"    {noun} = {rng.choice(T.FUNC_VERBS)}_{noun}(items)" for _ in range(rng.randint(5, 12))]
        return _call(rng, calls, cid, thought, "grep", {"pattern": f"{noun} ="}, "\n".join(hits))
    if kind == 7:
        hits = [f"src/{module}/{n}.py" for n in rng.sample(("core", "api", "models", "utils", "tasks", "views",
                                                            "schemas", "errors"), rng.randint(5, 8))]
        return _call(rng, calls, cid, thought, "search_files", {"pattern": f"src/{module}/*.py"}, "\n".join(hits))
    if kind == 8:
        path = f"src/{module}/{rng.choice(('core', 'api', 'utils'))}.py"
        verb, noun = rng.choice(T.FUNC_VERBS), rng.choice(T.FUNC_NOUNS)
        out = (f"Edited {path}: 1 replacement\n@@ def {verb}_{noun} @@\n     result = []\n"
               "     for item in items:\n         result.append(item)\n-    return result\n"
               "+    return [r for r in result if r is not None]")
        return _call(rng, calls, cid, thought, "edit_file", {"path": path}, out)
    path = f"tests/{module}/test_{rng.choice(T.FUNC_NOUNS)}.py"
    n = rng.randint(5, 30)
    return _call(rng, calls, cid, "I'll add a regression test for this.", "create_file", {"path": path},
                 f"Created {path} ({n} lines)\n" + "\n".join(_code_lines(rng, module, min(n, 12))))


# ---------------------------------------------------------------- public API

def generate(flavor: str, *, n_messages: int, seed: int | str, conversation_id: str | None = None,
             facts: int | None = None) -> Iterator[Message]:
    """Stream one conversation's messages (flat memory at any length)."""
    return SyntheticConversation(flavor, n_messages=n_messages, seed=seed, conversation_id=conversation_id,
                                 facts=facts).messages()


def make_conversation(flavor: str, *, n_messages: int, seed: int | str, conversation_id: str | None = None,
                      facts: int | None = None) -> Conversation:
    """A whole conversation with its probes (held in memory: for tests and small sets)."""
    return SyntheticConversation(flavor, n_messages=n_messages, seed=seed, conversation_id=conversation_id,
                                 facts=facts).conversation()


def dataset(flavor: str, *, conversations: int, n_messages: int | tuple[int, int], seed: int,
            facts: int | None = None, agent_probes: bool = True) -> Iterator[SyntheticConversation]:
    """`conversations` generators; with a (low, high) range each gets a seeded length in it."""
    lengths = random.Random(f"rollsum-synth-lengths/{flavor}/{seed}")
    for k in range(conversations):
        n = n_messages if isinstance(n_messages, int) else lengths.randint(*n_messages)
        yield SyntheticConversation(flavor, n_messages=n, seed=f"{seed}.{k}",
                                    conversation_id=f"synth-{flavor}-{seed}-{k}", facts=facts,
                                    agent_probes=agent_probes)
