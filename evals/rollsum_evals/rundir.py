"""The run directory (contract: docs/run-format.md): journals while running, tables at the end.

Durability rule: a Unit's lines go to the probe, turn, summary and event journals first, and
its ``units.jsonl`` line last; each is one ``write`` of whole lines followed by ``fsync``. A
Unit is finished exactly when its ``units.jsonl`` line is complete, so after a SIGKILL a resume
drops torn lines and lines of unfinished Units, and re-runs those Units whole.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollsum_evals.fileio import atomic_write_bytes, atomic_writer
from rollsum.errors import ConfigError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas as pd

MANIFEST = "manifest.json"
UNITS_JOURNAL = "units.jsonl"
PROBES_JOURNAL = "probes.jsonl"
TURNS_JOURNAL = "turns.jsonl"
SUMMARIES = "summaries.jsonl"
EVENTS = "events.jsonl"
DETAIL_JOURNALS: tuple[str, ...] = (PROBES_JOURNAL, TURNS_JOURNAL, SUMMARIES, EVENTS)

NAN = math.nan

UNIT_COLUMNS: dict[str, Any] = {
    "unit_id": "", "dataset": "", "conversation_id": "", "config": "", "preset": "",
    "params": "{}", "prompt": "", "model": "", "seed": 0, "context_window": 0,
    "n_messages": 0, "n_probes": 0, "n_summaries": 0, "n_failures": 0,
    "retention": NAN, "relative_retention": NAN, "stale_rate": NAN,
    "main_input_tokens": 0, "mean_context_tokens": 0.0, "max_context_tokens": 0,
    "summarizer_input_tokens": 0, "summarizer_output_tokens": 0, "summarizer_calls": 0,
    "judge_input_tokens": 0, "judge_output_tokens": 0,
    "cost_main_usd": 0.0, "cost_summarizer_usd": 0.0, "cost_judge_usd": 0.0, "cost_usd": 0.0,
    "summarizer_latency_s": 0.0, "wall_s": 0.0, "qa_f1": NAN, "rouge_l": NAN,
    "status": "ok", "error": "",
    # additive columns (documented in docs/run-format.md)
    "rouge_l_span": NAN, "judge_accuracy": NAN, "probe_timing": "end", "main_model": "",
}
PROBE_COLUMNS: dict[str, Any] = {
    "unit_id": "", "dataset": "", "conversation_id": "", "config": "", "preset": "", "model": "",
    "probe_id": "", "category": "", "question": "", "answer": "", "evidence_turn": -1,
    "asked_turn": -1, "age_turns": 0, "retained": False, "stale": False, "in_summary": False,
    "in_verbatim": False, "baseline_retained": None, "died_at_generation": -1,
    "qa_f1": NAN, "prediction": "",
    "judge_correct": None, "seed": 0,
}
TURN_COLUMNS: dict[str, Any] = {
    "unit_id": "", "config": "", "conversation_id": "", "turn": 0, "context_tokens": 0,
    "active_messages": 0, "summary_tokens": 0,
}
NON_DETERMINISTIC_UNIT_COLUMNS: tuple[str, ...] = ("wall_s", "summarizer_latency_s")
"""Wall-clock measurements: excluded when two runs are compared for equality."""


@dataclass(slots=True)
class UnitResult:
    """Everything one finished Unit contributes to the run directory. Plain, picklable data."""

    unit_id: str
    unit_row: dict[str, Any]
    probe_rows: list[dict[str, Any]] = field(default_factory=list)
    turn_rows: list[dict[str, Any]] = field(default_factory=list)
    summary_rows: list[dict[str, Any]] = field(default_factory=list)
    event_rows: list[dict[str, Any]] = field(default_factory=list)
    paid_usd: float = 0.0
    """Money actually spent (cache misses only): what --max-cost-usd counts."""
    cache_stats: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    """CPU time the Unit used in its worker thread (not a row: timing, for benchmarks)."""
    from_cache: bool = False
    """Served from the Unit-result cache instead of replayed."""
    lines: dict[str, str] | None = None
    """The exact journal text per journal file, once formatted (and what the Unit-result cache
    stores): a cache hit is written without decoding and re-encoding thousands of rows."""

    def journal_text(self) -> dict[str, str]:
        if self.lines is None:
            self.lines = {
                PROBES_JOURNAL: _lines(self.probe_rows), TURNS_JOURNAL: _lines(self.turn_rows),
                SUMMARIES: _lines(self.summary_rows), EVENTS: _lines(self.event_rows),
                UNITS_JOURNAL: _lines([self.unit_row]),
            }
        return self.lines


def _dumps(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)


def _lines(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(_dumps(r) + "\n" for r in rows)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True,
                                         default=str) + "\n").encode("utf-8"))


def append_lines(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines with one write and fsync: a crash leaves at most one torn tail."""
    append_text(path, _lines(rows))


