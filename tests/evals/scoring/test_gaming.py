"""Degenerate summaries at the real summary's tokens earn at most a quarter of its summary-only
credit, and never beat truncation (issue #18, item 3; the table is in docs/scoring.md).

since-last (extractive) is replayed; then each summary text of the trace is replaced by a
degenerate text of at most the same length (the heuristic counter is chars/4, so at most the
same tokens) — same turns, same verbatim tail, same asks:

- **bag**: the most frequent content words of the messages the summary covered;
- **entities**: a comma list of the names, numbers and capitalised words of those messages;
- **and-glued**: the same entities joined with " and ";
- **swapped**: the real summary with the speakers' names swapped (``Caroline:`` <-> ``Melanie:``,
  in the text too; ``User:`` <-> ``Assistant:`` on the synthetic chats and agents);
- **negated**: every line of the real summary prefixed "It is not true that" (cut to the length).

Summary-only credit = share of answerable asks the summary items alone support (`in_summary`).
Each must be <= 25 % of the real summary's, and the whole context's retention must stay at or
below truncation's at the same main-model tokens per turn (truncate replayed over a grid of
``keep`` and interpolated per conversation, as the report's gain does).

Checked against wrong matchers (monkeypatched, share of the real summary's credit): without
attribution (`support.attributed` always true) swapped keeps 100 % (chat) / 97 % (LoCoMo);
without negation cues (`support.NEGATION` empty) negated keeps 89 % / 75 %; without the
evidence-speaker rule (`support.by_source` always true) swapped beats truncate on chat-small
(0.112 vs 0.074: questions that name nobody, "What is the current pickup time for the airport
shuttle?"). The lists are held
down mostly by the anchor rule (the question's words must stand near the answer in a
statement); without the `LINK` rule they rise only to 2 % / 3-5 %, so the unit tests below pin
that rule directly.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rollsum_evals import scoring
from rollsum_evals.data import load
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay import replay
from rollsum_evals.replay.trace import Text, TextRef, Trace
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.support import STOP, Unit, claim, stem, support, words
from rollsum_evals.units import Unit as RunUnit

ROOT = Path(__file__).resolve().parents[3]
LOCOMO_DEV = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"
KINDS = ("bag", "entities", "and-glued", "swapped", "negated")
MAX_SHARE = 0.25
_ENTITY = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*|\b\d[\d:./-]*\b")


def _covered(trace: Trace) -> dict[str, int]:
    """Summary text id -> the first message not covered by it (where the verbatim part of the
    first context it appears in starts)."""
    covered: dict[str, int] = {}
    for t in trace.turns:
        first = min((s[0] for s in t.composition if not isinstance(s, TextRef)), default=t.turn + 1)
        for s in t.composition:
            if isinstance(s, TextRef) and s.source is None:
                covered.setdefault(s.text_id, first)
    return covered


def _fill(items: list[str], sep: str, size: int) -> str:
    out: list[str] = []
    n = 0
    for it in items:
        if n + len(it) + len(sep) > size:
            break
        out.append(it)
        n += len(it) + len(sep)
    return sep.join(out)


def _swap(text: str, a: str, b: str) -> str:
    return re.sub(rf"\b({re.escape(a)}|{re.escape(b)})\b", lambda m: b if m[1] == a else a, text)


def _negate(text: str, size: int) -> str:
    prefix = re.compile(r"^(\s*(?:\[[^\]\n]{1,40}\]\s*)?(?:[A-Z][\w'’ .-]{0,40}?:\s)?)")
    lines = []
    for line in text.splitlines():
        m = prefix.match(line)
        head = m[1] if m else ""
        rest = line[len(head):]
        lines.append(f"{head}It is not true that {rest[:1].lower()}{rest[1:]}" if rest.strip() else line)
    return _fill(lines, "\n", size)


def degenerate(trace: Trace, kind: str, speakers: tuple[str, str]) -> Trace:
    """`trace` with every summary text replaced by the degenerate text `kind` (no longer)."""
    texts = dict(trace.texts)
    for tid, upto in _covered(trace).items():
        old = texts[tid]
        size = len(old.content)
        msgs = [m.content for m in trace.messages[:upto]]
        if kind == "bag":
            counts = collections.Counter(w for m in msgs for w in words(m) if w not in STOP)
            new = _fill([w for w, _ in counts.most_common()], " ", size)
        elif kind in ("entities", "and-glued"):
            ents = collections.Counter(e.strip() for m in msgs for e in _ENTITY.findall(m))
            new = _fill([e for e, _ in ents.most_common()], ", " if kind == "entities" else " and ", size)
        elif kind == "swapped":
            new = _swap(old.content, *speakers)
        else:
            new = _negate(old.content, size)
        assert len(new) <= size or kind == "swapped"  # swapped: the same text, only names differ in length
        texts[tid] = Text(old.role, old.name, new)
    return dataclasses.replace(trace, texts=texts)


def _speakers(conv: Conversation) -> tuple[str, str]:
    """The two people of the chat: named speakers, else the user and the assistant (a tool's
    name, ``read_file``, is not a speaker)."""
    names = sorted({m.name for m in conv.messages if m.name and m.role in ("user", "assistant")})
    return (names[0], names[1]) if len(names) >= 2 else ("User", "Assistant")


def measure(convs: list[Conversation]) -> dict[str, dict[str, float]]:
    """Per trace kind: summary-only credit and retention over answerable asks (+ truncate's)."""
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing("sampled:1+end"))
    tot: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
    for conv in convs:
        def unit(preset: str, conv: Conversation = conv) -> RunUnit:
            return RunUnit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=preset,
                           preset=preset, params_json="{}", prompt="", model="extractive", seed=0,
                           context_window=8000)
        real = replay(unit("since-last"), conv)
        assert real.summaries, "the preset must have summarized"
        traces = {"real": real} | {k: degenerate(real, k, _speakers(conv)) for k in KINDS}
        tot["truncate"]["retained"] += _truncate_at(conv, plan, _tokens(real))
        for name, trace in traces.items():
            asks, scores = scoring.score(plan, unit("since-last"), conv, trace)
            for a in asks:
                row = scores.probes[a.key]
                if row["answerable"]:
                    tot[name]["n"] += 1
                    tot[name]["summary"] += row["in_summary"]
                    tot[name]["retained"] += row["retained"]
    n = tot["real"]["n"]
    tot["truncate"]["n"] = n
    return {k: {"n": v["n"], "summary": v["summary"] / v["n"], "retention": v["retained"] / v["n"]}
            for k, v in tot.items()}


