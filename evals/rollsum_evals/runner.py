"""Run a sweep: load data, expand Units, replay and score them on a worker pool, journal results.

Guarantees a user relies on:

- **Resumable.** Each finished Unit is journaled atomically (see `rollsum_evals.rundir`); ``resume``
  skips finished Units and re-runs unfinished ones whole. Nothing is repeated or lost.
- **Deterministic.** Rows depend only on the Unit (never on ``jobs``, scheduling or the cache):
  tables are sorted by Unit id, and wall-clock fields are kept out of equality checks.
- **Budgeted.** ``max_cost_usd`` counts real spend (summarizer and QA calls that missed the
  cache; the main model is simulated) and stops submitting a Unit whose estimated cost would
  pass the budget, instead of noticing afterwards.
- **Cached twice.** Model calls go through `CachedModel` (``~/.cache/rollsum`` by default), and
  finished Units go to a Unit-result cache in the same directory (`rollsum_evals.rundir.UnitCache`),
  keyed by the whole Unit plus a fingerprint of the installed ``rollsum``/``evals`` source. A
  fresh run copies cached Units' rows instead of replaying them, so an identical re-run costs
  little more than writing its tables; any code edit is a miss, never a stale row.

The executor is a seam: threads (API-bound work: the GIL is released while waiting), processes
(the replay itself is CPU-bound Python, and threads cannot use a second core), ``auto`` (picks
between them, see `choose_executor`), later a distributed engine. Units and results are plain
picklable data for that reason.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import importlib.metadata
import logging
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollsum_evals.data.types import Conversation
from rollsum_evals.replay import EngineFactory, MeteredModel, Trace, default_engine, replay
from rollsum_evals.rundir import PROBE_COLUMNS, UNIT_CACHE_FILE, UNIT_COLUMNS, RunDir, UnitCache, UnitResult
from rollsum_evals.scoring import ScoreContext, score_all, versions
from rollsum_evals.scoring.cost import price
from rollsum_evals.spec import BASELINE_PRESETS, OFFLINE_MODELS, DatasetSpec, SweepSpec, Unit, canonical_json, expand
from rollsum.errors import ConfigError, RollsumError
from rollsum.models.base import Model
from rollsum.redact import env_secrets, redact, redact_obj
from rollsum.types import Usage

log = logging.getLogger(__name__)

EXIT_OK, EXIT_BUDGET = 0, 1
CACHE_ENV = "ROLLSUM_CACHE_DIR"
DatasetLoader = Callable[[DatasetSpec], Sequence[Conversation]]
ModelBuilder = Callable[[str], "Model | None"]
_PACKAGES = ("rollsum", "anthropic", "pandas", "pyarrow", "rouge-score", "tqdm", "datasets", "nltk")


def _redact(text: str, secrets: Sequence[str] | None = None) -> str:
    return redact(text, env_secrets() if secrets is None else secrets)


def _redact_obj(obj: Any, secrets: Sequence[str] | None = None) -> Any:
    return redact_obj(obj, env_secrets() if secrets is None else secrets)


# ----------------------------------------------------------------------------------------------
# data


def default_loader(ds: DatasetSpec) -> Sequence[Conversation]:
    from rollsum_evals import data

    loaded: Sequence[Conversation] = data.load(ds.source, format=ds.format)
    return loaded


def conversations_hash(convs: Sequence[Conversation]) -> str:
    """What was actually replayed (after ``limit``), so editing a file changes the Unit ids."""
    h = hashlib.sha256()
    for c in convs:
        h.update(canonical_json(c.to_dict()).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def load_datasets(spec: SweepSpec, loader: DatasetLoader) -> dict[str, tuple[str, list[Conversation]]]:
    out: dict[str, tuple[str, list[Conversation]]] = {}
    for ds in spec.datasets:
        convs = list(loader(ds))
        if ds.limit is not None:
            convs = convs[: ds.limit]
        if not convs:
            raise ConfigError(f"{spec.path}: dataset '{ds.name}' ({ds.source}) has no conversations")
        ids = [c.id for c in convs]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ConfigError(f"{spec.path}: dataset '{ds.name}': conversation id {dup!r} appears twice")
        out[ds.name] = (conversations_hash(convs), convs)
    return out


# ----------------------------------------------------------------------------------------------
# models


@dataclass(slots=True)
class ModelFactory:
    """Builds a fresh summarizer/QA model per Unit: cached, rate limited, never shared state
    that could make a Unit's result depend on which other Units ran before it."""

    cache_path: Path | None = None
    limiter: Any = None
    caches: list[Any] = field(default_factory=list)
    _file: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, spec: str) -> Model | None:
        if spec in OFFLINE_MODELS:
            return None
        from rollsum.models import from_spec

        model: Model = from_spec(spec)
        if self.limiter is not None:
            from rollsum.models.limits import LimitedModel

            model = LimitedModel(model, self.limiter)
        if self.cache_path is not None:
            from rollsum.models.cache import CachedModel, CacheFile

            with self._lock:  # one set of connections for every Unit's model
                if self._file is None:
                    self._file = CacheFile(self.cache_path, "on")
                cached = CachedModel(model, self._file)
                self.caches.append(cached)
            model = cached
        return model

    def close(self) -> None:
        """Close the shared cache file once no Unit uses it (end of the sweep or worker)."""
        with self._lock:
            file, self._file = self._file, None
        if file is not None:
            file.close()

    def stats(self) -> dict[str, int]:
        total: dict[str, int] = {}
        with self._lock:
            for c in self.caches:
                for k, v in c.stats.to_dict().items():
                    total[k] = total.get(k, 0) + int(v)
        return total


