from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.errors import ConfigError
from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
from rollsum.summarizers.base import SummaryDraft
from rollsum.summarizers.extractive import CONDENSED_HEADER, shorten, split_sentences
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord

FILLER = "That sounds like a really nice thing to talk about today honestly."
COUNTER = HeuristicCounter()


def chat() -> list[Message]:
    return [
        Message("user", "Hi! My order PAY-4821 never arrived. I'm allergic to peanuts.", id="1"),
        Message("assistant", "Sorry to hear that. " + FILLER, id="2"),
        Message("user", "Ok.", id="3"),
        Message("assistant", "We decided to refund $42 by March 14.", id="4"),
        Message("tool", "src/a.py:1:x", id="5", name="grep", meta={"pattern": "x"}),
    ]


def lines_of(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.strip()]


def norm(line: str) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in line.lower()).split())


def record(draft: SummaryDraft, covered: int, seq: int = 0) -> SummaryRecord:
    return SummaryRecord(id=f"r{seq}", conversation_id="c", text=draft.text, messages_covered=covered, seq=seq)


def chain(s: ExtractiveSummarizer, messages: Sequence[Message], step: int,
          max_tokens: int = 10_000) -> list[SummaryDraft]:
    """Summaries as since-last makes them: one call per `step` messages, each folding the last."""
    out: list[SummaryDraft] = []
    prev: SummaryRecord | None = None
    for k in range(0, len(messages), step):
        d = s.summarize(SummaryRequest("c", messages[k:k + step], previous=prev, max_tokens=max_tokens))
        out.append(d)
        prev = record(d, k + step, seq=len(out) - 1)
    return out


# -- what a line looks like -------------------------------------------------------------------

def test_keeps_fact_sentences_with_speaker_in_original_order() -> None:
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", chat()))
    lines = d.text.split("\n")
    assert "User: My order PAY-4821 never arrived. I'm allergic to peanuts." in lines  # joined per message
    assert "Hi!" not in d.text  # a greeting is not a fact
    assert lines.index("User: My order PAY-4821 never arrived. I'm allergic to peanuts.") < lines.index(
        "Assistant: We decided to refund $42 by March 14.")
    assert '[✓ grep: Pattern: "x" | Matches: 1 | Files: 1 | Top files: src/a.py]' in lines
    assert "Ok." not in d.text and FILLER not in d.text  # filler without anything specific is dropped
    assert d.model == "extractive" and d.usage.calls == 0


def test_speakers_are_named_when_the_conversation_names_them() -> None:
    msgs = [Message("user", "I adopted a greyhound called Biscuit last spring.", name="Caroline"),
            Message("assistant", "My daughter starts violin lessons with Mr. Okafor in September.", name="Melanie"),
            Message("user", "The pottery class moved to the community centre on Elm Street.")]
    lines = lines_of(ExtractiveSummarizer().summarize(SummaryRequest("c", msgs)).text)
    assert lines == ["Caroline: I adopted a greyhound called Biscuit last spring.",
                     "Melanie: My daughter starts violin lessons with Mr. Okafor in September.",
                     "User: The pottery class moved to the community centre on Elm Street."]


def test_relative_dates_are_anchored_to_the_message_day() -> None:
    msgs = [Message("user", "I went to a support group yesterday and it was powerful.", name="Caroline",
                    created_at="2023-05-08T13:56:00"),
            Message("assistant", "We're going camping next Saturday with the kids.", name="Melanie",
                    created_at="2023-05-08T13:57:00")]
    text = ExtractiveSummarizer().summarize(SummaryRequest("c", msgs)).text
    assert text.split("\n") == [
        "[8 May 2023]",
        "Caroline: I went to a support group yesterday (7 May 2023) and it was powerful.",
        "Melanie: We're going camping next Saturday (13 May 2023) with the kids."]


def test_lines_carry_their_day_when_the_summary_spans_several() -> None:
    msgs = [Message("user", "Our landlord Ingrid raised the rent to 1,450 euros.", created_at="2024-03-04T09:00:00Z"),
            Message("user", "The plumber Tomasz fixed the boiler for 180 euros.", created_at="2024-03-06T10:00:00Z")]
    assert ExtractiveSummarizer().summarize(SummaryRequest("c", msgs)).text.split("\n") == [
        "[4 March 2024] User: Our landlord Ingrid raised the rent to 1,450 euros.",
        "[6 March 2024] User: The plumber Tomasz fixed the boiler for 180 euros."]


