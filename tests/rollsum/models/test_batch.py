"""Message Batches through the real `anthropic` SDK on an httpx2 MockTransport: create, poll,
results (one errored, one expired, both retried), and a resume after a kill that pays nothing twice."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from rollsum.errors import ErrorKind, ModelError
from rollsum.models import CachedModel, CompletionRequest
from rollsum.models.anthropic_model import AnthropicModel
from rollsum.models.batch import BatchRunner, BatchStore, prefetch
from rollsum.types import Message
from tests.support.batch_server import BatchServer, succeeded

MakeClient = Callable[..., anthropic.Anthropic]
def _req(question: str) -> CompletionRequest:
    return CompletionRequest(system="Answer briefly.", messages=[Message("user", question)], max_tokens=16,
                             prompt_id="qa/v1")


REQUESTS = [_req("Where did Alice go?"), _req("Who is Bob?"), _req("When was the party?")]


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, s: float) -> None:
        self.delays.append(s)


def test_batch_creates_polls_with_backoff_and_serves_every_answer(sdk_client: MakeClient, tmp_path: Path) -> None:
    server = BatchServer(polls_before_end=3)
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    sleeps = Sleeps()
    runner = prefetch(model, [*REQUESTS, REQUESTS[0]], store_dir=tmp_path, sleep=sleeps, clock=lambda: 0.0,
                      poll_s=2.0, max_poll_s=5.0)
    assert runner is not None and runner.created == 1
    sent = server.batches["msgbatch_001"]
    assert len(sent) == 3  # the duplicate went once
    params = sent[0]["params"]
    assert params["model"] == "claude-haiku-4-5" and params["max_tokens"] == 16
    assert params["system"] == "Answer briefly." and params["messages"][0]["role"] == "user"
    assert {r["custom_id"] for r in sent} == {model.batch_key(r) for r in REQUESTS}
    assert sleeps.delays == [2.0, 4.0, 5.0]  # in_progress three times: doubling, capped
    before = len(server.log)
    for r in REQUESTS:  # answered from the batch: no Messages API call
        assert model.complete(r).text == f"answer {model.batch_key(r)[:6]}"
    assert len(server.log) == before
    assert not any(p == "/v1/messages" for _, p in server.log)
    assert list(tmp_path.glob("*.json"))  # the batch id was recorded


def test_errored_and_expired_requests_are_retried_in_a_new_batch(sdk_client: MakeClient, tmp_path: Path) -> None:
    model0 = AnthropicModel(sdk_client(BatchServer()), "claude-haiku-4-5")
    errored, expired = model0.batch_key(REQUESTS[1]), model0.batch_key(REQUESTS[2])

    def outcome(cid: str, n: int) -> dict[str, Any]:
        if cid == errored and n == 1:
            return {"type": "errored", "error": {"type": "error",
                                                 "error": {"type": "overloaded_error", "message": "busy"}}}
        if cid == expired and n == 1:
            return {"type": "expired"}
        return succeeded(cid, n)

    server = BatchServer(outcome)
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    runner = prefetch(model, REQUESTS, store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0)
    assert runner is not None and runner.created == 2
    assert {r["custom_id"] for r in server.batches["msgbatch_002"]} == {errored, expired}
    assert all(model.complete(r).text.startswith("answer") for r in REQUESTS)


def test_a_request_that_keeps_failing_is_an_error_for_it_alone(sdk_client: MakeClient, tmp_path: Path) -> None:
    def outcome(cid: str, n: int) -> dict[str, Any]:
        return {"type": "expired"} if cid == bad else succeeded(cid, n)

    server = BatchServer(outcome)
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    bad = model.batch_key(REQUESTS[0])
    runner = prefetch(model, REQUESTS, store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0, retries=1)
    assert runner is not None and runner.created == 2 and server.seen[bad] == 2
    with pytest.raises(ModelError) as err:
        model.complete(REQUESTS[0])
    assert "expired" in str(err.value)
    assert not any(p == "/v1/messages" for _, p in server.log)  # no list-price call behind its back
    assert model.complete(REQUESTS[1]).text.startswith("answer")


def test_an_unreadable_result_fails_its_request_alone_and_the_batch_is_not_sent_again(
        sdk_client: MakeClient, tmp_path: Path) -> None:
    """A succeeded result without ``usage`` raised out of the results loop, which failed every
    request of the batch as retryable: the whole (paid) batch went out twice more."""
    def outcome(cid: str, n: int) -> dict[str, Any]:
        result = succeeded(cid, n)
        if cid == bad:
            del result["message"]["usage"]
        return result

    server = BatchServer(outcome)
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    bad = model.batch_key(REQUESTS[0])
    runner = prefetch(model, REQUESTS, store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0)
    assert runner is not None and runner.created == 1
    with pytest.raises(ModelError) as err:
        model.complete(REQUESTS[0])
    assert err.value.kind is ErrorKind.MALFORMED
    assert [model.complete(r).text[:6] for r in REQUESTS[1:]] == ["answer", "answer"]
    assert not any(p == "/v1/messages" for _, p in server.log)


@pytest.mark.parametrize(("etype", "status"), [("not_found_error", 404), ("invalid_request_error", 400)])
def test_an_errored_request_carries_the_status_a_call_would_have(
        sdk_client: MakeClient, tmp_path: Path, etype: str, status: int) -> None:
    """The sweep's breaker stops a run on a 404, or on 400s with no success (`rollsum_evals.run.
    breaker`): a batch's ``not_found_error`` / ``invalid_request_error`` say the same as a
    Messages API 404 / 400, so they carry the status too (a batch of only invalid requests ran
    the whole sweep to "complete")."""
    def outcome(cid: str, n: int) -> dict[str, Any]:
        return {"type": "errored", "error": {"type": "error", "error": {
            "type": etype, "message": "model: claude-haiku-4-5"}}}

    model = AnthropicModel(sdk_client(BatchServer(outcome)), "claude-haiku-4-5")
    runner = prefetch(model, REQUESTS[:1], store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0)
    assert runner is not None and runner.created == 1  # not retried
    with pytest.raises(ModelError) as err:
        model.complete(REQUESTS[0])
    assert err.value.status == status and etype in str(err.value)


def test_a_batch_whose_creation_is_rate_limited_waits_as_the_server_asks(
        sdk_client: MakeClient, tmp_path: Path) -> None:
    """Three creates in the same millisecond against a 429 used up every try; now each retry
    waits the server's retry-after (or the doubling back-off when it says nothing)."""
    server = BatchServer()
    refusals = [httpx2.Response(429, headers={"retry-after": "7"}, json={"type": "error", "error": {
        "type": "rate_limit_error", "message": "Number of batch requests exceeds your rate limit"}}),
        httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and refusals:
            return refusals.pop(0)
        return server(request)

    model = AnthropicModel(sdk_client(handler), "claude-haiku-4-5")
    sleeps = Sleeps()
    runner = prefetch(model, REQUESTS, store_dir=tmp_path, sleep=sleeps, clock=lambda: 0.0, poll_s=3.0)
    assert runner is not None and runner.created == 1
    assert sleeps.delays[:2] == [7.0, 2.0]  # retry-after 7 s; then 1 s x 2 (the second failure said nothing)
    assert all(model.complete(r).text.startswith("answer") for r in REQUESTS)


def test_a_failed_poll_or_results_download_is_read_again_not_paid_again(
        sdk_client: MakeClient, tmp_path: Path) -> None:
    """A 500 on a poll and a dropped connection on the results download ended the collection,
    and every request went into a second batch, paid for twice."""
    server = BatchServer(polls_before_end=1)
    faults: dict[str, list[Any]] = {
        "poll": [httpx2.Response(500, json={"type": "error", "error": {"type": "api_error", "message": "boom"}})],
        "results": [httpx2.ReadError("connection reset mid-stream")]}

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            fault = faults["results" if request.url.path.endswith("/results") else "poll"]
            if fault:
                item = fault.pop(0)
                if isinstance(item, Exception):
                    raise item
                return item
        return server(request)

    model = AnthropicModel(sdk_client(handler), "claude-haiku-4-5")
    sleeps = Sleeps()
    runner = prefetch(model, REQUESTS, store_dir=tmp_path, sleep=sleeps, clock=lambda: 0.0, poll_s=3.0)
    assert runner is not None and runner.created == 1
    assert not faults["poll"] and not faults["results"]
    assert all(model.complete(r).text.startswith("answer") for r in REQUESTS)


class Killed(BaseException):
    """What a kill looks like to the code under test: it stops at the first wait."""


def test_a_killed_run_resumes_its_batch_instead_of_paying_twice(sdk_client: MakeClient, tmp_path: Path) -> None:
    server = BatchServer(polls_before_end=1)

    def kill(_s: float) -> None:
        raise Killed

    first = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    with pytest.raises(Killed):
        prefetch(first, REQUESTS, store_dir=tmp_path, sleep=kill, clock=lambda: 0.0)
    assert server.creates == 1
    # a second process: new client, new model, same directory
    second = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    runner = prefetch(second, REQUESTS, store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0)
    assert runner is not None and runner.created == 0
    assert server.creates == 1
    assert all(second.complete(r).text.startswith("answer") for r in REQUESTS)


def test_poll_timeout_fails_the_requests_without_a_second_batch(sdk_client: MakeClient, tmp_path: Path) -> None:
    server = BatchServer(polls_before_end=100)
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    prefetch(model, REQUESTS, store_dir=tmp_path, sleep=sleep, clock=lambda: now[0], poll_s=10.0,
             timeout_s=60.0)
    assert server.creates == 1
    with pytest.raises(ModelError) as err:
        model.complete(REQUESTS[0])
    assert err.value.kind is ErrorKind.TIMEOUT and "resume" in str(err.value)
    assert len(BatchStore(tmp_path).records()) == 1


def test_cache_hits_are_not_sent_and_batch_answers_are_cached(sdk_client: MakeClient, tmp_path: Path) -> None:
    server = BatchServer()
    cached = CachedModel(AnthropicModel(sdk_client(server), "claude-haiku-4-5"), tmp_path / "models.sqlite")
    prefetch(cached, REQUESTS[:2], sleep=Sleeps(), clock=lambda: 0.0)
    for r in REQUESTS[:2]:
        cached.complete(r)  # stores what the batch answered
    assert (tmp_path / "batches").is_dir()  # beside the cache file
    # another batch directory: only the cache can know the first two are answered
    prefetch(cached, REQUESTS, store_dir=tmp_path / "elsewhere", sleep=Sleeps(), clock=lambda: 0.0)
    assert server.creates == 2
    assert [r["custom_id"] for r in server.batches["msgbatch_002"]] == [cached.key(REQUESTS[2])]
    cached.close()


def test_a_model_without_a_batch_api_is_left_alone() -> None:
    from rollsum.models import FakeModel

    assert prefetch(FakeModel(), REQUESTS) is None


def test_runner_reads_results_by_custom_id_not_by_order(sdk_client: MakeClient) -> None:
    server = BatchServer()
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    keys = {model.batch_key(r): r for r in REQUESTS}
    answers = BatchRunner(model, BatchStore(None), sleep=Sleeps(), clock=lambda: 0.0).run(keys)
    for key, answer in answers.items():
        assert not isinstance(answer, ModelError) and answer.text == f"answer {key[:6]}"


def test_a_batch_in_progress_says_it_is_waiting(sdk_client: MakeClient, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Nothing was said while a batch ran (minutes to hours): a sweep with ``batch = true`` looked
    hung. Each poll that finds it unfinished now says so, with its counts and the next check."""
    server = BatchServer(polls_before_end=2)
    model = AnthropicModel(sdk_client(server), "claude-haiku-4-5")
    with caplog.at_level(logging.INFO, logger="rollsum.models.batch"):
        prefetch(model, REQUESTS, store_dir=tmp_path, sleep=Sleeps(), clock=lambda: 0.0, poll_s=2.0, max_poll_s=5.0)
    waits = [r.getMessage() for r in caplog.records if "next check" in r.getMessage()]
    assert waits == ["batch msgbatch_001: in_progress, 3 processing; next check in 2 s (0 s so far)",
                     "batch msgbatch_001: in_progress, 3 processing; next check in 4 s (0 s so far)"]
