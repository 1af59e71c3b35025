"""One Unit: replay it (or take a replay already made), score the trace, and turn both into the
journal lines of the run directory.

Everything runs in a worker (thread or process): redaction and formatting too, because the loop
that journals results is one thread and must not serialise the Units behind it. Failures
become an ``error`` row, never an exception, so one bad Unit cannot stop a sweep.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsum.models.base import Model
from rollsum.models.cassette import ReplayMissError, replay_miss
from rollsum.redact import contains_secret, env_secrets, redact, redact_obj
from rollsum_evals import scoring
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay import (
    BudgetStopped,
    EngineFactory,
    MeteredModel,
    Text,
    Trace,
    default_engine,
    replay,
    with_ids,
)
from rollsum_evals.run.breaker import GuardedBuilder
from rollsum_evals.run.budget import BudgetSpec, budgeted
from rollsum_evals.run.model_factory import ModelBuilder, ModelFactory, close_model, deterministic
from rollsum_evals.rundir.format import (
    EVENTS,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_STOPPED,
    SUMMARIES,
    probe_rows,
    table_columns,
    unit_row,
)
from rollsum_evals.rundir.journal import ReplayLines, ScoredLines, UnitResult, dumps, lines
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.cost import price
from rollsum_evals.units import Unit

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """What a worker gets: plain, picklable data."""

    unit: Unit
    conversation: Conversation
    plan: ScoringPlan
    stored: ReplayLines | None = None
    """A replay made earlier (Unit cache, or this run before it was killed): scored, not redone."""
    stored_in_run: bool = False
    """`stored` is already in this run directory: the result carries no replay lines."""


def _one_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0]


# ----------------------------------------------------------------------------------------------
# replay lines


def encode_replay(unit: Unit, trace: Trace) -> ReplayLines:
    ident = {"unit_id": unit.unit_id, "conversation_id": unit.conversation_id, "config": unit.config}
    # how many lines the replay writes to each journal: `RunDir.repair` finds a lost line exactly
    record = {**trace.to_record(), "unit": unit.to_dict(),
              "journal_rows": {SUMMARIES: len(trace.summaries), EVENTS: len(trace.events)}}
    return ReplayLines(
        texts={tid: dumps({"id": tid, **t.to_dict()}) + "\n" for tid, t in trace.used_texts().items()},
        summaries=lines({**ident, "generation": g, "turn": trace.summary_turns[g], "record": r.to_dict()}
                        for g, r in enumerate(trace.summaries)),
        events=lines({**ident, **e} for e in trace.events),
        traces=lines([record]))


def decode_replay(stored: ReplayLines, conversation: Conversation) -> Trace:
    texts = {}
    for line in stored.texts.values():
        d = json.loads(line)
        texts[d["id"]] = Text(d["role"], d.get("name"), d["content"])
    record = json.loads(stored.traces)
    return Trace.from_record(record, conversation.messages, texts,
                             [json.loads(x) for x in stored.summaries.splitlines()],
                             [json.loads(x) for x in stored.events.splitlines()])


def error_trace(unit: Unit, conversation: Conversation, err: BaseException, wall_s: float,
                status: str = STATUS_ERROR) -> Trace:
    return Trace(unit_id=unit.unit_id, messages=with_ids(conversation.messages),
                 context_window=unit.context_window, status=status,
                 error=redact(_one_line(err), env_secrets()), wall_s=wall_s)


# ----------------------------------------------------------------------------------------------
# scoring


def score_trace(unit: Unit, conversation: Conversation, trace: Trace, plan: ScoringPlan,
                model: Model | None = None, *, clock: Callable[[], float] = time.perf_counter,
                shared: scoring.Shared | None = None,
                judge_model: Model | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Unit's ``units`` row and ``probes`` rows under `plan` (also what `rollsum score` runs).

    `model` answers for scorers that need one (already cached and metered by the caller)."""
    start = clock()
    versions = scoring.versions(plan.scorers)
    unit_cols, probe_cols = table_columns(*scoring.columns(plan.scorers))
    n_probes = len(conversation.probes)
    if trace.status != "ok":
        return unit_row(unit, trace, plan, versions, None, n_probes=n_probes, wall_s=trace.wall_s,
                        columns=unit_cols), []
    try:
        asks, scores = scoring.score(plan, unit, conversation, trace, model, shared=shared,
                                     judge_model=judge_model)
    except Exception as err:
        log.warning("unit %s (%s, %s): scoring failed: %s", unit.unit_id, unit.config,
                    unit.conversation_id, err)
        return unit_row(unit, trace, plan, versions, None, n_probes=n_probes,
                        wall_s=trace.wall_s + clock() - start, columns=unit_cols,
                        error=redact("scoring: " + _one_line(err), env_secrets())), []
    row = unit_row(unit, trace, plan, versions, scores, n_probes=n_probes,
                   wall_s=trace.wall_s + clock() - start, columns=unit_cols)
    return row, probe_rows(unit, asks, scores, probe_cols)