def test_long_sentences_are_cut_at_a_clause_and_marked() -> None:
    long = ("The migration to the new billing provider covers invoices from Lisbon, Porto and Braga, "
            "the refunds that Priya approved in March, the dunning emails that Tomasz rewrote last year, "
            "and a long tail of edge cases in the tax calculation that nobody has fully documented yet "
            "because the original author left the company before the audit started in earnest")
    cut = shorten(long, 200)
    assert len(cut) <= 200 and cut.endswith(" …")
    assert long.startswith(cut[:-2]) and cut[:-2].rstrip().endswith(("Tomasz rewrote last year", "March"))
    short = "Priya approved the refund."
    assert shorten(short) == short
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", [Message("user", long)]))
    assert d.text.endswith(" …") and len(d.text) < len(long)


def test_sentences_split_at_ends_not_at_abbreviations() -> None:
    assert split_sentences("Dr. Okafor moved. J. R. R. Tolkien wrote it! Is it 3.5? Yes\nnew line") == [
        "Dr. Okafor moved.", "J. R. R. Tolkien wrote it!", "Is it 3.5?", "Yes", "new line"]


def test_tool_results_keep_seed_002_one_line_form() -> None:
    msgs = [Message("tool", "npm test\nError: Module not found\nexit code: 1", name="execute_bash",
                    meta={"command": "npm test"})]
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", msgs))
    assert d.text == ("[❌ execute_bash: Command: npm test | Exit: 1 | Output: 3 lines | "
                      "Error: Error: Module not found]")


def test_greetings_and_filler_are_not_kept_even_with_room() -> None:
    msgs = [Message("user", "Hey Mel! Good to see you! How have you been?", name="Caroline"),
            Message("assistant", "Hey Caroline! Good to see you too! What's up with you?", name="Melanie"),
            Message("user", "I don't know, I think it was really great, thanks so much!", name="Caroline"),
            Message("user", "I moved here from Sweden four years ago with my grandma's necklace.", name="Caroline")]
    text = ExtractiveSummarizer(max_tokens=2_000).summarize(SummaryRequest("c", msgs)).text
    assert lines_of(text) == ["Caroline: I moved here from Sweden four years ago with my grandma's necklace."]


# -- no duplicates --------------------------------------------------------------------------

def test_no_duplicate_lines_within_a_span_or_across_merges() -> None:
    repeated = "Please don't touch the migrations folder in the billing repo."
    msgs = []
    for i in range(80):
        msgs.append(Message("user", repeated if i % 3 == 0 else repeated.upper().replace(".", "!")))
        msgs.append(Message("assistant", f"Ticket OPS-{1000 + i} tracks the ledger export for region {i}."))
    for d in chain(ExtractiveSummarizer(max_tokens=400), msgs, step=12):
        normalized = [norm(ln) for ln in lines_of(d.text)]
        assert len(normalized) == len(set(normalized)), d.text
        assert sum(norm(repeated) in ln for ln in normalized) <= 1


@settings(max_examples=40, deadline=None)
@given(picks=st.lists(st.integers(0, 5), min_size=1, max_size=40), step=st.integers(1, 12),
       budget=st.integers(20, 400))
def test_no_duplicate_lines_property(picks: list[int], step: int, budget: int) -> None:
    pool = ["The vet said Biscuit needs a booster on 12 June.", "the VET said biscuit needs a booster on 12 june!",
            "Priya booked the cabin at Lake Bled for 3 nights.", "Ticket INC-2093 is about the broken VPN.",
            "ok", "Tomasz paid 180 euros for the boiler repair."]
    msgs = [Message("user", pool[p]) for p in picks]
    for d in chain(ExtractiveSummarizer(max_tokens=budget), msgs, step=step):
        normalized = [norm(ln) for ln in lines_of(d.text)]
        assert len(normalized) == len(set(normalized))
        assert COUNTER.count(d.text) <= budget or d.text.startswith("[")


# -- budget ---------------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [10, 25, 60, 500])
def test_select_never_exceeds_max_tokens_and_notes_cuts(budget: int) -> None:
    span = chat() * 5
    d = ExtractiveSummarizer(max_tokens=budget).summarize(SummaryRequest("c", span))
    assert COUNTER.count(d.text) <= budget or d.text.startswith("[")
    assert any(n.startswith("kept ") for n in d.notes)