def user_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "rollsum"))


def cache_path_for(spec: SweepSpec, run_dir: Path) -> Path | None:
    if spec.cache == "off":
        return None
    if spec.cache == "run":
        return run_dir / "cache" / "models.sqlite"
    return user_cache_dir() / "models.sqlite"


def unit_cache_path_for(spec: SweepSpec) -> Path | None:
    """Only the shared user cache can serve another run: a run-local one would only ever be
    read by ``--resume``, which re-runs unfinished Units by design."""
    if spec.cache != "user" or not spec.unit_cache:
        return None
    return user_cache_dir() / UNIT_CACHE_FILE


# ----------------------------------------------------------------------------------------------
# the Unit-result cache key


_FINGERPRINT_SKIP_DIRS = frozenset({"__pycache__", "sweeps"})


@functools.cache
def code_fingerprint() -> str:
    """sha256 over every source file of the installed ``rollsum`` and ``evals`` packages (path
    and bytes) plus the package version. Computed once per process: the code cannot change
    under a running sweep. Sweep specs are left out: what they define is already in the Unit."""
    import rollsum_evals
    import rollsum

    h = hashlib.sha256()
    try:
        h.update(importlib.metadata.version("rollsum").encode())
    except importlib.metadata.PackageNotFoundError:
        h.update(b"unversioned")
    for pkg in (rollsum, rollsum_evals):
        root = Path(pkg.__file__ or "").resolve().parent
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _FINGERPRINT_SKIP_DIRS)
            files += [Path(dirpath) / f for f in filenames if not f.endswith((".pyc", ".pyo"))]
        for f in sorted(files):
            h.update(b"\0" + f"{pkg.__name__}/{f.relative_to(root).as_posix()}".encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()


def unit_cache_key(unit: Unit, fingerprint: str) -> str:
    """The whole Unit, not only its id: the id leaves out the config label, which the rows
    carry and which depends on what else the sweep varies."""
    return hashlib.sha256(canonical_json({"unit": dataclasses.asdict(unit), "code": fingerprint})
                          .encode("utf-8")).hexdigest()


def _cacheable(result: UnitResult, unit: Unit) -> bool:
    """Errors and summarizer failures from a real API may be transient (a 429, a timeout):
    caching them would turn a bad minute into a permanent row. Offline and fake models fail
    deterministically, so their failures are results."""
    if result.unit_row.get("status") != "ok":
        return False
    deterministic = unit.model in OFFLINE_MODELS or unit.model.startswith("fake")
    return deterministic or not int(result.unit_row.get("n_failures") or 0)


# ----------------------------------------------------------------------------------------------
# one Unit


def _close(model: Model | None) -> None:
    inner: Any = model
    while inner is not None:
        close = getattr(inner, "close", None)
        if callable(close):
            close()
            return
        inner = getattr(inner, "inner", None)


def execute_unit(unit: Unit, conversation: Conversation, *, engine_factory: EngineFactory = default_engine,
                 models: ModelBuilder | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> UnitResult:
    """Replay and score one Unit. Failures become an ``error`` row, never an exception,
    so one bad Unit cannot stop a sweep (and a resume does not retry it forever)."""
    build = models or ModelFactory()
    start = clock()
    cpu0 = time.thread_time()
    model = qa_model = None
    try:
        model = build(unit.model)
        trace = replay(unit, conversation, engine_factory=engine_factory, model=model)
        qa_metered = None
        if "qa" in unit.scorers and unit.qa_model:
            qa_model = build(unit.qa_model)
            qa_metered = MeteredModel(qa_model) if qa_model is not None else None
        scores = score_all(unit.scorers, ScoreContext(unit=unit, conversation=conversation,
                                                      trace=trace, qa_model=qa_metered))
    except Exception as err:
        log.warning("unit %s (%s, %s) failed: %s", unit.unit_id, unit.config, unit.conversation_id, err)
        row = _identity(unit)
        row.update(status="error", error=_redact(f"{type(err).__name__}: {err}".splitlines()[0]),
                   n_messages=len(conversation.messages), n_probes=len(conversation.probes),
                   wall_s=clock() - start)
        return UnitResult(unit_id=unit.unit_id, unit_row=_complete(row, UNIT_COLUMNS),
                          cpu_s=time.thread_time() - cpu0)
    finally:
        _close(model)
        _close(qa_model)
    paid = price(unit.model, trace.paid_usage)
    if qa_metered is not None:
        paid += price(unit.qa_model, qa_metered.paid)
    result = _result(unit, conversation, trace, scores.unit, scores.probes, clock() - start, paid)
    result.cpu_s = time.thread_time() - cpu0
    return result


def _identity(unit: Unit) -> dict[str, Any]:
    return {"unit_id": unit.unit_id, "dataset": unit.dataset, "conversation_id": unit.conversation_id,
            "config": unit.config, "preset": unit.preset, "params": unit.params_json,
            "prompt": unit.prompt, "model": unit.model, "seed": unit.seed,
            "context_window": unit.context_window, "probe_timing": unit.probe_timing,
            "main_model": unit.main_model}


def _complete(row: dict[str, Any], columns: Mapping[str, Any]) -> dict[str, Any]:
    return {**{c: d for c, d in columns.items()}, **row}


def _result(unit: Unit, conv: Conversation, trace: Trace, unit_scores: Mapping[str, Any],
            probe_scores: Mapping[str, Mapping[str, Any]], wall_s: float, paid: float) -> UnitResult:
    row = _identity(unit)
    row.update(n_messages=len(trace.messages), n_probes=len(conv.probes),
               n_summaries=len(trace.summaries), n_failures=trace.failures)
    row.update({k: v for k, v in unit_scores.items() if k != "qa_errors"})
    row["cost_usd"] = (float(row.get("cost_main_usd", 0.0)) + float(row.get("cost_summarizer_usd", 0.0))
                       + float(row.get("cost_judge_usd", 0.0)))
    row["wall_s"] = wall_s
    row["status"], row["error"] = "ok", ""
    base = {"unit_id": unit.unit_id, "dataset": unit.dataset, "conversation_id": unit.conversation_id,
            "config": unit.config, "preset": unit.preset, "model": unit.model, "seed": unit.seed}
    probes = []
    for ask in trace.asks_for(conv.probes):  # one row per (probe, asking turn)
        p = ask.probe
        pr = {**base, "probe_id": p.id, "category": p.category, "question": p.question,
              "answer": p.answer, "evidence_turn": ask.evidence_turn, "asked_turn": ask.asked_turn,
              "age_turns": ask.age_turns}
        pr.update(probe_scores.get(ask.key, {}))
        probes.append(_complete(pr, PROBE_COLUMNS))
    turns = [{"unit_id": unit.unit_id, "config": unit.config, "conversation_id": unit.conversation_id,
              "turn": t.turn, "context_tokens": t.context_tokens, "active_messages": t.active_messages,
              "summary_tokens": t.summary_tokens} for t in trace.turns]
    summaries = [{"unit_id": unit.unit_id, "conversation_id": unit.conversation_id, "config": unit.config,
                  "generation": g, "turn": trace.summary_turns[g], "record": r.to_dict()}
                 for g, r in enumerate(trace.summaries)]
    events = []
    for ev_obj, turn in zip(trace.events, trace.event_turns):
        d = ev_obj.to_dict()
        d["engine_turn"] = d.pop("turn")
        events.append({"unit_id": unit.unit_id, "conversation_id": unit.conversation_id,
                       "config": unit.config, "turn": turn, **d})
    return UnitResult(unit_id=unit.unit_id, unit_row=_complete(row, UNIT_COLUMNS), probe_rows=probes,
                      turn_rows=turns, summary_rows=summaries, event_rows=events, paid_usd=paid)


def _thread_worker(unit: Unit, conv: Conversation, engine_factory: EngineFactory,
                   models: ModelBuilder, secrets: Sequence[str]) -> UnitResult:
    """Redaction happens in the worker, not in the loop that journals results: there it would
    serialise every Unit behind one thread."""
    return _redact_result(execute_unit(unit, conv, engine_factory=engine_factory, models=models),
                          secrets)


def _process_worker(unit: Unit, conv: Conversation, cache_path: str | None,
                    engine_factory: EngineFactory, models: ModelBuilder | None = None,
                    secrets: Sequence[str] = ()) -> UnitResult:
    """Entry point in a worker process: builds its own models (a limiter cannot be shared)."""
    factory = ModelFactory(cache_path=Path(cache_path) if cache_path else None)
    try:
        result = execute_unit(unit, conv, engine_factory=engine_factory, models=models or factory)
    finally:
        factory.close()
    result.cache_stats = factory.stats()
    return _as_journal_text(_redact_result(result, secrets))


def _as_journal_text(result: UnitResult) -> UnitResult:
    """Format the journal lines here and send only them (the shape of a Unit-cache hit): the
    loop that journals results runs in one process, and encoding every Unit's rows there took
    CPU from the workers on a small machine, while pickling rows costs more than pickling text."""
    result.journal_text()
    result.probe_rows, result.turn_rows, result.summary_rows, result.event_rows = [], [], [], []
    return result


# ----------------------------------------------------------------------------------------------
# executors

EXECUTORS = ("auto", "thread", "process")
_PRELOAD = ["rollsum_evals.runner", "rollsum_evals.scoring", "rollsum.models"]
_AUTO_MIN_MESSAGES = 4000
"""Below this many replayed messages the replay CPU (~0.6 ms a message) is smaller than what
starting worker processes costs, so ``auto`` keeps threads."""


def _watch_parent(parent_pid: int) -> None:
    """Worker initializer: a SIGKILLed sweep must not leave orphan workers on a shared machine
    (the pool's queues keep them blocked forever otherwise)."""

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                continue

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _mp_context() -> multiprocessing.context.BaseContext:
    """A forkserver that has already imported the harness forks each worker: no per-worker
    interpreter start and import (spawn costs ~0.3 s CPU each, which on two cores ate most of
    what processes gain), and no fork of a parent that is running threads."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def _process_pool(jobs: int, cpus: int | None = None) -> cf.Executor:
    """``jobs`` concurrent Units on at most `_PROCESSES_PER_CORE` processes a core, each running
    its share of the Units on threads.

    Why not one process a job: a Unit mostly waits on its model, and worker processes start one
    at a time (~7-20 ms each through the forkserver, slower while earlier Units compete for the
    CPU). With ``--jobs 64`` on two cores the last of 64 workers started ~1.1 s into the sweep,
    so the slowest Unit, if submitted late, finished that much late: 4.8-5.0 s for a 3.0 s
    critical path (bench_sweep). A handful of processes start in ~30 ms, use every core for the
    replay, and their threads overlap the model waits; the GIL within each process is shared by
    few enough Units not to stretch the slowest one much.
    """
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    processes = max(1, min(jobs, _PROCESSES_PER_CORE * cores))
    return ProcessThreadPool(processes, threads=math.ceil(jobs / processes), ctx=_mp_context())


_PROCESSES_PER_CORE = 2
"""Sweep wall, bench_sweep's 64 Units all at once on 2 cores (±0.2 s run to run): 1 process a
core 4.1 s (each GIL is busy), 2 a core 3.8 s, 4 a core 4.0 s, 8 a core 3.8 s; one process a
Unit 4.8-5.0 s. Two is the smallest count at the plateau."""


def _pool_worker(tasks: Any, results: Any, threads: int, parent_pid: int) -> None:
    """A worker process: ``threads`` threads take calls from the shared task queue until each
    gets a ``None``. Results (or the exception) go back tagged with the call's id."""
    _watch_parent(parent_pid)

    def serve() -> None:
        while True:
            item = tasks.get()
            if item is None:
                return
            call_id, fn, args = item
            try:
                out: tuple[int, bool, Any] = (call_id, True, fn(*args))
            except BaseException as err:  # handed to the caller's future
                out = (call_id, False, err)
            try:
                results.put(out)
            except Exception as err:  # an unpicklable result or exception
                results.put((call_id, False, RuntimeError(f"worker result not picklable: {err!r}")))

    pool = [threading.Thread(target=serve, name=f"unit-{i}") for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


class ProcessThreadPool(cf.Executor):
    """An executor of ``processes`` worker processes with ``threads`` threads each.

    Plain picklable calls go over one shared task queue, so the next free thread in any process
    takes the next call (the order of `submit` is the start order). A worker process that dies
    fails every pending future with `BrokenProcessPool` instead of leaving the sweep waiting.
    """

    def __init__(self, processes: int, *, threads: int, ctx: multiprocessing.context.BaseContext) -> None:
        self._tasks: Any = ctx.SimpleQueue()
        self._results: Any = ctx.SimpleQueue()
        self._futures: dict[int, cf.Future[Any]] = {}
        self._lock = threading.Lock()
        self._next_id = 0
        self._closing = False
        self._broken = False
        self._slots = processes * threads
        self.processes = processes
        self._procs = [ctx.Process(target=_pool_worker,  # type: ignore[attr-defined]
                                   args=(self._tasks, self._results, threads, os.getpid()),
                                   name=f"rollsum-worker-{i}")
                       for i in range(processes)]
        for proc in self._procs:
            proc.start()
        self._reader = threading.Thread(target=self._read, name="pool-results", daemon=True)
        self._reader.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        if kwargs:
            fn = functools.partial(fn, **kwargs)
        fut: cf.Future[Any] = cf.Future()
        with self._lock:
            if self._broken:
                raise BrokenProcessPool("a worker process exited while Units were running")
            if self._closing:
                raise RuntimeError("cannot submit after shutdown")
            call_id, self._next_id = self._next_id, self._next_id + 1
            self._futures[call_id] = fut
        self._tasks.put((call_id, fn, args))
        return fut

    def _read(self) -> None:
        from multiprocessing.connection import wait

        conn = self._results._reader
        alive = {proc.sentinel: proc for proc in self._procs}
        reason = "a worker process exited while Units were running"
        while True:
            ready = wait([conn, *alive])
            if conn in ready:
                try:
                    call_id, ok, value = self._results.get()
                except Exception as err:  # a result this process cannot unpickle
                    reason = f"unreadable result from a worker: {err!r}"
                    break
                with self._lock:
                    fut = self._futures.pop(call_id, None)
                if fut is not None and fut.set_running_or_notify_cancel():
                    if ok:
                        fut.set_result(value)
                    else:
                        fut.set_exception(value)
                continue  # drain results before looking at exits
            for sentinel in ready:
                alive.pop(sentinel, None)
            with self._lock:
                if self._closing and alive:
                    continue  # workers leaving after shutdown
            break
        with self._lock:
            self._broken = not self._closing
            pending = list(self._futures.values())
            self._futures.clear()
        for fut in pending:
            if fut.set_running_or_notify_cancel():
                fut.set_exception(BrokenProcessPool(reason))
        self._terminate()

    def _terminate(self) -> None:
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
            pending = list(self._futures.values())
        if cancel_futures:
            for fut in pending:
                fut.cancel()
            self._terminate()  # an interrupted sweep: running Units are re-run by --resume
        else:
            for _ in range(self._slots):
                self._tasks.put(None)
        if wait:
            for proc in self._procs:
                proc.join()
            self._reader.join()


def choose_executor(requested: str, *, jobs: int, messages: int, limited: bool,
                    injected: bool, cpus: int | None = None) -> str:
    """``auto``: processes when the replay CPU is worth a second core, threads otherwise.

    A FakeModel/API Unit waits on latency (threads overlap that fine) but its replay is pure
    Python under the GIL: with threads, 64 Units' replay CPU runs on one core however many
    jobs there are. Processes need a shareable rate limit (none yet) and a picklable injected
    model builder, so either forces threads.
    """
    if requested != "auto":
        return requested
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    if jobs < 2 or cores < 2 or limited or injected or messages < _AUTO_MIN_MESSAGES:
        return "thread"
    return "process"


# ----------------------------------------------------------------------------------------------
# the sweep


@dataclass(slots=True)
class RunResult:
    run_dir: Path
    total: int
    done: int
    ran: int
    skipped: int
    errors: int
    spent_usd: float
    stopped_for_budget: bool
    wall_s: float
    cached: int = 0
    """Units copied from the Unit-result cache (counted in ``done``, not in ``ran``)."""
    executor: str = "thread"

    @property
    def exit_code(self) -> int:
        return EXIT_BUDGET if self.stopped_for_budget else EXIT_OK


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _git_sha() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _versions() -> dict[str, str]:
    v = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            v[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    return v


class Scheduler:
    """Which Unit to start next: expected-longest first, learning what each configuration costs
    as its Units finish.

    The sweep's wall time is bounded below by its slowest Unit, so that Unit must start in the
    first wave, not the last. Message count alone cannot find it: in the benchmark every
    conversation has 120 messages, yet a ``since-last`` Unit makes 58 model calls and a
    ``token-ratio`` one 3, and starting them in id order cost 6.8 s against 4.8 s for
    longest-first. So each configuration is sampled early (unknown ones first, spread across
    configurations), then the rest run by observed seconds per message × messages.
    Baselines and offline models are assumed cheap until measured.
    """

    def __init__(self, units: Sequence[Unit], messages: Callable[[Unit], int]) -> None:
        self._n = messages
        groups: dict[str, list[Unit]] = {}
        for u in units:
            groups.setdefault(u.config, []).append(u)
        self._groups = {c: sorted(us, key=lambda u: (self._n(u), u.unit_id), reverse=True)
                        for c, us in sorted(groups.items())}
        self._started: dict[str, int] = dict.fromkeys(self._groups, 0)
        self._rate: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return sum(len(us) for us in self._groups.values())

    def _key(self, config: str) -> tuple[float, int, int]:
        u = self._groups[config][0]
        n = self._n(u)
        if config in self._rate:
            total, count = self._rate[config]
            est = total / count * n
        elif u.preset in BASELINE_PRESETS or u.model in OFFLINE_MODELS:
            est = 0.0
        else:
            est = math.inf
        return (est, -self._started[config], n)

    def peek(self) -> Unit | None:
        best: str | None = None
        best_key: tuple[float, int, int] | None = None
        for c, us in self._groups.items():
            if not us:
                continue
            k = self._key(c)
            if best_key is None or k > best_key:
                best, best_key = c, k
        return self._groups[best][0] if best is not None else None

    def pop(self) -> Unit:
        unit = self.peek()
        if unit is None:
            raise IndexError("no Unit left to schedule")
        self._groups[unit.config].pop(0)
        self._started[unit.config] += 1
        return unit

    def observe(self, unit: Unit, wall_s: float) -> None:
        total, count = self._rate.get(unit.config, (0.0, 0))
        self._rate[unit.config] = (total + wall_s / max(1, self._n(unit)), count + 1)


def _estimate_usd(unit: Unit, conv: Conversation, per_message: Mapping[str, float]) -> float:
    """Upper-bound guess of a Unit's real spend before it runs, refined by what similar Units
    actually cost."""
    key = f"{unit.model}|{unit.qa_model}"
    n = max(1, len(conv.messages))
    if key in per_message:
        return per_message[key] * n * 1.25
    chars = sum(len(m.content) for m in conv.messages)
    tokens = chars // 4 + 4 * n
    est = 0.0
    if unit.model not in OFFLINE_MODELS and unit.preset not in BASELINE_PRESETS:
        est += price(unit.model, Usage(input_tokens=2 * tokens, output_tokens=tokens // 4))
    if "qa" in unit.scorers and unit.qa_model and unit.qa_model not in OFFLINE_MODELS:
        p = len(conv.probes)
        est += price(unit.qa_model, Usage(input_tokens=p * tokens, output_tokens=p * 64))
    return est


def _preflight(units: Sequence[Unit], engine_factory: EngineFactory, models: ModelBuilder) -> None:
    """Build one engine per configuration and one model per spec before the sweep starts, so a
    typo in a parameter or a missing API key fails in a second with one line, not per Unit."""
    seen_cfg: set[tuple[str, str, str, str, int]] = set()
    built: dict[str, Model | None] = {}
    try:
        for u in units:
            for spec in (u.model, u.qa_model if "qa" in u.scorers else ""):
                if spec and spec not in built:
                    built[spec] = models(spec)
            key = (u.preset, u.params_json, u.prompt, u.model, u.context_window)
            if key not in seen_cfg:
                seen_cfg.add(key)
                try:
                    engine_factory(u, built[u.model], lambda _e: None)
                except RollsumError as err:
                    raise ConfigError(f"config '{u.config}': {err}") from None
    finally:
        for m in built.values():
            _close(m)


def run_sweep(spec: SweepSpec, out: str | Path, *, jobs: int = 1, resume: bool = False,
              executor: str = "thread", max_cost_usd: float | None = None,
              loader: DatasetLoader = default_loader, engine_factory: EngineFactory = default_engine,
              models: ModelBuilder | None = None, progress: bool = True,
              now: Callable[[], str] = _now, unit_cache: bool | None = None) -> RunResult:
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
    spec_sha = spec.sha256()
    previous: dict[str, Any] = {}
    if rd.has_results():
        if not resume:
            raise ConfigError(f"{rd.path}: already holds a run; pass --resume to continue it, "
                              "or choose another --out")
        previous = rd.read_manifest() if rd.file("manifest.json").exists() else {}
        if previous and previous.get("spec_sha256") != spec_sha:
            raise ConfigError(f"{rd.path}: was started from a different spec (sha256 "
                              f"{str(previous.get('spec_sha256'))[:12]}…, now {spec_sha[:12]}…); "
                              "resume needs the same spec and options")
    rd.path.mkdir(parents=True, exist_ok=True)
    done = rd.repair()

    datasets = load_datasets(spec, loader)
    scorer_versions = versions(spec.scorers)
    units = expand(spec, {n: (h, [c.id for c in cs]) for n, (h, cs) in datasets.items()},
                   scorer_versions)
    convs = {(n, c.id): c for n, (_, cs) in datasets.items() for c in cs}
    cache_path = cache_path_for(spec, rd.path)
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
    limiter = None
    if spec.requests_per_minute:
        from rollsum.models.limits import RateLimiter

        limiter = RateLimiter(requests_per_min=spec.requests_per_minute)
    factory: ModelBuilder = models or ModelFactory(cache_path=cache_path, limiter=limiter)
    todo = [u for u in units if u.unit_id not in done]

    injected = models is not None or engine_factory is not default_engine
    ucache_path = unit_cache_path_for(spec)
    use_ucache = (not injected if unit_cache is None else unit_cache) and ucache_path is not None
    ucache = UnitCache(ucache_path) if use_ucache and ucache_path is not None else None
    keys: dict[str, str] = {}
    hits: dict[str, UnitResult] = {}
    if ucache is not None:
        fingerprint = code_fingerprint()
        keys = {u.unit_id: unit_cache_key(u, fingerprint) for u in todo}
        if not resume:
            hits = ucache.get_many(keys, secrets=env_secrets())
    todo = [u for u in todo if u.unit_id not in hits]
    if todo:
        _preflight(todo, engine_factory, factory)
    replay_messages = sum(len(convs[(u.dataset, u.conversation_id)].messages) for u in todo
                          if u.preset not in BASELINE_PRESETS)
    chosen = choose_executor(executor, jobs=min(jobs, max(1, len(todo))), messages=replay_messages,
                             limited=limiter is not None, injected=injected)

    manifest: dict[str, Any] = {
        "name": spec.name, "spec": spec.raw, "spec_path": spec.path, "spec_sha256": spec_sha,
        "git_sha": _git_sha(), "versions": _versions(), "seeds": list(spec.seeds),
        "started_at": previous.get("started_at") or now(), "finished_at": None,
        "resumed_at": [*previous.get("resumed_at", []), now()] if previous else [],
        "status": "running", "units_total": len(units), "units_done": len(done & {u.unit_id for u in units}),
        "scorer_versions": scorer_versions, "main_model": spec.main_model,
        "probe_timing": spec.probes.key,
        "datasets": {n: {"sha256": h, "source": next(d.source for d in spec.datasets if d.name == n),
                         "conversations": len(cs)} for n, (h, cs) in datasets.items()},
        "executor": chosen, "executor_requested": executor, "jobs": jobs, "max_cost_usd": max_cost_usd,
        "cache": {"mode": spec.cache, "path": str(cache_path) if cache_path else None},
        "unit_cache": {"enabled": ucache is not None, "path": str(ucache_path) if ucache else None,
                       "hits": len(hits), "misses": len(todo) if ucache is not None else 0,
                       "stored": 0},
    }
    rd.write_manifest(_redact_obj(manifest))

    secrets = env_secrets()
    if hits:
        rd.append_many([hits[uid] for uid in sorted(hits)])
    spent = float(previous.get("spent_usd", 0.0))
    ran = errors = stored = 0
    errors += sum(1 for r in hits.values() if r.unit_row.get("status") == "error")
    stopped = False
    per_message: dict[str, float] = {}
    extra_stats: dict[str, int] = {}
    timing = {"unit_cpu_s": 0.0, "unit_wall_s": 0.0}
    queue = Scheduler(todo, lambda u: len(convs[(u.dataset, u.conversation_id)].messages))

    from tqdm import tqdm

    bar = tqdm(total=len(units), initial=len(units) - len(todo), unit="unit", file=sys.stderr,
               disable=not progress, dynamic_ncols=True, desc=spec.name)
    pool: cf.Executor | None = None
    in_flight: dict[cf.Future[UnitResult], tuple[Unit, float]] = {}
    try:
        if todo:
            workers = min(jobs, len(todo))
            pool = (_process_pool(workers) if chosen == "process"
                    else cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit"))
        while queue or in_flight:
            while pool is not None and queue and len(in_flight) < jobs and not stopped:
                nxt = queue.peek()
                if nxt is None:
                    break
                unit = nxt
                conv = convs[(unit.dataset, unit.conversation_id)]
                est = _estimate_usd(unit, conv, per_message) if max_cost_usd is not None else 0.0
                committed = spent + sum(e for _, e in in_flight.values())
                if max_cost_usd is not None and committed + est > max_cost_usd:
                    if in_flight:
                        break  # wait: finished Units may show the estimate was pessimistic
                    stopped = True
                    break
                queue.pop()
                if chosen == "process":
                    fut = pool.submit(_process_worker, unit, conv,
                                      str(cache_path) if cache_path else None, engine_factory, models,
                                      secrets)
                else:
                    fut = pool.submit(_thread_worker, unit, conv, engine_factory, factory, secrets)
                in_flight[fut] = (unit, est)
            if not in_flight:
                break
            finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: in_flight[f][0].unit_id):
                unit, _est = in_flight.pop(fut)
                result = fut.result()
                rd.append(result)
                if ucache is not None and _cacheable(result, unit):
                    stored += ucache.put(keys[unit.unit_id], result)
                ran += 1
                queue.observe(unit, float(result.unit_row.get("wall_s") or 0.0))
                errors += result.unit_row.get("status") == "error"
                spent += result.paid_usd
                timing["unit_cpu_s"] += result.cpu_s
                timing["unit_wall_s"] += float(result.unit_row.get("wall_s") or 0.0)
                for k, v in result.cache_stats.items():
                    extra_stats[k] = extra_stats.get(k, 0) + v
                key = f"{unit.model}|{unit.qa_model}"
                n = max(1, int(result.unit_row.get("n_messages") or 1))
                per_message[key] = max(per_message.get(key, 0.0), result.paid_usd / n)
                bar.update(1)
    except BaseException:
        for fut in in_flight:
            fut.cancel()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        bar.close()
        if ucache is not None:
            ucache.close()
        manifest.update(status="interrupted", spent_usd=spent, finished_at=now())
        rd.write_manifest(_redact_obj(manifest))
        raise
    if pool is not None:
        pool.shutdown(wait=True)
    bar.close()
    if ucache is not None:
        ucache.close()
    unit_ids = {u.unit_id for u in units}
    rd.write_tables(unit_ids)
    finished_ids = rd.finished_ids() & unit_ids
    stats = factory.stats() if isinstance(factory, ModelFactory) else {}
    if isinstance(factory, ModelFactory):
        factory.close()
    for k, v in extra_stats.items():
        stats[k] = stats.get(k, 0) + v
    manifest.update(status="stopped: budget" if stopped else "complete", finished_at=now(),
                    units_done=len(finished_ids), units_error=_count_errors(rd, unit_ids),
                    spent_usd=round(spent, 6),
                    cache={**manifest["cache"], "stats": stats},
                    unit_cache={**manifest["unit_cache"], "stored": stored},
                    timing={k: round(v, 4) for k, v in timing.items()})
    rd.write_manifest(_redact_obj(manifest))
    return RunResult(run_dir=rd.path, total=len(units), done=len(finished_ids), ran=ran,
                     skipped=len(units) - len(finished_ids), errors=errors, spent_usd=spent,
                     stopped_for_budget=stopped, wall_s=time.perf_counter() - t0,
                     cached=len(hits), executor=chosen)


def _strings(obj: Any, out: list[str]) -> list[str]:
    if isinstance(obj, str):
        if len(obj) >= 8:
            out.append(obj)
    elif isinstance(obj, Mapping):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _strings(v, out)
    return out


def _redact_result(result: UnitResult, secrets: Sequence[str]) -> UnitResult:
    """Model errors and model output can echo a key back: nothing reaches disk unmasked.

    Redacting string by string costs ~70 µs a Unit-row string (five regexes each), 4-5 s of
    main-thread CPU for a 64-Unit sweep, which serialised every Unit behind the journal
    writer. So the patterns run once over all the Unit's strings joined by newlines (no
    pattern consumes a newline from both sides of a match, and a secret inside one string is
    inside the joined text); only a Unit where that changes something is redacted string by
    string.
    """
    parts = (result.unit_row, result.probe_rows, result.turn_rows, result.summary_rows,
             result.event_rows)
    joined = "\n".join(_strings(list(parts), []))
    if _redact(joined, secrets) == joined:
        return result
    result.unit_row = _redact_obj(result.unit_row, secrets)
    result.probe_rows = _redact_obj(result.probe_rows, secrets)
    result.summary_rows = _redact_obj(result.summary_rows, secrets)
    result.event_rows = _redact_obj(result.event_rows, secrets)
    result.turn_rows = _redact_obj(result.turn_rows, secrets)
    return result


def _count_errors(rd: RunDir, unit_ids: set[str]) -> int:
    return sum(1 for r in rd.finished_rows() if r["unit_id"] in unit_ids and r.get("status") == "error")