# ----------------------------------------------------------------------------------------------
# redaction


def redact_text_lines(text: str, secrets: Sequence[str]) -> str:
    """Journal text (JSON lines) with every secret masked, decoded line by line only when
    something is found.

    Redacting string by string costs ~70 µs a row string (five regexes each), which for a
    long Unit was most of its CPU; so the whole text is searched once (for every 8-character
    piece of a secret, as written and as JSON escapes it, and for the key shapes), and only a
    text where that finds something is redacted value by value (so the JSON stays valid), mapping
    keys included."""
    if not text or not contains_secret(text, secrets):
        return text
    return lines(redact_obj(json.loads(x), secrets) for x in text.splitlines())


def _redact_lines(replay_lines: ReplayLines, secrets: Sequence[str]) -> ReplayLines:
    return ReplayLines(texts={k: redact_text_lines(v, secrets) for k, v in replay_lines.texts.items()},
                       summaries=redact_text_lines(replay_lines.summaries, secrets),
                       events=redact_text_lines(replay_lines.events, secrets),
                       traces=redact_text_lines(replay_lines.traces, secrets))


# ----------------------------------------------------------------------------------------------
# a whole Unit


def metered_builder(models: ModelBuilder, budget: BudgetSpec | None) -> ModelBuilder:
    """`models` with paid models behind the run's account. A `ModelFactory` given the budget
    already puts it inside its cache (a cache hit is never refused), also when the sweep hands
    it over behind a `GuardedBuilder` (as it always does): wrapping that again charged every
    paid call twice, so ``spent_usd`` read double the real spend and ``--max-cost-usd`` stopped
    the run at half its cap. Any other builder (an injected one) gets the account here."""
    factory = models.inner if isinstance(models, GuardedBuilder) else models
    if budget is None or (isinstance(factory, ModelFactory) and factory.budget is not None):
        return models
    return lambda spec: budgeted(models(spec), spec, budget)