def test_request_share_lowers_the_budget() -> None:
    d = ExtractiveSummarizer(max_tokens=500).summarize(SummaryRequest("c", chat() * 5, max_tokens=20))
    assert COUNTER.count(d.text) <= 20


def test_nothing_salient_still_yields_text_and_a_note() -> None:
    d = ExtractiveSummarizer().summarize(SummaryRequest("c", [Message("user", "ok"), Message("assistant", "k")]))
    assert d.text == "[2 messages with no extractable content]" and "no salient sentences found" in d.notes


# -- merges ---------------------------------------------------------------------------------

def session_conversation(sessions: int = 30, filler: int = 9, rich: str = "none") -> list[Message]:
    """One planted fact per session (same shape, different specifics) among chat filler.

    `rich`: "early" or "late" gives the facts of that end of the conversation extra specific
    details, so a selection by value alone would keep only that end.
    """
    pets = ["ferret", "parrot", "tortoise", "gecko", "hamster", "rabbit", "canary", "iguana", "axolotl", "beagle"]
    cities = ["Lisbon", "Bergen", "Kyoto", "Hobart", "Tallinn", "Oaxaca", "Galway", "Cusco", "Porto", "Penang"]
    fillers = ["Haha that's so true, I love that for you!", "Thanks so much, that means a lot to me.",
               "Oh wow, really? That's amazing!", "I know, right? It was a great time honestly.",
               "Yeah, I think so too, it's really nice.", "Sounds good, talk soon!"]
    base = datetime(2023, 1, 2, 10, 0, tzinfo=UTC)
    msgs: list[Message] = []
    for s in range(sessions):
        day = (base + timedelta(days=7 * s)).isoformat()
        extra = {"early": sessions - 1 - s, "late": s}.get(rich, 0) * 4 // sessions
        details = "".join(f", tag TG-{100 * s + k}" for k in range(extra))
        fact = (f"In session {s + 1} I adopted a {pets[s % 10]} named Pixel{s + 1} from a shelter "
                f"in {cities[s % 10]} {details}".rstrip() + ".")
        msgs.append(Message("user", fact, name="Ana", created_at=day, id=f"s{s}-fact"))
        for k in range(filler):
            msgs.append(Message("assistant" if k % 2 == 0 else "user", fillers[(s + k) % len(fillers)],
                                name="Ben" if k % 2 == 0 else "Ana", created_at=day))
    return msgs


@pytest.mark.parametrize("rich", ["none", "early", "late"])
def test_coverage_a_rolling_chain_keeps_early_middle_and_late_sessions(rich: str) -> None:
    msgs = session_conversation(30, rich=rich)
    final = chain(ExtractiveSummarizer(max_tokens=250), msgs, step=10)[-1].text
    kept = {int(w[len("Pixel"):]) for w in final.replace(".", " ").split() if w.startswith("Pixel")}
    assert len(kept) >= 6, final
    assert kept & set(range(1, 11)) and kept & set(range(11, 21)) and kept & set(range(21, 31)), final


def test_what_the_merge_drops_from_the_previous_summary_is_recorded() -> None:
    s = ExtractiveSummarizer(max_tokens=60)
    prev = SummaryRecord(id="r", conversation_id="c", messages_covered=10,
                         text="User: Sounds like a plan, see you soon.\nUser: The locker code at the gym is 4417.")
    later = [Message("user", "The wifi password for the cabin is Fjord-2291."),
             Message("user", "Tomasz moves into flat 12B on Kestrel Road on 3 June.")]
    d = s.summarize(SummaryRequest("c", later, previous=prev))
    assert lines_of(d.text) == ["User: The locker code at the gym is 4417.",
                                "User: The wifi password for the cabin is Fjord-2291.",
                                "User: Tomasz moves into flat 12B on Kestrel Road on 3 June."]
    assert d.meta["dropped"] == 1 and d.meta["dropped_lines"] == ["User: Sounds like a plan, see you soon."]
    assert "dropped 1 earlier summary line(s): User: Sounds like a plan, see you soon." in d.notes


