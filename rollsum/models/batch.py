"""Independent calls at half price: Anthropic's Message Batches API behind the `Model` seam.

QA answers and judge grades do not depend on each other, so they need not be paid at list
price one by one: a Message Batch takes them all at once for half the price and answers within
24 hours (usually minutes). `prefetch` sends the requests a caller is about to make as one
batch, waits for it, and hands the answers to the model that would have made the calls
(`AnthropicModel.serve`); the caller then calls `complete` as usual, so the cache, the budget
and the meters above the model see ordinary calls and store what the batch answered.

What makes it safe to pay for:

- Requests are matched by ``custom_id``, which is the request's cache key (`batch_key`): results
  come back in any order, and the same request never goes twice into one batch.
- A request the cache already answers is not sent.
- The batch id is written to disk (`BatchStore`, next to the model cache) as soon as the API
  returns it, before any polling. A run killed while it waits finds the batch there on resume
  and reads its results instead of creating (and paying for) a new one; results stay readable
  for 29 days.
- Polling backs off (``poll_s`` doubling up to ``max_poll_s``) through an injected `sleep`
  and `clock`; after ``timeout_s`` the requests fail with a timeout, and the batch stays on disk
  for the next resume.
- Requests that come back ``errored`` (a retryable error), ``expired`` or ``canceled`` go into
  a new batch, up to ``retries`` more times; what still fails is a `ModelError` for that request
  alone. A batch whose creation failed (429, 5xx) is sent again after a back-off that honours
  the server's ``retry-after``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rollsum.errors import ErrorKind, ModelError, retry_wait
from rollsum.models.base import Completion, CompletionRequest, Model
from rollsum.redact import redacting_logger
from rollsum.types import Usage

log = redacting_logger(__name__)

BATCH_DISCOUNT = 0.5
"""A Message Batch is billed at half the list price (input and output)."""
BATCH_DIR = "batches"
"""Under the model cache's directory: where batch ids wait for a resume."""
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_ERROR_KINDS = {
    "rate_limit_error": ErrorKind.RATE_LIMIT, "overloaded_error": ErrorKind.SERVER,
    "api_error": ErrorKind.SERVER, "timeout_error": ErrorKind.TIMEOUT,
    "gateway_timeout_error": ErrorKind.TIMEOUT, "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
}


def _counts(batch: Any) -> str:
    """A batch's request counts as a user reads them ("3 processing, 1 succeeded"); "" unknown."""
    counts = getattr(batch, "request_counts", None)
    said = [f"{n} {name}" for name in ("processing", "succeeded", "errored", "expired", "canceled")
            if isinstance(n := getattr(counts, name, 0), int) and n]
    return ", ".join(said) or "no counts yet"


_ERROR_STATUS = {"not_found_error": 404, "invalid_request_error": 400}
"""The HTTP status a Messages API call would have answered with: what stops a sweep whose model
is not served (404) or refuses every request as invalid (400) says the same of a batch."""


@runtime_checkable
class BatchTarget(Protocol):
    """A model that can take its calls as a Message Batch (`AnthropicModel`)."""

    @property
    def name(self) -> str: ...

    @property
    def client(self) -> Any: ...

    def batch_key(self, request: CompletionRequest) -> str: ...

    def batch_params(self, request: CompletionRequest) -> dict[str, Any]: ...

    def batch_completion(self, message: Any) -> Completion: ...

    def serve(self, answers: dict[str, Completion | ModelError]) -> None: ...


@runtime_checkable
class BatchBudget(Protocol):
    """A wrapper that meters spend (the harness's ``--max-cost-usd`` account). A batch is paid
    for when it is created, not when its answers are used: it is reserved before `create`
    (`reserve_batch` raises a `ModelError` to refuse it) and charged what its results billed."""

    def reserve_batch(self, requests: Sequence[CompletionRequest]) -> float: ...

    def settle_batch(self, reserved: float, billed: Usage | None) -> None:
        """`billed`: the results' usage (charged at the batch price); None: unknown (results
        unread), the whole reservation is charged."""


@dataclass(frozen=True, slots=True)
class BatchRecord:
    id: str
    model: str
    custom_ids: tuple[str, ...]


