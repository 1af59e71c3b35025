"""Record/replay cassettes: a run with a key records, any run without one replays exactly.

A cassette is JSONL, one call per line: the request hash, a readable request (so a reviewer can
see what was asked), the response and its usage. Lines are appended and fsynced as calls finish,
so a killed recording keeps every finished call. Secrets are scrubbed before a line is written.
On a miss, replay names the request and the closest recorded one and what differs, because "not
in cassette" alone sends people hunting through hashes.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError, ErrorKind, ModelError
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.params import DEFAULT_CONTEXT_WINDOW, Range, check_number
from rollsum.redact import redact_obj, redacting_logger
from rollsum.safejson import JSONInputError, loads

log = redacting_logger(__name__)

CASSETTE_VERSION = 1


class ReplayMissError(ModelError):
    """The cassette has no answer for a request: it was recorded with other prompts or data."""


def request_key(request: CompletionRequest) -> str:
    """Cassettes key on the request alone; the recorded model is kept beside it."""
    return request.hash()


def request_summary(request: CompletionRequest) -> str:
    chars = sum(len(m.content) for m in request.messages)
    last = request.messages[-1].content if request.messages else ""
    preview = " ".join(last.split())[:80]
    return (f"prompt={request.prompt_id or '-'} messages={len(request.messages)} chars={chars} "
            f"max_tokens={request.max_tokens} last={preview!r}")


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RecordingModel(ModelWrapper):
    """Passes calls to `inner` and appends each success to a cassette."""

    def __init__(self, inner: Model, path: str | Path, *, now: Callable[[], str] = _utc_now) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._now = now
        self._lock = threading.Lock()
        self.recorded = 0

    @property
    def name(self) -> str:
        return f"record:{self.path}:{self.inner.name}"

    def __repr__(self) -> str:
        return f"RecordingModel({self.inner!r}, {str(self.path)!r})"

    def complete(self, request: CompletionRequest) -> Completion:
        completion = self.inner.complete(request)
        entry = {
            "v": CASSETTE_VERSION,
            "key": request_key(request),
            "model": self.inner.name,
            "context_window": self.inner.context_window,
            "summary": request_summary(request),
            "request": {**request.key_payload(), "metadata": dict(request.metadata)},
            "response": completion.to_dict(),
            "usage": completion.usage.to_dict(),
            "recorded_at": self._now(),
        }
        line = json.dumps(redact_obj(entry), ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self.recorded += 1
        return completion


class ReplayModel:
    """Answers from a cassette; never calls anything.

    When one request was recorded several times, the answers are served in recorded order and
    the last one repeats. `model` restricts replay to lines recorded from that model spec.
    """

    def __init__(self, path: str | Path, *, model: str | None = None) -> None:
        self.path = Path(path)
        self.model_filter = model
        self._entries: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._context_window = DEFAULT_CONTEXT_WINDOW
        self.calls = 0
        self.first_miss: str | None = None
        """The first request the cassette could not serve (`replay_miss`): a caller whose run
        must be exact (the harness) fails the whole replay on it, whatever the engine made of
        the failed call."""
        self._load()

    @classmethod
    def record(cls, inner: Model, path: str | Path) -> RecordingModel:
        return RecordingModel(inner, path)

    def _load(self) -> None:
        if self.path.is_dir():
            raise ConfigError(f"cassette {self.path}: is a directory (expected a cassette file: one JSON object "
                              "per line)")
        if not self.path.is_file():
            raise ConfigError(f"cassette {self.path} does not exist: record one with "
                              f"record:{self.path}:MODEL (needs the model's key) or check the path")
        windows: list[int] = []
        with self.path.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                entry = _entry(raw)
                if isinstance(entry, str):
                    raise ConfigError(f"cassette {self.path}, line {lineno}: {entry}")
                if self.model_filter and entry.get("model") != self.model_filter:
                    continue
                self._entries[entry["key"]].append(entry)
                if isinstance(entry.get("context_window"), int):
                    windows.append(entry["context_window"])
        if not self._entries:  # nothing to serve: every call would miss
            which = f" recorded from {self.model_filter!r}" if self.model_filter else ""
            raise ConfigError(f"cassette {self.path}: holds no call{which} (expected one JSON object per line; "
                              f"record one with record:{self.path}:MODEL)")
        if windows:
            self._context_window = min(windows)
        models = sorted({e.get("model", "?") for es in self._entries.values() for e in es})
        self.recorded_models: tuple[str, ...] = tuple(models)

    @property
    def name(self) -> str:
        return f"replay:{self.path}"

    @property
    def context_window(self) -> int:
        return self._context_window

    def __len__(self) -> int:
        return sum(len(v) for v in self._entries.values())

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, entries={len(self)})"

    def complete(self, request: CompletionRequest) -> Completion:
        key = request_key(request)
        with self._lock:
            self.calls += 1
            entries = self._entries.get(key)
            if entries:
                i = self._served[key]
                self._served[key] = i + 1
                entry = entries[min(i, len(entries) - 1)]
                return Completion.from_dict(entry["response"], cached=True)
        message = self._miss_message(request, key)
        with self._lock:
            self.first_miss = self.first_miss or message
        raise ReplayMissError(message, ErrorKind.OTHER)

    def _miss_message(self, request: CompletionRequest, key: str) -> str:
        msg = (f"cassette {self.path} has no answer for request {key[:12]} ({request_summary(request)})")
        closest = self._closest(request)
        if closest is None:
            return msg + "; the cassette is empty"
        entry, diffs = closest
        return (msg + f"; closest recorded: {entry['key'][:12]} ({entry.get('summary', '?')}), "
                f"differs in {', '.join(diffs) or 'nothing visible (redacted secret?)'}; "
                "re-record the cassette if the prompts or data changed")

    def _closest(self, request: CompletionRequest) -> tuple[dict[str, Any], list[str]] | None:
        wanted = redact_obj(request.key_payload())
        best: tuple[float, dict[str, Any]] | None = None
        for entries in self._entries.values():
            entry = entries[0]
            got = entry.get("request", {})
            score = _similarity(wanted, got)
            if best is None or score > best[0]:
                best = (score, entry)
        if best is None:
            return None
        return best[1], _differences(wanted, best[1].get("request", {}))


def replay_miss(model: object) -> str | None:
    """The first request a `ReplayModel` (possibly inside wrappers: cache, guard, budget)
    could not serve, or None."""
    for _ in range(16):  # wrappers hold their model in `inner`; never loop on a cycle
        miss = getattr(model, "first_miss", None)
        if isinstance(miss, str):
            return miss
        model = getattr(model, "inner", None)
        if model is None:
            return None
    return None


_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _entry(raw: bytes) -> dict[str, Any] | str:
    """One cassette line checked the way a replay will use it, or what was expected: a
    cassette is a file people copy, edit and commit, and a wrong-typed value must not become
    a failed summary (or a crash) in the middle of a sweep."""
    try:
        entry = loads(raw)
    except JSONInputError as err:
        return f"not usable JSON ({err}; expected a JSON object with 'key' and 'response.text')"
    if not isinstance(entry, dict):
        return f"expected a JSON object with 'key' and 'response.text', got {type(entry).__name__}"
    if not isinstance(entry.get("key"), str) or not entry["key"]:
        return f"field key: expected a request hash (a string), got {entry.get('key')!r}"
    response = entry.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("text"), str):
        return "field response.text: expected the recorded answer (a string)"
    for name in _COUNTS:
        if name in response and check_number(response[name], integer=True, range=Range(0)):
            return f"field response.{name}: expected a count >= 0, got {response[name]!r}"
    if "latency_s" in response and check_number(response["latency_s"], integer=False, range=Range(0)):
        return f"field response.latency_s: expected a number >= 0, got {response['latency_s']!r}"
    for name, where in (("model", response), ("stop_reason", response), ("model", entry)):
        if where.get(name) is not None and not isinstance(where[name], str):
            return f"field {name}: expected a string, got {where[name]!r}"
    if "context_window" in entry and check_number(entry["context_window"], integer=True, range=Range(1)):
        return f"field context_window: expected an integer >= 1, got {entry['context_window']!r}"
    return entry


def _similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    same_fields = sum(1 for k in a if a.get(k) == b.get(k))
    text_a = json.dumps(a.get("messages", []), sort_keys=True)[:4000]
    text_b = json.dumps(b.get("messages", []), sort_keys=True)[:4000]
    return same_fields + difflib.SequenceMatcher(None, text_a, text_b, autojunk=False).quick_ratio()


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    diffs: list[str] = []
    for field in ("system", "max_tokens", "temperature", "stop", "prompt_id"):
        if a.get(field) != b.get(field):
            diffs.append(field)
    ma: Sequence[Any] = a.get("messages", [])
    mb: Sequence[Any] = b.get("messages", [])
    if len(ma) != len(mb):
        diffs.append(f"message count ({len(ma)} vs {len(mb)})")
    for i, (x, y) in enumerate(zip(ma, mb)):
        if x != y:
            diffs.append(f"messages[{i}]")
            break
    return diffs
