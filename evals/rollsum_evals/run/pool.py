"""Executors for a sweep: threads, or worker processes that each run several Units on threads.

Threads suit API-bound Units (the GIL is released while a model call waits); processes suit the
replay itself, which is CPU-bound Python. `choose_executor` picks between them for ``auto``.

Worker processes must import the *installed* packages whatever the current directory holds.
They come from a forkserver, which CPython starts as ``python -c ...``: that puts the current
directory first on its ``sys.path`` (and, before 3.13, ignores the parent's path), so running
``rollsum run`` from a directory holding another ``rollsum/`` folder made every worker import
that folder. The forkserver is therefore started with ``PYTHONSAFEPATH=1`` (`_safe_forkserver`),
which keeps the current directory off its path; the parent's own path is unchanged.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import math
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from rollsum.errors import RollsumError
from rollsum.redact import redact_process_output

EXECUTORS = ("auto", "thread", "process", "ray")
"""``ray``: Units as tasks on a Ray cluster (`rollsum_evals.run.ray_executor`; the ``ray`` extra)."""
_PRELOAD = ["rollsum_evals.run.unit", "rollsum_evals.scoring", "rollsum.models"]
_AUTO_MIN_MESSAGES = 4000
"""Below this many replayed messages the replay CPU (~0.6 ms a message) is smaller than what
starting worker processes costs, so ``auto`` keeps threads."""
_START_LOCK = threading.Lock()


@contextlib.contextmanager
def _safe_path_env() -> Iterator[None]:
    """``PYTHONSAFEPATH=1`` while the forkserver is spawned (it copies the environment then)."""
    with _START_LOCK:
        old = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("PYTHONSAFEPATH", None)
            else:
                os.environ["PYTHONSAFEPATH"] = old


def _safe_forkserver() -> None:
    """Start (or reuse) the forkserver so that it never imports from the current directory."""
    with _safe_path_env():
        multiprocessing.forkserver.ensure_running()


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
        _safe_forkserver()
        return ctx
    return multiprocessing.get_context("spawn")


def process_pool(jobs: int, cpus: int | None = None) -> ProcessThreadPool:
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
    gets a ``None``. Results (or the exception) go back tagged with the call's id. What the
    process prints (a warning through logging's last-resort handler) is redacted: its stderr
    is the terminal's, and the CLI's redaction lives in the parent."""
    redact_process_output()
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


class WorkerLost(RollsumError):
    """A sweep stopped because a worker process died (the out-of-memory killer, an operator's
    kill): one line that says how far it got and how to continue, not a traceback."""


def _how_it_ended(exitcode: int | None) -> str:
    """``was killed by SIGKILL (the out-of-memory killer sends it)`` or ``exited with code 3``:
    what an operator needs to tell a worker the kernel killed from one that failed."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the out-of-memory killer sends it)" if exitcode == -signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {exitcode}"


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
                gone = alive.pop(sentinel, None)
                if gone is not None and not self._closing:
                    reason = f"worker process {gone.pid} {_how_it_ended(gone.exitcode)} while Units were running"
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


