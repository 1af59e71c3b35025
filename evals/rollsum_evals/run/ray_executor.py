"""``--executor ray``: a sweep's Units (and ``rollsum score``'s re-scoring) as Ray tasks on a
cluster, with one writer, caches that serve every node, and limits that hold cluster-wide.
A sweep's Units are actor tasks on a pool of threaded `UnitRunner` actors spread over the
nodes (the local process pool's shape); ``rollsum score`` runs one plain task a conversation.

Design (docs/architecture.md, "Running on a Ray cluster"):

- **One writer.** The driver (the ``rollsum`` process) alone writes the run directory: the
  journal, lock, tables, manifest, ``budget.json``, the model cache and the Unit cache. A task
  gets its Unit, conversation and scoring plan through Ray's object store (each conversation
  and the plan are put once) and returns the Unit's journal lines, its scores and the model
  answers it had to fetch; nothing on a worker node touches a file of the run.
- **Caches across the cluster.** The driver looks every Unit up in the Unit cache before
  dispatch (as with the local executors), so a cached Unit is never sent anywhere. A task's
  model calls read the driver's model cache through one reader actor pinned to the driver's
  node (read-only SQLite there), and the answers a task had to fetch come back with its
  result; the driver stores them. A re-run therefore makes no model call and no replay.
- **Limits cluster-wide.** One rate-limiter actor (requests and tokens per minute, and the
  provider's ``retry-after`` pausing everyone) and one spend-account actor (`LocalAccount`)
  serve every worker, so ``requests_per_minute`` and ``--max-cost-usd`` hold with N workers as
  with one. The driver writes the account's final state to ``budget.json``.
- **Faults.** A Unit whose runner or node dies is run again by Ray elsewhere (the runner
  actor is restarted on a live node and its calls retried); its paid calls stay reserved in
  the account (conservative) and its model answers, never returned, are fetched again. A
  killed driver takes its actors with it; ``--resume`` continues from the journal like any
  other run.

Ray is imported only here, and only when asked for: the harness runs without the extra.

Over ~400 lines because it is the one place that knows Ray: connecting, the three actors and
the worker-side views of them, the runner pool and ``rollsum score``'s tasks. Split, each
piece would import Ray's conventions (lazy import, object refs, actor handles) on its own.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.models.base import Completion
from rollsum.models.cache import CacheFile
from rollsum.models.limits import RateLimiter
from rollsum.redact import redact_process_output
from rollsum_evals.replay import EngineFactory
from rollsum_evals.run.breaker import GuardedBuilder
from rollsum_evals.run.budget import AccountState, BudgetSpec, FileAccount, LocalAccount
from rollsum_evals.run.model_factory import ModelBuilder, ModelFactory
from rollsum_evals.run.unit import Job, metered_builder, run_job, score_group
from rollsum_evals.rundir.journal import UnitResult

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'rollsum[ray]'"
CONNECT_TIMEOUT_S = 5.0
"""How long an address may take to accept a TCP connection before it counts as unreachable:
an unreachable cluster is one line and exit 2 in seconds, not Ray's minute of retries."""
TASK_RETRIES = 3
"""Ray re-runs a Unit whose worker process or node died this many times (on another node when
its own is gone). A Unit's own failure is an ``error`` row, never an exception, so only
system failures are retried."""

CacheEntry = tuple[str, str, str, dict[str, Any], float]
"""A model answer a task fetched: key, model name, prompt id, completion, time."""


