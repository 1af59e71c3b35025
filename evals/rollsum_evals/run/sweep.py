"""Run a sweep: load data, expand Units, replay and score them on a worker pool, journal results.

Guarantees a user relies on:

- **Resumable.** Each Unit's replay and its scores are journaled atomically (see
  `rollsum_evals.rundir.journal`); ``resume`` skips finished Units, scores Units whose replay
  was journaled before the kill, and replays the rest whole. Nothing is repeated or lost. A
  resume whose spec, data, code fingerprint or scoring differ from the run's is refused.
- **Deterministic.** Rows depend only on the Unit and the scoring plan (never on ``jobs``,
  scheduling or the cache): tables are sorted by Unit id; wall-clock fields are kept out of
  equality checks.
- **Budgeted.** ``max_cost_usd`` is a hard cap on real spend, call by call, across threads and
  worker processes: a call that could pass it is refused, its Unit ends as ``stopped: budget``
  and no further Unit starts (`rollsum_evals.run.budget`).
- **Cached twice.** Model calls go through `CachedModel`; finished replays and their scores go
  to the Unit-result cache (`rollsum_evals.rundir.unit_cache`), so an identical re-run copies
  its rows, and a re-run with another scorer re-uses the replays.

Over ~400 lines because it is the one place that owns a run directory's life cycle (lock,
repair on --resume, manifest states, interruption on file-system faults, the budget ledger's
stop); the pieces it calls live in their own modules (unit, dispatch, scheduler, pool, resume).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError, RollsumError
from rollsum.models.base import Model
from rollsum.redact import env_secrets, redact
from rollsum_evals import scoring
from rollsum_evals.data.copies import DatasetCopies
from rollsum_evals.data.hf import HUB_PREFIX
from rollsum_evals.data.pinned import Dataset, Loader, default_loader
from rollsum_evals.fsfaults import WriteFailed, describe_os_error
from rollsum_evals.replay import EngineFactory, default_engine
from rollsum_evals.run import provenance
from rollsum_evals.run.breaker import GuardedBuilder, SweepStop, SweepStopped
from rollsum_evals.run.budget import BudgetSpec, FileAccount, check_cap, metered
from rollsum_evals.run.dispatch import Dispatcher
from rollsum_evals.run.interrupt import interrupted, signal_name
from rollsum_evals.run.model_factory import (
    ModelBuilder,
    ModelFactory,
    cache_path_for,
    close_model,
    unit_cache_path_for,
)
from rollsum_evals.run.pool import EXECUTORS, WorkerLost, choose_executor
from rollsum_evals.run.resume import check_resume, load_datasets, stored_replays
from rollsum_evals.run.unit import Job
from rollsum_evals.rundir.format import DATASET_COPIES, STATUS_ERROR, STATUS_STOPPED, new_manifest, table_columns
from rollsum_evals.rundir.journal import ReplayLines, RunDir, ScoredLines, UnitResult
from rollsum_evals.rundir.lock import RunLock
from rollsum_evals.rundir.redaction import redact_manifest
from rollsum_evals.rundir.unit_cache import UnitCache
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.spec import components
from rollsum_evals.spec.expand import count_units, count_variants, expand
from rollsum_evals.spec.schema import SweepSpec
from rollsum_evals.units import Unit, canonical_json

log = logging.getLogger(__name__)

DEFAULT_MAX_UNITS = 10_000
"""``--max-units``: a sweep that expands to more Units is refused before any is built (a typo'd
grid of 10^6 combinations would otherwise take minutes and gigabytes before printing anything).
Ten thousand is ~25x the nightly sweep; a deliberate bigger one passes a bigger number."""

EXIT_OK, EXIT_BUDGET, EXIT_ERRORS = 0, 1, 1
"""``rollsum run`` exit codes: 0 complete (errors within ``--fail-on-error``), 1 stopped by the
budget or more Units errored than ``--fail-on-error`` allows; 2 (the CLI's) is a user mistake."""


def errors_fail(errors: int, total: int, threshold: float | None) -> bool:
    """inspect's ``--fail-on-error``: None or 0 = any error fails; a value in (0, 1) is the share
    of Units that may error; a value of 1 or more is how many may; ``inf`` never fails."""
    if errors <= 0:
        return False
    if not threshold:
        return True
    if threshold < 1:
        return errors / max(1, total) > threshold
    return errors > threshold


@dataclass(slots=True)
class RunResult:
    run_dir: Path
    total: int
    done: int
    ran: int
    """Units replayed (and scored) by this call."""
    skipped: int
    errors: int
    spent_usd: float
    stopped_for_budget: bool
    wall_s: float
    stopped: int = 0
    """Units cut short by the budget (``stopped: budget`` rows; ``--resume`` replays them)."""
    errors_in_run: int = 0
    """Units of the whole run directory whose status is ``error`` (a resumed run's earlier ones
    too): what ``--fail-on-error`` judges."""
    cached: int = 0
    """Units copied whole from the Unit-result cache (counted in ``done``, not in ``ran``)."""
    scored: int = 0
    """Units scored from a replay made earlier (Unit cache or this run before a kill)."""
    executor: str = "thread"
    skipped_records: int = 0
    """Bad dataset records left out (``--skip-bad-records``; per dataset in the manifest)."""

    @property
    def exit_code(self) -> int:
        """With the default ``--fail-on-error`` (any error fails)."""
        return self.exit_code_for(None)

    def exit_code_for(self, fail_on_error: float | None) -> int:
        if self.stopped_for_budget:
            return EXIT_BUDGET
        return EXIT_ERRORS if errors_fail(self.errors_in_run, self.total, fail_on_error) else EXIT_OK


def replay_cache_key(unit: Unit, fingerprint: str) -> str:
    """The whole Unit, not only its id: the id leaves out the config label, which the rows
    carry and which depends on what else the sweep varies."""
    return hashlib.sha256(canonical_json({"unit": unit.to_dict(), "code": fingerprint})
                          .encode("utf-8")).hexdigest()


def score_cache_key(replay_key: str, plan: ScoringPlan, fingerprint: str) -> str:
    payload = {"replay": replay_key, "plan": plan.to_dict(), "versions": scoring.versions(plan.scorers),
               "code": fingerprint}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _preflight(jobs: list[Job], plan: ScoringPlan, engine_factory: EngineFactory,
               models: ModelBuilder) -> dict[str, dict[str, Any]]:
    """Build one engine per configuration and each model once before the sweep starts, so a
    typo in a parameter or a missing API key fails in a second with one line, not per Unit.
    Returns the resolved engine config per configuration label (for the manifest)."""
    seen: dict[tuple[str, str, str, str, int], str] = {}
    built: dict[str, Model | None] = {}
    configs: dict[str, dict[str, Any]] = {}
    try:
        if "model" in scoring.needs(plan.scorers) and plan.model and jobs:
            built[plan.model] = models(plan.model)
            if plan.judge and plan.judge_model and plan.judge_model not in built:
                built[plan.judge_model] = models(plan.judge_model)
        for job in jobs:
            u = job.unit
            if job.stored is not None:
                continue
            if u.model not in built:
                built[u.model] = models(u.model)
            key = (u.preset, u.params_json, u.prompt, u.model, u.context_window)
            if key not in seen:
                seen[key] = u.config
                try:
                    configs[u.config] = engine_factory(u, built[u.model], lambda _e: None).config()
                except RollsumError as err:
                    raise ConfigError(f"config '{u.config}': {err}") from None
    finally:
        for m in built.values():
            close_model(m)
    return configs


def _config_entry(unit: Unit, engine: Mapping[str, Any]) -> dict[str, Any]:
    return {"preset": unit.preset, "params": unit.params, "prompt": unit.prompt, "model": unit.model,
            "context_window": unit.context_window, "engine": dict(engine)}


class _CacheUse:
    """The Unit-result cache as one sweep uses it: look every pending Unit up once (replay and
    scores), store what finishes."""

    def __init__(self, cache: UnitCache | None, pending: Sequence[Unit], plan: ScoringPlan, *,
                 lookup: bool) -> None:
        self.cache = cache
        self.replay_keys: dict[str, str] = {}
        self.score_keys: dict[str, str] = {}
        self.copied: dict[str, UnitResult] = {}
        self.copied_units: dict[str, Unit] = {}
        self.replays: dict[str, ReplayLines] = {}
        self.stored = self.scores_stored = 0
        if cache is None:
            return
        rfp, sfp = provenance.replay_fingerprint(), provenance.scoring_fingerprint()
        self.replay_keys = {u.unit_id: replay_cache_key(u, rfp) for u in pending}
        self.score_keys = {uid: score_cache_key(k, plan, sfp) for uid, k in self.replay_keys.items()}
        if lookup:  # a resume never reads the cache: it re-runs unfinished Units by design
            secrets = env_secrets()
            traces: dict[str, dict[str, Any]] = {}
            rows: dict[str, dict[str, Any]] = {}
            self.replays = cache.get_replays(self.replay_keys, secrets=secrets, commit_rows=traces)
            scores = cache.get_scores({u: k for u, k in self.score_keys.items() if u in self.replays},
                                      secrets=secrets, commit_rows=rows)
            for uid, sc in scores.items():
                self.copied[uid], self.copied_units[uid] = _copied(uid, self.replays.pop(uid), sc, rows[uid],
                                                                   traces[uid])

    def store(self, job: Job, result: UnitResult) -> None:
        if self.cache is None:
            return
        uid = job.unit.unit_id
        if job.stored is None and result.replay_cacheable and result.replay is not None:
            self.stored += self.cache.put(self.replay_keys[uid], uid, result.replay)
        if result.score_cacheable:
            self.scores_stored += self.cache.put(self.score_keys[uid], uid, result.scored)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


@dataclass(slots=True)
class _Tally:
    ran: int = 0
    scored: int = 0
    errors: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    paid_usd: float = 0.0
    cache_stats: dict[str, int] = field(default_factory=dict)

    def add(self, job: Job, result: UnitResult) -> None:
        if job.stored is None:
            self.ran += 1
        else:
            self.scored += 1
        self.errors += result.status == STATUS_ERROR
        self.paid_usd += result.paid_usd
        self.cpu_s += result.cpu_s
        self.wall_s += result.wall_s
        for k, v in result.cache_stats.items():
            self.cache_stats[k] = self.cache_stats.get(k, 0) + v


def _check_args(jobs: int, executor: str, max_cost_usd: float | None) -> None:
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}: expected at least 1")
    if executor not in EXECUTORS:
        raise ConfigError(f"executor {executor!r}: expected 'auto', 'thread', 'process' or 'ray'")
    check_cap(max_cost_usd)


