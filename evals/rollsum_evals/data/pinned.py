"""Datasets pinned by content: what a run replayed, loaded again and checked to be the same.

A run records, per dataset, where it came from and the sha256 of the conversations actually
replayed (after ``limit``). Unit ids include that hash, so editing a file makes new Units; and a
re-score (`rollsum score`) or a drill-down reloads the dataset and refuses it when the hash
differs, because a trace's message indices would then point at other messages.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from rollsum.errors import ConfigError
from rollsum_evals.data.canonical import conversations_hash
from rollsum_evals.data.copies import DatasetCopies
from rollsum_evals.data.formats import LOADERS
from rollsum_evals.data.hf import HUB_PREFIX
from rollsum_evals.data.types import Conversation

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    name: str
    source: str
    format: str | None = None
    limit: int | None = None
    questions: str | None = None
    """A questions sidecar (`rollsum_evals.data.sidecar`) whose rows become probes."""
    skip_bad_records: bool = False
    """Leave out records that cannot be used (counted in the manifest) instead of stopping at
    the first one (`rollsum run --skip-bad-records`)."""
    max_line_bytes: int | None = None
    """The longest line read (`rollsum run --max-line-bytes`); None: the reader's default."""

    @classmethod
    def from_manifest(cls, name: str, info: Mapping[str, object]) -> DatasetSpec:
        """The spec a manifest's ``datasets`` entry (`Dataset.to_manifest`) was read with."""
        limit, questions, line_bytes = info.get("limit"), info.get("questions"), info.get("max_line_bytes")
        return cls(name, str(info["source"]), str(info.get("format") or "") or None,
                   int(limit) if isinstance(limit, int) else None, str(questions) if questions else None,
                   skip_bad_records=info.get("skip_bad_records", True) is True,  # older runs skipped
                   max_line_bytes=line_bytes if isinstance(line_bytes, int) else None)