def import_ray() -> Any:
    """Ray, or one line saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--ray-address {address!r}: expected HOST:PORT of a Ray head node (its GCS port, "
                          "6379 by default)")
    return host.strip("[]"), int(port)


def _probe(host: str, port: int, timeout: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__)
        raise ConfigError(f"--ray-address {host}:{port}: no Ray cluster answers there ({reason} after "
                          f"at most {timeout:g}s); start one with `ray start --head` or fix the address") from None


@dataclass(slots=True)
class RaySession:
    """A connection to a Ray cluster for one command; `close` disconnects (and stops the local
    Ray it started)."""

    ray: Any
    address: str
    nodes: int
    cpus: float
    local: bool
    """Ray was started by this command on this machine (no --ray-address)."""
    owned: bool
    """This command called ``ray.init`` (and so calls ``ray.shutdown``)."""
    driver_node: str

    def describe(self) -> dict[str, Any]:
        """For the manifest: where the run ran."""
        return {"address": self.address, "nodes": self.nodes, "cpus": self.cpus, "local": self.local}

    def alive_nodes(self) -> int:
        return sum(1 for n in self.ray.nodes() if n.get("Alive"))

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()


def connect(address: str | None, *, timeout: float = CONNECT_TIMEOUT_S) -> RaySession:
    """Join the cluster at `address` (HOST:PORT), or start a private local Ray bound to
    127.0.0.1 with no dashboard and no usage statistics. A process that already called
    ``ray.init`` (a notebook, a test) is used as it is."""
    ray = import_ray()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    owned = not ray.is_initialized()
    local = False
    if owned:
        quiet = {"logging_level": logging.WARNING, "configure_logging": False}
        if address:
            host, port = _parse_address(address)
            _probe(host, port, timeout)
            try:
                ray.init(address=f"{host}:{port}", **quiet)
            except (ConnectionError, RuntimeError, TimeoutError, ValueError) as err:
                raise ConfigError(f"--ray-address {address}: cannot join the Ray cluster there "
                                  f"({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
        else:
            local = True
            ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1", **quiet)
    context = ray.get_runtime_context()
    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    return RaySession(ray=ray, address=str(context.gcs_address), nodes=nodes,
                      cpus=float(ray.cluster_resources().get("CPU", 1.0)), local=local, owned=owned,
                      driver_node=str(context.get_node_id()))


# ----------------------------------------------------------------------------------------------
# actors (their classes; `_actors` makes them remote with the session's Ray)


class CacheReader:
    """The driver's model cache, read-only, on the driver's node: what every task asks before
    it calls a model."""

    def __init__(self, path: str) -> None:
        self.file = CacheFile(path, "read-only")

    def lookup(self, key: str) -> dict[str, Any] | None:
        hit = self.file.lookup(key)
        return None if hit is None else hit.to_dict()


class AccountActor:
    """The cluster's one spend account (`LocalAccount`)."""

    def __init__(self, state: AccountState) -> None:
        self.account = LocalAccount(state)

    def state(self) -> AccountState:
        return self.account.state()

    def reserve(self, usd: float) -> bool:
        return self.account.reserve(usd)

    def settle(self, reserved: float, actual: float) -> None:
        self.account.settle(reserved, actual)


class LimiterActor:
    """The cluster's one rate limiter; callers wait on their own side (`ActorLimiter`)."""

    def __init__(self, requests_per_min: float | None, tokens_per_min: float | None) -> None:
        self.limiter = RateLimiter(requests_per_min, tokens_per_min)

    def try_acquire(self, tokens: int) -> float:
        return self.limiter.try_acquire(tokens)

    def settle(self, reserved: int, actual: int) -> None:
        self.limiter.settle(reserved, actual)

    def pause(self, seconds: float) -> None:
        self.limiter.pause(seconds)