def _tokens(trace: Trace) -> float:
    return sum(t.context_tokens for t in trace.turns) / len(trace.turns)


def _truncate_at(conv: Conversation, plan: ScoringPlan, tokens: float) -> float:
    """Retained answerable asks of truncate at `tokens` per turn: linear between the two
    ``keep`` values of a grid that bracket it (the asks are the same for every config)."""
    points: list[tuple[float, int]] = []
    for keep in (1, 2, 5, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480):
        unit = RunUnit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config="truncate",
                       preset="truncate", params_json=f'{{"keep": {keep}}}', prompt="", model="extractive",
                       seed=0, context_window=8000)
        trace = replay(unit, conv)
        asks, scores = scoring.score(plan, unit, conv, trace)
        points.append((_tokens(trace), sum(bool(scores.probes[a.key]["answerable"] and scores.probes[a.key]["retained"])
                                           for a in asks)))
        if points[-1][0] >= tokens:
            break
    if len(points) == 1 or points[-1][0] < tokens:
        return float(points[-1][1])
    (t0, r0), (t1, r1) = points[-2], points[-1]
    return r0 + (r1 - r0) * (tokens - t0) / (t1 - t0) if t1 > t0 else float(r1)


def _check(got: dict[str, dict[str, float]], vs_truncate: tuple[str, ...] = KINDS) -> None:
    real = got["real"]["summary"]
    assert real > 0.05, "the real summary must earn credit for the comparison to mean anything"
    for kind in KINDS:
        share = got[kind]["summary"] / real
        assert share <= MAX_SHARE, f"{kind}: {share:.2f} of the real summary's summary-only credit"
    tie = 2 / got["real"]["n"]  # one probe's two asks: a tie at the sample's resolution
    for kind in vs_truncate:
        assert got[kind]["retention"] <= got["truncate"]["retention"] + tie, f"{kind} beats truncate"


@pytest.fixture(scope="module")
def chat_small() -> dict[str, dict[str, float]]:
    return measure(load(str(ROOT / "datasets" / "synthetic" / "chat-small.jsonl"))[:4])


def test_degenerate_summaries_earn_at_most_a_quarter_on_the_synthetic_chats(
        chat_small: dict[str, dict[str, float]]) -> None:
    # swapped must not beat truncation either: a question that names nobody ("What is the current
    # pickup time for the airport shuttle?") is still about what the user said (its evidence), and
    # "Assistant: ..." puts that in another mouth (`support.by_source`, answer_retention v5)
    _check(chat_small)


@pytest.mark.locomo
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"LoCoMo dev data not present at {LOCOMO_DEV} "
                    "(research data, never in the repository)")
def test_degenerate_summaries_earn_at_most_a_quarter_on_locomo() -> None:
    _check(measure(load(str(LOCOMO_DEV), format="locomo")))


