"""`rollsum score RUN`: score a finished run's replays again, with other scorers or probe timing.

Nothing is replayed: each Unit's trace is decoded from the run directory, its conversation is
reloaded from the dataset the run pinned by hash (refused if it changed), and the scorers read
the trace exactly as they would have during the run, so the tables are identical to those of a
fresh run with the same scoring plan. Only a scorer that needs a model calls one (through the
run's model cache).

The replay journals are never touched. The scored journals (``units.jsonl``, ``probes.jsonl``)
and tables are replaced, then the manifest's ``scoring`` block: a crash in between leaves a run
that `rollsum score` completes when run again (the manifest says ``rescoring`` and leaves those
files out of its seal meanwhile, so readers and ``--resume`` refuse it in one line).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.plugins import is_import_path
from rollsum.redact import env_secrets, redact
from rollsum_evals import scoring
from rollsum_evals.data.pinned import Loader, default_loader
from rollsum_evals.fsfaults import WriteFailed, describe_os_error
from rollsum_evals.replay import Text, Trace
from rollsum_evals.run import provenance
from rollsum_evals.run.breaker import SweepStop, SweepStopped
from rollsum_evals.run.budget import BudgetSpec, FileAccount, metered
from rollsum_evals.run.interrupt import interrupted
from rollsum_evals.run.model_factory import ModelBuilder, ModelFactory, cache_path_for
from rollsum_evals.run.unit import metered_builder, score_group
from rollsum_evals.rundir.format import (
    EVENTS,
    PROBES_JOURNAL,
    SUMMARIES,
    TABLES,
    UNITS_JOURNAL,
    rescored_manifest,
    table_columns,
)
from rollsum_evals.rundir.journal import RunDir
from rollsum_evals.rundir.lock import RunLock
from rollsum_evals.rundir.read import check_format, pinned_datasets
from rollsum_evals.rundir.status import RESCORING
from rollsum_evals.scoring.asks import ProbeTiming
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.spec import components
from rollsum_evals.spec.parse import model_problem
from rollsum_evals.units import Unit


@dataclass(slots=True)
class RescoreResult:
    run_dir: Path
    units: int
    errors: int
    plan: ScoringPlan
    wall_s: float
    spent_usd: float = 0.0
    """What this re-scoring's paid model calls cost (cache misses; 0.0 offline or on Ray)."""


def plan_for(manifest: dict[str, Any], *, scorers: Sequence[str] | None = None,
             timing: ProbeTiming | None = None, model: str | None = None, judge_model: str | None = None,
             where: str = "the run") -> ScoringPlan:
    """The run's scoring plan with the given parts replaced; unknown scorers are one line. The
    scorers every plan runs (`scoring.ALWAYS`: health) are added when missing, so re-scoring an
    older run gives it the health columns too.

    A scorer the run names by import path is not imported from the manifest: a received run is
    data, and importing a module runs it. The user names it (`scorers`) to re-score with it."""
    old = ScoringPlan.from_dict(manifest.get("scoring") or {})
    if not scorers:
        plugged = [n for n in old.scorers if is_import_path(n)]
        if plugged:
            raise ConfigError(f"{where}: its scorers name {plugged[0]!r} by import path, and `rollsum score` never "
                              "imports code a run directory names; to re-score with it, name it yourself: "
                              f"--scorers {','.join(old.scorers)}")
    for flag, spec in (("--model", model), ("--judge-model", judge_model)):
        if spec and (problem := model_problem(spec)) is not None:  # named, as `rollsum run --model` does
            raise ConfigError(f"{flag} {spec!r}: {problem}")
    chosen = tuple(scorers) if scorers else old.scorers
    for name in chosen:
        scoring.get(name)
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"--scorers {','.join(chosen)}: a scorer is listed twice")
    plan = dataclasses.replace(old, scorers=scoring.with_always(chosen), timing=timing or old.timing,
                               model=old.model if model is None else model,
                               judge_model=old.judge_model if judge_model is None else judge_model)
    if "model" in scoring.needs(plan.scorers):
        if not plan.model:
            need = [n for n in plan.scorers if "model" in scoring.needs([n])]
            raise ConfigError(f"scorer {', '.join(need)} needs a model to answer: the run has none, pass --model SPEC")
        # a received run's manifest does not get to spend your key: a paid model it names is called
        # only once the user names it too
        named = [("--model", plan.model)] if model is None else []
        if judge_model is None and plan.judge and plan.judge_model:
            named.append(("--judge-model", plan.judge_model))
        paid = [(flag, spec) for flag, spec in named if not components.of_model(spec).free]
        if paid:
            raise ConfigError(f"{where}: re-scoring calls the model(s) its manifest names "
                              f"({', '.join(spec for _, spec in paid)}), paid with your key; to confirm, name them "
                              f"yourself: {' '.join(f'{flag} {spec}' for flag, spec in paid)} (or offline ones: "
                              "fake:..., replay:PATH)")
    return plan