def test_stronger_new_lines_displace_weaker_previous_ones_within_the_budget() -> None:
    prev = SummaryRecord(id="r", conversation_id="c", messages_covered=4,
                         text="User: We repainted the hallway.\nUser: The locker code at the gym is 4417.")
    later = [Message("user", f"Ticket ABC-{i} for the Lisbon office is due on {i} May.") for i in range(1, 9)]
    d = ExtractiveSummarizer(max_tokens=60).summarize(SummaryRequest("c", later, previous=prev))
    assert "hallway" not in d.text and "4417" in d.text and "ABC-1 " in d.text
    assert d.meta["dropped_lines"] == ["User: We repainted the hallway."]
    assert COUNTER.count(d.text) <= 60


def read_file(module: str, functions: Sequence[str]) -> Message:
    body = "\n\n".join(f"def {f}(items):\n    return [i for i in items if i]\n" for f in functions)
    return Message("tool", f"import logging\n\n{body}", name="read_file", meta={"path": f"src/{module}/core.py"})


def test_what_people_say_outranks_re_derivable_tool_output_under_a_small_budget() -> None:
    """Identifier-dense tool output (files that can be read again) against a person's decision
    that cannot be had again: the decision is kept first, and tool lines fill the rest."""
    tools = [read_file("billing", ["render_invoice", "retry_batch", "compute_header", "flush_ledger", "load_rates"]),
             read_file("auth", ["validate_token", "load_index", "merge_schedule", "rotate_keys", "parse_claims"]),
             read_file("ingest", ["flush_window", "parse_payload", "resolve_manifest", "split_chunks", "read_cursor"])]
    decision = "User: We decided to keep the old database driver until the upgrade is done."
    msgs = [tools[0], Message("user", decision.removeprefix("User: ")), tools[1], tools[2]]
    for budget in (45, 90):  # room for one tool line; for two
        text = ExtractiveSummarizer().summarize(SummaryRequest("c", msgs, max_tokens=budget)).text
        assert decision in lines_of(text)
        assert COUNTER.count(text) <= budget
    with_room = lines_of(ExtractiveSummarizer().summarize(SummaryRequest("c", msgs, max_tokens=90)).text)
    assert sum(ln.startswith("[✓ read_file") for ln in with_room) == 1  # tool lines still fill the room
    everything = ExtractiveSummarizer().summarize(SummaryRequest("c", msgs, max_tokens=1000)).text
    assert len(lines_of(everything)) == 4


def test_specificity_comes_from_the_whole_conversation_not_the_span() -> None:
    """A tool-run report repeated all conversation long is boilerplate even where the span and
    the previous summary say it only once; a fresh summarizer (no history) cannot know that."""
    locker = Message("user", "The gym locker code is 4417.")
    boiler = Message("assistant", "Reran pytest, mypy, ruff, coverage, bandit and tox.")
    fact = Message("user", "The vendor is called Oksana.")
    seen = ExtractiveSummarizer(max_tokens=500)
    prev: SummaryRecord | None = None
    for k in range(6):  # one line of room: the locker code wins every time
        d = seen.summarize(SummaryRequest("c", [boiler] * 9 + [locker], previous=prev, max_tokens=12))
        assert d.text == "User: The gym locker code is 4417."
        prev = record(d, 10 * (k + 1), seq=k)
    final = SummaryRequest("c", [boiler, fact], previous=prev, max_tokens=28)
    assert seen.summarize(final).text == "User: The gym locker code is 4417.\nUser: The vendor is called Oksana."
    fresh = ExtractiveSummarizer(max_tokens=500).summarize(final).text
    assert fresh == "User: The gym locker code is 4417.\nAssistant: Reran pytest, mypy, ruff, coverage, bandit and tox."


# -- append mode (budget-rule-based) --------------------------------------------------------

def test_append_mode_versions_like_seed_002() -> None:
    s = ExtractiveSummarizer(max_tokens=200, merge="append", conversational=False)
    one = s.summarize(SummaryRequest("c", chat()[:2]))
    assert one.text.startswith("--- Summarized Context (2 items) ---")
    prev = SummaryRecord(id="r", conversation_id="c", text=one.text, seq=0)
    two = s.summarize(SummaryRequest("c", chat()[2:3], previous=prev))
    assert two.text.startswith(one.text) and "\n\n[Update 2]\n--- Summarized Context (1 items)" in two.text


