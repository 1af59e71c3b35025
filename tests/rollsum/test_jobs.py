"""Making one summary from plain inputs (`rollsum.jobs`, issue #20 item 4): no engine needed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rollsum import jobs
from rollsum.errors import SummarizeError
from rollsum.policies.base import Decision
from rollsum.settings import EngineSettings
from rollsum.summarizers.base import SummaryDraft, SummaryRequest
from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord


class Scripted:
    """Answers from a script: a string is a summary, an exception is raised."""

    def __init__(self, *script: str | Exception, name: str = "scripted", rewrites: bool = True) -> None:
        self.script = list(script)
        self.name = name
        self.rewrites_previous = rewrites
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return SummaryDraft(step)


def _job(previous: SummaryRecord | None = None, fold: bool = True) -> jobs.Job:
    msgs = tuple(Message("user", f"deploy ticket OPS-{i} today", id=f"m{i}") for i in range(3))
    return jobs.Job(Decision("summarize", (0, 1, 2), "test", fold=fold), turn=3, messages=msgs,
                    span_ids=frozenset(m.id for m in msgs if m.id), previous=previous, depth=1, tokens_before=90,
                    added_at=3)


def _maker(primary: Scripted, fallback: Scripted | None = None, sleeps: list[float] | None = None,
           **settings: object) -> jobs.Maker:
    waits = sleeps if sleeps is not None else []
    return jobs.Maker(primary, fallback, EngineSettings(**settings), "pin", HeuristicCounter(), "c",  # type: ignore[arg-type]
                      lambda: [], waits.append)


def test_transport_failures_are_retried_with_backoff_then_the_fallback_answers() -> None:
    sleeps: list[float] = []
    primary = Scripted(*[SummarizeError("503", transport=True)] * 3)
    fallback = Scripted("the fallback's summary", name="fb")
    out = jobs.run(_job(), _maker(primary, fallback, sleeps, retries=2, backoff_s=0.5))
    assert out.draft is not None and out.draft.text == "the fallback's summary"
    assert (out.attempts, out.fallback, out.primary_failed, sleeps) == (4, "fb", True, [0.5, 1.0])


def test_a_validation_failure_is_not_retried_and_nothing_raises() -> None:
    primary = Scripted(SummarizeError("bad json", transport=False), "never asked")
    out = jobs.run(_job(), _maker(primary, retries=3))
    assert out.draft is None and out.attempts == 1 and out.error is not None and "bad json" in str(out.error)
    broken = Scripted(RuntimeError("boom"))
    assert jobs.run(_job(), _maker(broken)).error is not None  # any exception is the job's failure


def test_the_ledger_pins_what_the_summary_dropped() -> None:
    out = jobs.run(_job(), _maker(Scripted("deploys happened")))
    assert out.draft is not None and set(out.pinned) == {"OPS-0", "OPS-1", "OPS-2"}
    assert out.counts == {"found": 3, "kept": 0, "pinned": 3, "lost": 0}


def test_past_the_depth_cap_the_span_is_appended_or_selected() -> None:
    prev = SummaryRecord(id="c/summary/0", conversation_id="c", text="Earlier: the plan was agreed.", depth=3)
    rewriting = Scripted("new span summary")
    out = jobs.run(_job(prev, fold=False), _maker(rewriting))
    assert out.draft is not None and out.draft.text.startswith("Earlier: the plan was agreed.")
    assert rewriting.requests[0].previous is None  # the span alone: the previous text is not rewritten
    selecting = Scripted("kept lines", rewrites=False)
    out = jobs.run(_job(prev, fold=False), _maker(selecting))
    assert selecting.requests[0].previous == prev and out.draft is not None
    assert jobs.SELECTED_AT_CAP in out.draft.notes
    assert jobs.cap_meta(_job(prev, fold=False), _maker(selecting)) == {"selected_at_cap": True}
    assert jobs.cap_meta(_job(prev), _maker(selecting)) == {}


def test_the_record_carries_the_lineage_and_the_ledger() -> None:
    prev = SummaryRecord(id="c/summary/0", conversation_id="c", text="before", depth=0, messages_covered=5)
    maker = _maker(Scripted("OPS-0 OPS-1 OPS-2 deployed"))
    job = _job(prev)
    out = jobs.run(job, maker)
    assert out.draft is not None
    rec = jobs.record(job, out, out.draft, maker, seq=1, preset="p", created_at="t")
    assert (rec.id, rec.parent_id, rec.messages_covered, rec.covered_ids) == ("c/summary/1", "c/summary/0", 8,
                                                                              ("m0", "m1", "m2"))
    assert rec.meta["preset"] == "p" and rec.tokens > 0 and rec.ledger["kept"] == 3



def test_a_records_size_is_its_rendered_text_and_the_record_stays_whole() -> None:
    """`record` sets the size on the record it just built (no second construction): it must be
    the count of the *rendered* text (key points and pinned facts with it, not the narrative
    alone)."""
    maker = _maker(Scripted("deploys happened"))
    job = _job()
    out = jobs.run(job, maker)
    assert out.draft is not None and out.pinned  # the ledger pinned the ticket numbers
    draft = SummaryDraft("deploys happened", key_points=("ship on Friday", "roll back on error"))
    rec = jobs.record(job, out, draft, maker, seq=0, preset="p", created_at="t")
    rendered = rec.render()
    assert "ship on Friday" in rendered and "OPS-0" in rendered
    assert rec.tokens == maker.counter.count(rendered) > maker.counter.count(rec.text)
    assert SummaryRecord.from_dict(rec.to_dict()) == rec  # the size survives the store's round trip


_SCALAR = st.one_of(st.text(max_size=8), st.integers(), st.floats(), st.booleans(), st.none())
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.tuples(inner, inner),
                                                       st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                      max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), _VALUE, max_size=6))
def test_a_meta_is_kept_as_the_json_round_trip_gives_it_back(meta: dict[Any, Any]) -> None:
    """`_plain` copies a flat meta instead of writing and parsing it: what it returns must be
    what JSON gives back (tuples as lists, keys as strings, nested values round-tripped), to the
    type of every value (repr tells a tuple from a list and 1 from 1.0)."""
    expected = json.loads(json.dumps(meta, default=str))
    assert repr(jobs._plain(meta)) == repr(expected)


def test_a_kept_meta_shares_no_list_with_the_drafts() -> None:
    """The record's meta is its own: changing the draft's list afterwards changes nothing."""
    lines = ["a dropped line"]
    plain = jobs._plain({"dropped_lines": lines, "kept": 3})
    lines.append("later")
    assert plain == {"dropped_lines": ["a dropped line"], "kept": 3}
