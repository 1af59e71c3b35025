"""Hugging Face `datasets`: conversations to and from `datasets.Dataset`.

Free-form `meta` mappings are stored as JSON strings: Arrow needs one schema for a column, and
tool-call details differ from message to message. A dataset without our columns but with a
`messages` (or ShareGPT `conversations`) column is read as chat exports. `datasets` is imported
inside the functions so `rollsum --help` and the library stay fast and light.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.data.checks import Issue, RecordError, check_record
from rollsum_evals.data.exports import EMPTY_MESSAGE
from rollsum_evals.data.reader import SkipLog
from rollsum_evals.data.types import Conversation

log = logging.getLogger(__name__)

HUB_PREFIX = "hf:"


def _hf() -> Any:
    """The `datasets` package, imported by name: our data-only `datasets/` directory would
    otherwise shadow it for the type checker (at run time a regular package wins)."""
    return importlib.import_module("datasets")


def _json(v: Any) -> str:
    return json.dumps(v or {}, ensure_ascii=False, sort_keys=True)


def to_rows(conv: Conversation) -> dict[str, Any]:
    return {
        "id": conv.id,
        "messages": [{"id": m.id or "", "role": m.role, "content": m.content, "name": m.name or "",
                      "created_at": m.created_at or "", "meta": _json(m.meta)} for m in conv.messages],
        "probes": [{"id": p.id, "question": p.question, "answer": p.answer, "evidence": list(p.evidence),
                    "category": p.category, "stale_answers": list(p.stale_answers), "meta": _json(p.meta)}
                   for p in conv.probes],
        "references": [{"id": r.id, "text": r.text, "covers": list(r.covers), "kind": r.kind}
                       for r in conv.references],
        "meta": _json(conv.meta),
    }


def features() -> Any:
    hfds = _hf()
    Features, List, Value = hfds.Features, hfds.List, hfds.Value
    msg = {k: Value("string") for k in ("id", "role", "content", "name", "created_at", "meta")}
    probe = {k: Value("string") for k in ("id", "question", "answer", "category", "meta")}
    probe["evidence"] = List(Value("string"))
    probe["stale_answers"] = List(Value("string"))
    ref = {"id": Value("string"), "text": Value("string"), "covers": List(Value("string")),
           "kind": Value("string")}
    return Features({"id": Value("string"), "messages": List(msg), "probes": List(probe),
                     "references": List(ref), "meta": Value("string")})


def to_dataset(conversations: Iterable[Conversation]) -> Any:
    """A `datasets.Dataset` with one row per conversation (built from a generator: no big list)."""
    convs = list(conversations)
    return _hf().Dataset.from_generator(lambda: (to_rows(c) for c in convs), features=features())


def save(conversations: Iterable[Conversation], out_dir: str | os.PathLike[str]) -> None:
    to_dataset(conversations).save_to_disk(os.fspath(out_dir))


def _meta(v: Any) -> dict[str, Any]:
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v:
        try:
            parsed = json.loads(v)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _canonical(row: dict[str, Any], cid: str) -> dict[str, Any]:
    """A row of our own columns as a canonical record (meta columns are JSON text), for the
    shared validator: every value is kept as found, so a null or missing field is reported."""
    def message(m: Any, i: int) -> Any:
        if not isinstance(m, dict):
            return m
        out = {"id": m.get("id") or f"{cid}:{i}", "role": m.get("role"), "content": m.get("content"),
               "name": m.get("name") or None, "created_at": m.get("created_at") or None, "meta": _meta(m.get("meta"))}
        return out

    def probe(p: Any) -> Any:
        if not isinstance(p, dict):
            return p
        return {"id": p.get("id"), "question": p.get("question"), "answer": p.get("answer"),
                "evidence": list(p.get("evidence") or ()), "category": p.get("category") or "fact",
                "stale_answers": list(p.get("stale_answers") or ()), "meta": _meta(p.get("meta"))}

    def reference(r: Any) -> Any:
        if not isinstance(r, dict):
            return r
        return {"id": r.get("id"), "text": r.get("text"), "covers": list(r.get("covers") or ()),
                "kind": r.get("kind") or "session_summary"}

    messages, probes, refs = row.get("messages"), row.get("probes"), row.get("references")
    return {"id": cid,
            "messages": [message(m, i) for i, m in enumerate(messages)] if isinstance(messages, list) else messages,
            "probes": [probe(p) for p in probes] if isinstance(probes, list) else (probes or []),
            "references": [reference(r) for r in refs] if isinstance(refs, list) else (refs or []),
            "meta": _meta(row.get("meta"))}


def from_row(row: dict[str, Any], index: int = 0, *, file: str = "<dataset>",
             dropped: list[int] | None = None, seen_ids: set[str] | None = None) -> Conversation:
    """One row as a conversation, checked by the shared validator (`RecordError` naming the row
    and field when it cannot be used: a null ``content``, a missing ``role``, ...). A chat
    export's empty messages are left out, as in a chat file; `dropped` gets how many, once per
    such row. `seen_ids`: the conversation ids of the rows before (a second ``id`` is an error,
    as in every other format: `data convert` wrote two conversations with one id, a file
    `data validate` then refused)."""
    where = f"{file} row {index}"
    if "probes" in row or ("messages" in row and "id" in row and isinstance(row.get("meta"), str)):
        d = _canonical(row, str(row.get("id") or f"hf-{index}"))
    else:
        from rollsum_evals.data.chat import from_export

        try:
            empty: list[int] = []
            d = from_export(row, default_id=f"hf-{index}", file=where, dropped=empty).to_dict()
            if empty and dropped is not None:
                dropped.append(len(empty))
        except RecordError:
            raise
        except ConfigError as err:
            raise RecordError([Issue(where, None, None, "", str(err).removeprefix(f"{where}: "))]) from None
    errors = [i for i in check_record(d, file=where, seen_ids=seen_ids) if i.severity == "error"]
    if errors:
        raise RecordError(errors)
    return Conversation.from_dict(d)


def from_dataset(ds: Any, *, file: str = "<dataset>") -> Iterator[Conversation]:
    for i, row in enumerate(ds):
        yield from_row(dict(row), i, file=file)


def is_hf_dir(path: str) -> bool:
    return os.path.isdir(path) and (os.path.exists(os.path.join(path, "dataset_info.json"))
                                    or os.path.exists(os.path.join(path, "state.json")))


def iter_hf(path_or_name: str, *, strict: bool = False, limits: Any = None, skips: SkipLog | None = None,
            **_options: Any) -> Iterator[Conversation]:
    """A `save_to_disk` directory, a local .parquet/.arrow file, or `hf:owner/name[:split]` (online).

    A row that cannot be used is a `RecordError` naming the row (strict), or skipped and counted
    in `skips`. A local parquet file is read with pyarrow directly: no copy in the Hugging Face
    cache, no progress bar."""
    own = skips is None
    log_skips = skips if skips is not None else SkipLog(path_or_name, log)
    try:
        yield from _rows(path_or_name, log_skips, strict)
    finally:
        if own:
            log_skips.close()


def _rows(path_or_name: str, skips: SkipLog, strict: bool) -> Iterator[Conversation]:
    rows = _open(path_or_name)
    index = 0
    dropped: list[int] = []
    seen: set[str] = set()
    while True:
        try:
            row = next(rows)
        except StopIteration:
            if dropped:  # never silent: as a chat file says it (`rollsum_evals.data.chat.iter_chat`)
                log.warning("%s: dropped %d empty message(s) (%s) in %d conversation(s): the canonical format "
                            "has no empty messages", path_or_name, sum(dropped), EMPTY_MESSAGE, len(dropped))
            return
        except ConfigError:
            raise
        except (ValueError, OSError, TypeError, NotImplementedError) as err:  # what pyarrow/datasets raise
            raise ConfigError(f"{path_or_name}: cannot open as a Hugging Face dataset: "
                              f"{' '.join(str(err).split())}") from None
        try:
            yield from_row(row, index, file=path_or_name, dropped=dropped, seen_ids=seen)
        except RecordError as err:
            if strict:
                raise
            skips.skip(err)
        index += 1


def _open(path_or_name: str) -> Iterator[dict[str, Any]]:
    """The rows of a dataset source (errors of the underlying readers propagate)."""
    if path_or_name.endswith(".parquet") and not path_or_name.startswith(HUB_PREFIX):
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path_or_name).iter_batches():
            yield from batch.to_pylist()
        return
    datasets = _hf()
    ds: Any
    if path_or_name.startswith(HUB_PREFIX):
        hub_name, _, split = path_or_name[len(HUB_PREFIX):].partition(":")
        ds = datasets.load_dataset(hub_name, split=split or "train")
    elif is_hf_dir(path_or_name):
        ds = datasets.load_from_disk(path_or_name)
        if isinstance(ds, datasets.DatasetDict):
            ds = ds["train"] if "train" in ds else ds[next(iter(ds))]
    elif path_or_name.endswith(".arrow"):
        ds = datasets.Dataset.from_file(path_or_name)
    else:
        raise ConfigError(f"{path_or_name}: not a Hugging Face dataset (expected a save_to_disk "
                          "directory, a .parquet or .arrow file, or hf:owner/name[:split])")
    for row in ds:
        yield dict(row)