def run_sweep(spec: SweepSpec, out: str | Path, *, jobs: int = 1, resume: bool = False,
              executor: str = "thread", max_cost_usd: float | None = None,
              loader: Loader = default_loader, engine_factory: EngineFactory = default_engine,
              models: ModelBuilder | None = None, progress: bool = True,
              now: Callable[[], str] = provenance.now, unit_cache: bool | None = None,
              max_units: int | None = DEFAULT_MAX_UNITS,
              only: Mapping[str, Collection[str]] | None = None, ray_address: str | None = None) -> RunResult:
    """``max_units``: refuse (`ConfigError`, nothing written) a sweep of more Units, counted from
    the spec and the datasets' sizes before any Unit is built (None: no limit).

    ``unit_cache``: None = on when the spec uses the shared user cache and nothing is
    injected (an injected engine or model builder is code the fingerprint cannot see).

    ``executor`` defaults to threads here and to ``auto`` in the CLI: worker processes re-import
    the caller's ``__main__``, so a script without an ``if __name__ == "__main__"`` guard must
    not get them unasked.

    The run directory's lock (`rundir.lock`) is held from before anything in it is read until
    the end: a second writer is refused (`RunInProgress`). A file-system fault (read-only
    directory, disk full) ends the run with `WriteFailed`, one line, and the manifest says
    ``interrupted`` with the reason.

    ``only`` (dataset name -> conversation ids) runs just those conversations' Units of the
    full datasets: unlike ``--limit``, which pins a smaller dataset (and so other Unit ids), the
    Units keep the ids a full run gives them, so they are shared with it through the Unit cache
    (`rollsum tune` evaluates its rungs this way)."""
    _check_args(jobs, executor, max_cost_usd)
    cluster = None
    if executor == "ray":  # before anything is read or made: an unreachable cluster is one line
        from rollsum_evals.run.ray_executor import connect

        cluster = connect(ray_address)
    elif ray_address:
        raise ConfigError("--ray-address: only with --executor ray")
    lock = RunLock(out)
    state = _Progress()
    try:
        return _run_sweep(spec, RunDir(out), lock, state, jobs=jobs, resume=resume, executor=executor,
                          max_cost_usd=max_cost_usd, loader=loader, engine_factory=engine_factory,
                          models=models, progress=progress, now=now, unit_cache=unit_cache, max_units=max_units,
                          only=only, cluster=cluster)
    except OSError as err:
        if isinstance(err, ConnectionError | TimeoutError):
            raise
        raise _fs_fault(RunDir(out), err, state, now) from None
    finally:
        lock.release()
        if cluster is not None:
            cluster.close()


