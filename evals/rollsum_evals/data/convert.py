"""Writing conversations in the export formats (`rollsum data convert --to openai|anthropic|sharegpt`).

The export formats have no place for probes, so a conversion that has them also writes a
questions sidecar beside the output (``<out>.questions.jsonl``, indices counted in the exported
arrays): nothing a dataset knows is lost on the way out, and `rollsum init OUT --questions
SIDECAR` reads both back. ``.json`` output is one document (a single conversation as a bare
message array for ``openai``, the way chat apps export it; several as an array of objects);
``.jsonl`` is one conversation object per line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.data.exports import EXPORT_FORMATS, Positions, to_anthropic, to_openai, to_sharegpt
from rollsum_evals.data.sidecar import rows_for
from rollsum_evals.data.types import Conversation
from rollsum_evals.fileio import atomic_writer


def _record(fmt: str, conv: Conversation) -> tuple[dict[str, Any], list[dict[str, Any]] | None, Positions]:
    """(conversation object, bare message list when the format has one, positions)."""
    if fmt == "openai":
        msgs, pos = to_openai(conv.messages)
        return {"id": conv.id, "messages": msgs}, msgs, pos
    if fmt == "anthropic":
        body, pos = to_anthropic(conv.messages)
        return {"id": conv.id, **body}, None, pos
    convs, pos = to_sharegpt(conv.messages)
    return {"id": conv.id, "conversations": convs}, None, pos


def sidecar_path(out: str | os.PathLike[str]) -> Path:
    p = Path(out)
    return p.with_name(p.name.removesuffix(p.suffix) + ".questions.jsonl")


def write_export(conversations: Iterable[Conversation], out: str | os.PathLike[str], fmt: str
                 ) -> tuple[int, Path | None]:
    """Write `conversations` as `fmt`; returns (how many, the sidecar written or None)."""
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"--to {fmt}: expected one of jsonl, hf, {', '.join(EXPORT_FORMATS)}")
    convs = list(conversations)
    if not convs:
        raise ConfigError("no conversation to write (see the warnings above)")
    rows: list[dict[str, Any]] = []
    records = []
    for conv in convs:
        obj, bare, pos = _record(fmt, conv)
        records.append((obj, bare))
        rows.extend(rows_for(conv, pos, name_conversation=len(convs) > 1))
    with atomic_writer(out) as fh:
        if str(out).endswith(".jsonl"):
            for obj, _bare in records:
                fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        elif len(records) == 1 and records[0][1] is not None:
            json.dump(records[0][1], fh, ensure_ascii=False, indent=1)
            fh.write("\n")
        else:
            data: Any = records[0][0] if len(records) == 1 else [obj for obj, _ in records]
            json.dump(data, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    if not rows:
        return len(convs), None
    side = sidecar_path(out)
    with atomic_writer(side) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(convs), side
