"""The support matcher: what counts as a context stating a probe's answer."""

from __future__ import annotations

import collections
import dataclasses

import pytest
from rollsum_evals.scoring.support import STOP, Unit, claim, document_frequency, summary_units, support, words


def supported(question: str, answer: str, *texts: str, names: tuple[str, ...] = (), speaker: str = "") -> bool:
    c = claim(question, answer, names)
    assert c is not None, "answer unexpectedly not checkable"
    return support(c, [Unit(t, speaker) for t in texts]) is not None


# -- what must match ------------------------------------------------------------------------------


def test_a_plain_statement_supports_its_answer() -> None:
    assert supported("What is the user's dietary restriction?", "pescatarian",
                     "Okay so yoga helps. My dietary restriction is pescatarian.")


def test_the_speaker_of_a_message_anchors_a_list_item() -> None:
    assert supported("Which instruments does Melanie play?", "clarinet and violin",
                     "Yeah, I play clarinet! Started when I was young.", "I also play the violin at night.",
                     names=("Melanie",), speaker="Melanie")


@pytest.mark.parametrize("written", ["7 May 2023", "May 7, 2023", "2023-05-07", "the 7th of May 2023"])
def test_dates_match_in_any_common_form(written: str) -> None:
    assert supported("When did Caroline go to the LGBTQ support group?", "7 May 2023",
                     f"Caroline went to the LGBTQ support group on {written}.")


def test_a_full_date_also_states_its_month_and_day() -> None:
    assert supported("When is the user's housewarming party?", "May 27",
                     "The housewarming party is on 2024-05-27.")


def test_number_words_and_digits_are_the_same_number() -> None:
    assert supported("How long ago was Caroline's 18th birthday?", "10 years ago",
                     "A friend made it for my 18th birthday ten years ago.")


def test_tool_output_supports_a_value_by_its_setting_name() -> None:
    assert supported("What is REQUEST_TIMEOUT_MS set to in config/payments_settings.py?", "6432",
                     '   1  """Settings."""\n   3  REQUEST_TIMEOUT_MS = 6432\n   4  BATCH_SIZE = 13')


def test_a_summary_line_with_a_speaker_prefix_keeps_its_speaker() -> None:
    units = summary_units("Caroline: I play the clarinet in a band.\nMelanie: Nice!")
    assert units[0] == Unit("I play the clarinet in a band.", "Caroline")
    c = claim("Which instrument does Caroline play in her band?", "clarinet", ("Caroline", "Melanie"))
    assert c is not None and support(c, units) == (0,)


def test_a_rare_word_needs_one_strong_anchor_a_common_one_two() -> None:
    chat = ["I play the clarinet.", "I am so happy today!", "Happy to hear.", "So happy for you.",
            "Happy birthday!", "What did you play?"]
    df = document_frequency(chat)
    rare = claim("What instrument does Caroline play?", "clarinet", ("Caroline",), df)
    common = claim("How does Caroline feel about the school play?", "happy", ("Caroline",), df)
    assert rare is not None and common is not None
    assert support(rare, [Unit(chat[0], "Caroline")]) is not None
    assert support(common, [Unit("I am so happy, that play was long.", "Caroline")]) is None
    assert support(common, [Unit("I feel happy about the school play.", "Caroline")]) is not None


# -- what must not match by accident --------------------------------------------------------------


@pytest.mark.parametrize("answer", ["Yes", "No", "Likely no", "yes, probably"])
def test_yes_no_answers_are_not_checkable(answer: str) -> None:
    assert claim("Would Caroline still pursue counseling?", answer) is None


def test_a_one_word_answer_in_an_unrelated_sentence_is_not_support() -> None:
    # "happy" occurs, but nothing ties it to the studio or its opening night
    assert not supported("How does Jon feel about the opening night of his dance studio?", "happy",
                         "Hi Gina! I am so happy that the weather is nice today.", names=("Jon", "Gina"))


def test_a_one_word_answer_needs_two_strong_anchors_not_a_name() -> None:
    assert not supported("What did Caroline paint?", "sunset",
                         "Caroline said the sunset yesterday was lovely.", names=("Caroline",))
    assert supported("What did Caroline paint last week?", "sunset",
                     "Caroline: last week I painted a sunset, my best painting so far.", names=("Caroline",))


def test_a_multi_word_answer_needs_its_words_together() -> None:
    assert not supported("What gift did Evan receive from a close friend?", "vintage guitar",
                         "The vintage shop sold a gift card; my friend plays the guitar.")


def test_a_list_needs_every_item() -> None:
    q = "Where has Melanie camped?"
    assert not supported(q, "beach, mountains, forest", "We camped at the beach and in the mountains.",
                         names=("Melanie",))
    assert supported(q, "beach, mountains, forest", "We camped at the beach and in the mountains.",
                     "Last summer we camped in the forest.", names=("Melanie",))


def test_a_list_anchored_only_by_names_is_not_support() -> None:
    assert not supported("What did Sam offer Evan regarding yoga?", "support and tips",
                         "Is there anything I can do to support you, Sam?", "Evan, do you have any tips?",
                         names=("Sam", "Evan"))


