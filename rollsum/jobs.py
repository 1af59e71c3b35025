"""Making one summary: a planned `Job` in, an `Outcome` out, no engine state touched.

Why apart from the engine: this is the part that calls models, so it runs wherever the caller
wants it -- inline (the synchronous engine), later (a simulated lag) or in a worker thread
(`rollsum.aio`) -- and that is only safe if it reads nothing but its inputs. The engine takes an
immutable snapshot when it plans (`Job`: the span, the previous summary, the depth), says how
summaries are made (`Maker`: the summarizers, the retry and ledger settings, the counter), and
applies the `Outcome` itself afterwards; nothing here can leave the window half-changed.

What making a summary involves, in order (`make`):

1. the request: the span (or, with `rebuild_from_raw`, every covered raw message again), the
   previous summary unless the depth cap says the span's summary is appended to it instead;
2. the primary summarizer with retries and backoff for transport failures (`attempt`), then
   the fallback once -- or the fallback alone while the primary is backing off;
3. past the depth cap with "cut" (`cap_merge` = "append"): the span's summary after the
   previous text, oldest content cut (`appended`);
4. the fact ledger: identifiers the span and the previous summary carried that the summary
   dropped are asked for once more ("retry"), then pinned in the room left ("pin").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from rollsum import ledger as fact_ledger
from rollsum.context import append_summary
from rollsum.errors import ErrorKind, SummarizeError, classify_exception, retry_wait
from rollsum.policies.base import Decision
from rollsum.redact import redact, redacting_logger
from rollsum.settings import EngineSettings, LedgerMode
from rollsum.summarizers.base import Summarizer, SummaryDraft, SummaryRequest, rewrites_previous
from rollsum.tokens import TokenCounter
from rollsum.types import NO_USAGE, Message, SummaryEvent, SummaryRecord, Usage, quick_init

log = redacting_logger(__name__)

SELECTED_AT_CAP = "merged at the depth cap by selection: previous lines kept verbatim or dropped, none rewritten"
MAX_KEY_POINTS = 30


@dataclass(slots=True)
class Job:
    """A summary to make: an immutable snapshot taken when the policy (or the guard) decided."""

    decision: Decision
    turn: int
    messages: tuple[Message, ...]
    """Everything the summary will cover (pending and active), oldest first."""
    span_ids: frozenset[str]
    """Ids of the covered messages that were active when planned (the rest were pending)."""
    previous: SummaryRecord | None
    depth: int
    tokens_before: int
    added_at: int
    """`total_added` when planned: messages added after it count toward the next summary."""
    due_turn: int = 0
    guard: bool = False
    skip_primary: bool = False
    """The primary summarizer is backing off after failing while the fallback answered: go
    straight to the fallback (a dead model is not called on every attempt)."""


Launch = Callable[[Job], "SummaryEvent | None"]
"""Runs a planned job: returns its applied event, or None when it lands later (lag, asyncio)."""


@dataclass(slots=True)
class Outcome:
    """What making a job's summary gave: a draft or the error, and what it cost."""

    draft: SummaryDraft | None = None
    error: SummarizeError | None = None
    attempts: int = 0
    fallback: str | None = None
    primary_failed: bool = False
    facts: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    usage: Usage = NO_USAGE
    maker: Maker | None = None
    """What made it (`run`): its record is made with the same (a Maker costs ~9k instructions)."""


@quick_init
@dataclass(frozen=True, slots=True)
class Maker:
    """How summaries are made: the summarizers and the settings that shape a request. Built by
    the engine from its current components whenever it makes or records one."""

    summarizer: Summarizer
    fallback: Summarizer | None
    settings: EngineSettings
    ledger_mode: LedgerMode
    """The effective ledger ("auto" already resolved against the summarizer)."""
    counter: TokenCounter
    conversation_id: str
    covered: Callable[[], Sequence[Message]]
    """Every message earlier summaries covered (read from the store when `rebuild_from_raw`
    needs them, or a summarizer rebuilding its statistics: `SummaryRequest.covered`)."""
    sleep: Callable[[float], None] = time.sleep


