"""Hugging Face `datasets`: conversations to and from `datasets.Dataset`.

Free-form `meta` mappings are stored as JSON strings: Arrow needs one schema for a column, and
tool-call details differ from message to message. A dataset without our columns but with a
`messages` (or ShareGPT `conversations`) column is read as chat exports. `datasets` is imported
inside the functions so `rollsum --help` and the library stay fast and light.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from rollsum.errors import ConfigError
from rollsum.types import Message
from rollsum_evals.data.types import Conversation, Probe, Reference

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


def from_row(row: dict[str, Any], index: int = 0) -> Conversation:
    if "probes" in row or ("messages" in row and "id" in row and isinstance(row.get("meta"), str)):
        cid = str(row.get("id") or f"hf-{index}")
        msgs = tuple(Message(role=m["role"], content=m["content"], id=m.get("id") or f"{cid}:{i}",
                             name=m.get("name") or None, created_at=m.get("created_at") or None,
                             meta=_meta(m.get("meta")))
                     for i, m in enumerate(row.get("messages") or []))
        probes = tuple(Probe(id=p["id"], question=p["question"], answer=p["answer"],
                             evidence=tuple(p.get("evidence") or ()), category=p.get("category") or "fact",
                             stale_answers=tuple(p.get("stale_answers") or ()), meta=_meta(p.get("meta")))
                       for p in row.get("probes") or [])
        refs = tuple(Reference(id=r["id"], text=r["text"], covers=tuple(r.get("covers") or ()),
                               kind=r.get("kind") or "session_summary") for r in row.get("references") or [])
        return Conversation(id=cid, messages=msgs, probes=probes, references=refs, meta=_meta(row.get("meta")))
    from rollsum_evals.data.chat import from_export

    return from_export(row, default_id=f"hf-{index}")


def from_dataset(ds: Any) -> Iterator[Conversation]:
    for i, row in enumerate(ds):
        yield from_row(dict(row), i)


def is_hf_dir(path: str) -> bool:
    return os.path.isdir(path) and (os.path.exists(os.path.join(path, "dataset_info.json"))
                                    or os.path.exists(os.path.join(path, "state.json")))


def iter_hf(path_or_name: str, **_options: Any) -> Iterator[Conversation]:
    """A `save_to_disk` directory, a local .parquet/.arrow file, or `hf:owner/name[:split]` (online)."""
    datasets = _hf()
    ds: Any
    try:
        if path_or_name.startswith(HUB_PREFIX):
            hub_name, _, split = path_or_name[len(HUB_PREFIX):].partition(":")
            ds = datasets.load_dataset(hub_name, split=split or "train")
        elif is_hf_dir(path_or_name):
            ds = datasets.load_from_disk(path_or_name)
            if isinstance(ds, datasets.DatasetDict):
                ds = ds["train"] if "train" in ds else ds[next(iter(ds))]
        elif path_or_name.endswith(".parquet"):
            ds = datasets.Dataset.from_parquet(path_or_name)
        elif path_or_name.endswith(".arrow"):
            ds = datasets.Dataset.from_file(path_or_name)
        else:
            raise ConfigError(f"{path_or_name}: not a Hugging Face dataset (expected a save_to_disk "
                              "directory, a .parquet or .arrow file, or hf:owner/name[:split])")
    except ConfigError:
        raise
    except (FileNotFoundError, ValueError, OSError) as err:
        raise ConfigError(f"{path_or_name}: cannot open as a Hugging Face dataset: {err}") from None
    yield from from_dataset(ds)