@dataclass(slots=True)
class _Progress:
    """What a failure needs to say how far the run got and to mark its manifest."""

    manifest: dict[str, Any] | None = None
    finished: int = 0


def _fs_fault(rd: RunDir, err: OSError, state: _Progress, now: Callable[[], str]) -> WriteFailed:
    """A file-system fault as one line; the manifest (if the run got that far) says
    ``interrupted`` and why, written in place if the disk is too full for a new file."""
    reason = describe_os_error(err)
    if state.manifest is None:
        return WriteFailed(redact(f"{reason}; nothing was run", env_secrets()))
    state.manifest.update(status="interrupted", reason=reason, finished_at=now())
    try:
        rd.write_manifest(redact_manifest(state.manifest, env_secrets()), last_resort=True)
        note = "its manifest says interrupted"
    except OSError as again:
        note = f"its manifest could not be updated either ({describe_os_error(again)})"
    return WriteFailed(redact(f"{reason}: the run stopped after {state.finished} unit(s) and {note}; "
                              f"continue it with `rollsum run SPEC --out {rd.path} --resume` once that "
                              "is fixed", env_secrets()))


def _run_sweep(spec: SweepSpec, rd: RunDir, lock: RunLock, state: _Progress, *, jobs: int, resume: bool,
               executor: str, max_cost_usd: float | None, loader: Loader, engine_factory: EngineFactory,
               models: ModelBuilder | None, progress: bool, now: Callable[[], str],
               unit_cache: bool | None, max_units: int | None,
               only: Mapping[str, Collection[str]] | None = None, cluster: Any = None) -> RunResult:
    t0 = time.perf_counter()
    if rd.path.exists() and not rd.path.is_dir():
        raise ConfigError(f"{rd.path}: exists and is not a directory (expected a run directory: --out DIR)")
    plan = spec.scoring
    previous: dict[str, Any] = {}
    if rd.path.is_dir():
        lock.acquire()  # before reading anything: a running writer's files are not read as final
    if rd.has_results():
        if not resume:
            raise ConfigError(f"{rd.path}: already holds a run; pass --resume to continue it, "
                              "or choose another --out")
        previous = rd.read_manifest() if rd.file("manifest.json").exists() else {}
        check_resume(rd, previous, spec, plan)
    datasets = load_datasets(spec, _dataset_loader(spec, loader, unit_cache), previous,
                             DatasetCopies(rd.file(DATASET_COPIES)) if previous else None)
    _check_size(spec, datasets, max_units)
    units = expand(spec, {n: (d.sha256, [c.id for c in d.conversations]) for n, d in datasets.items()})
    if only is not None:
        units = [u for u in units if u.conversation_id in only.get(u.dataset, ())]
    convs = {(n, c.id): c for n, d in datasets.items() for c in d.conversations}
    checked: dict[str, dict[str, Any]] | None = None
    if not rd.path.exists():  # a new run: every configuration is checked before its directory exists
        checked = _preflight([Job(u, convs[(u.dataset, u.conversation_id)], plan) for u in units], plan,
                             engine_factory, models or ModelFactory())
    rd.path.mkdir(parents=True, exist_ok=True)
    if not lock.held:  # the directory is new: taken now, and another run that made it meanwhile is refused
        lock.acquire()
        if rd.has_results():
            raise ConfigError(f"{rd.path}: another run started in it meanwhile; continue that one with --resume, "
                              "or choose another --out")
    repair = rd.repair(previous.get("files"))
    for note in repair.notes:
        log.warning("%s: repaired: %s", rd.path, note)
    done, replayed = repair.done, repair.replayed
    _keep_hub_copies(rd, datasets)

    # what there is to do: finished Units are skipped, journaled replays scored, cached ones copied
    unit_ids = {u.unit_id for u in units}
    pending = [u for u in units if u.unit_id not in done]
    stored = stored_replays(rd, {u.unit_id for u in pending} & replayed)
    injected = models is not None or engine_factory is not default_engine
    ucache_path = unit_cache_path_for(spec.cache, spec.unit_cache)
    use_ucache = (not injected if unit_cache is None else unit_cache) and ucache_path is not None
    cache = _CacheUse(UnitCache(ucache_path) if use_ucache and ucache_path is not None else None,
                      pending, plan, lookup=not resume)
    job_list = [Job(u, convs[(u.dataset, u.conversation_id)], plan,
                    stored=stored.get(u.unit_id) or cache.replays.get(u.unit_id),
                    stored_in_run=u.unit_id in stored)
                for u in pending if u.unit_id not in cache.copied]

    # models, a one-second check of every configuration, and the executor
    cache_path = cache_path_for(spec.cache, rd.path)  # created by its first use (`ModelFactory`)
    limiter = None
    if spec.requests_per_minute:
        from rollsum.models.limits import RateLimiter

        limiter = RateLimiter(requests_per_min=spec.requests_per_minute)
    previous_spent = float(previous.get("spent_usd", 0.0))
    # the spend account: the cap's, or (no cap) the record of every paid call a SIGKILL would lose
    cap = metered(max_cost_usd, [*(u.model for u in units), plan.model, plan.judge_model])
    ledger: FileAccount | None = None
    budget: BudgetSpec | None = None
    if cap is not None:
        ledger = FileAccount.start(rd.path, cap, previous_spent)
        budget = BudgetSpec(str(ledger.path), cap)
    factory: ModelBuilder = models or ModelFactory(cache_path=cache_path, limiter=limiter, budget=budget)
    configs: dict[str, dict[str, Any]] = dict(previous.get("configs") or {})
    by_label = {u.config: u for u in units}
    if job_list:
        if checked is None:
            checked = _preflight(job_list, plan, engine_factory, factory)
        for label, engine in checked.items():
            configs.setdefault(label, _config_entry(by_label[label], engine))
    replay_messages = sum(len(j.conversation.messages) for j in job_list
                          if j.stored is None and not components.is_baseline(j.unit.preset))
    chosen = choose_executor(executor, jobs=min(jobs, max(1, len(job_list))), messages=replay_messages,
                             limited=limiter is not None, injected=injected)

    manifest = _start_manifest(spec, plan, datasets, previous, now)
    manifest.update({
        "resumed_at": [*previous.get("resumed_at", []), now()] if previous else [],
        "units_total": len(units), "units_done": len(done & unit_ids), "configs": configs,
        components.FACTS_KEY: components.recorded_facts(units),
        "executor": chosen, "executor_requested": executor, "jobs": jobs, "max_cost_usd": max_cost_usd,
        # the spend before this invocation: what a resume reads if this one is killed (SIGKILL)
        "spent_usd": round(_spent(ledger, previous_spent, _Tally()), 6),
        "pid": os.getpid(), "host": socket.gethostname(),  # tells a killed run from a running one
        **({"cluster": cluster.describe()} if cluster is not None else {}),
        "repairs": [*previous.get("repairs", []), *repair.notes],
        "cache": {"mode": spec.cache, "path": str(cache_path) if cache_path else None},
        "unit_cache": {"enabled": cache.cache is not None, "path": str(ucache_path) if cache.cache else None,
                       "hits": len(cache.copied), "replay_hits": len(cache.replays),
                       "misses": len(job_list) - len(cache.replays) if cache.cache is not None else 0,
                       "stored": 0, "scores_stored": 0},
    })
    rd.write_manifest(redact_manifest(manifest, env_secrets()))
    state.manifest = manifest

    if cache.copied:
        rd.append_many([cache.copied[uid] for uid in sorted(cache.copied)])
        for uid, res in cache.copied.items():
            unit = cache.copied_units[uid]
            configs.setdefault(unit.config, _config_entry(unit, res.engine_config))
    tally = _Tally(errors=sum(1 for r in cache.copied.values() if r.status == STATUS_ERROR))
    dispatcher = Dispatcher(job_list, concurrency=jobs, executor=chosen, budget=budget,
                            engine_factory=engine_factory, models=GuardedBuilder(factory), injected_models=models,
                            cache_path=cache_path, secrets=env_secrets(), ray=cluster, limiter=limiter)

    from tqdm import tqdm

    bar = tqdm(total=len(units), initial=len(units) - len(job_list), unit="unit", file=sys.stderr,
               disable=not progress, dynamic_ncols=True, desc=redact(spec.name))

    def on_result(job: Job, result: UnitResult) -> None:
        rd.append_many([result])
        state.finished += 1
        cache.store(job, result)
        tally.add(job, result)
        if job.stored is None:
            configs.setdefault(job.unit.config, _config_entry(job.unit, result.engine_config))
        bar.update(1)

    try:
        dispatcher.run(on_result)
    except BaseException as err:
        bar.close()
        cache.close()
        stop = err if isinstance(err, SweepStop) else None
        if isinstance(err, OSError):
            manifest.update(spent_usd=_spent(ledger, previous_spent, tally))
            raise  # run_sweep marks the manifest interrupted, with the reason
        manifest.update(status=f"stopped: {stop.kind}" if stop else "interrupted",
                        reason=stop.cause if stop else _reason(err),
                        spent_usd=_spent(ledger, previous_spent, tally), finished_at=now())
        rd.write_manifest(redact_manifest(manifest, env_secrets()), last_resort=True)
        if stop is not None:  # a bad key or no network: one line, exit 2, nothing in flight journaled
            raise SweepStopped(redact(f"sweep stopped: {stop.cause}; {tally.ran} unit(s) finished before it; "
                                      f"fix it and continue with --resume --out {rd.path}", env_secrets())) from None
        if isinstance(err, BrokenProcessPool):  # a worker killed (OOM): the environment's fault, not a bug
            raise WorkerLost(redact(f"{err}: the run stopped after {state.finished} unit(s) and its manifest "
                                    f"says interrupted; continue it with `rollsum run SPEC --out {rd.path} "
                                    "--resume` (fewer --jobs if it ran out of memory)", env_secrets())) from None
        if isinstance(err, KeyboardInterrupt):  # Ctrl-C or SIGTERM: one line that says how to go on
            raise interrupted(err, redact(f"the run stopped after {state.finished} unit(s) and its manifest says "
                                          f"interrupted; continue it with `rollsum run SPEC --out {rd.path} "
                                          "--resume`", env_secrets())) from None
        raise
    bar.close()
    cache.close()

    rows = rd.write_tables(manifest, unit_ids)
    committed = {uid: r for uid, r in rows.items() if r.get("status") != STATUS_STOPPED}
    n_stopped = len(rows) - len(committed)
    stats = factory.stats() if isinstance(factory, ModelFactory) else {}
    if isinstance(factory, ModelFactory):
        factory.close()
    for k, v in tally.cache_stats.items():
        stats[k] = stats.get(k, 0) + v
    stopped = dispatcher.stopped_for_budget or n_stopped > 0 or (ledger is not None and ledger.state().stopped)
    spent = _spent(ledger, previous_spent, tally)
    n_errors = sum(1 for r in committed.values() if r.get("status") == STATUS_ERROR)
    manifest.update(status=STATUS_STOPPED if stopped else "complete", finished_at=now(), files=rd.seal(),
                    units_done=len(committed), units_stopped=n_stopped, units_error=n_errors,
                    spent_usd=round(spent, 6), configs=dict(sorted(configs.items())),
                    cache={**manifest["cache"], "stats": stats},
                    unit_cache={**manifest["unit_cache"], "stored": cache.stored,
                                "scores_stored": cache.scores_stored},
                    timing={"unit_cpu_s": round(tally.cpu_s, 4), "unit_wall_s": round(tally.wall_s, 4),
                            "units": tally.ran + tally.scored})  # this invocation's (a resume: the last)
    rd.write_manifest(redact_manifest(manifest, env_secrets()))
    return RunResult(run_dir=rd.path, total=len(units), done=len(committed), ran=tally.ran,
                     skipped=len(units) - len(committed), errors=tally.errors, spent_usd=spent,
                     stopped_for_budget=stopped, wall_s=time.perf_counter() - t0,
                     cached=len(cache.copied), scored=tally.scored, executor=chosen, stopped=n_stopped,
                     errors_in_run=n_errors, skipped_records=sum(d.skipped for d in datasets.values()))


