"""Checking a run directory's files: journals line by line, tables and journals against the
digests the writer sealed them with, the manifest's shape.

A run directory is data that other commands trust (report, compare, regress, resume, score).
Before issue #11 a corrupted journal line was skipped in silence and a tampered or truncated
table was read as if whole. Now:

- **Journals** are read strictly (`read_jsonl`): every line a JSON object with its key; the
  one exception is a torn *last* line (no newline: the writer was killed mid-write), which a
  live or killed run legitimately has and `--resume` drops. Anything else is `DamagedRun`,
  one line naming the file and the line. `scan_jsonl` is the lenient form `RunDir.repair`
  uses: it returns the good rows and what was wrong.
- **Seal**: when a run finishes (and after `rollsum score`) the manifest records every
  journal's and table's size and sha256 (``files``). A reader checks sizes at once and a file's
  hash when it reads it, so a truncated, corrupted or edited file is named, never trusted.
- **Manifest**: a JSON object whose keys have the types readers rely on (`check_manifest`),
  and whose ``spec_sha256`` is the hash of the spec it records (`spec_hash_problem`): an edited
  hash would let `regress` take another spec's run for this one, and `--resume` refuse the
  right spec.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError


class DamagedRun(ConfigError):
    """A file of a run directory is not what its writer left (one line: file, line, what)."""


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    what: str


@dataclass(slots=True)
class JsonlScan:
    rows: list[dict[str, Any]] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    torn: bool = False
    """The last line had no newline (a write cut short); it is not in `rows`."""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_row(row: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(row, dict):
        return f"expected a JSON object, found {_kind(row)}"
    for key in keys:
        if not isinstance(row.get(key), str):
            return f"expected a string '{key}', found {_short(row.get(key)) if key in row else 'none'}"
    return None


def scan_jsonl(path: Path, data: bytes | None = None, *, keys: tuple[str, ...] = ()) -> JsonlScan:
    """Every line of a journal parsed; bad lines reported, not raised. `keys`: fields every
    row must hold as strings (``unit_id``; ``id``, ``role``, ``content`` for texts)."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return JsonlScan()
    end = data.rfind(b"\n") + 1
    torn = end < len(data)
    if end == 0:
        return JsonlScan(torn=torn)
    raw_lines = data[:end - 1].split(b"\n")
    try:
        # one parse of the whole journal: 2-3x faster than a parse per line (table writing is
        # most of a cached re-run); any bad line falls back to the careful path
        rows = json.loads(b"[" + b",".join(raw_lines) + b"]")
    except (ValueError, RecursionError):
        rows = None
    if rows is not None and all(_check_row(r, keys) is None for r in rows):
        return JsonlScan(rows, [], torn)
    out = JsonlScan(torn=torn)
    for n, raw in enumerate(raw_lines, 1):
        try:
            row = json.loads(raw)
        except UnicodeDecodeError:
            out.bad.append(BadLine(n, "not UTF-8 text"))
            continue
        except ValueError as err:
            out.bad.append(BadLine(n, f"not valid JSON ({err})" if raw.strip() else "an empty line"))
            continue
        except RecursionError:
            out.bad.append(BadLine(n, "JSON nested too deeply"))
            continue
        problem = _check_row(row, keys)
        if problem is not None:
            out.bad.append(BadLine(n, problem))
        else:
            out.rows.append(row)
    return out


def describe_bad(path: Path, bad: list[BadLine]) -> str:
    more = f" (and {len(bad) - 1} more bad line(s))" if len(bad) > 1 else ""
    return f"{path}, line {bad[0].line}: {bad[0].what}{more}"


def read_jsonl(path: Path, data: bytes | None = None, *, keys: tuple[str, ...] = (),
               hint: str = "") -> list[dict[str, Any]]:
    """A JSON-lines file's rows; a torn last line is skipped (killed mid-write), any other bad
    line is `DamagedRun` naming the file and line (+ `hint`: what to do)."""
    scan = scan_jsonl(path, data, keys=keys)
    if scan.bad:
        raise DamagedRun(describe_bad(path, scan.bad) + hint)
    return scan.rows


