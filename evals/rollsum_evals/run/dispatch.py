"""Dispatching a sweep's jobs: longest expected first, as many in flight as ``--jobs``, none
started once the budget has refused a call, on threads, worker processes or Ray tasks
(`rollsum_evals.run.ray_executor`); every result
handed back in one thread.

The callback runs in the caller's thread, in Unit-id order among Units that finish together, so
journaling needs no locks and the journal order never depends on thread timing more than it
must. An interrupt (Ctrl-C, SIGTERM as KeyboardInterrupt) cancels what has not started and
re-raises; Units that were running are re-run whole by ``--resume``.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rollsum_evals.replay import EngineFactory
from rollsum_evals.run.budget import BudgetSpec
from rollsum_evals.run.model_factory import ModelBuilder
from rollsum_evals.run.pool import process_pool
from rollsum_evals.run.scheduler import Scheduler
from rollsum_evals.run.unit import Job, process_worker, thread_worker
from rollsum_evals.rundir.format import STATUS_STOPPED
from rollsum_evals.rundir.journal import UnitResult


class Dispatcher:
    def __init__(self, jobs: Sequence[Job], *, concurrency: int, executor: str, budget: BudgetSpec | None,
                 engine_factory: EngineFactory, models: ModelBuilder, injected_models: ModelBuilder | None,
                 cache_path: Path | None, secrets: Sequence[str], ray: Any = None, limiter: Any = None) -> None:
        self.jobs = {j.unit.unit_id: j for j in jobs}
        self.concurrency = concurrency
        self.executor = executor
        self.budget = budget
        self.account = budget.account() if budget is not None else None
        self.engine_factory = engine_factory
        self.models = models
        self.injected_models = injected_models
        """What a worker process may use instead of its own factory (must pickle)."""
        self.cache_path = cache_path
        self.secrets = list(secrets)
        self.queue = Scheduler([j.unit for j in jobs], lambda u: len(self.jobs[u.unit_id].conversation.messages))
        self.stopped_for_budget = False
        self.ray = ray
        """`rollsum_evals.run.ray_executor.RaySession` for ``--executor ray``."""
        self.limiter = limiter
        """The run's `RateLimiter` (for Ray: its limits go to the cluster's one limiter actor)."""

    def _submit(self, pool: Any, job: Job) -> cf.Future[Any]:
        if self.executor == "ray":
            return pool.submit(job)
        if self.executor == "process":
            return pool.submit(process_worker, job, str(self.cache_path) if self.cache_path else None,
                               self.engine_factory, self.injected_models, self.secrets, self.budget)
        return pool.submit(thread_worker, job, self.engine_factory, self.models, self.secrets, self.budget)

    def run(self, on_result: Callable[[Job, UnitResult], None]) -> None:
        if not self.jobs:
            return
        workers = min(self.concurrency, len(self.jobs))
        if self.executor == "ray":
            self._run_ray(on_result, workers)
            return
        pool: cf.Executor = (process_pool(workers) if self.executor == "process"
                             else cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="unit"))
        self._loop(pool, on_result, lambda fut: fut.result())

    def _run_ray(self, on_result: Callable[[Job, UnitResult], None], workers: int) -> None:
        """Units as Ray tasks: the cluster's cache reader, limiter and account serve them; the
        account's last state is written back to the run's account file, whatever happens."""
        from rollsum_evals.run.ray_executor import ClusterServices, RayPool

        services = ClusterServices(self.ray, cache_path=self.cache_path, limiter=self.limiter, budget=self.budget)
        try:
            if services.services.budget is not None:
                self.account = services.services.budget.account()
            pool = RayPool(self.ray, services, concurrency=workers, engine_factory=self.engine_factory,
                           injected=self.injected_models, secrets=self.secrets)
            self._loop(pool, on_result, pool.result)
        finally:
            services.close()

    def _loop(self, pool: Any, on_result: Callable[[Job, UnitResult], None],
              result_of: Callable[[cf.Future[Any]], UnitResult]) -> None:
        in_flight: dict[cf.Future[Any], Job] = {}
        try:
            while self.queue or in_flight:
                self._fill(pool, in_flight)
                if not in_flight:
                    break
                finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                for fut in sorted(finished, key=lambda f: in_flight[f].unit.unit_id):
                    job = in_flight.pop(fut)
                    result = result_of(fut)
                    self.queue.observe(job.unit, result.wall_s)
                    self.stopped_for_budget |= result.status == STATUS_STOPPED
                    on_result(job, result)
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def _fill(self, pool: Any, in_flight: dict[cf.Future[Any], Job]) -> None:
        while self.queue and len(in_flight) < self.concurrency and not self.stopped_for_budget:
            if self.account is not None and self.account.state().stopped:
                self.stopped_for_budget = True  # a call was refused: no further Unit starts
                return
            nxt = self.queue.pop()
            in_flight[self._submit(pool, self.jobs[nxt.unit_id])] = self.jobs[nxt.unit_id]
