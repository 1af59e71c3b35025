from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool

import pytest

from rollsum_evals.run.pool import process_pool


def test_many_jobs_share_a_few_worker_processes() -> None:
    """--jobs 64 on two cores must not start 64 processes (their serial start-up delayed the
    last Units by ~1 s); every call still runs, outside the calling process."""
    pool = process_pool(64, cpus=2)
    try:
        assert pool.processes <= 4
        pids = [f.result(timeout=60) for f in [pool.submit(os.getpid) for _ in range(40)]]
    finally:
        pool.shutdown()
    assert os.getpid() not in pids
    assert 1 <= len(set(pids)) <= pool.processes


def test_an_exception_in_a_call_reaches_its_future_only() -> None:
    pool = process_pool(2, cpus=2)
    try:
        bad = pool.submit(int, "not a number")
        good = pool.submit(int, "7")
        with pytest.raises(ValueError, match="not a number"):
            bad.result(timeout=60)
        assert good.result(timeout=60) == 7
    finally:
        pool.shutdown()


def test_a_dead_worker_fails_pending_calls_instead_of_hanging() -> None:
    pool = process_pool(1, cpus=1)
    try:
        dying = pool.submit(os._exit, 3)
        with pytest.raises(BrokenProcessPool):
            dying.result(timeout=60)
        with pytest.raises(BrokenProcessPool):
            pool.submit(os.getpid)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def test_no_submit_after_shutdown() -> None:
    pool = process_pool(1, cpus=1)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(os.getpid)