def rescore(run_dir: str | Path, *, scorers: Sequence[str] | None = None, timing: ProbeTiming | None = None,
            model: str | None = None, judge_model: str | None = None, loader: Loader = default_loader,
            models: ModelBuilder | None = None,
            now: Callable[[], str] = provenance.now, executor: str = "local", ray_address: str | None = None,
            jobs: int = 4, progress: bool = False) -> RescoreResult:
    """Holds the run directory's lock throughout (a sweep still writing it is refused); a
    file-system fault is one line (`WriteFailed`) and leaves the run as `rewrite_scored`'s
    order allows (a second `rollsum score` completes it).

    ``executor="ray"``: each conversation's Units are scored by one Ray task (they share the
    scorers' per-conversation caches), at most `jobs` at once; the driver alone writes."""
    rd = RunDir(run_dir)
    if not rd.path.is_dir():
        raise ConfigError(f"{rd.path}: not a run directory (expected the --out directory of `rollsum run`)")
    if executor not in ("local", "ray"):
        raise ConfigError(f"executor {executor!r}: expected 'local' or 'ray'")
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}: expected at least 1")
    cluster = None
    if executor == "ray":
        from rollsum_evals.run.ray_executor import connect

        cluster = connect(ray_address)
    try:
        with RunLock(rd.path):
            return _rescore(rd, scorers=scorers, timing=timing, model=model, judge_model=judge_model, loader=loader,
                            models=models, now=now, cluster=cluster, jobs=jobs, progress=progress)
    except OSError as err:
        if isinstance(err, ConnectionError | TimeoutError):
            raise
        raise WriteFailed(redact(f"{describe_os_error(err)}; re-scoring stopped: run `rollsum score "
                                 f"{rd.path}` again once that is fixed", env_secrets())) from None
    finally:
        if cluster is not None:
            cluster.close()


