"""Writing a run directory: append-only journals while running, tables at the end.

Durability rule: a Unit's texts, summaries and events go first, then its ``traces.jsonl`` line
(the replay is committed), then its probe lines, then its ``units.jsonl`` line (the Unit is
committed); each file gets one ``write`` of whole lines followed by ``fsync``. After a SIGKILL,
`RunDir.repair` drops torn lines and lines of uncommitted work: a Unit with a trace but no
``units.jsonl`` line is scored again from its trace, one without a trace is replayed whole.
Texts are content-addressed, so a text written for a Unit that did not commit is harmless.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.fileio import atomic_write_bytes, atomic_writer
from rollsum_evals.rundir.format import (
    EVENTS,
    MANIFEST,
    PROBE_SORT,
    PROBES_JOURNAL,
    REPLAY_JOURNALS,
    SCORE_JOURNALS,
    STATUS_STOPPED,
    SUMMARIES,
    TABLES,
    TEXTS,
    TRACES,
    TURN_COLUMNS,
    TURN_SORT,
    UNITS_JOURNAL,
    frame,
    schema_from_json,
    turn_rows,
    units_frame,
)


def dumps(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)


def lines(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(dumps(r) + "\n" for r in rows)


@dataclass(slots=True)
class ReplayLines:
    """A Unit's replay as journal text, exactly as written (and as the Unit cache stores it)."""

    texts: dict[str, str]
    """text id -> its ``texts.jsonl`` line (written only if the run does not hold it yet)."""
    summaries: str
    events: str
    traces: str

    @property
    def commit_line(self) -> str:
        """The line whose presence means the replay is complete."""
        return self.traces

    def by_file(self) -> dict[str, str]:
        return {SUMMARIES: self.summaries, EVENTS: self.events, TRACES: self.traces}

    def to_json(self) -> dict[str, Any]:
        return {"texts": self.texts, **self.by_file()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReplayLines:
        return cls(texts=dict(d["texts"]), summaries=d[SUMMARIES], events=d[EVENTS], traces=d[TRACES])


@dataclass(slots=True)
class ScoredLines:
    probes: str
    units: str

    @property
    def commit_line(self) -> str:
        return self.units

    def to_json(self) -> dict[str, str]:
        return {PROBES_JOURNAL: self.probes, UNITS_JOURNAL: self.units}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ScoredLines:
        return cls(probes=d[PROBES_JOURNAL], units=d[UNITS_JOURNAL])


@dataclass(slots=True)
class UnitResult:
    """Everything one finished Unit contributes to the run directory. Plain, picklable data."""

    unit_id: str
    replay: ReplayLines | None
    """None when the replay is already in this run directory (a resumed Unit scored again)."""
    scored: ScoredLines
    status: str = "ok"
    n_messages: int = 0
    wall_s: float = 0.0
    engine_config: dict[str, Any] = field(default_factory=dict)
    paid_usd: float = 0.0
    """Money actually spent (cache misses only): what --max-cost-usd counts."""
    cache_stats: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    """CPU time the Unit used in its worker thread (not a row: timing, for benchmarks)."""
    replay_cacheable: bool = False
    score_cacheable: bool = False
    replay_from_cache: bool = False
    score_from_cache: bool = False


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True,
                                         default=str) + "\n").encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append whole JSON lines with one write and fsync: a crash leaves at most one torn tail."""
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
    raw_lines = complete[:-1].split(b"\n")
    try:
        # one parse of the whole journal: 2-3x faster than a parse per line (table writing
        # is most of a cached re-run); any bad line falls back to the careful path
        rows = json.loads(b"[" + b",".join(raw_lines) + b"]")
    except ValueError:
        rows = None
    if rows is not None and all(isinstance(r, dict) for r in rows):
        yield from rows
        return
    for raw in raw_lines:
        try:
            row = json.loads(raw)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


def first_per_unit(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """unit id -> its first line (a resumed run never writes a Unit twice; be safe anyway)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        uid = r.get("unit_id")
        if isinstance(uid, str) and uid not in out:
            out[uid] = r
    return out


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._text_ids: set[str] | None = None

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
        if not isinstance(data, dict):
            raise ConfigError(f"{self.file(MANIFEST)}: expected a JSON object (the run's manifest), got "
                              f"{type(data).__name__}")
        return data

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        atomic_write_json(self.file(MANIFEST), dict(manifest))

    # ------------------------------------------------------------------ reading journals

    def unit_rows(self) -> dict[str, dict[str, Any]]:
        """Committed Units' ``units.jsonl`` rows by unit id."""
        return first_per_unit(read_jsonl(self.file(UNITS_JOURNAL)))

    def finished_ids(self) -> set[str]:
        return set(self.unit_rows())

    def trace_records(self) -> dict[str, dict[str, Any]]:
        return first_per_unit(read_jsonl(self.file(TRACES)))

    def texts(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in read_jsonl(self.file(TEXTS)) if isinstance(r.get("id"), str)}

    def rows_by_unit(self, name: str, units: set[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for r in read_jsonl(self.file(name)):
            uid = r.get("unit_id")
            if isinstance(uid, str) and (units is None or uid in units):
                out.setdefault(uid, []).append(r)
        return out

    # ------------------------------------------------------------------ writing

    def repair(self) -> tuple[set[str], set[str]]:
        """Make the journals consistent after a crash; returns (committed Units, replayed Units).

        Units stopped by the budget are dropped whole (replay and scores): they were cut short,
        so a resume replays them.

        Torn lines, lines of Units whose replay has no trace line, and probe lines of Units
        without a ``units.jsonl`` line are removed (rewritten atomically), so appending can
        continue safely. Texts are kept (deduplicated): they are content-addressed.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        stopped = {uid for uid, r in self.unit_rows().items() if r.get("status") == STATUS_STOPPED}
        traces = {uid: r for uid, r in self.trace_records().items() if uid not in stopped}
        units = {uid: r for uid, r in self.unit_rows().items() if uid in traces}
        self._rewrite_if_changed(TRACES, list(traces.values()))
        self._rewrite_if_changed(UNITS_JOURNAL, list(units.values()))
        for name in REPLAY_JOURNALS:
            if name != TRACES:
                self._rewrite_if_changed(name, [r for r in read_jsonl(self.file(name))
                                                if r.get("unit_id") in traces])
        self._rewrite_if_changed(PROBES_JOURNAL, [r for r in read_jsonl(self.file(PROBES_JOURNAL))
                                                  if r.get("unit_id") in units])
        texts = self.texts()
        self._rewrite_if_changed(TEXTS, list(texts.values()))
        self._text_ids = set(texts)
        return set(units), set(traces)

    def forget(self, unit_ids: set[str]) -> None:
        """Drop Units from the journals so that a resume runs them again (``--retry-errors``).
        Their trace lines go first: a crash after that leaves units rows without a trace, which
        `repair` drops, so a forgotten Unit is always replayed, never only re-scored."""
        if not unit_ids:
            return
        for name in (TRACES, *[n for n in REPLAY_JOURNALS if n != TRACES], PROBES_JOURNAL, UNITS_JOURNAL):
            self._rewrite_if_changed(name, [r for r in read_jsonl(self.file(name))
                                            if r.get("unit_id") not in unit_ids])

    def _rewrite_if_changed(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        path = self.file(name)
        if not path.exists():
            return
        data = lines(rows).encode("utf-8")
        if path.read_bytes() != data:
            atomic_write_bytes(path, data)

    def append_many(self, results: Sequence[UnitResult]) -> None:
        """Several Units with one write + fsync per journal (cache hits arrive in bulk). Order:
        texts, summaries, events, traces, probes, units: each stage's commit record last."""
        if self._text_ids is None:
            self._text_ids = set(self.texts())
        new_texts: list[str] = []
        for res in results:
            if res.replay is None:
                continue
            for tid, line in res.replay.texts.items():
                if tid not in self._text_ids:
                    self._text_ids.add(tid)
                    new_texts.append(line)
        append_text(self.file(TEXTS), "".join(new_texts))
        for name in REPLAY_JOURNALS:
            append_text(self.file(name), "".join(r.replay.by_file()[name] for r in results if r.replay))
        for name, attr in zip(SCORE_JOURNALS, ("probes", "units")):
            append_text(self.file(name), "".join(getattr(r.scored, attr) for r in results))

    def rewrite_scored(self, results: Sequence[ScoredLines]) -> None:
        """Replace every Unit's scored lines (re-scoring): probes first, units last, atomically
        each; a crash in between leaves old units rows with new probes, which a re-run of
        `rollsum score` repairs (the replay journals are never touched)."""
        with atomic_writer(self.file(PROBES_JOURNAL)) as fh:
            for r in results:
                fh.write(r.probes)
        with atomic_writer(self.file(UNITS_JOURNAL)) as fh:
            for r in results:
                fh.write(r.units)

    def write_tables(self, manifest: Mapping[str, Any], unit_ids: set[str] | None = None) -> None:
        """units/probes/turns.parquet from the journals, sorted so row order never depends on
        --jobs or on the order Units finished. Columns: the manifest's schema."""
        unit_cols = schema_from_json(manifest["schema"]["units"])
        probe_cols = schema_from_json(manifest["schema"]["probes"])
        units = [r for r in self.unit_rows().values() if unit_ids is None or r["unit_id"] in unit_ids]
        done = {u["unit_id"] for u in units}
        probes = [r for r in read_jsonl(self.file(PROBES_JOURNAL)) if r.get("unit_id") in done]
        turns = [row for uid, rec in self.trace_records().items() if uid in done for row in turn_rows(rec)]
        for name, df in (("units", units_frame(units, unit_cols)),
                         ("probes", frame(probes, probe_cols, PROBE_SORT)),
                         ("turns", frame(turns, TURN_COLUMNS, TURN_SORT))):
            with atomic_writer(self.file(TABLES[name]), binary=True) as fh:
                df.to_parquet(fh, index=False)