def test_append_condensation_keeps_a_budget_sized_summary() -> None:
    budget = 200
    s = ExtractiveSummarizer(max_tokens=budget, merge="append")
    msgs = [Message("user" if i % 2 else "assistant",
                    f"Order ORD-{10_000 + i} for {['desk', 'lamp', 'chair', 'shelf'][i % 4]} number {i} "
                    f"ships from the {['Porto', 'Bergen', 'Kyoto'][i % 3]} warehouse on day {i % 28 + 1}.")
             for i in range(500)]
    drafts = chain(s, msgs, step=20, max_tokens=budget)
    condensed = [d for d in drafts if any(n.startswith("history condensed") for n in d.notes)]
    assert len(condensed) >= 5
    for d in drafts:
        assert COUNTER.count(d.text) <= budget  # never cut by the engine's share cap
    for d in condensed:
        assert d.text.startswith(CONDENSED_HEADER + "\n") and "[Update" not in d.text
        assert 0.5 * budget <= COUNTER.count(d.text) <= budget, d.text
    # the condensed history reaches back before the newest block
    last = condensed[-1].text
    assert any(f"ORD-{10_000 + i} " in last for i in range(0, 400))


def test_conversational_off_uses_one_line_per_message() -> None:
    d = ExtractiveSummarizer(conversational=False, merge="append").summarize(SummaryRequest("c", chat()))
    assert d.text.count("\n") == 5 and "[✓ user: Hi! My order PAY-4821" in d.text


# -- determinism ----------------------------------------------------------------------------

def test_is_deterministic_across_instances() -> None:
    msgs = session_conversation(8)
    a = chain(ExtractiveSummarizer(max_tokens=150), msgs, step=7)
    b = chain(ExtractiveSummarizer(max_tokens=150), msgs, step=7)
    assert a == b


_HASHSEED_SCRIPT = """
import hashlib
from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest
from rollsum.types import Message, SummaryRecord
words = "Lisbon Bergen Kyoto ferret parrot gecko Priya Tomasz invoice refund boiler lease".split()
s = ExtractiveSummarizer(max_tokens=120)
prev, out = None, []
for k in range(40):
    span = [Message("user", f"{words[(k * 7 + j) % 12]} and {words[(k * 5 + j) % 12]} cost {k * 10 + j} euros "
                            f"on day {j}.", name=("Ana", "Ben")[j % 2],
                    created_at=f"2023-0{1 + k % 9}-1{j % 10}T10:00:00") for j in range(6)]
    d = s.summarize(SummaryRequest("c", span, previous=prev))
    out.append(d.text)
    prev = SummaryRecord(id=str(k), conversation_id="c", text=d.text, messages_covered=6 * (k + 1))
print(hashlib.sha256("\\x00".join(out).encode()).hexdigest())
"""


def test_output_does_not_depend_on_string_hashing() -> None:
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _HASHSEED_SCRIPT], env=env,
                              capture_output=True, text=True, timeout=60, check=True)
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_a_retried_call_after_an_uncommitted_summary_equals_a_clean_run() -> None:
    msgs = session_conversation(6)
    s = ExtractiveSummarizer(max_tokens=120)
    first = s.summarize(SummaryRequest("c", msgs[:20]))
    prev = record(first, 20)
    s.summarize(SummaryRequest("c", msgs[20:30], previous=prev))  # the engine failed to commit this one
    retried = s.summarize(SummaryRequest("c", msgs[20:40], previous=prev))
    clean = ExtractiveSummarizer(max_tokens=120)
    clean.summarize(SummaryRequest("c", msgs[:20]))
    assert retried == clean.summarize(SummaryRequest("c", msgs[20:40], previous=prev))


@pytest.mark.parametrize("kw", [{"max_tokens": 0}, {"merge": "mix"}])
def test_bad_parameters_are_config_errors(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ExtractiveSummarizer(**kw)  # type: ignore[arg-type]


def test_facts_the_ledger_asks_to_keep_win_a_tight_budget() -> None:
    msgs = [Message("user", "The wifi password for the lake cabin in Bergen is Fjord-2291."),
            Message("user", "Our flight LH-1207 leaves Lisbon at 06:40 on 3 June.")]
    plain = ExtractiveSummarizer(max_tokens=20).summarize(SummaryRequest("c", msgs))
    kept = ExtractiveSummarizer(max_tokens=20).summarize(SummaryRequest("c", msgs, must_keep=("Fjord-2291",)))
    assert "Fjord-2291" not in plain.text and "Fjord-2291" in kept.text