def test_a_bag_of_keywords_states_nothing() -> None:
    bag = "melanie camped beach mountains forest caroline pottery painting kids"
    assert not supported("Where has Melanie camped?", "beach, mountains, forest", bag, names=("Melanie",))
    assert not supported("What is the user's dietary restriction?", "pescatarian",
                         "dietary restriction pescatarian budget euros")


def test_a_bag_of_the_most_frequent_words_scores_far_below_the_sentences_it_came_from() -> None:
    sentences = [
        "My dietary restriction is pescatarian.", "The monthly grocery budget in euros is 2798.",
        "The reference for the order for the standing desk is ORD-80136.",
        "My housewarming party is on May 27.", "The anniversary trip is going to be in Queenstown.",
        "The kitchen renovation quote in euros is 8642.",
    ] * 3
    probes = [("What is the user's dietary restriction?", "pescatarian"),
              ("What is the user's monthly grocery budget in euros?", "2798"),
              ("What is the reference number of the user's order for the standing desk?", "ORD-80136"),
              ("When is the user's housewarming party?", "May 27"),
              ("Where is the user's anniversary trip taking place?", "Queenstown"),
              ("What is the user's kitchen renovation quote in euros?", "8642")]
    counts = collections.Counter(w for s in sentences for w in words(s) if w not in STOP)
    bag = " ".join(w for w, _ in counts.most_common(40))
    real = sum(supported(q, a, *sentences) for q, a in probes)
    fake = sum(supported(q, a, bag) for q, a in probes)
    assert real == len(probes)
    assert fake == 0


# -- v6: the event, the whole answer, "you", and what someone said ----------------------------------


def test_a_dated_line_must_state_the_event_not_just_its_topic() -> None:
    # with times shown every line carries a date: one shared topic word does not date the event
    q, a = "When did Caroline run a charity race?", "May 2023"
    assert not supported(q, a, "[20 May 2023] Running is my favourite way to unwind.", names=("Caroline",),
                         speaker="Caroline")
    assert supported(q, a, "[20 May 2023] I did a charity race for mental health last Saturday.",
                     names=("Caroline",), speaker="Caroline")
    # a question with one strong word needs only that one
    assert supported("When did Jon go to Rome?", "June 2023", "[19 June 2023] I took a short trip to Rome.",
                     names=("Jon",), speaker="Jon")


def test_every_part_of_a_long_joined_answer_must_be_stated() -> None:
    q = "What did the coach suggest doing to get fit?"
    a = "buy a cheap used road bike and join the local cycling club on Sundays"
    # two thirds of the answer's words, but only the second half of it
    assert not supported(q, a, "To get fit, join the local cycling club on Sundays and ride your road bike there.")
    assert supported(q, a, "To get fit, buy a cheap used road bike and join the local cycling club on Sundays.")
    c = claim(q, a)
    assert c is not None and len(c.parts) == 2 and len(c.items) == 1


def test_you_in_a_two_person_chat_is_the_other_person() -> None:
    q, a, names = "What has Melanie painted recently?", "a sunset", ("Caroline", "Melanie")
    assert supported(q, a, "Wow Mel, what made you paint that sunset?", names=names, speaker="Caroline")
    # "I" as well: who painted is open
    assert not supported(q, a, "I painted a sunset too, you would love it.", names=names, speaker="Caroline")
    # three people: "you" is not one person
    assert not supported(q, a, "Wow Mel, what made you paint that sunset?", names=(*names, "Jon"),
                         speaker="Caroline")


def test_words_addressed_to_someone_are_not_what_they_said() -> None:
    names = ("Gina", "Jon")

    def by_jon(question: str, text: str) -> bool:
        c = claim(question, "hard work is paying off", names)
        assert c is not None
        c = dataclasses.replace(c, source=frozenset({"jon"}))  # Jon said the evidence
        return support(c, [Unit(text, "Gina")]) is not None

    line = "Hey Jon, it is awesome to see your hard work is paying off with the store!"
    assert not by_jon("What did Jon say about the progress with the store?", line)   # Gina's words, to Jon
    assert by_jon("What is paying off for Jon with the store progress?", line)       # about Jon: "your"
    assert by_jon("What did Jon say about the progress with the store?",
                  "Jon said his hard work is paying off with the store.")            # reported


def test_a_question_that_names_a_time_needs_that_time_near_the_answer() -> None:
    q, a, names = "What fun activity did Caroline mention doing in July 2023?", "skiing", ("Caroline",)
    assert not supported(q, a, "[19 August 2023] Skiing and skating are fun winter activities I enjoy.",
                         names=names, speaker="Caroline")
    assert supported(q, a, "[19 August 2023] Last month (July 2023) I went skiing, a fun activity.",
                     names=names, speaker="Caroline")
    # a full date states its month
    assert supported(q, a, "On 15 July 2023 I went skiing, such a fun activity.", names=names, speaker="Caroline")
