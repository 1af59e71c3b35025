"""What the extractive summarizer carries from call to call never changes a summary (issue #20).

A replay makes a summary every ~20 messages, so the summarizer keeps, between calls: each
sentence processed once (`_Text`: shortened, dates anchored, tail trimmed, features, cost),
the candidates the span made (a kept sentence comes back as a previous line at the next call,
and is not processed again), each previous line's parse, each day's name, and token classes.
These tests pin all of it to a summarizer that forgets everything but the conversation's
statistics before every call, to the plain definition of "holds a relative date", and
`select` to the greedy it replaced.
"""

from __future__ import annotations

import gc
import heapq
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum.summarizers import ExtractiveSummarizer, SummaryRequest, dates, selection
from rollsum.summarizers.selection import (
    DECAY,
    LINES_PER_BUCKET,
    MAX_BUCKETS,
    MIN_VALUE,
    REDUNDANT,
    RHO,
    Candidate,
    select,
)
from rollsum.types import Message, SummaryRecord

_SAID = [
    "We booked the cabin in Tromsø for the second week of March.",
    "Yesterday Omar moved the INC-2093 review to Tuesday, it was really annoying.",
    "I finished a novel last night and I'm weirdly sad it's over.",
    "The budget for the offsite is 1,200 euros, which is pretty tight.",
    "Ok. Thanks!",
    "Two weeks ago the deploy of build 42 failed on src/app.py:12.",
    "Dr. Amy Ellis said the results come next Friday.",
    "I'll make a small, focused edit and then re-run the affected tests.",
    "That's the one with the red door.",
    "My landlord's name is Dmitri Quintero.",
]
"""Sentences that repeat (the per-sentence cache hits), relative dates (anchored per day),
trimmed tails, abbreviations, fragments and lines with only common words."""
_TOOLS = [
    ("grep", {"pattern": "index ="}, "src/webhooks/api.py:8:    index = compute_index(items)"),
    ("search_files", {"pattern": "index ="}, "src/webhooks/api.py:8:    index = compute_index(items)"),
    ("execute_bash", {"command": "make lint"}, "make: ruff: No such file or directory\nError 127"),
    ("read_file", {"path": "config/app.toml"}, "   1  timeout = 30\n   2  region = \"eu-west-1\""),
]
"""grep and search_files give the same facts in differently named lines."""


def _message(i: int, kind: int, day: int, speaker: int) -> Message:
    stamp = (date(2024, 3, 1) + timedelta(days=day)).isoformat() + f"T09:{i % 60:02d}:00Z"
    if kind >= len(_SAID):
        name, meta, content = _TOOLS[(kind - len(_SAID)) % len(_TOOLS)]
        return Message("tool", content, id=f"m{i}", name=name, meta=meta, created_at=stamp)
    text = f"{_SAID[kind]} {_SAID[(kind * 3 + 1) % len(_SAID)]}"
    return Message("user" if speaker % 2 == 0 else "assistant", text, id=f"m{i}",
                   name=("Priya", "Omar", None)[speaker % 3], created_at=stamp)


def _forget(s: ExtractiveSummarizer) -> None:
    """Everything the summarizer keeps between calls but the conversation's statistics."""
    for value in vars(s).values():
        if isinstance(value, dict):
            value.clear()


def _chain(messages: list[Message], span: int, forget: bool, max_tokens: int) -> list[tuple[str, dict[str, object]]]:
    s = ExtractiveSummarizer(max_tokens=max_tokens)
    previous: SummaryRecord | None = None
    covered = 0
    out = []
    for start in range(0, len(messages), span):
        if forget:
            _forget(s)
        draft = s.summarize(SummaryRequest("c", messages[start:start + span], previous=previous))
        covered += len(messages[start:start + span])
        previous = SummaryRecord(id=f"s{start}", conversation_id="c", text=draft.text, seq=start,
                                 messages_covered=covered)
        out.append((draft.text, dict(draft.meta)))
    return out


_STREAM = st.lists(st.tuples(st.integers(0, len(_SAID) + len(_TOOLS) - 1), st.integers(0, 6), st.integers(0, 5)),
                   min_size=4, max_size=60)


