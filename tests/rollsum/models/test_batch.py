"""Message Batches through the real `anthropic` SDK on an httpx2 MockTransport: create, poll,
results (one errored, one expired, both retried), and a resume after a kill that pays nothing twice."""

from __future__ import annotations

import json
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

from .conftest import message_json

MakeClient = Callable[..., anthropic.Anthropic]
Outcome = Callable[[str, int], dict[str, Any]]
"""(custom_id, how many batches have held it so far) -> the result object for that request."""


def succeeded(custom_id: str, _n: int) -> dict[str, Any]:
    return {"type": "succeeded", "message": message_json(f"answer {custom_id[:6]}", input_tokens=100,
                                                         output_tokens=4)}


class BatchServer:
    """The Message Batches endpoints, as a MockTransport handler: each batch reports
    ``in_progress`` for `polls_before_end` retrieves, then ``ended`` with a results URL."""

    def __init__(self, outcome: Outcome = succeeded, polls_before_end: int = 1) -> None:
        self.outcome = outcome
        self.polls_before_end = polls_before_end
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.polls: dict[str, int] = {}
        self.seen: dict[str, int] = {}
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.log: list[tuple[str, str]] = []

    def _batch(self, bid: str) -> dict[str, Any]:
        ended = self.polls[bid] > self.polls_before_end
        n = len(self.batches[bid])
        return {"id": bid, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0 if ended else n, "succeeded": 0, "errored": 0,
                                   "canceled": 0, "expired": 0},
                "created_at": "2026-11-27T14:00:00Z", "expires_at": "2026-11-28T14:00:00Z",
                "ended_at": "2026-11-27T14:05:00Z" if ended else None,
                "results_url": f"https://api.anthropic.com/v1/messages/batches/{bid}/results" if ended else None}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        self.log.append((request.method, path))
        if request.method == "POST" and path == "/v1/messages/batches":
            bid = f"msgbatch_{len(self.batches) + 1:03d}"
            reqs = json.loads(request.content)["requests"]
            self.batches[bid] = reqs
            self.polls[bid] = 0
            lines = []
            for r in reqs:
                cid = r["custom_id"]
                self.seen[cid] = self.seen.get(cid, 0) + 1
                lines.append({"custom_id": cid, "result": self.outcome(cid, self.seen[cid])})
            self.results[bid] = lines
            return httpx2.Response(200, json=self._batch(bid))
        parts = path.strip("/").split("/")
        if request.method == "GET" and len(parts) == 4 and parts[:3] == ["v1", "messages", "batches"]:
            self.polls[parts[3]] += 1
            return httpx2.Response(200, json=self._batch(parts[3]))
        if request.method == "GET" and len(parts) == 5 and parts[4] == "results":
            body = "\n".join(json.dumps(line) for line in reversed(self.results[parts[3]]))  # any order
            return httpx2.Response(200, content=body.encode("utf-8"))
        return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})

    @property
    def creates(self) -> int:
        return sum(1 for m, p in self.log if m == "POST" and p == "/v1/messages/batches")


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
    runner = prefetch(model, REQUESTS + [REQUESTS[0]], store_dir=tmp_path, sleep=sleeps, clock=lambda: 0.0,
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
    prefetch(cached, REQUESTS, sleep=Sleeps(), clock=lambda: 0.0)
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