def _dataset_loader(spec: SweepSpec, loader: Loader, unit_cache: bool | None) -> Loader:
    """The default loader with ``synth:`` sets kept beside the Unit cache (`data.synth_cache`):
    a cached re-run otherwise spent a quarter of its time generating them again only to hash
    them. Only where the Unit cache is used (the shared user cache, not turned off); an injected
    loader is used as given."""
    path = unit_cache_path_for(spec.cache, spec.unit_cache)
    if loader is not default_loader or path is None or unit_cache is False:
        return loader
    from rollsum_evals.data.synth_cache import SynthCache, caching_loader

    return caching_loader(loader, SynthCache(path.parent / "datasets"))


def _keep_hub_copies(rd: RunDir, datasets: Mapping[str, Dataset]) -> None:
    """Keep what the run replays of each ``hf:`` dataset in its ``datasets/`` (`data.copies`):
    `rollsum score` and reports then read the run directory alone, offline, on another machine,
    after the hub's dataset changed. A set that is not kept (too large, or holding a
    credential-looking value) is one warning; the readers fetch it from the hub as before."""
    hub = {n: d for n, d in datasets.items() if d.source.source.startswith(HUB_PREFIX)}
    if not hub:
        return
    copies = DatasetCopies(rd.file(DATASET_COPIES))
    for name, d in hub.items():
        why = copies.write(d.sha256, d.conversations)
        if why is not None:
            log.warning("%s: dataset '%s' (%s): no copy kept in the run directory (%s); `rollsum score` and "
                        "reports will fetch it from the hub again", rd.path, name, d.source.source, why)