def _rescore(rd: RunDir, *, scorers: Sequence[str] | None, timing: ProbeTiming | None, model: str | None,
             judge_model: str | None, loader: Loader, models: ModelBuilder | None, now: Callable[[], str],
             cluster: Any = None, jobs: int = 4, progress: bool = False) -> RescoreResult:
    t0 = time.perf_counter()
    manifest = rd.read_manifest()
    check_format(rd.path, manifest)
    rd.expect(manifest)
    if manifest.get("status") in ("running", "interrupted"):
        raise ConfigError(f"{rd.path}: the run is not finished (status {manifest.get('status')}); "
                          "finish it with `rollsum run SPEC --out DIR --resume` first")
    plan = plan_for(manifest, scorers=scorers, timing=timing, model=model, judge_model=judge_model,
                    where=str(rd.path))
    datasets = pinned_datasets(rd.path, manifest, loader)
    convs = {(name, c.id): c for name, d in datasets.items() for c in d.conversations}
    committed = rd.unit_rows()
    records = {uid: r for uid, r in rd.trace_records().items() if uid in committed}
    summaries = rd.rows_by_unit(SUMMARIES, set(records))
    events = rd.rows_by_unit(EVENTS, set(records))
    texts = {tid: Text(r["role"], r.get("name"), r["content"]) for tid, r in rd.texts().items()}
    wants_model = "model" in scoring.needs(plan.scorers)
    groups: dict[tuple[str, str], list[tuple[str, Unit, Trace]]] = {}
    for uid in sorted(records):
        rec = records[uid]
        unit = Unit.from_dict(rec["unit"])
        conv = convs.get((unit.dataset, unit.conversation_id))
        if conv is None:
            raise ConfigError(f"{rd.path}: conversation {unit.conversation_id!r} of dataset "
                              f"{unit.dataset!r} is not in the pinned dataset")
        trace = Trace.from_record(rec, conv.messages, texts, summaries.get(uid, []), events.get(uid, []))
        groups.setdefault((unit.dataset, conv.id), []).append((uid, unit, trace))
    cache_path = cache_path_for(str((manifest.get("cache") or {}).get("mode") or "user"), rd.path) \
        if wants_model else None
    secrets = env_secrets()
    from tqdm import tqdm

    # a nightly's re-score is long (0.09 s a Unit: ~100 min for 70,000): show it moving on a terminal
    # (disable=None: tqdm's "only on a TTY", so logs and a captured stderr keep their one-line errors)
    bar = tqdm(total=len(records), unit="unit", file=sys.stderr, disable=None if progress else True,
               dynamic_ncols=True, desc="score")
    factory: ModelBuilder | None = None
    # the run's spend account when the scoring models cost money: on either executor, and also
    # for an injected builder, as a sweep meters one (`metered_builder`)
    account = _account(rd, manifest, plan) if wants_model else None
    try:
        if cluster is not None:
            from rollsum_evals.run.ray_executor import rescore_on_cluster

            scored = rescore_on_cluster(cluster, groups, convs, plan, jobs=jobs, cache_path=cache_path,
                                        injected=models if wants_model else None, secrets=secrets,
                                        advance=bar.update, budget=account)
        else:
            if wants_model:
                factory = metered_builder(models, account) if models is not None \
                    else ModelFactory(cache_path=cache_path, budget=account)
            try:
                scored = {}
                for key, items in groups.items():
                    scored.update(score_group(items, convs[key], plan, factory, secrets))
                    bar.update(len(items))
            finally:
                if isinstance(factory, ModelFactory):
                    factory.close()
    except SweepStop as stop:  # nothing was rewritten yet: the run is as it was
        raise SweepStopped(f"re-scoring stopped: {stop.cause}; {rd.path} is unchanged") from None
    except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM in the long part: say the run is intact
        raise interrupted(err, f"re-scoring stopped before it rewrote anything; {rd.path} is unchanged") from None
    finally:
        bar.close()
    results = [scored[uid][0] for uid in sorted(scored)]
    errors = sum(1 for uid in scored if not scored[uid][1])
    versions = scoring.versions(plan.scorers)
    unit_cols, probe_cols = table_columns(*scoring.columns(plan.scorers))
    new = rescored_manifest(manifest, plan, versions, unit_cols, probe_cols,
                            provenance.scoring_fingerprint(), now())
    new["units_error"] = errors
    spent_before = float(manifest.get("spent_usd") or 0.0)
    spent = spent_before
    if account is not None:  # what the scoring models were charged, from either executor
        spent = max(spent_before, FileAccount(Path(account.path)).state().spent)
        new["spent_usd"] = round(spent, 6)
    new.pop(RESCORING, None)
    # the seal no longer covers what is replaced: a score killed from here on leaves a run that
    # readers refuse in one line and a second `rollsum score` completes (its seal check passes)
    stale = {PROBES_JOURNAL, UNITS_JOURNAL, *TABLES.values()}
    rd.write_manifest({**manifest, RESCORING: {"started_at": now(), "scorers": list(plan.scorers),
                                               "timing": plan.timing.key},
                       "files": {k: v for k, v in (manifest.get("files") or {}).items() if k not in stale}})
    rd.rewrite_scored(results)
    rd.write_tables(new, set(records))
    new["files"] = rd.seal()
    rd.write_manifest(new)
    return RescoreResult(run_dir=rd.path, units=len(results), errors=errors, plan=plan,
                         wall_s=time.perf_counter() - t0, spent_usd=spent - spent_before)


def _account(rd: RunDir, manifest: dict[str, Any], plan: ScoringPlan) -> BudgetSpec | None:
    """The run's spend account (``budget.json``), carried on from its ``spent_usd``, when the
    scoring models cost money: a re-scoring with a paid QA model or judge paid for every cache
    miss, but nothing recorded it (the manifest kept the sweep's spend, and the command said
    nothing of money)."""
    cap = metered(None, [plan.model, plan.judge_model])
    if cap is None:
        return None
    account = FileAccount.start(rd.path, cap, float(manifest.get("spent_usd") or 0.0))
    return BudgetSpec(str(account.path), cap)