def foreign_file(path: Path) -> str | None:
    """Why `path` cannot be a file a run's writer made (None: a regular file, a directory, or
    nothing there). A received run directory can hold a symbolic link where a journal or the lock
    should be: following it, a reader reads outside the directory and a writer appends to (or,
    the lock, truncates) the file it points at. A FIFO or a device would block or flood a reader."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(mode):
        return f"a symbolic link (to {os.readlink(path)}), expected a regular file written by `rollsum run`"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file, expected one written by `rollsum run`"
    return None


def own_file(path: Path) -> Path:
    """`path`, unless `foreign_file` finds it is not a file the run's writer made: then
    `DamagedRun`, before anything reads, writes or locks through it."""
    problem = foreign_file(path)
    if problem is not None:
        raise DamagedRun(f"{path}: {problem}; the run directory is damaged")
    return path


# ----------------------------------------------------------------------------------------------
# the seal


def digest(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def file_digest(path: Path) -> dict[str, Any]:
    h = hashlib.sha256()
    n = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            n += len(chunk)
    return {"bytes": n, "sha256": h.hexdigest()}


def size_problem(path: Path, recorded: Mapping[str, Any]) -> str | None:
    """Why `path` cannot be the file the seal recorded, from its size alone (None: it may be)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "missing (the manifest records it)"
    want = recorded.get("bytes")
    return None if size == want else size_problem_text(size, want)


def content_problem(data: bytes, recorded: Mapping[str, Any]) -> str | None:
    got = digest(data)
    if got["bytes"] != recorded.get("bytes"):
        return size_problem_text(got["bytes"], recorded.get("bytes"))
    if got["sha256"] != recorded.get("sha256"):
        return (f"changed since the run was written (sha256 {got['sha256'][:12]}…, the manifest records "
                f"{str(recorded.get('sha256'))[:12]}…)")
    return None


def size_problem_text(size: int, want: Any) -> str:
    how = "truncated" if isinstance(want, int) and size < want else "changed"
    return f"{how} since the run was written ({size} bytes, the manifest records {want})"


# ----------------------------------------------------------------------------------------------
# the manifest

_DTYPES = frozenset({"str", "int", "float", "bool", "boolean"})


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_OPTIONAL: dict[str, tuple[str, Any]] = {
    "format_version": ("an integer", _is_int),
    "name": ("a string", lambda v: isinstance(v, str)),
    "status": ("a string", lambda v: isinstance(v, str)),
    "spec": ("an object", lambda v: isinstance(v, dict)),
    "spec_path": ("a string", lambda v: isinstance(v, str)),
    "spec_sha256": ("a string", lambda v: isinstance(v, str)),
    "scoring": ("an object", lambda v: isinstance(v, dict)),
    "configs": ("an object", lambda v: isinstance(v, dict) and all(isinstance(c, dict) for c in v.values())),
    "datasets": ("an object of objects", lambda v: isinstance(v, dict) and all(isinstance(d, dict)
                                                                               for d in v.values())),
    "spec_code": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)),
    "seeds": ("a list of integers", lambda v: isinstance(v, list) and all(_is_int(s) for s in v)),
    "units_total": ("an integer", _is_int),
    "units_done": ("an integer", _is_int),
    "units_error": ("an integer", _is_int),
    "units_stopped": ("an integer", _is_int),
    "spent_usd": ("a number", _is_number),
    "pid": ("an integer", _is_int),
    "resumed_at": ("a list", lambda v: isinstance(v, list)),
    "unit_cache": ("an object", lambda v: isinstance(v, dict)),
    "cache": ("an object", lambda v: isinstance(v, dict)),
    "files": ("an object of {bytes, sha256}", lambda v: isinstance(v, dict) and all(
        isinstance(d, dict) and _is_int(d.get("bytes")) and isinstance(d.get("sha256"), str) for d in v.values())),
}
"""Keys a reader uses and what they must be when present (null is allowed: an unfinished
run's fields are null)."""


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return f"key 'schema': expected an object, found {_kind(schema)}"
    for table in ("units", "probes"):
        cols = schema.get(table)
        if cols is None:
            continue
        if not isinstance(cols, list):
            return f"key 'schema.{table}': expected a list of [name, dtype, default], found {_kind(cols)}"
        for i, col in enumerate(cols):
            ok = (isinstance(col, list) and len(col) == 3 and isinstance(col[0], str) and col[1] in _DTYPES)
            if not ok:
                return (f"key 'schema.{table}[{i}]': expected [name, dtype ({', '.join(sorted(_DTYPES))}), "
                        f"default], found {_short(col)}")
    return None