def sources(ds: DatasetSpec) -> str:
    """The files a dataset's hash covers, for a "changed since the run" line: the chat and its
    questions sidecar. Why: a sidecar edited after the run was reported as the chat file having
    changed, which the user then found unchanged."""
    return f"{ds.source} with questions {ds.questions}" if ds.questions else ds.source


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a loader read: the conversations, and how many bad records it left out."""

    conversations: Sequence[Conversation]
    skipped: int = 0


Loader = Callable[[DatasetSpec], "Sequence[Conversation] | Loaded"]


def default_loader(ds: DatasetSpec) -> Loaded:
    """Strict unless the dataset says otherwise: a run must not quietly replay fewer
    conversations than the file holds (the first bad record stops it, naming file and line)."""
    from rollsum_evals.data.formats import load
    from rollsum_evals.data.reader import DEFAULT_LIMITS, SkipLog

    limits = replace(DEFAULT_LIMITS, max_line_bytes=ds.max_line_bytes) if ds.max_line_bytes else DEFAULT_LIMITS
    skips = SkipLog(ds.source, log)
    try:
        convs = load(ds.source, format=ds.format, strict=not ds.skip_bad_records, limits=limits, skips=skips)
    finally:
        skips.close()
    if ds.questions:
        from rollsum_evals.data.sidecar import attach

        convs = attach(convs, ds.questions, limits=limits)
    return Loaded(convs, skips.count)


@dataclass(frozen=True, slots=True)
class Dataset:
    source: DatasetSpec
    sha256: str
    conversations: tuple[Conversation, ...]
    skipped: int = 0
    """Bad records left out (only with ``skip_bad_records``)."""

    def to_manifest(self) -> dict[str, object]:
        out: dict[str, object] = {"sha256": self.sha256, "source": self.source.source,
                                  "format": self.source.format, "limit": self.source.limit,
                                  "conversations": len(self.conversations),
                                  "skip_bad_records": self.source.skip_bad_records,
                                  "skipped_records": self.skipped}
        if self.source.questions:
            out["questions"] = self.source.questions
        if self.source.max_line_bytes:
            out["max_line_bytes"] = self.source.max_line_bytes
        return out


def _format_prefix_hint(path: str) -> str:
    """A hint when a missing source reads like ``FORMAT:PATH`` ("locomo:data/locomo10.json"): only
    ``synth:`` and ``hf:`` are schemes; any other format is named by the dataset's ``format``, and
    the prefix made the path a file name that does not exist."""
    head, sep, rest = path.partition(":")
    name = os.path.basename(head)
    if sep and rest and name in LOADERS:
        return f"; to read {rest!r} as {name}, write source = {rest!r} and format = {name!r}"
    return ""


def load_dataset(ds: DatasetSpec, loader: Loader = default_loader, *, where: str = "") -> Dataset:
    prefix = f"{where}: " if where else ""
    for path, what in ((ds.source, "source"), (ds.questions, "questions")):
        if path and os.path.isabs(path) and not os.path.exists(path):
            raise ConfigError(f"{prefix}dataset '{ds.name}' {what}: {path}: no such file (paths in a spec "
                              f"are relative to the spec file){_format_prefix_hint(path)}")
    loaded = loader(ds)
    skipped = loaded.skipped if isinstance(loaded, Loaded) else 0
    convs = list(loaded.conversations if isinstance(loaded, Loaded) else loaded)
    if ds.limit is not None:
        convs = convs[: ds.limit]
    if not convs:
        raise ConfigError(f"{prefix}dataset '{ds.name}' ({ds.source}) has no conversations")
    ids = [c.id for c in convs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(f"{prefix}dataset '{ds.name}': conversation id {dup!r} appears twice")
    return Dataset(ds, conversations_hash(convs), tuple(convs), skipped)


def kept_copy(src: DatasetSpec, info: Mapping[str, object], copies: DatasetCopies | None) -> Dataset | None:
    """An ``hf:`` dataset read from the copy a run kept of it (`copies`, its ``datasets/``):
    what the run replayed (after `limit`, questions attached), checked against `info`'s sha256
    (its manifest entry) before it is parsed; None for another source or without a copy. Shared
    by the readers (`load_pinned`) and `rollsum run --resume`."""
    if copies is None or not src.source.startswith(HUB_PREFIX):
        return None
    kept = copies.read(str(info.get("sha256")))
    if kept is None:
        return None
    skipped = info.get("skipped_records")
    return Dataset(src, conversations_hash(kept), tuple(kept), skipped if isinstance(skipped, int) else 0)


def load_pinned(datasets: Mapping[str, Mapping[str, object]], loader: Loader = default_loader, *,
                where: str = "", copies: DatasetCopies | None = None) -> dict[str, Dataset]:
    """A manifest's ``datasets`` block loaded again; a changed dataset is a ConfigError.

    An ``hf:`` dataset is read from the copy the run kept (`copies`, the run directory's
    ``datasets/``) when there is one: checked against the run's sha256 before it is parsed, a
    damaged copy is a ConfigError (never swapped for what the hub serves now). Only without a
    copy (an older run, a set too large to keep) is it fetched through `datasets` again."""
    out: dict[str, Dataset] = {}
    for name, info in datasets.items():
        src = DatasetSpec.from_manifest(name, info)
        ds = kept_copy(src, info, copies)
        if ds is None:
            if src.source.startswith(HUB_PREFIX):
                # no copy of the data in the run directory: the hub dataset is fetched again (from
                # the `datasets` cache, or the network), which the user should hear before it happens
                log.warning("%sdataset '%s': %s is loaded again through Hugging Face `datasets` (its cache, or "
                            "the hub: the run directory holds no copy of it) and refused unless it hashes to the "
                            "run's sha256 %s…", f"{where}: " if where else "", name, src.source,
                            str(info.get("sha256"))[:12])
            ds = load_dataset(src, loader, where=where)
        if ds.sha256 != info.get("sha256"):
            raise ConfigError(f"{where or 'run'}: dataset '{name}' ({sources(src)}) changed since the run "
                              f"(sha256 {str(info.get('sha256'))[:12]}…, now {ds.sha256[:12]}…): its "
                              "traces no longer match it")
        out[name] = ds
    return out