def _check_size(spec: SweepSpec, datasets: Mapping[str, Dataset], max_units: int | None) -> None:
    """Count the Units (`count_units`: a product, nothing built) and refuse more than allowed."""
    if max_units is None:
        return
    n = count_units(spec, {name: len(d.conversations) for name, d in datasets.items()})
    if n > max_units:
        raise ConfigError(f"{spec.path}: the sweep expands to {n:,} units ({count_variants(spec):,} configurations x "
                          f"{len(spec.seeds)} seed(s) x {sum(len(d.conversations) for d in datasets.values()):,} "
                          f"conversation(s)), more than --max-units {max_units:,}; shrink a grid or pass a "
                          "larger --max-units")


def _reason(err: BaseException) -> str:
    if isinstance(err, KeyboardInterrupt):
        return f"interrupted ({signal_name(err)})"
    return f"{type(err).__name__}: {err}".splitlines()[0]


def _spent(ledger: FileAccount | None, previous: float, tally: _Tally) -> float:
    """Real spend of the run so far: the account's when there is one (a cap, or any model that
    costs money: it saw every paid call, also those of a killed invocation), else what the
    Units reported (nothing: every model is free)."""
    return ledger.state().spent if ledger is not None else previous + tally.paid_usd


def _start_manifest(spec: SweepSpec, plan: ScoringPlan, datasets: Mapping[str, Dataset],
                    previous: Mapping[str, Any], now: Callable[[], str]) -> dict[str, Any]:
    unit_cols, probe_cols = table_columns(*scoring.columns(plan.scorers))
    return new_manifest(
        name=spec.name, spec_raw=spec.raw, spec_path=spec.path, spec_sha256=spec.sha256(),
        datasets={n: d.to_manifest() for n, d in datasets.items()}, plan=plan,
        scorer_versions=scoring.versions(plan.scorers), unit_columns=unit_cols, probe_columns=probe_cols,
        seeds=list(spec.seeds), replay_fingerprint=provenance.replay_fingerprint(),
        scoring_fingerprint=provenance.scoring_fingerprint(), git_sha=provenance.git_sha(),
        package_versions=provenance.versions(), started_at=previous.get("started_at") or now(),
        spec_code=[c.code for c in spec.configs if c.code])


def _copied(unit_id: str, replay: ReplayLines, scored: ScoredLines, row: Mapping[str, Any],
            record: Mapping[str, Any]) -> tuple[UnitResult, Unit]:
    """A Unit served whole from the Unit cache: its lines as they were stored, and its Unit.
    `row` and `record` are its units and trace lines as the cache decoded them (to check the
    owner): the trace line is the largest line of an entry, decoded once."""
    return (UnitResult(unit_id=unit_id, replay=replay, scored=scored, status=str(row.get("status")),
                       n_messages=int(row.get("n_messages") or 0), wall_s=float(row.get("wall_s") or 0.0),
                       engine_config=dict(record.get("engine_config") or {}), replay_from_cache=True,
                       score_from_cache=True),
            Unit.from_dict(record["unit"]))


__all__ = ["DEFAULT_MAX_UNITS", "EXIT_BUDGET", "EXIT_ERRORS", "EXIT_OK", "RunResult", "errors_fail",
           "replay_cache_key", "run_sweep", "score_cache_key"]
