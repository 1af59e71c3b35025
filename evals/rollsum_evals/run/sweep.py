"""Run a sweep: load data, expand Units, replay and score them on a worker pool, journal results.

Guarantees a user relies on:

- **Resumable.** Each Unit's replay and its scores are journaled atomically (see
  `rollsum_evals.rundir.journal`); ``resume`` skips finished Units, scores Units whose replay
  was journaled before the kill, and replays the rest whole. Nothing is repeated or lost. A
  resume whose spec, data, code fingerprint or scoring differ from the run's is refused.
- **Deterministic.** Rows depend only on the Unit and the scoring plan (never on ``jobs``,
  scheduling or the cache): tables are sorted by Unit id; wall-clock fields are kept out of
  equality checks.
- **Budgeted.** ``max_cost_usd`` counts real spend and stops submitting a Unit whose estimated
  cost would pass the budget (`rollsum_evals.run.budget`).
- **Cached twice.** Model calls go through `CachedModel`; finished replays and their scores go
  to the Unit-result cache (`rollsum_evals.rundir.unit_cache`), so an identical re-run copies
  its rows, and a re-run with another scorer re-uses the replays.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError, RollsumError
from rollsum.models.base import Model
from rollsum.redact import env_secrets, redact_obj
from rollsum_evals import scoring
from rollsum_evals.data.pinned import Dataset, Loader, default_loader, load_dataset
from rollsum_evals.replay import EngineFactory, default_engine
from rollsum_evals.run import provenance
from rollsum_evals.run.budget import Budget
from rollsum_evals.run.models import (
    ModelBuilder,
    ModelFactory,
    cache_path_for,
    close_model,
    unit_cache_path_for,
)
from rollsum_evals.run.pool import EXECUTORS, choose_executor, process_pool
from rollsum_evals.run.scheduler import Scheduler
from rollsum_evals.run.unit import Job, process_worker, thread_worker
from rollsum_evals.rundir.format import FORMAT_VERSION, new_manifest, table_columns
from rollsum_evals.rundir.journal import ReplayLines, RunDir, ScoredLines, UnitResult, lines
from rollsum_evals.rundir.unit_cache import UnitCache
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.spec import SweepSpec
from rollsum_evals.units import BASELINE_PRESETS, Unit, canonical_json, expand

EXIT_OK, EXIT_BUDGET = 0, 1


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
    cached: int = 0
    """Units copied whole from the Unit-result cache (counted in ``done``, not in ``ran``)."""
    scored: int = 0
    """Units scored from a replay made earlier (Unit cache or this run before a kill)."""
    executor: str = "thread"

    @property
    def exit_code(self) -> int:
        return EXIT_BUDGET if self.stopped_for_budget else EXIT_OK


def replay_cache_key(unit: Unit, fingerprint: str) -> str:
    """The whole Unit, not only its id: the id leaves out the config label, which the rows
    carry and which depends on what else the sweep varies."""
    return hashlib.sha256(canonical_json({"unit": dataclasses.asdict(unit), "code": fingerprint})
                          .encode("utf-8")).hexdigest()


def score_cache_key(replay_key: str, plan: ScoringPlan, fingerprint: str) -> str:
    payload = {"replay": replay_key, "plan": plan.to_dict(), "versions": scoring.versions(plan.scorers),
               "code": fingerprint}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _check_resume(rd: RunDir, previous: Mapping[str, Any], spec: SweepSpec, plan: ScoringPlan) -> None:
    """One line for each reason a run cannot be continued by this spec and this code."""
    if not previous:
        return
    if previous.get("format_version") != FORMAT_VERSION:
        raise ConfigError(f"{rd.path}: was written in run format {previous.get('format_version', 1)}, "
                          f"this rollsum writes {FORMAT_VERSION}; start a new run (another --out)")
    if previous.get("spec_sha256") != spec.sha256():
        raise ConfigError(f"{rd.path}: was started from a different spec (sha256 "
                          f"{str(previous.get('spec_sha256'))[:12]}…, now {spec.sha256()[:12]}…); "
                          "resume needs the same spec and options")
    fp = provenance.replay_fingerprint()
    if previous.get("replay_fingerprint") != fp:
        raise ConfigError(f"{rd.path}: was replayed by other code (fingerprint "
                          f"{str(previous.get('replay_fingerprint'))[:12]}…, now {fp[:12]}…); "
                          "its replays would not match new ones: start a new run (another --out)")
    scored = previous.get("scoring") or {}
    if scored and ScoringPlan.from_dict(scored) != plan:
        raise ConfigError(f"{rd.path}: was re-scored (scorers {', '.join(scored.get('scorers') or [])}, "
                          f"probe timing {scored.get('probe_timing')}); re-score it with the spec's "
                          "scoring (`rollsum score`) before resuming")
    if scored.get("fingerprint") != provenance.scoring_fingerprint():
        raise ConfigError(f"{rd.path}: was scored by other scorer code; re-score it (`rollsum score "
                          f"{rd.path}`) so old and new Units are scored alike, then resume")


def _load_datasets(spec: SweepSpec, loader: Loader, previous: Mapping[str, Any]) -> dict[str, Dataset]:
    out = {ds.name: load_dataset(ds, loader, where=spec.path) for ds in spec.datasets}
    for name, info in (previous.get("datasets") or {}).items():
        if name in out and info.get("sha256") != out[name].sha256:
            raise ConfigError(f"{spec.path}: dataset '{name}' changed since the run started (sha256 "
                              f"{str(info.get('sha256'))[:12]}…, now {out[name].sha256[:12]}…); "
                              "start a new run (another --out)")
    return out


def _stored_replays(rd: RunDir, unit_ids: set[str]) -> dict[str, ReplayLines]:
    """Replays this run journaled before it was killed, for Units it did not finish scoring."""
    if not unit_ids:
        return {}
    traces = {u: r for u, r in rd.trace_records().items() if u in unit_ids}
    summaries = rd.rows_by_unit("summaries.jsonl", unit_ids)
    events = rd.rows_by_unit("events.jsonl", unit_ids)
    texts = rd.texts()
    out = {}
    for uid, rec in traces.items():
        ids = rec.get("text_ids") or []
        out[uid] = ReplayLines(texts={t: lines([texts[t]]) for t in ids if t in texts},
                               summaries=lines(summaries.get(uid, [])), events=lines(events.get(uid, [])),
                               traces=lines([rec]))
    return out


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


def run_sweep(spec: SweepSpec, out: str | Path, *, jobs: int = 1, resume: bool = False,
              executor: str = "thread", max_cost_usd: float | None = None,
              loader: Loader = default_loader, engine_factory: EngineFactory = default_engine,
              models: ModelBuilder | None = None, progress: bool = True,
              now: Callable[[], str] = provenance.now, unit_cache: bool | None = None) -> RunResult:
    """``unit_cache``: None = on when the spec uses the shared user cache and nothing is
    injected (an injected engine or model builder is code the fingerprint cannot see).

    ``executor`` defaults to threads here and to ``auto`` in the CLI: worker processes re-import
    the caller's ``__main__``, so a script without an ``if __name__ == "__main__"`` guard must
    not get them unasked."""
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}: expected at least 1")
    if executor not in EXECUTORS:
        raise ConfigError(f"executor {executor!r}: expected 'auto', 'thread' or 'process'")
    if max_cost_usd is not None and max_cost_usd < 0:
        raise ConfigError(f"--max-cost-usd {max_cost_usd}: expected a non-negative number")
    t0 = time.perf_counter()
    rd = RunDir(out)
    plan = spec.scoring
    previous: dict[str, Any] = {}
    if rd.has_results():
        if not resume:
            raise ConfigError(f"{rd.path}: already holds a run; pass --resume to continue it, "
                              "or choose another --out")
        previous = rd.read_manifest() if rd.file("manifest.json").exists() else {}
        _check_resume(rd, previous, spec, plan)
    datasets = _load_datasets(spec, loader, previous)
    rd.path.mkdir(parents=True, exist_ok=True)
    done, replayed = rd.repair()

    units = expand(spec, {n: (d.sha256, [c.id for c in d.conversations]) for n, d in datasets.items()})
    convs = {(n, c.id): c for n, d in datasets.items() for c in d.conversations}
    unit_ids = {u.unit_id for u in units}
    pending = [u for u in units if u.unit_id not in done]
    stored = _stored_replays(rd, {u.unit_id for u in pending} & replayed)

    cache_path = cache_path_for(spec.cache, rd.path)
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
    limiter = None
    if spec.requests_per_minute:
        from rollsum.models.limits import RateLimiter

        limiter = RateLimiter(requests_per_min=spec.requests_per_minute)
    factory: ModelBuilder = models or ModelFactory(cache_path=cache_path, limiter=limiter)

    injected = models is not None or engine_factory is not default_engine
    ucache_path = unit_cache_path_for(spec.cache, spec.unit_cache)
    use_ucache = (not injected if unit_cache is None else unit_cache) and ucache_path is not None
    ucache = UnitCache(ucache_path) if use_ucache and ucache_path is not None else None
    replay_keys: dict[str, str] = {}
    score_keys: dict[str, str] = {}
    copied: dict[str, UnitResult] = {}
    cached_replays: dict[str, ReplayLines] = {}
    if ucache is not None:
        rfp, sfp = provenance.replay_fingerprint(), provenance.scoring_fingerprint()
        replay_keys = {u.unit_id: replay_cache_key(u, rfp) for u in pending}
        score_keys = {uid: score_cache_key(k, plan, sfp) for uid, k in replay_keys.items()}
        if not resume:
            secrets = env_secrets()
            cached_replays = ucache.get_replays(replay_keys, secrets=secrets)
            scores = ucache.get_scores({u: k for u, k in score_keys.items() if u in cached_replays},
                                       secrets=secrets)
            for uid, sc in scores.items():
                copied[uid] = _copied(uid, cached_replays.pop(uid), sc)
    job_list = [Job(u, convs[(u.dataset, u.conversation_id)], plan,
                    stored=stored.get(u.unit_id) or cached_replays.get(u.unit_id),
                    stored_in_run=u.unit_id in stored)
                for u in pending if u.unit_id not in copied]
    configs: dict[str, dict[str, Any]] = dict(previous.get("configs") or {})
    by_label = {u.config: u for u in units}
    if job_list:
        for label, engine in _preflight(job_list, plan, engine_factory, factory).items():
            configs.setdefault(label, _config_entry(by_label[label], engine))
    replay_messages = sum(len(j.conversation.messages) for j in job_list
                          if j.stored is None and j.unit.preset not in BASELINE_PRESETS)
    chosen = choose_executor(executor, jobs=min(jobs, max(1, len(job_list))), messages=replay_messages,
                             limited=limiter is not None, injected=injected)

    versions = scoring.versions(plan.scorers)
    unit_cols, probe_cols = table_columns(*scoring.columns(plan.scorers))
    manifest = new_manifest(
        name=spec.name, spec_raw=spec.raw, spec_path=spec.path, spec_sha256=spec.sha256(),
        datasets={n: d.to_manifest() for n, d in datasets.items()}, plan=plan, scorer_versions=versions,
        unit_columns=unit_cols, probe_columns=probe_cols, seeds=list(spec.seeds),
        replay_fingerprint=provenance.replay_fingerprint(),
        scoring_fingerprint=provenance.scoring_fingerprint(), git_sha=provenance.git_sha(),
        package_versions=provenance.versions(), started_at=previous.get("started_at") or now())
    manifest.update({
        "resumed_at": [*previous.get("resumed_at", []), now()] if previous else [],
        "units_total": len(units), "units_done": len(done & unit_ids), "configs": configs,
        "executor": chosen, "executor_requested": executor, "jobs": jobs, "max_cost_usd": max_cost_usd,
        "cache": {"mode": spec.cache, "path": str(cache_path) if cache_path else None},
        "unit_cache": {"enabled": ucache is not None, "path": str(ucache_path) if ucache else None,
                       "hits": len(copied), "replay_hits": len(cached_replays),
                       "misses": len(job_list) - len(cached_replays) if ucache is not None else 0,
                       "stored": 0, "scores_stored": 0},
    })
    rd.write_manifest(redact_obj(manifest, env_secrets()))

    secrets = env_secrets()
    if copied:
        rd.append_many([copied[uid] for uid in sorted(copied)])
        for res in copied.values():
            configs.setdefault(_label_of(res), _config_entry(_unit_of(res), res.engine_config))
    budget = Budget(max_cost_usd, plan, "model" in scoring.needs(plan.scorers),
                    spent=float(previous.get("spent_usd", 0.0)))
    ran = rescored = stored_n = scores_stored = 0
    errors = sum(1 for r in copied.values() if r.status == "error")
    stopped = False
    extra_stats: dict[str, int] = {}
    timing = {"unit_cpu_s": 0.0, "unit_wall_s": 0.0}
    by_id = {j.unit.unit_id: j for j in job_list}
    queue = Scheduler([j.unit for j in job_list], lambda u: len(convs[(u.dataset, u.conversation_id)].messages))

    from tqdm import tqdm

    bar = tqdm(total=len(units), initial=len(units) - len(job_list), unit="unit", file=sys.stderr,
               disable=not progress, dynamic_ncols=True, desc=spec.name)
    pool: cf.Executor | None = None
    in_flight: dict[cf.Future[UnitResult], tuple[Job, float]] = {}
    try:
        if job_list:
            workers = min(jobs, len(job_list))
            pool = (process_pool(workers) if chosen == "process"
                    else cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit"))
        while queue or in_flight:
            while pool is not None and queue and len(in_flight) < jobs and not stopped:
                nxt = queue.peek()
                if nxt is None:
                    break
                job = by_id[nxt.unit_id]
                est = budget.estimate(job.unit, job.conversation, replay=job.stored is None)
                if not budget.allows(est, sum(e for _, e in in_flight.values())):
                    if in_flight:
                        break  # wait: finished Units may show the estimate was pessimistic
                    stopped = True
                    break
                queue.pop()
                if chosen == "process":
                    fut = pool.submit(process_worker, job, str(cache_path) if cache_path else None,
                                      engine_factory, models, secrets)
                else:
                    fut = pool.submit(thread_worker, job, engine_factory, factory, secrets)
                in_flight[fut] = (job, est)
            if not in_flight:
                break
            finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: in_flight[f][0].unit.unit_id):
                job, _est = in_flight.pop(fut)
                result = fut.result()
                rd.append_many([result])
                uid = job.unit.unit_id
                if ucache is not None:
                    if job.stored is None and result.replay_cacheable and result.replay is not None:
                        stored_n += ucache.put(replay_keys[uid], uid, result.replay)
                    if result.score_cacheable:
                        scores_stored += ucache.put(score_keys[uid], uid, result.scored)
                if job.stored is None:
                    ran += 1
                    configs.setdefault(job.unit.config, _config_entry(job.unit, result.engine_config))
                else:
                    rescored += 1
                queue.observe(job.unit, result.wall_s)
                errors += result.status == "error"
                budget.observe(job.unit, result.paid_usd, result.n_messages)
                timing["unit_cpu_s"] += result.cpu_s
                timing["unit_wall_s"] += result.wall_s
                for k, v in result.cache_stats.items():
                    extra_stats[k] = extra_stats.get(k, 0) + v
                bar.update(1)
    except BaseException:
        for fut in in_flight:
            fut.cancel()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        bar.close()
        if ucache is not None:
            ucache.close()
        manifest.update(status="interrupted", spent_usd=budget.spent, finished_at=now())
        rd.write_manifest(redact_obj(manifest, env_secrets()))
        raise
    if pool is not None:
        pool.shutdown(wait=True)
    bar.close()
    if ucache is not None:
        ucache.close()
    rd.write_tables(manifest, unit_ids)
    committed = {uid: r for uid, r in rd.unit_rows().items() if uid in unit_ids}
    stats = factory.stats() if isinstance(factory, ModelFactory) else {}
    if isinstance(factory, ModelFactory):
        factory.close()
    for k, v in extra_stats.items():
        stats[k] = stats.get(k, 0) + v
    manifest.update(status="stopped: budget" if stopped else "complete", finished_at=now(),
                    units_done=len(committed),
                    units_error=sum(1 for r in committed.values() if r.get("status") == "error"),
                    spent_usd=round(budget.spent, 6), configs=dict(sorted(configs.items())),
                    cache={**manifest["cache"], "stats": stats},
                    unit_cache={**manifest["unit_cache"], "stored": stored_n, "scores_stored": scores_stored},
                    timing={k: round(v, 4) for k, v in timing.items()})
    rd.write_manifest(redact_obj(manifest, env_secrets()))
    return RunResult(run_dir=rd.path, total=len(units), done=len(committed), ran=ran,
                     skipped=len(units) - len(committed), errors=errors, spent_usd=budget.spent,
                     stopped_for_budget=stopped, wall_s=time.perf_counter() - t0,
                     cached=len(copied), scored=rescored, executor=chosen)


def _copied(unit_id: str, replay: ReplayLines, scored: ScoredLines) -> UnitResult:
    """A Unit served whole from the Unit cache: its lines as they were stored."""
    row = json.loads(scored.units)
    record = json.loads(replay.traces)
    return UnitResult(unit_id=unit_id, replay=replay, scored=scored, status=str(row.get("status")),
                      n_messages=int(row.get("n_messages") or 0), wall_s=float(row.get("wall_s") or 0.0),
                      engine_config=dict(record.get("engine_config") or {}), replay_from_cache=True,
                      score_from_cache=True)


def _unit_of(result: UnitResult) -> Unit:
    assert result.replay is not None
    return Unit.from_dict(json.loads(result.replay.traces)["unit"])


def _label_of(result: UnitResult) -> str:
    return _unit_of(result).config


__all__ = ["EXIT_BUDGET", "EXIT_OK", "RunResult", "replay_cache_key", "run_sweep", "score_cache_key"]
