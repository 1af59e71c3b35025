"""The run directory (contract: docs/run-format.md): journals while running, tables at the end.

Durability rule: a Unit's lines go to the probe, turn, summary and event journals first, and
its ``units.jsonl`` line last; each is one ``write`` of whole lines followed by ``fsync``. A
Unit is finished exactly when its ``units.jsonl`` line is complete, so after a SIGKILL a resume
drops torn lines and lines of unfinished Units, and re-runs those Units whole.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollsum.errors import ConfigError

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


def _dumps(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True,
                                         default=str) + "\n").encode("utf-8"))


def append_lines(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines with one write and fsync: a crash leaves at most one torn tail."""
    data = "".join(_dumps(r) + "\n" for r in rows).encode("utf-8")
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
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
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
        append_lines(self.file(PROBES_JOURNAL), result.probe_rows)
        append_lines(self.file(TURNS_JOURNAL), result.turn_rows)
        append_lines(self.file(SUMMARIES), result.summary_rows)
        append_lines(self.file(EVENTS), result.event_rows)
        append_lines(self.file(UNITS_JOURNAL), [result.unit_row])

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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