def table(rows: dict[str, dict[str, dict[str, float]]]) -> str:
    """The docs table (`python -m tests.evals.scoring.test_gaming` is not needed: call from a REPL)."""
    out = ["| data | answerable asks | real | " + " | ".join(KINDS) + " | truncate retention |",
           "|---|---:|---:|" + "---:|" * len(KINDS) + "---:|"]
    for data, got in rows.items():
        real = got["real"]["summary"]
        cells = [f"{got[k]['summary']:.3f} ({got[k]['summary'] / real:.0%})" for k in KINDS]
        out.append(f"| {data} | {got['real']['n']:.0f} | {real:.3f} | " + " | ".join(cells)
                   + f" | {got['truncate']['retention']:.3f} |")
    return "\n".join(out)


Measure = Callable[[list[Conversation]], dict[str, dict[str, float]]]


# -- the rules one statement at a time ------------------------------------------------------------

NAMES = ("Caroline", "Melanie")


def _supports(question: str, answer: str, text: str, speaker: str = "", source: str = "") -> bool:
    c = claim(question, answer, NAMES)
    assert c is not None
    if source:
        c = dataclasses.replace(c, source=frozenset({stem(source.lower())}))
    return support(c, [Unit(text, speaker)]) is not None


def test_a_summary_line_must_put_the_fact_in_the_mouth_of_whoever_said_the_evidence() -> None:
    # the question names nobody: only the evidence's speaker (the user) says whose fact it is
    q, a = "What is the current pickup time for the airport shuttle?", "7:30"
    line = "The airport shuttle pickup time is now 7:30."
    assert _supports(q, a, line, "User", source="user")
    assert not _supports(q, a, line, "Assistant", source="user")       # in another mouth
    assert _supports(q, a, line, "Assistant")                          # no single speaker: no rule
    assert _supports(q, a, line, source="user")                        # nobody's line, nobody named
    assert _supports(q, a, "The user's airport shuttle pickup time is now 7:30.", "Assistant", source="user")
    # a named speaker the same way, and a line that names only the other one is about them
    q, a = "Which book is being read for the club?", "The Wheel of Time"
    assert _supports(q, a, "We are reading The Wheel of Time for the club.", "Caroline", source="Caroline")
    assert not _supports(q, a, "We are reading The Wheel of Time for the club.", "Melanie", source="Caroline")
    assert not _supports(q, a, "Melanie is reading The Wheel of Time for the club.", source="Caroline")


def test_a_name_used_to_address_someone_does_not_name_them() -> None:
    q, a = "When did Caroline go to the LGBTQ support group?", "7 May 2023"
    for text in ("Hey Caroline, I went to the LGBTQ support group on 7 May 2023.",
                 "Caroline, I went to the LGBTQ support group on 7 May 2023.",
                 "Wow, Caroline, I went to the LGBTQ support group on 7 May 2023.",
                 "I went to the LGBTQ support group on 7 May 2023. Thanks, Caroline!",
                 "[8 May 2023] Hey Caroline, I went to the LGBTQ support group on 7 May 2023."):
        assert not _supports(q, a, text, "Melanie"), text                # Melanie went, talking to Caroline
    for text in ("Caroline went to the LGBTQ support group on 7 May 2023.",
                 "Hey, Caroline went to the LGBTQ support group on 7 May 2023.",
                 "Caroline, Melanie and Jon went to the LGBTQ support group on 7 May 2023."):
        assert _supports(q, a, text, "Melanie"), text                    # about Caroline


def test_a_statement_about_a_person_must_be_spoken_by_them_or_name_them() -> None:
    q, a = "When did Caroline go to the LGBTQ support group?", "7 May 2023"
    said = "I went to the LGBTQ support group on 7 May 2023."
    assert _supports(q, a, said, "Caroline")
    assert not _supports(q, a, said, "Melanie")                      # the other speaker said it
    assert _supports(q, a, "Caroline went to the LGBTQ support group on 7 May 2023.", "Melanie")  # named
    assert _supports(q, a, said)                                     # nobody speaks, nobody named
    assert not _supports(q, a, "Melanie went to the LGBTQ support group on 7 May 2023.")  # about another


def test_a_negated_statement_does_not_support() -> None:
    q, a = "What instrument does Caroline play in the band?", "clarinet"
    assert _supports(q, a, "I play the clarinet in the band.", "Caroline")
    for text in ("It is not true that I play the clarinet in the band.", "I don't play the clarinet in the band.",
                 "I never played the clarinet in the band.", "Not true: I play the clarinet in the band."):
        assert not _supports(q, a, text, "Caroline"), text
    # a negation that does not reach the answer
    assert _supports(q, a, "I'm not sure why, but I play the clarinet in the band.", "Caroline")


def test_entities_glued_by_commas_or_and_are_not_a_statement() -> None:
    q, a = "When did Caroline go to the LGBTQ support group?", "7 May 2023"
    for text in ("Caroline, LGBTQ support group, 7 May 2023", "Caroline and LGBTQ support group and 7 May 2023",
                 "Caroline, The Wheel of Time, LGBTQ support group, 7 May 2023"):
        assert not _supports(q, a, text), text
    assert _supports(q, a, "Caroline went to an LGBTQ support group on 7 May 2023")