@settings(max_examples=60, deadline=None)
@given(_STREAM, st.integers(2, 12), st.sampled_from([60, 150, 400]))
def test_a_chain_with_everything_carried_equals_one_that_forgets_all_but_the_statistics(
        plan: list[tuple[int, int, int]], span: int, max_tokens: int) -> None:
    messages = [_message(i, kind, day, speaker) for i, (kind, day, speaker) in enumerate(plan)]
    assert _chain(messages, span, False, max_tokens) == _chain(messages, span, True, max_tokens)


def test_the_chain_keeps_previous_lines_so_the_carry_is_exercised() -> None:
    """The property above is only worth something if previous lines come back and survive."""
    messages = [_message(i, i % (len(_SAID) + len(_TOOLS)), i // 7, i) for i in range(60)]
    chain = _chain(messages, 10, False, 400)
    assert any(0 < int(str(meta["previous_lines"])) > int(str(meta["dropped"])) for _, meta in chain)
    assert any("(" in text and "2024)" in text for text, _ in chain)  # a relative date anchored


_RELATIVE = st.lists(st.sampled_from([
    "yesterday", "today", "last night", "two weeks ago", "0 days ago", "300 days ago", "a few days ago",
    "in 3 months", "in a day", "last Friday", "next tues.", "this weekend", "past month", "past week",
    "this coming sunday", "the day before yesterday", "(7 May 2023)", " ", ", ", "the ", "In", "in ",
    "this path", "next step", "last run", "recently", "Friday", "day", "week", "ago", "(", ")",
]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(_RELATIVE)
def test_holds_relative_is_exactly_whether_anchoring_changes_the_text(text: str) -> None:
    anchors = [date(2023, 5, 8), date(2024, 2, 29), date(2021, 12, 31), date(2030, 1, 5)]
    changed = [dates.anchor_dates(text, d)[0] != text for d in anchors]
    assert dates.holds_relative(text) == any(changed)
    assert all(changed) == any(changed)  # what is anchored does not depend on the day


def _reference_select(cands: list[Candidate], budget: int, span_end: float) -> tuple[int, ...]:
    """`select` as it was before columns (b9c6dec): the definition the fast one must equal."""
    if not cands or budget <= 0:
        return ()
    v0: list[float] = []
    heap: list[tuple[float, int]] = []
    costs = [max(1, c.cost) for c in cands]
    for i, c in enumerate(cands):
        value = sum(c.weights) + c.bonus
        v0.append(value)
        if value >= MIN_VALUE and c.cost <= budget:
            heapq.heappush(heap, (-value * c.priority / costs[i], i))
    if not heap:
        return ()
    mean_cost = sum(costs[i] for _, i in heap) / len(heap)
    buckets = max(1, min(MAX_BUCKETS, round(max(1.0, budget / mean_cost) / LINES_PER_BUCKET)))
    width = max(span_end, 1.0) / buckets
    bucket_of = [min(buckets - 1, int(c.pos / width)) if c.pos > 0 else 0 for c in cands]
    covered: dict[str, int] = {}
    in_bucket = [0] * buckets
    groups: set[int] = set()
    chosen: list[int] = []
    used = 0
    while heap:
        _, i = heapq.heappop(heap)
        c = cands[i]
        cost = c.join_cost if c.group in groups else costs[i]
        if used + cost > budget:
            continue
        words = 0.0
        for k, w in zip(c.keys, c.weights):
            words += w * DECAY ** min(covered.get(k, 0), 15)
        base = v0[i] - c.bonus
        if (base > 0.0 and words < REDUNDANT * base) or words + c.bonus < MIN_VALUE:
            continue
        b = bucket_of[i]
        over = in_bucket[b] - LINES_PER_BUCKET
        gain = (words + c.bonus) * c.priority * (RHO ** (over + 1) if over >= 0 else 1.0) / costs[i]
        if heap and -heap[0][0] > gain + 1e-12:
            heapq.heappush(heap, (-gain, i))
            continue
        chosen.append(i)
        used += cost
        groups.add(c.group)
        in_bucket[b] = min(63, in_bucket[b] + 1)
        for k in c.keys:
            covered[k] = min(15, covered.get(k, 0) + 1)
    return tuple(sorted(chosen))


_CANDIDATE = st.builds(
    lambda keys, weights, cost, join, group, pos, bonus, priority: Candidate(
        tuple(keys), tuple(weights[: len(keys)]) + (1.0,) * (len(keys) - len(weights)), cost, join, group, pos,
        bonus, priority),
    st.lists(st.sampled_from("abcdefgh"), max_size=5, unique=True),
    st.lists(st.sampled_from([0.2, 0.3, 1.0, 1.5, 2.0, 0.75]), max_size=5),
    st.integers(-1, 30), st.integers(0, 30), st.integers(-3, 3), st.floats(0, 50), st.sampled_from([0.0, 1.5, 5.0]),
    st.sampled_from([0.5, 1.0]))


@settings(max_examples=400, deadline=None)
@given(st.lists(_CANDIDATE, max_size=25), st.integers(-2, 120), st.floats(0, 60))
def test_select_equals_the_greedy_it_replaced(cands: list[Candidate], budget: int, span_end: float) -> None:
    """Columns, a heap built at once and stopping when nothing fits any more change nothing
    (costs below a candidate's joined cost included: the stop must look at both)."""
    assert select(cands, budget, span_end=span_end).chosen == _reference_select(cands, budget, span_end)


def test_a_word_said_by_more_kept_lines_than_the_cap_keeps_the_capped_multiplier() -> None:
    """"a" is in every candidate, each also naming something of its own: all are kept, so "a"
    is covered 24 times, past the 15 where its multiplier stops falling."""
    cands = [Candidate(("a", f"u{i}"), (1.0, 5.0 + i / 100), 3, 3, i, float(i)) for i in range(24)]
    assert select(cands, 200, span_end=30.0).chosen == _reference_select(cands, 200, 30.0) == tuple(range(24))
    # the step from a multiplier to the next: DECAY ** n -> DECAY ** min(n + 1, 15), the powers
    # distinct (a multiplier alone tells how many lines say the word)
    powers = [DECAY ** n for n in range(16)]
    assert [selection._DECAY_STEP[p] for p in powers] == [DECAY ** min(n + 1, 15) for n in range(16)]


def test_select_stops_only_when_not_even_the_cheapest_candidate_fits() -> None:
    """After `a` (10 tokens of 12), `c` (5) no longer fits but `b` (2 as a line of its own,
    8 when joined to a line of its group) still does: the stop looks at both costs."""
    a = Candidate(("a",), (20.0,), 10, 10, 0, 0.0)
    c = Candidate(("c",), (4.0,), 5, 5, 1, 0.0)
    b = Candidate(("b",), (1.0,), 2, 8, 2, 0.0)
    assert select([a, c, b], 12, span_end=1.0).chosen == (0, 2) == _reference_select([a, c, b], 12, 1.0)


def test_tool_lines_with_the_same_facts_keep_their_own_names_across_calls() -> None:
    """A tool result's features are carried by its facts; the line (which names the tool and
    its status) must still be its own: grep and search_files say the same thing."""
    grep, search = _TOOLS[0], _TOOLS[1]
    stamp = "2024-03-01T09:00:00Z"
    first = [Message("tool", grep[2], id="m0", name=grep[0], meta=grep[1], created_at=stamp)]
    second = [Message("tool", search[2], id="m1", name=search[0], meta=search[1], created_at=stamp)]
    s = ExtractiveSummarizer(max_tokens=400)
    assert "[✓ grep:" in s.summarize(SummaryRequest("c", first)).text
    two = s.summarize(SummaryRequest("d", second)).text
    assert two == ExtractiveSummarizer(max_tokens=400).summarize(SummaryRequest("d", second)).text
    assert "[✓ search_files:" in two


def test_every_cached_sentence_holds_what_its_own_text_gives() -> None:
    """The per-sentence cache and the carried candidates hold, for each text, exactly what
    processing that text gives (features of the body, its cost, whether it is worth a line;
    the body itself from the sentence and the day): a cache that kept the facts of another
    text (a stale undated entry for a dated sentence, features from before a tail was trimmed)
    fails here, even where a warm and a cold summarizer would be wrong alike."""
    from rollsum.summarizers import salience
    from rollsum.summarizers.extractive import _content, shorten, trim_tail

    messages = [_message(i, i % len(_SAID), i // 5, i) for i in range(40)]
    s = ExtractiveSummarizer(max_tokens=150)
    previous: SummaryRecord | None = None
    days: dict[str, date] = {}
    for start in range(0, 40, 8):
        span = messages[start:start + 8]
        days.update((m.content, dates.parse_day(m.created_at) or date.min) for m in span)
        draft = s.summarize(SummaryRequest("c", span, previous=previous))
        previous = SummaryRecord(id=f"s{start}", conversation_id="c", text=draft.text, seq=start,
                                 messages_covered=start + 8)
        texts = [*s._features.values(), *s._features_before.values()]
        said = list(s._sentences.items())
        assert said and texts
        for key, entry in said:
            sentence, anchor = (key, None) if isinstance(key, str) else key
            short = shorten(sentence)
            assert entry.short == short
            if anchor is not None or entry.relative is not None:
                assert entry.relative == dates.holds_relative(short)
            body = trim_tail(dates.anchor_dates(short, anchor)[0] if anchor is not None else short)
            assert entry.body == body
            texts.append(entry)
        for t in texts:
            if t.body.startswith("[") or t.cost == 0:
                continue  # a tool line: its features are its facts' (the next test's subject)
            assert t.feat == salience.features(t.body)
            assert t.cost == s.counter.count(t.body) + 1
            assert t.content == _content(t.feat)
            assert t.names == tuple(k for k, w in zip(*t.feat[:2]) if w >= salience.W_NUMBER)


def test_the_cached_features_are_objects_the_collector_never_walks() -> None:
    """The summarizer keeps features for the whole conversation (its memo and every cached
    sentence's `_Text`: tens of thousands in a long replay). They must be exact tuples of
    strings and floats, which the collector untracks at the first collection that meets them:
    a named tuple, a slots class or a dict in their place stays tracked, is promoted to the old
    generation and makes full collections more frequent and longer (issue #20 item 2,
    docs/summarizers.md)."""
    messages = [_message(i, i % (len(_SAID) + len(_TOOLS)), i // 5, i) for i in range(60)]
    s = ExtractiveSummarizer(max_tokens=150)
    previous: SummaryRecord | None = None
    for start in range(0, 60, 10):
        draft = s.summarize(SummaryRequest("c", messages[start:start + 10], previous=previous))
        previous = SummaryRecord(id=f"s{start}", conversation_id="c", text=draft.text, seq=start,
                                 messages_covered=start + 10)
    texts = [*s._sentences.values(), *s._features.values(), *s._features_before.values()]
    feats = [*s._feature_memo.values(), *(t.feat for t in texts)]
    assert texts and s._feature_memo
    # a collection untracks a tuple whose items it has already untracked: it may meet a
    # features tuple before its keys and weights, so one may take two (in a replay: the young
    # one that first sees it, then the next, so it is never promoted to the old generation)
    gc.collect()
    gc.collect()
    assert [f for f in feats if gc.is_tracked(f)] == []
    assert [t for t in texts if any(map(gc.is_tracked, (t.keys, t.names, t.scaled, t.signs)))] == []


def test_the_feature_memo_holds_each_texts_own_features_and_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_features_of` memoizes `salience.features` by the text (tails, tool facts and bodies
    met again): every entry must be what its own key gives (a memo keyed by a normalized text,
    e.g. its lower case, hands "May" the features of "may" and fails here), each text's features
    are computed once (a memo that is not consulted fails), and it is cleared past the limit."""
    from rollsum.summarizers import extractive, salience

    messages = [_message(i, i % (len(_SAID) + len(_TOOLS)), i // 5, i) for i in range(60)]
    s = ExtractiveSummarizer(max_tokens=150)
    calls: list[str] = []
    real = salience.features

    def counted(text: str, cache: salience.TokenCache | None = None) -> salience.Features:
        calls.append(text)
        return real(text, cache)

    monkeypatch.setattr(salience, "features", counted)
    _ = [s._features_of(t) for t in ("I met May.", "I met may.", "I met May.")]
    previous: SummaryRecord | None = None
    for start in range(0, 60, 10):
        draft = s.summarize(SummaryRequest("c", messages[start:start + 10], previous=previous))
        previous = SummaryRecord(id=f"s{start}", conversation_id="c", text=draft.text, seq=start,
                                 messages_covered=start + 10)
    monkeypatch.setattr(salience, "features", real)
    assert calls and len(calls) == len(set(calls))  # each text's features computed once
    assert s._feature_memo["I met May."] != s._feature_memo["I met may."]
    for text, feat in s._feature_memo.items():
        assert feat == real(text)
    monkeypatch.setattr(extractive, "_CACHE_LIMIT", 3)
    for i in range(10):
        s._features_of(f"Sentence number {i} about Tromsø.")
    assert len(s._feature_memo) <= 4