def depth(previous: SummaryRecord | None, fold: bool, rebuild_from_raw: bool) -> int:
    """A new summary's depth in the chain: 0 when it starts over (no previous summary, or
    rebuilt from the raw messages); one more when it folds the previous one in; the same past
    the depth cap (it is appended or selected, not folded)."""
    if rebuild_from_raw or previous is None:
        return 0
    return previous.depth + 1 if fold else previous.depth


def cap_merge(job: Job, maker: Maker) -> Literal["fold", "select", "append"]:
    """How the job's summary takes in the previous one. "fold": below the depth cap, or nothing
    to merge (no previous summary, or `rebuild_from_raw` starts from the raw messages). Past the
    cap (`depth_cap_merge`): "select" gives the previous summary to a summarizer that never
    rewrites it (its lines compete with the span's), "append" adds the span's summary after the
    previous text."""
    if job.decision.fold or job.previous is None or maker.settings.rebuild_from_raw:
        return "fold"
    if maker.settings.depth_cap_merge == "select" and \
            not any(rewrites_previous(s) for s in (maker.summarizer, maker.fallback) if s is not None):
        return "select"
    return "append"


def cap_meta(job: Job, maker: Maker) -> dict[str, bool]:
    """What the record says about the depth cap: nothing when it did not apply, else how it merged."""
    merge = cap_merge(job, maker)
    return {} if merge == "fold" else {"selected_at_cap": True} if merge == "select" else {"appended": True}


def run(job: Job, maker: Maker) -> Outcome:
    """Make the summary for a job. Never raises: whatever breaks is the job's failure."""
    out = Outcome(maker=maker)
    try:
        make(job, maker, out)
    except Exception as err:  # the ledger, a merge: whatever breaks is this job's failure
        out.draft = None
        out.error = classify_exception(err)
    return out


def _request_messages(job: Job, maker: Maker) -> tuple[list[Message], SummaryRecord | None]:
    msgs = list(job.messages)
    if maker.settings.rebuild_from_raw and job.previous is not None:
        return list(maker.covered()) + msgs, None
    if cap_merge(job, maker) == "append":
        return msgs, None  # past the depth cap: the span alone, appended in `make`
    return msgs, job.previous


