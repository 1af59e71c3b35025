"""Datasets pinned by content: what a run replayed, loaded again and checked to be the same.

A run records, per dataset, where it came from and the sha256 of the conversations actually
replayed (after ``limit``). Unit ids include that hash, so editing a file makes new Units; and a
re-score (`rollsum score`) or a drill-down reloads the dataset and refuses it when the hash
differs, because a trace's message indices would then point at other messages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rollsum.errors import ConfigError
from rollsum_evals.data.types import Conversation


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    name: str
    source: str
    format: str | None = None
    limit: int | None = None


Loader = Callable[[DatasetSpec], Sequence[Conversation]]


def default_loader(ds: DatasetSpec) -> Sequence[Conversation]:
    from rollsum_evals.data.formats import load

    return load(ds.source, format=ds.format)


def conversations_hash(convs: Sequence[Conversation]) -> str:
    """What was actually replayed (after ``limit``), so editing a file changes the Unit ids."""
    h = hashlib.sha256()
    for c in convs:
        h.update(json.dumps(c.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                            default=str).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Dataset:
    source: DatasetSpec
    sha256: str
    conversations: tuple[Conversation, ...]

    def to_manifest(self) -> dict[str, object]:
        return {"sha256": self.sha256, "source": self.source.source, "format": self.source.format,
                "limit": self.source.limit, "conversations": len(self.conversations)}


def load_dataset(ds: DatasetSpec, loader: Loader = default_loader, *, where: str = "") -> Dataset:
    convs = list(loader(ds))
    if ds.limit is not None:
        convs = convs[: ds.limit]
    prefix = f"{where}: " if where else ""
    if not convs:
        raise ConfigError(f"{prefix}dataset '{ds.name}' ({ds.source}) has no conversations")
    ids = [c.id for c in convs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(f"{prefix}dataset '{ds.name}': conversation id {dup!r} appears twice")
    return Dataset(ds, conversations_hash(convs), tuple(convs))


def load_pinned(datasets: Mapping[str, Mapping[str, object]], loader: Loader = default_loader, *,
                where: str = "") -> dict[str, Dataset]:
    """A manifest's ``datasets`` block loaded again; a changed dataset is a ConfigError."""
    out: dict[str, Dataset] = {}
    for name, info in datasets.items():
        limit = info.get("limit")
        src = DatasetSpec(name, str(info["source"]), info.get("format") or None,  # type: ignore[arg-type]
                            int(limit) if isinstance(limit, int) else None)
        ds = load_dataset(src, loader, where=where)
        if ds.sha256 != info.get("sha256"):
            raise ConfigError(f"{where or 'run'}: dataset '{name}' ({src.source}) changed since the run "
                              f"(sha256 {str(info.get('sha256'))[:12]}…, now {ds.sha256[:12]}…): its "
                              "traces no longer match it")
        out[name] = ds
    return out