def run_job(job: Job, *, engine_factory: EngineFactory = default_engine, models: ModelBuilder,
            secrets: Sequence[str] | None = None, budget: BudgetSpec | None = None,
            clock: Callable[[], float] = time.perf_counter) -> UnitResult:
    """Replay (unless the job brings a replay) and score one Unit; never raises for a Unit's own
    failure. Texts are stored as the engine made them; secrets are masked in the journal.
    A model call refused by the budget ends the Unit as ``stopped: budget`` (never scored)."""
    secrets = env_secrets() if secrets is None else secrets
    unit, conv, plan = job.unit, job.conversation, job.plan
    models = metered_builder(models, budget)
    cpu0 = time.thread_time()
    paid = 0.0
    if job.stored is None:
        start = clock()
        model = None
        try:
            model = models(unit.model)
            trace = replay(unit, conv, engine_factory=engine_factory, model=model)
            miss = replay_miss(model)
            if miss is not None:  # the engine coped (fallback, retry): the replay is still not the recorded one
                raise ReplayMissError(miss)
        except BudgetStopped as err:
            log.warning("unit %s (%s, %s) stopped: %s", unit.unit_id, unit.config, unit.conversation_id, err)
            trace = error_trace(unit, conv, err, clock() - start, status=STATUS_STOPPED)
        except Exception as err:
            log.warning("unit %s (%s, %s) failed: %s", unit.unit_id, unit.config, unit.conversation_id, err)
            trace = error_trace(unit, conv, err, clock() - start)
        finally:
            close_model(model)
        paid += price(unit.model, trace.paid_usage)
        replay_lines: ReplayLines | None = _redact_lines(encode_replay(unit, trace), secrets)
    else:
        trace = decode_replay(job.stored, conv)
        replay_lines = None if job.stored_in_run else job.stored
    scorer_model = metered = judge_model = judge_metered = None
    try:
        if "model" in scoring.needs(plan.scorers) and plan.model and trace.status == STATUS_OK:
            scorer_model = models(plan.model)
            metered = MeteredModel(scorer_model) if scorer_model is not None else None
            if plan.judge and plan.judge_model and plan.judge_model != plan.model:
                judge_model = models(plan.judge_model)
                judge_metered = MeteredModel(judge_model) if judge_model is not None else None
        urow, prows = score_trace(unit, conv, trace, plan, metered, judge_model=judge_metered)
        if any(m is not None and m.refused for m in (metered, judge_metered)):
            raise BudgetStopped("a scoring-model call would pass --max-cost-usd")
    except BudgetStopped as err:
        urow, prows = score_trace(unit, conv, error_trace(unit, conv, err, trace.wall_s, STATUS_STOPPED), plan)
    except Exception as err:  # building the scoring model failed
        urow, prows = score_trace(unit, conv, error_trace(unit, conv, err, trace.wall_s), plan)
    finally:
        close_model(scorer_model)
        close_model(judge_model)
    if metered is not None:
        paid += price(plan.model, metered.paid)
    if judge_metered is not None:
        paid += price(plan.judge_model, judge_metered.paid)
    scored = ScoredLines(probes=redact_text_lines(lines(prows), secrets),
                         units=redact_text_lines(lines([urow]), secrets))
    ok = urow["status"] == "ok"
    return UnitResult(
        unit_id=unit.unit_id, replay=replay_lines, scored=scored, status=str(urow["status"]),
        n_messages=len(conv.messages), wall_s=float(urow["wall_s"]), engine_config=trace.engine_config,
        paid_usd=paid, cpu_s=time.thread_time() - cpu0,
        replay_cacheable=trace.status == STATUS_OK and (deterministic(unit.model) or trace.failures == 0),
        score_cacheable=ok and ("model" not in scoring.needs(plan.scorers) or (
            deterministic(plan.model) and (not plan.judge or deterministic(plan.grader)))))


def thread_worker(job: Job, engine_factory: EngineFactory, models: ModelBuilder,
                  secrets: Sequence[str], budget: BudgetSpec | None = None) -> UnitResult:
    return run_job(job, engine_factory=engine_factory, models=models, secrets=secrets, budget=budget)


def process_worker(job: Job, cache_path: str | None, engine_factory: EngineFactory,
                   models: ModelBuilder | None = None, secrets: Sequence[str] = (),
                   budget: BudgetSpec | None = None) -> UnitResult:
    """Entry point in a worker process: builds its own models (a limiter cannot be shared; the
    budget can: its account is a file in the run directory)."""
    factory = ModelFactory(cache_path=Path(cache_path) if cache_path else None, budget=budget)
    try:
        result = run_job(job, engine_factory=engine_factory, models=GuardedBuilder(models or factory),
                         secrets=secrets, budget=budget)
    finally:
        factory.close()
    result.cache_stats = factory.stats()
    return result


def score_group(items: Sequence[tuple[str, Unit, Trace]], conv: Conversation, plan: ScoringPlan,
                models: ModelBuilder | None, secrets: Sequence[str]) -> dict[str, tuple[ScoredLines, bool]]:
    """Score one conversation's Units (they share the scorers' per-conversation caches):
    their scored lines and whether each is ok, by Unit id. Where it runs (here or in a Ray
    task) changes nothing in the lines."""
    guarded = GuardedBuilder(models) if models is not None else None  # a refused key stops at once
    shared = scoring.Shared()
    out: dict[str, tuple[ScoredLines, bool]] = {}
    for uid, unit, trace in items:
        answerer = metered = grader = None
        try:
            if guarded is not None and trace.status == "ok":
                answerer = guarded(plan.model)
                metered = MeteredModel(answerer) if answerer is not None else None
                if plan.judge and plan.judge_model and plan.judge_model != plan.model:
                    grader = guarded(plan.judge_model)
            urow, prows = score_trace(unit, conv, trace, plan, metered, shared=shared,
                                      judge_model=MeteredModel(grader) if grader is not None else None)
        finally:
            close_model(answerer)
            close_model(grader)
        out[uid] = (ScoredLines(probes=redact_text_lines(lines(prows), secrets),
                                units=redact_text_lines(lines([urow]), secrets)), urow["status"] == "ok")
    return out