class BatchStore:
    """Batch ids on disk, one small JSON file per batch, written atomically (temp file, then
    rename), so concurrent Units and worker processes never rewrite each other's records.
    Without a directory it keeps them in memory (no resume)."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self._memory: list[BatchRecord] = []
        self._lock = threading.Lock()

    def add(self, record: BatchRecord) -> None:
        if self.directory is None:
            with self._lock:
                self._memory.append(record)
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{_SAFE.sub('_', record.id)}.json"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"id": record.id, "model": record.model,
                                   "custom_ids": list(record.custom_ids)}), encoding="utf-8")
        os.replace(tmp, path)

    def records(self) -> list[BatchRecord]:
        """Every batch recorded so far, oldest first."""
        if self.directory is None:
            with self._lock:
                return list(self._memory)
        if not self.directory.is_dir():
            return []
        out: list[tuple[float, BatchRecord]] = []
        for path in self.directory.glob("*.json"):
            try:
                d = json.loads(path.read_text(encoding="utf-8"))
                out.append((path.stat().st_mtime, BatchRecord(str(d["id"]), str(d.get("model", "")),
                                                              tuple(str(i) for i in d["custom_ids"]))))
            except (OSError, ValueError, KeyError, TypeError) as err:
                log.warning("batch record %s unreadable (%s): ignored", path, err)
        return [r for _, r in sorted(out, key=lambda t: (t[0], t[1].id))]


Answer = Completion | ModelError


@dataclass
class BatchRunner:
    """Sends requests as Message Batches and collects one answer (or error) per ``custom_id``."""

    target: BatchTarget
    store: BatchStore
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    poll_s: float = 10.0
    max_poll_s: float = 300.0
    timeout_s: float = 24 * 3600.0
    retries: int = 2
    backoff_s: float = 1.0
    """Wait before sending a batch again after its creation failed (doubling, or the server's
    retry-after when longer; at most `max_retry_after_s`): `rollsum.errors.retry_wait`."""
    max_retry_after_s: float = 60.0
    read_retries: int = 5
    """More tries of a poll or results download that failed transiently (`_read`)."""
    budget: BatchBudget | None = None
    """Charged for each batch (`BatchBudget`); None: no account."""
    created: int = 0
    """Batches this runner created (a resume that finds its batch creates none)."""

    def run(self, requests: Mapping[str, CompletionRequest]) -> dict[str, Answer]:
        pending = dict(requests)
        answers: dict[str, Answer] = {}
        attempts: dict[str, int] = {}
        create_failures = 0
        for record in self.store.records():  # a killed run's batches first: already paid for
            ids = [i for i in record.custom_ids if i in pending]
            if not ids:
                continue
            log.info("batch %s: resuming (%d request(s))", record.id, len(ids))
            self._settle(record.id, ids, pending, answers, attempts, 0.0)
        while pending:
            todo = [i for i in pending if attempts.get(i, 0) <= self.retries
                    and (i not in answers or _retryable(answers[i]))]
            for i in [i for i in pending if i not in todo]:
                pending.pop(i)
            if not todo:
                break
            reserved = 0.0
            if self.budget is not None:
                try:
                    reserved = self.budget.reserve_batch([pending[i] for i in todo])
                except ModelError as refused:  # the account's cap: nothing is sent
                    for i in todo:
                        answers[i] = refused
                    break
            try:
                batch = self.target.client.messages.batches.create(
                    requests=[{"custom_id": i, "params": self.target.batch_params(pending[i])} for i in todo])
            except Exception as err:  # nothing was created: the next round tries again, after a wait
                if self.budget is not None:
                    self.budget.settle_batch(reserved, Usage())
                failed = _classify(err)
                for i in todo:
                    attempts[i] = attempts.get(i, 0) + 1
                    answers[i] = failed
                if not failed.retryable:
                    break
                if any(attempts[i] <= self.retries for i in todo):
                    # a 429 or 529 sent again at once fails again at once (all tries used up in a
                    # millisecond, every request of the Unit failed): back off, as long as the
                    # server's retry-after asks
                    self.sleep(retry_wait(create_failures, self.backoff_s, failed.retry_after,
                                          self.max_retry_after_s))
                create_failures += 1
                continue
            self.created += 1
            self.store.add(BatchRecord(str(batch.id), self.target.name, tuple(todo)))
            log.info("batch %s: created with %d request(s)", batch.id, len(todo))
            self._settle(str(batch.id), todo, pending, answers, attempts, reserved)
        return answers

    def _settle(self, batch_id: str, ids: Sequence[str], pending: dict[str, CompletionRequest],
                answers: dict[str, Answer], attempts: dict[str, int], reserved: float) -> None:
        """Collect a batch into `answers`; the account (if any) is charged what its results
        billed, or (results unread: still running, gone) the whole reservation, as it may be
        billed still. A resumed batch (``reserved`` 0: its invocation was killed before it
        settled) is charged when read."""
        for i in ids:
            attempts[i] = attempts.get(i, 0) + 1
        try:
            got = self._collect(batch_id)
        except ModelError as err:
            if self.budget is not None:
                self.budget.settle_batch(reserved, None)
            for i in ids:
                if isinstance(answers.get(i), Completion):
                    continue
                if err.kind is ErrorKind.TIMEOUT:  # still running: never re-sent in this run (it
                    answers[i] = err               # may yet answer; a resume reads it from the store)
                    pending.pop(i, None)
                else:  # unreadable (results gone, say): a new batch may ask again
                    answers[i] = ModelError(str(err), ErrorKind.SERVER, status=err.status)
            return
        if self.budget is not None:
            billed = Usage()  # what this run asked of it (a resumed batch's other answers were charged before)
            for answer in (got[i] for i in ids if i in got):
                used = answer.usage if isinstance(answer, Completion) else answer.billed
                if used is not None:
                    billed = billed + used
            self.budget.settle_batch(reserved, billed)
        missing = ModelError(f"batch {batch_id} returned no result for the request", ErrorKind.SERVER)
        for i in ids:
            answer = got.get(i, missing)
            if isinstance(answer, Completion):
                answers[i] = answer
                pending.pop(i, None)
            elif not isinstance(answers.get(i), Completion):
                answers[i] = answer

    def _collect(self, batch_id: str) -> dict[str, Answer]:
        batches = self.target.client.messages.batches
        delay = self.poll_s
        start = self.clock()
        while True:
            batch = self._read(lambda: batches.retrieve(batch_id))
            if batch.processing_status == "ended":
                break
            if self.clock() - start + delay > self.timeout_s:
                raise ModelError(f"batch {batch_id} still {batch.processing_status} after "
                                 f"{self.timeout_s:.0f}s: resume the run to collect it", ErrorKind.TIMEOUT)
            # a batch takes minutes to hours and nothing else moves meanwhile: say it is waiting
            # (the command line shows these lines by default), or a sweep looks hung
            log.info("batch %s: %s, %s; next check in %.0f s (%.0f s so far)", batch_id, batch.processing_status,
                     _counts(batch), delay, self.clock() - start)
            self.sleep(delay)
            delay = min(delay * 2, self.max_poll_s)
        lines = self._read(lambda: list(batches.results(batch_id)))
        return {str(line.custom_id): self._answer(batch_id, line.result) for line in lines}

    def _read(self, call: Callable[[], Any]) -> Any:
        """A poll or a results download: free, so a transient failure (429, 5xx, a dropped
        connection, also in the middle of the results) is read again, up to `read_retries` more
        times with the create back-off. It used to end the batch's collection, and its requests
        went into a new batch: paid for a second time."""
        for n in range(self.read_retries + 1):
            try:
                return call()
            except Exception as exc:
                err = _classify(exc)
                if not err.retryable or n == self.read_retries:
                    if err is exc:
                        raise
                    raise err from exc
                self.sleep(retry_wait(n, self.backoff_s, err.retry_after, self.max_retry_after_s))
        raise AssertionError("unreachable")  # pragma: no cover

    def _answer(self, batch_id: str, result: Any) -> Answer:
        kind = getattr(result, "type", "")
        if kind == "succeeded":
            try:
                return self.target.batch_completion(result.message)
            except ModelError as err:
                return err
        if kind == "errored":
            error = getattr(getattr(result, "error", None), "error", None)
            etype = str(getattr(error, "type", "") or "error")
            detail = str(getattr(error, "message", "") or "")
            return ModelError(f"batch {batch_id}: request errored ({etype}: {detail})",
                              _ERROR_KINDS.get(etype, ErrorKind.CLIENT),
                              status=_ERROR_STATUS.get(etype))
        if kind in ("expired", "canceled"):
            return ModelError(f"batch {batch_id}: request {kind} before it was processed", ErrorKind.TIMEOUT)
        return ModelError(f"batch {batch_id}: unknown result type {kind!r}", ErrorKind.MALFORMED)


def _retryable(answer: Answer) -> bool:
    return isinstance(answer, ModelError) and answer.retryable


def _classify(err: BaseException) -> ModelError:
    from rollsum.models.anthropic_model import classify_error

    return classify_error(err)


def layers(model: Model) -> Iterable[Model]:
    """`model` and every model it wraps, outermost first."""
    seen = 0
    current: Any = model
    while current is not None and seen < 16:
        yield current
        current = getattr(current, "inner", None)
        seen += 1


def prefetch(model: Model, requests: Sequence[CompletionRequest], *, store_dir: str | Path | None = None,
             sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
             **options: Any) -> BatchRunner | None:
    """Answer `requests` through one Message Batch before they are asked of `model`.

    Sends only what no cache in `model`'s wrappers already answers; the answers are served to
    the innermost model, so the `complete` calls that follow cost nothing more. Does nothing
    (returns None) when the innermost model has no batch API (fake, local, replay: their calls
    cost nothing) or when a cache is ``strict`` (a CI run that must make no call). The batch
    ids go to `store_dir`, by default ``batches/`` beside the first cache file.
    """
    from rollsum.models.cache import CachedModel

    chain = list(layers(model))
    target = chain[-1]
    if not isinstance(target, BatchTarget):
        log.info("%s has no batch API: its calls go one by one", model.name)
        return None
    caches = [m for m in chain if isinstance(m, CachedModel) and m.mode != "off"]
    if any(c.mode == "strict" for c in caches):
        return None
    wanted: dict[str, CompletionRequest] = {}
    for request in requests:
        key = target.batch_key(request)
        if key in wanted or any(c.file.lookup(c.key(request)) is not None for c in caches):
            continue
        wanted[key] = request
    if store_dir is None and caches:
        store_dir = caches[0].path.parent / BATCH_DIR
    budget = next((m for m in chain if isinstance(m, BatchBudget)), None)
    runner = BatchRunner(target, BatchStore(store_dir), sleep=sleep, clock=clock, budget=budget, **options)
    if wanted:
        target.serve(runner.run(wanted))
    return runner