def _str_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


_DATASET_KEYS: dict[str, tuple[str, Any]] = {
    "source": ("a path or generator spec (a string)", lambda v: isinstance(v, str) and v != ""),
    "sha256": ("a string", lambda v: isinstance(v, str)),
    "format": ("a loader name or null", _str_or_none),
    "questions": ("a path or null", _str_or_none),
    "limit": ("an integer or null", lambda v: v is None or _is_int(v)),
}
"""What `rollsum score` and a drill-down reload a pinned dataset with (`data.pinned`)."""


def _datasets_problem(datasets: Mapping[str, Any]) -> str | None:
    for name, d in datasets.items():
        for key, (what, ok) in _DATASET_KEYS.items():
            if (key in d or key in ("source", "sha256")) and not ok(d.get(key)):
                return f"key 'datasets.{name}.{key}': expected {what}, found {_short(d.get(key))}"
    return None


def _scoring_problem(plan: Mapping[str, Any]) -> str | None:
    """The parts of the scoring plan that `ScoringPlan.from_dict` would trip on."""
    scorers = plan.get("scorers")
    if "scorers" in plan and not (isinstance(scorers, list) and all(isinstance(n, str) and n for n in scorers)):
        return f"key 'scoring.scorers': expected a list of scorer names, found {_short(scorers)}"
    timing = plan.get("probe_timing")
    if timing is not None:
        from rollsum_evals.scoring.asks import parse_timing

        try:
            if not isinstance(timing, str):
                raise ValueError(timing)
            parse_timing(timing)
        except ValueError:
            return (f"key 'scoring.probe_timing': expected a probe timing key such as 'sampled:1+end', 'end', "
                    f"'after:N' or 'ages:A,B[+end]', found {_short(timing)}")
    return None


def check_manifest(manifest: Any) -> str | None:
    """What is wrong with a manifest's shape (None: nothing a reader would trip on)."""
    if not isinstance(manifest, dict):
        return f"expected a JSON object, found {_kind(manifest)}"
    for key, (what, ok) in _OPTIONAL.items():
        value = manifest.get(key)
        if value is not None and not ok(value):
            return f"key '{key}': expected {what}, found {_short(value)}"
    if manifest.get("datasets") is not None:
        problem = _datasets_problem(manifest["datasets"])
        if problem is not None:
            return problem
    if manifest.get("scoring") is not None:
        problem = _scoring_problem(manifest["scoring"])
        if problem is not None:
            return problem
    if manifest.get("schema") is not None:
        return _schema_problem(manifest["schema"])
    return None


def spec_sha256(spec_raw: Any, codes: list[str] | None) -> str:
    """The spec's identity as `rollsum_evals.spec.SweepSpec.sha256` computes it (its parsed
    content, plus the code fingerprints of the components it names by import path)."""
    from rollsum_evals.units import canonical_json

    payload = {"spec": spec_raw, "code": codes} if codes else spec_raw
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _names_a_component(spec: Mapping[str, Any]) -> bool:
    from rollsum.plugins import is_import_path

    configs = spec.get("configs")
    return isinstance(configs, list) and any(
        isinstance(c, dict) and any(is_import_path(v) for v in c.values()) for c in configs)


def spec_hash_problem(manifest: Mapping[str, Any]) -> str | None:
    """Why the manifest's ``spec_sha256`` cannot be the hash of the spec it records (None: it is,
    or it cannot be checked: a spec that redaction masked before it was written, or an older run
    that did not record its components' code, ``spec_code``)."""
    spec, recorded = manifest.get("spec"), manifest.get("spec_sha256")
    if not isinstance(spec, dict) or not isinstance(recorded, str):
        return None
    codes = manifest.get("spec_code")
    actual = spec_sha256(spec, codes)
    if actual == recorded:
        return None
    from rollsum.redact import MASK

    if MASK in json.dumps(spec, ensure_ascii=False, default=str):
        return None
    if codes is None and _names_a_component(spec):
        return None
    return (f"key 'spec_sha256': {recorded[:12]}… is not the hash of the spec the manifest records "
            f"({actual[:12]}…): the manifest was edited")
