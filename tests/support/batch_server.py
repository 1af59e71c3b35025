"""A stand-in for the Message Batches endpoints, served to the real `anthropic` SDK through an
httpx2 MockTransport (tests/rollsum/models/test_batch.py, tests/evals/scoring/test_qa.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2

from tests.support.anthropic import message_json

Outcome = Callable[[str, int], dict[str, Any]]
"""(custom_id, how many batches have held it so far) -> the result object for that request."""


def succeeded(custom_id: str, _n: int) -> dict[str, Any]:
    return {"type": "succeeded", "message": message_json(f"answer {custom_id[:6]}", input_tokens=100, output_tokens=4)}


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
        self.params: dict[str, dict[str, Any]] = {}
        """custom_id -> the request's params (an `outcome` may answer by them)."""

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
                self.params[cid] = r["params"]
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