def make(job: Job, maker: Maker, out: Outcome) -> None:
    """Fill `out` for `job` (see the module docstring for the steps)."""
    s = maker.settings
    msgs, previous = _request_messages(job, maker)
    mode = maker.ledger_mode
    budget = s.summary_budget
    text_budget = budget if mode == "off" else max(1, int(budget * (1 - s.ledger_share)))
    merge = cap_merge(job, maker)
    selecting, appending = merge == "select", merge == "append"
    tracked: list[str] = []
    if mode != "off":
        prev_facts = list(job.previous.facts) if job.previous is not None else []
        new_facts = [f.text for f in fact_ledger.extract_facts(msgs)]
        tracked = list(dict.fromkeys(prev_facts + new_facts))[-s.ledger_max_facts:]
    request = SummaryRequest(
        conversation_id=maker.conversation_id, messages=msgs, previous=previous, depth=job.depth,
        max_tokens=max(1, text_budget // 2) if appending else text_budget, must_keep=tuple(tracked),
        total_messages=job.added_at, total_tokens=job.tokens_before,
        covered=maker.covered if previous is not None else None,
    )
    primary, fallback = maker.summarizer, maker.fallback
    draft = None if job.skip_primary else attempt(primary, request, out, maker)
    if draft is None and fallback is not None:
        if job.skip_primary:
            log.info("summarizer %s is backing off; using fallback %s", getattr(primary, "name", "?"),
                     getattr(fallback, "name", "?"))
        else:
            out.primary_failed = True
            log.warning("summarizer %s failed (%s); using fallback %s", getattr(primary, "name", "?"),
                        redact(str(out.error)), getattr(fallback, "name", "?"))
        draft = attempt(fallback, request, out, maker, retries=0)
        if draft is not None:
            out.fallback = getattr(fallback, "name", "fallback")
    if draft is None:
        return
    prev = job.previous
    if appending and prev is not None:  # appending implies a previous summary (`cap_merge`)
        draft = appended(prev, draft, text_budget, maker.counter)
    lost = missing(tracked, draft)
    if lost and mode == "retry" and out.fallback is None:
        retry_req = replace(request, must_keep=tuple(lost))
        again = attempt(primary, retry_req, out, maker, retries=0)
        if again is not None:
            draft = appended(prev, again, text_budget, maker.counter) if appending and prev is not None else again
            lost = missing(tracked, draft)
    pinned: list[str] = []
    if lost and mode != "off":
        room = budget - maker.counter.count(render(draft))
        for fact in lost:
            cost = maker.counter.count(fact) + 2
            if cost > room:
                break
            pinned.append(fact)
            room -= cost
    out.draft = replace(draft, notes=(*draft.notes, SELECTED_AT_CAP)) if selecting else draft
    out.error = None
    out.facts = tuple(tracked)
    out.pinned = tuple(pinned)
    out.counts = {"found": len(tracked), "kept": len(tracked) - len(lost), "pinned": len(pinned),
                  "lost": len(lost) - len(pinned)}


def record(job: Job, outcome: Outcome, draft: SummaryDraft, maker: Maker, *, seq: int, preset: str,
           created_at: str) -> SummaryRecord:
    """The record a successful job commits: its `draft` (``outcome.draft``) with its lineage
    (parent, depth, what it covers), the ledger's counts and how it was made (meta)."""
    prev = job.previous
    ids = tuple([m.id for m in job.messages if m.id is not None])  # a list first: no generator per summary
    rec = SummaryRecord(
        id=f"{maker.conversation_id}/summary/{seq}",
        conversation_id=maker.conversation_id,
        text=draft.text.strip(),
        depth=job.depth,
        parent_id=prev.id if prev is not None else None,
        key_points=draft.key_points,
        facets=draft.facets,
        pinned_facts=outcome.pinned,
        covered_ids=ids,
        start_id=ids[0] if ids else None,
        end_id=ids[-1] if ids else None,
        messages_covered=(prev.messages_covered if prev is not None else 0) + len(ids),
        tokens=0,
        model=draft.model,
        prompt_id=draft.prompt_id,
        prompt_hash=draft.prompt_hash,
        usage=outcome.usage,
        created_at=created_at,
        seq=seq,
        fallback=outcome.fallback or draft.fallback,
        notes=draft.notes,
        facts=outcome.facts,
        ledger=outcome.counts,
        meta={**_plain(draft.meta), "reason": job.decision.reason, "turn": job.turn, "preset": preset,
              **({"guard": True} if job.guard else {}), **cap_meta(job, maker)},
    )
    # its size is its rendered text's: set on the record just built, before anyone holds it (the
    # way a frozen dataclass's __post_init__ does), not by `replace` building all 24 fields again
    object.__setattr__(rec, "tokens", maker.counter.count(rec.render()))
    return rec


def summary_event(job: Job, outcome: Outcome, rec: SummaryRecord, *, lag: int, tokens_after: int) -> SummaryEvent:
    """The event of a committed summary (`lag`: turns between planning and landing)."""
    c = outcome.counts
    return SummaryEvent("summary", job.turn, job.decision.reason, record=rec, depth=job.depth,
                        messages=len(rec.covered_ids), tokens_before=job.tokens_before,
                        tokens_after=tokens_after, lag_turns=lag, attempts=outcome.attempts,
                        facts_found=c.get("found", 0), facts_kept=c.get("kept", 0),
                        facts_pinned=c.get("pinned", 0), facts_lost=c.get("lost", 0),
                        usage=outcome.usage, fallback=rec.fallback, guard=job.guard)


def failure_event(job: Job, outcome: Outcome, error: str, kind: str | None, *, lag: int,
                  tokens_after: int) -> SummaryEvent:
    """The event of a job that changed nothing: no draft, or a store that refused the record."""
    return SummaryEvent("failure", job.turn, job.decision.reason, depth=job.depth, messages=0,
                        tokens_before=job.tokens_before, tokens_after=tokens_after, lag_turns=lag, error=error,
                        error_kind=kind, attempts=outcome.attempts, usage=outcome.usage, guard=job.guard)


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A summarizer's meta as the store will give it back (JSON types): a record read after a
    restart must equal the one made before it.

    A meta of strings, numbers and flat lists of them (the extractive summarizer's, on every
    summary) is already what JSON gives back: it is copied as is (lists copied, tuples made
    lists) instead of written and parsed; anything else takes the JSON round trip.
    """
    plain: dict[str, Any] = {}
    scalars = _JSON_SCALARS
    for k, v in meta.items():
        t = type(v)
        if type(k) is not str:
            break
        if t in scalars:
            plain[k] = v
        elif (t is list or t is tuple) and scalars.issuperset(map(type, v)):  # in C: no generator
            plain[k] = list(v)
        else:
            break
    else:
        return plain
    round_trip: dict[str, Any] = json.loads(json.dumps(dict(meta), default=str))
    return round_trip


def appended(previous: SummaryRecord, draft: SummaryDraft, budget: int, counter: TokenCounter) -> SummaryDraft:
    """Past the depth cap: the span's summary after the previous text, oldest cut first."""
    text, note = append_summary(previous.text, draft.text, budget, counter.count)
    points = tuple(dict.fromkeys(tuple(draft.key_points) + tuple(previous.key_points)))[:MAX_KEY_POINTS]
    facets = {k: tuple(dict.fromkeys(tuple(draft.facets.get(k, ())) + tuple(previous.facets.get(k, ()))))
              for k in set(draft.facets) | set(previous.facets)}
    notes = tuple(draft.notes) + ("appended at the depth cap",) + ((note,) if note else ())
    return replace(draft, text=text, key_points=points, facets=facets, notes=notes)


def attempt(summarizer: Summarizer, request: SummaryRequest, out: Outcome, maker: Maker,
            retries: int | None = None) -> SummaryDraft | None:
    """One summarizer's answer, retrying transport failures with backoff (None: it failed;
    the error is in `out`)."""
    s = maker.settings
    tries = (s.retries if retries is None else retries) + 1
    for n in range(tries):
        out.attempts += 1
        try:
            draft = summarizer.summarize(request)
        except Exception as exc:  # a misbehaving model or summarizer must not take messages down
            err = classify_exception(exc)
            out.error = err
            if err.transport and n + 1 < tries:
                maker.sleep(retry_wait(n, s.backoff_s, err.retry_after, s.max_retry_after_s))
                continue
            return None
        if not isinstance(draft, SummaryDraft) or not isinstance(draft.text, str):
            # a plug-in's mistake, named as such (it was "an empty summary" for a returned str)
            got = type(draft).__name__ if not isinstance(draft, SummaryDraft) else \
                f"a SummaryDraft whose text is {type(draft.text).__name__}"
            out.error = SummarizeError(f"summarizer {getattr(summarizer, 'name', type(summarizer).__name__)!r} "
                                       f"returned {got}, expected a SummaryDraft with str text",
                                       transport=False, kind=ErrorKind.MALFORMED)
            return None
        if not draft.text.strip():
            out.error = SummarizeError("summarizer returned an empty summary", transport=False,
                                       kind=ErrorKind.EMPTY)
            return None
        out.usage = out.usage + draft.usage
        return draft
    return None


def missing(facts: Sequence[str], draft: SummaryDraft) -> list[str]:
    """The tracked facts the draft (text and key points) no longer carries."""
    if not facts:
        return []
    return [f.text for f in fact_ledger.missing([fact_ledger.Fact(t, "identifier", None) for t in facts],
                                                render(draft))]


def render(draft: SummaryDraft) -> str:
    """A draft as the ledger reads it: its text, then its key points."""
    parts = [draft.text]
    parts.extend(draft.key_points)
    return "\n".join(parts)


__all__ = ["MAX_KEY_POINTS", "SELECTED_AT_CAP", "Job", "Maker", "Outcome", "appended", "attempt", "cap_merge",
           "cap_meta", "depth", "failure_event", "make", "missing", "record", "render", "run", "summary_event"]