class ActorLimiter:
    """A worker's view of the limiter actor (`rollsum.models.limits.Limiter`)."""

    def __init__(self, actor: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.actor = actor
        self._sleep = sleep

    def acquire(self, tokens: int = 0) -> float:
        import ray

        waited = 0.0
        while True:
            wait = float(ray.get(self.actor.try_acquire.remote(tokens)))
            if wait <= 0.0:
                return waited
            self._sleep(wait)
            waited += wait

    def settle(self, reserved: int, actual: int) -> None:
        import ray

        ray.get(self.actor.settle.remote(reserved, actual))

    def pause(self, seconds: float) -> None:
        import ray

        ray.get(self.actor.pause.remote(seconds))


class RemoteCacheFile(CacheFile):
    """A task's model cache: hits from the driver's cache (through `CacheReader`) or from this
    task's own answers; answers it fetched are kept to travel back to the driver, which alone
    writes the cache. A `CacheFile` so that `CachedModel` shares it as it shares a local one."""

    def __init__(self, reader: Any, path: str) -> None:  # no file of its own: nothing to open
        self.path = Path(path)
        self.mode = "on"
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections = []
        self._warned = False
        self._reader = reader
        self._new: dict[str, CacheEntry] = {}

    def lookup(self, key: str) -> Completion | None:
        import ray

        with self._lock:
            own = self._new.get(key)
        if own is not None:
            return Completion.from_dict(own[3], cached=True)
        hit = ray.get(self._reader.lookup.remote(key))
        return None if hit is None else Completion.from_dict(hit, cached=True)

    def store(self, key: str, model_name: str, prompt_id: str, completion: Completion, now: float) -> bool:
        with self._lock:
            self._new[key] = (key, model_name, prompt_id, completion.to_dict(), now)
        return True

    def entries(self) -> list[CacheEntry]:
        with self._lock:
            return list(self._new.values())

    def close(self) -> None:
        return None


def store_entries(file: CacheFile | None, entries: Sequence[CacheEntry]) -> int:
    """The driver writes what a task fetched into its model cache (redacted as always)."""
    if file is None:
        return 0
    return sum(file.store(key, name, prompt, Completion.from_dict(d), now) for key, name, prompt, d, now in entries)


@dataclass(frozen=True, slots=True)
class Services:
    """Actor handles a task needs: plain, picklable."""

    cache_reader: Any = None
    cache_path: str | None = None
    limiter: Any = None
    budget: BudgetSpec | None = None


def task_factory(services: Services) -> tuple[ModelFactory, RemoteCacheFile | None]:
    """A worker's model factory: the cluster's cache, limiter and account."""
    remote = (RemoteCacheFile(services.cache_reader, services.cache_path)
              if services.cache_reader is not None and services.cache_path else None)
    factory = ModelFactory(cache_path=Path(services.cache_path) if remote is not None and services.cache_path
                           else None,
                           limiter=ActorLimiter(services.limiter) if services.limiter is not None else None,
                           budget=services.budget, _file=remote)
    return factory, remote


def unit_task(job: Job, engine_factory: EngineFactory, injected: ModelBuilder | None, secrets: Sequence[str],
              services: Services) -> tuple[UnitResult, list[CacheEntry]]:
    """One Unit on a worker: what `process_worker` does, with the cluster's services."""
    redact_process_output()
    factory, remote = task_factory(services)
    try:
        result = run_job(job, engine_factory=engine_factory, models=GuardedBuilder(injected or factory),
                         secrets=secrets, budget=services.budget)
    finally:
        factory.close()
    result.cache_stats = factory.stats()
    return result, remote.entries() if remote is not None else []


def _unit_task_unpacked(unit: Any, conversation: Any, plan: Any, stored: Any, stored_in_run: bool,
                        engine_factory: EngineFactory, injected: ModelBuilder | None, secrets: Sequence[str],
                        services: Services) -> tuple[UnitResult, list[CacheEntry]]:
    """`unit_task` with the conversation and plan as separate arguments, so that each travels
    through the object store once (Ray resolves top-level object refs before the call)."""
    job = Job(unit, conversation, plan, stored=stored, stored_in_run=stored_in_run)
    return unit_task(job, engine_factory, injected, secrets, services)


class ClusterServices:
    """The actors of one command on the cluster, and the driver's side of them: the model
    cache it writes and the account file it keeps."""

    def __init__(self, session: RaySession, *, cache_path: Path | None, limiter: RateLimiter | None,
                 budget: BudgetSpec | None) -> None:
        ray = session.ray
        self.session = session
        pin = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(session.driver_node, soft=False)
        self.cache_file: CacheFile | None = None
        reader = None
        if cache_path is not None:
            try:
                self.cache_file = CacheFile(cache_path, "on")  # created now, so the reader can open it
                reader = ray.remote(CacheReader).options(num_cpus=0, max_concurrency=64,
                                                         scheduling_strategy=pin).remote(str(cache_path))
            except (ConfigError, OSError) as err:
                log.warning("model cache %s unusable (%s): model calls are not cached", cache_path, err)
        limiter_actor = None
        if limiter is not None:
            limiter_actor = ray.remote(LimiterActor).options(num_cpus=0, scheduling_strategy=pin).remote(
                limiter.requests_per_min, limiter.tokens_per_min)
        self.account_file: FileAccount | None = None
        shared_budget = None
        if budget is not None:
            self.account_file = FileAccount(Path(budget.path))
            actor = ray.remote(AccountActor).options(num_cpus=0, max_concurrency=1, scheduling_strategy=pin).remote(
                self.account_file.state())
            shared_budget = BudgetSpec(budget.path, budget.cap, actor=actor)
        self._actors = [a for a in (reader, limiter_actor, shared_budget.actor if shared_budget else None)
                        if a is not None]
        self.services = Services(cache_reader=reader, cache_path=str(cache_path) if reader is not None else None,
                                 limiter=limiter_actor, budget=shared_budget)
        self.written = 0

    def accept(self, entries: Sequence[CacheEntry]) -> None:
        self.written += store_entries(self.cache_file, entries)

    def close(self) -> None:
        """The account actor's last state goes to ``budget.json`` (read for the manifest's spend)."""
        budget = self.services.budget
        if budget is not None and self.account_file is not None:
            try:
                self.account_file.record(budget.account().state())
            except Exception as err:  # the actor is gone with a dying cluster: keep what the file has
                log.warning("spend account: the cluster's last state could not be read (%s)", err)
        if self.cache_file is not None:
            self.cache_file.close()
        for actor in self._actors:  # now, not when Ray shuts down under an open SQLite file
            try:
                self.session.ray.kill(actor)
            except Exception as err:
                log.debug("actor already gone: %s", err)


class UnitRunner:
    """A worker process of the cluster's pool: runs Units on `max_concurrency` threads (a Unit
    mostly waits on its model), as a local worker process does."""

    def __init__(self) -> None:
        redact_process_output()

    def ready(self) -> bool:
        return True

    def run(self, unit: Any, conversation: Any, plan: Any, stored: Any, stored_in_run: bool,
            engine_factory: EngineFactory, injected: ModelBuilder | None, secrets: Sequence[str],
            services: Services) -> tuple[UnitResult, list[CacheEntry]]:
        return _unit_task_unpacked(unit, conversation, plan, stored, stored_in_run, engine_factory, injected,
                                   secrets, services)


RUNNERS_PER_CPU = 1
"""One runner actor (a process whose threads run Units) per CPU: the process gives the CPU
parallelism, its threads overlap model latency, so a second runner per CPU only adds its start-up
(each imports the harness cold, where the process pool forks from a preloaded forkserver). On
bench_sweep (64 Units, 2 cores, quiet machine, interleaved medians): 2 runners a CPU 1.36× the
process pool's wall, 1 a CPU 1.23×–1.28×. One Ray worker process per Unit in flight (plain tasks
with fractional CPUs) cost 2.83×."""


class RayPool:
    """Submits Units as actor tasks to a pool of `UnitRunner` actors spread over the cluster
    (at most `concurrency` in flight is the dispatcher's job) and hands back
    `concurrent.futures` futures; `result` stores the model answers a Unit fetched.

    A runner whose process or node dies is restarted on a live node and the Units it held are
    run again (``max_restarts``, ``max_task_retries``)."""

    def __init__(self, session: RaySession, services: ClusterServices, *, concurrency: int,
                 engine_factory: EngineFactory, injected: ModelBuilder | None, secrets: Sequence[str]) -> None:
        ray = session.ray
        self.ray = ray
        self.services = services
        runners = max(1, min(concurrency, RUNNERS_PER_CPU * max(1, int(session.cpus))))
        threads = -(-concurrency // runners)
        cls = ray.remote(UnitRunner).options(num_cpus=0, max_concurrency=threads, max_restarts=TASK_RETRIES,
                                             max_task_retries=TASK_RETRIES, scheduling_strategy="SPREAD")
        self._runners = [cls.remote() for _ in range(runners)]
        self._load = [0] * runners
        self._engine = ray.put(engine_factory)
        self._injected = ray.put(injected)
        self._secrets = list(secrets)
        self._objects: dict[Any, Any] = {}
        self._refs: dict[cf.Future[Any], tuple[Any, int]] = {}
        self._lock = threading.Lock()

    def _ref(self, key: Any, value: Any) -> Any:
        if key not in self._objects:
            self._objects[key] = self.ray.put(value)
        return self._objects[key]

    def submit(self, job: Job) -> cf.Future[Any]:
        """A future of the task's ``(UnitResult, model answers)``; `result` unpacks it."""
        u = job.unit
        conv = self._ref(("conv", u.dataset, u.conversation_id), job.conversation)
        plan = self._ref(("plan", id(job.plan)), job.plan)
        with self._lock:
            i = min(range(len(self._load)), key=self._load.__getitem__)  # the least busy runner
            self._load[i] += 1
        ref = self._runners[i].run.remote(u, conv, plan, job.stored, job.stored_in_run, self._engine,
                                          self._injected, self._secrets, self.services.services)
        fut: cf.Future[Any] = ref.future()
        with self._lock:
            self._refs[fut] = (ref, i)
        return fut

    def result(self, fut: cf.Future[Any]) -> UnitResult:
        """In the driver's thread: the task's `UnitResult`, its model answers stored in the
        driver's cache; a task's own exception raised as itself."""
        with self._lock:
            _, i = self._refs.pop(fut, (None, -1))
            if i >= 0:
                self._load[i] -= 1
        try:
            result, entries = fut.result()
        except BaseException as err:
            raise unwrap(err) from None
        self.services.accept(entries)
        assert isinstance(result, UnitResult)
        return result

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """End the runners; Units still running in them (an interrupted sweep) are re-run by
        ``--resume``."""
        with self._lock:
            self._refs.clear()
        for runner in self._runners:
            try:
                self.ray.kill(runner, no_restart=True)
            except Exception as err:  # a runner already gone with its node
                log.debug("runner: %s", err)


def unwrap(err: BaseException) -> BaseException:
    """A task's own exception (a `SweepStop` from a refused key) as itself, not Ray's wrapper."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err


# ----------------------------------------------------------------------------------------------
# rollsum score on the cluster


def _score_task(items: Sequence[Any], conversation: Any, plan: Any, injected: ModelBuilder | None,
                wants_model: bool, secrets: Sequence[str],
                services: Services) -> tuple[dict[str, Any], list[CacheEntry]]:
    """One conversation's Units scored on a worker (`rollsum_evals.run.unit.score_group`)."""
    redact_process_output()
    factory, remote = task_factory(services)  # behind the cluster's account (`services.budget`)
    models = metered_builder(injected, services.budget) if injected is not None else factory
    try:
        scored = score_group(items, conversation, plan, models if wants_model else None, secrets)
    finally:
        factory.close()
    return scored, remote.entries() if remote is not None else []


def rescore_on_cluster(session: RaySession, groups: Mapping[tuple[str, str], Sequence[Any]],
                       convs: Mapping[tuple[str, str], Any], plan: Any, *, jobs: int, cache_path: Path | None,
                       injected: ModelBuilder | None, secrets: Sequence[str],
                       advance: Callable[[int], object] = lambda n: None,
                       budget: BudgetSpec | None = None) -> dict[str, Any]:
    """`rollsum score` with each conversation's Units as one task, at most `jobs` in flight;
    returns what `score_group` returns, for all of them. The driver stores the model answers
    the tasks fetched (a QA scorer's), as a sweep does, and with `budget` (the run's account,
    when the scoring models cost money) the tasks' calls are charged to it, as a sweep's are:
    a paid re-score on the cluster recorded nothing of what it spent."""
    ray = session.ray
    wants_model = cache_path is not None or injected is not None
    services = ClusterServices(session, cache_path=cache_path, limiter=None, budget=budget)
    share = min(1.0, max(0.01, session.cpus / max(1, jobs)))
    task = ray.remote(_score_task).options(num_cpus=round(share, 2), max_retries=TASK_RETRIES,
                                           retry_exceptions=False)
    plan_ref, injected_ref = ray.put(plan), ray.put(injected)
    todo = list(groups.items())
    pending: list[Any] = []
    scored: dict[str, Any] = {}
    try:
        while todo or pending:
            while todo and len(pending) < jobs:
                key, items = todo.pop(0)
                pending.append(task.remote(list(items), ray.put(convs[key]), plan_ref, injected_ref, wants_model,
                                           list(secrets), services.services))
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                out, entries = ray.get(ready[0])
            except BaseException as err:
                raise unwrap(err) from None
            services.accept(entries)
            scored.update(out)
            advance(len(out))  # the progress bar: Units scored
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception as err:
                log.debug("cancel: %s", err)
        raise
    finally:
        services.close()
    return scored
