from __future__ import annotations

from rollsum.ledger import Fact, extract_facts, missing
from rollsum.types import Message

TEXT = ("Hi! My name is Dana Whitfield. Ticket PAY-4821 is due on Friday, March 14 2025. "
        "I'm allergic to peanuts, never book the 7am flight. Budget is $1,250 for 3 people and 45 minutes. "
        "Check src/app/main.py and config.yaml, run parse_invoice and InvoiceParser v2.3.1, commit 3f9a2c1d.")


def facts_of(text: str, role: str = "user") -> dict[str, str]:
    return {f.text: f.kind for f in extract_facts([Message(role, text, id="m1")])}  # type: ignore[arg-type]


def test_extracts_each_kind_from_a_user_message() -> None:
    got = facts_of(TEXT)
    assert got["Dana Whitfield"] == "name"
    assert got["PAY-4821"] == got["src/app/main.py"] == got["config.yaml"] == "identifier"
    assert got["parse_invoice"] == got["InvoiceParser"] == got["v2.3.1"] == got["3f9a2c1d"] == "identifier"
    assert got["Friday, March 14 2025"] == "date"
    assert got["$1,250"] == got["3 people"] == got["45 minutes"] == got["7am"] == "number"
    assert got["I'm allergic to peanuts, never book the 7am flight."] == "constraint"


def test_dates_in_common_forms() -> None:
    got = facts_of("We met on 2024-03-14, again on 14 March 2024 and on May 5th.")
    assert {"2024-03-14", "14 March 2024", "May 5th"} <= set(got) and "14" not in got


def test_trivial_numbers_and_sentence_start_words_are_skipped() -> None:
    got = facts_of("Then I had 1 idea and 2 more. Yesterday Alice Smith called.")
    assert "1" not in got and "2" not in got
    assert "Alice Smith" in got and "Yesterday Alice Smith" not in got and "Then" not in got


def test_constraints_only_from_the_user_and_capped() -> None:
    assert "constraint" not in facts_of("You must never do that.", role="assistant").values()
    long = "You must always " + "really " * 60 + "check."
    c = [t for t, k in facts_of(long).items() if k == "constraint"]
    assert len(c) == 1 and len(c[0]) <= 160


def test_tool_messages_give_only_hard_identifiers() -> None:
    m = Message("tool", "def foo_bar():\n  return 42  # Alice Smith\nsee /etc/app.conf", id="t",
                name="read_file", meta={"path": "src/foo.py"})
    got = {f.text for f in extract_facts([m])}
    assert got == {"src/foo.py", "/etc/app.conf"}


def test_deduplicated_ordered_capped_and_carry_message_ids() -> None:
    ms = [Message("user", "Ticket PAY-1 and pay-1 again", id="a"), Message("user", "Ticket PAY-2", id="b")]
    facts = extract_facts(ms)
    assert [f.text for f in facts] == ["PAY-1", "PAY-2"] and [f.message_id for f in facts] == ["a", "b"]
    many = [Message("user", " ".join(f"T-{i}" for i in range(j * 50, j * 50 + 50)), id=str(j)) for j in range(6)]
    assert len(extract_facts(many)) == 200 and len(extract_facts(many, max_facts=7)) == 7
    assert extract_facts(ms) == facts


def test_system_messages_are_ignored() -> None:
    assert extract_facts([Message("system", "Ticket PAY-9 at 10:30")]) == []


def test_missing_is_case_and_whitespace_insensitive() -> None:
    facts = [Fact("Dana Whitfield", "name"), Fact("PAY-4821", "identifier"), Fact("$1,250", "number"),
             Fact("March 14", "date")]
    lost = missing(facts, "The user  DANA\nwhitfield paid $1250 for pay-4821.")
    assert lost == [Fact("March 14", "date")]


def test_fast_scan_finds_exactly_what_the_full_alternation_finds() -> None:
    # The ledger tries the fact pattern only where a fact can start; it must never see more or
    # less than a plain leftmost-first scan of the whole text would.
    import random

    from rollsum.ledger import _FACT_RE, _fact_matches

    pieces = ["March", "May", "Friday", "Tue", "Dana", "Smith", "I", "I'm", "Hey,", "tired.", "(Dana",
              "Whitfield)", "am", "pm", "ms", "minutes", "src/", "app.py", "v2.3", "PAY-", "of", "st",
              "2024", "12", "1,200", "deadbeef", "-dead", "J.", "$", "€", "~", "/", ".", "-", "_x", "aB",
              "3f9a2c1d", "٣", "é", " ", " ", " ", "\t", "\n", ",", "'", '"']
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        want = [(m.lastgroup, m.span()) for m in _FACT_RE.finditer(text)]
        assert [(m.lastgroup, m.span()) for m in _fact_matches(text, len(text))] == want, text


def test_plain_capitalised_words_still_open_names_and_dates() -> None:
    got = facts_of("Hey, I met Priya Raman and Dana Whitfield on Tue 4 March. Yoga helps.")
    assert {"Priya Raman", "Dana Whitfield", "Tue 4 March"} <= set(got)
    assert not {"Hey", "Yoga", "I"} & set(got)


def test_constraints_are_found_whatever_the_case_or_script() -> None:
    got = facts_of("I MUST leave by noon. Café rules: we Don’t serve pork.")
    assert got["I MUST leave by noon."] == "constraint"
    assert got["Café rules: we Don’t serve pork."] == "constraint"


def test_missing_tool_scan_window_and_long_inputs() -> None:
    long_tool = Message("tool", "x " * 1200 + "see /etc/late.conf", id="t")
    assert extract_facts([long_tool]) == []  # only the first 2,000 characters are scanned
    facts = [Fact(f"K{i:02d}Z", "identifier") for i in range(60)]
    summary = "\n".join(f"k{i:02d}z" for i in range(0, 60, 2))
    assert [f.text for f in missing(facts, summary)] == [f"K{i:02d}Z" for i in range(1, 60, 2)]