def append_text(path: Path, text: str) -> None:
    """`append_lines` for text that is already whole JSON lines."""
    data = text.encode("utf-8")
    if not data:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Complete, valid lines only: a torn last line (killed mid-write) is skipped."""
    if not path.exists():
        return
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    if not complete:
        return
    lines = complete[:-1].split(b"\n")
    try:
        # one parse of the whole journal: 2-3x faster than a parse per line (table writing
        # is most of a cached re-run); any bad line falls back to the careful path
        rows = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        rows = None
    if rows is not None and all(isinstance(r, dict) for r in rows):
        yield from rows
        return
    for raw in lines:
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def file(self, name: str) -> Path:
        return self.path / name

    def has_results(self) -> bool:
        return self.file(UNITS_JOURNAL).exists() or self.file(MANIFEST).exists()

    def read_manifest(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.file(MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{self.path}: not a run directory (no {MANIFEST})") from None
        except ValueError as err:
            raise ConfigError(f"{self.file(MANIFEST)}: not valid JSON: {err}") from None
        return data

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        atomic_write_json(self.file(MANIFEST), dict(manifest))

    def finished_rows(self) -> list[dict[str, Any]]:
        seen: set[str] = set()
        rows = []
        for row in read_jsonl(self.file(UNITS_JOURNAL)):
            uid = row.get("unit_id")
            if isinstance(uid, str) and uid not in seen:
                seen.add(uid)
                rows.append(row)
        return rows

    def finished_ids(self) -> set[str]:
        return {r["unit_id"] for r in self.finished_rows()}

    def repair(self) -> set[str]:
        """Make the journals consistent after a crash; returns the finished Unit ids.

        Torn lines and lines of Units without a ``units.jsonl`` line are removed (rewritten
        atomically), so appending can continue safely.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        rows = self.finished_rows()
        done = {r["unit_id"] for r in rows}
        self._rewrite_if_changed(UNITS_JOURNAL, rows)
        for name in DETAIL_JOURNALS:
            kept = [r for r in read_jsonl(self.file(name)) if r.get("unit_id") in done]
            self._rewrite_if_changed(name, kept)
        return done

    def _rewrite_if_changed(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        path = self.file(name)
        if not path.exists():
            return
        data = "".join(_dumps(r) + "\n" for r in rows).encode("utf-8")
        if path.read_bytes() != data:
            atomic_write_bytes(path, data)

    def append(self, result: UnitResult) -> None:
        """Details first, the Unit's line last: that line is the commit record."""
        self.append_many([result])

    def append_many(self, results: Sequence[UnitResult]) -> None:
        """Several Units with one write + fsync per journal (cache hits arrive in bulk, and five
        fsyncs per Unit would dominate a cached re-run). Still details first, Unit lines last:
        a crash in between leaves only detail lines that `repair` drops."""
        texts = [res.journal_text() for res in results]
        for name in (*DETAIL_JOURNALS, UNITS_JOURNAL):
            append_text(self.file(name), "".join(t[name] for t in texts))

    def write_tables(self, unit_ids: set[str] | None = None) -> None:
        """units/probes/turns.parquet from the journals, sorted so row order never depends on
        --jobs or on the order Units finished."""
        units = self.finished_rows()
        if unit_ids is not None:
            units = [u for u in units if u["unit_id"] in unit_ids]
        done = {u["unit_id"] for u in units}
        probes = [r for r in read_jsonl(self.file(PROBES_JOURNAL)) if r.get("unit_id") in done]
        turns = [r for r in read_jsonl(self.file(TURNS_JOURNAL)) if r.get("unit_id") in done]
        _write_parquet(self.file("units.parquet"), _frame(units, UNIT_COLUMNS, ["unit_id"]))
        _write_parquet(self.file("probes.parquet"),
                       _frame(probes, PROBE_COLUMNS, ["unit_id", "probe_id"]))
        _write_parquet(self.file("turns.parquet"), _frame(turns, TURN_COLUMNS, ["unit_id", "turn"]))


# ----------------------------------------------------------------------------------------------
# the Unit-result cache


UNIT_CACHE_FILE = "units.sqlite"
_UNIT_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS unit_results (
    key TEXT PRIMARY KEY,
    unit_id TEXT NOT NULL,
    payload BLOB NOT NULL,
    created_at REAL NOT NULL
);
"""


class UnitCache:
    """Finished Units' journal lines, keyed by the Unit and a fingerprint of the code that made
    them, so an identical re-run copies results instead of replaying (cached requests, one level
    up from the model cache).

    SQLite in WAL mode: each `put` is one transaction (atomic; two sweeps sharing the cache dir
    wait on each other instead of failing). Payloads are stored exactly as they go to the run
    directory, after redaction, so the cache can never hold more than the run dir does. A cache
    that cannot be opened or read is a warning and a miss, never a failed sweep: it is only a
    speed-up.
    """

    def __init__(self, path: Path, *, clock: Any = time.time) -> None:
        self.path = path
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_UNIT_CACHE_SCHEMA)
            self._conn = conn
        except (sqlite3.Error, OSError) as err:
            log.warning("unit cache %s unusable (%s): every Unit will be replayed", path, err)

    def get_many(self, keys: Mapping[str, str], *, secrets: Sequence[str] = ()) -> dict[str, UnitResult]:
        """``keys`` maps unit id -> cache key; returns the hits by unit id.

        Stored text was redacted by the same code (the key covers the code), so only this
        process's own secrets can be new: an entry that contains one is treated as a miss and
        replayed, never copied."""
        if self._conn is None or not keys:
            return {}
        by_key = {k: uid for uid, k in keys.items()}
        needles = [n for s in secrets for n in {s, json.dumps(s, ensure_ascii=False)[1:-1]}]
        out: dict[str, UnitResult] = {}
        items = list(by_key)
        try:
            for i in range(0, len(items), 500):
                chunk = items[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._conn.execute(
                        f"SELECT key, payload FROM unit_results WHERE key IN ({marks})", chunk):
                    uid = by_key[key]
                    text = zlib.decompress(blob).decode("utf-8")
                    if any(n in text for n in needles):
                        continue
                    lines: dict[str, str] = json.loads(text)
                    if set(lines) != {*DETAIL_JOURNALS, UNITS_JOURNAL}:
                        continue
                    row = json.loads(lines[UNITS_JOURNAL])
                    if not isinstance(row, dict) or row.get("unit_id") != uid:
                        continue
                    out[uid] = UnitResult(unit_id=uid, unit_row=row, lines=lines, from_cache=True)
        except (sqlite3.Error, ValueError, KeyError, zlib.error) as err:
            log.warning("unit cache %s unreadable (%s): replaying instead", self.path, err)
            return {}
        return out

    def put(self, key: str, result: UnitResult) -> bool:
        if self._conn is None:
            return False
        blob = zlib.compress(json.dumps(result.journal_text(), ensure_ascii=False).encode("utf-8"), 1)
        try:
            with self._conn:
                self._conn.execute("INSERT OR REPLACE INTO unit_results VALUES (?, ?, ?, ?)",
                                   (key, result.unit_id, blob, float(self._clock())))
        except sqlite3.Error as err:
            log.warning("unit cache %s: could not store %s (%s)", self.path, result.unit_id, err)
            return False
        return True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_NULLABLE_BOOL = ("baseline_retained", "judge_correct")
_BOOL = ("retained", "stale", "in_summary", "in_verbatim")


def _frame(rows: list[dict[str, Any]], columns: Mapping[str, Any], sort: list[str]) -> pd.DataFrame:
    import pandas as pd

    full = [{c: r.get(c, d) for c, d in columns.items()} for r in rows]
    df = pd.DataFrame(full, columns=list(columns))
    for c in _NULLABLE_BOOL:
        if c in df:
            df[c] = df[c].astype("boolean")
    for c in _BOOL:
        if c in df:
            df[c] = df[c].astype(bool)
    for c, d in columns.items():
        if isinstance(d, bool) or c in _NULLABLE_BOOL:
            continue
        if isinstance(d, int):
            df[c] = df[c].astype("int64")
        elif isinstance(d, float):
            df[c] = df[c].astype("float64")
        elif isinstance(d, str):
            df[c] = df[c].astype(str)
    if len(df):
        df = df.sort_values(sort, kind="mergesort").reset_index(drop=True)
    return df


def _write_parquet(path: Path, df: pd.DataFrame) -> None:
    with atomic_writer(path, binary=True) as fh:
        df.to_parquet(fh, index=False)


# ----------------------------------------------------------------------------------------------
# reading a run


@dataclass(slots=True)
class Run:
    path: Path
    manifest: dict[str, Any]
    units: pd.DataFrame
    probes: pd.DataFrame
    turns: pd.DataFrame

    def summaries(self) -> list[dict[str, Any]]:
        return list(read_jsonl(self.path / SUMMARIES))

    def events(self) -> list[dict[str, Any]]:
        return list(read_jsonl(self.path / EVENTS))


def load_run(path: str | Path) -> Run:
    """A run directory as DataFrames. A run that was killed before its tables were written is
    read from its journals, so a partial run can still be inspected."""
    import pandas as pd

    rd = RunDir(path)
    if not rd.path.is_dir():
        raise ConfigError(f"{rd.path}: run directory not found")
    manifest = rd.read_manifest()
    tables: dict[str, pd.DataFrame] = {}
    done = rd.finished_ids()
    for name, cols, journal, sort in (("units", UNIT_COLUMNS, UNITS_JOURNAL, ["unit_id"]),
                                      ("probes", PROBE_COLUMNS, PROBES_JOURNAL, ["unit_id", "probe_id"]),
                                      ("turns", TURN_COLUMNS, TURNS_JOURNAL, ["unit_id", "turn"])):
        pq = rd.file(f"{name}.parquet")
        if pq.exists() and manifest.get("status") != "running":
            tables[name] = pd.read_parquet(pq)
        else:
            rows = [r for r in read_jsonl(rd.file(journal)) if r.get("unit_id") in done]
            tables[name] = _frame(rows, cols, sort)
    return Run(path=rd.path, manifest=manifest, units=tables["units"], probes=tables["probes"],
               turns=tables["turns"])
