"""Reading a run directory: `load_run`, the one reader every command uses.

A run whose tables were written is read from its parquet files; a run that is still running or
was killed is read from its journals (committed Units only), so a partial run can be inspected.
Columns come from the manifest's schema: a scorer's columns appear whether or not this code
knows the scorer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollsum.errors import ConfigError
from rollsum.types import Message
from rollsum_evals.data.copies import DatasetCopies
from rollsum_evals.data.pinned import Dataset, Loader, default_loader, load_pinned
from rollsum_evals.replay.trace import Text, Trace
from rollsum_evals.rundir.format import (
    DATASET_COPIES,
    EVENTS,
    FORMAT_VERSION,
    PROBES_JOURNAL,
    SUMMARIES,
    TABLES,
    TURN_COLUMNS,
    param_columns,
    schema_from_json,
)
from rollsum_evals.rundir.integrity import DamagedRun, own_file
from rollsum_evals.rundir.journal import RunDir, journal_frames
from rollsum_evals.rundir.status import rescoring_problem

if TYPE_CHECKING:
    import pandas as pd


class _DecodedOnRead:
    """A DataFrame field that may be given as a function making it, called on the first read
    (a dataclass descriptor-typed field: `Run(turns=...)` takes either). `load_run` gives the
    turns table this way: ~200,000 rows on the thresholds sweep, 40-100 ms to decode, which
    no report of a finished run reads (`with_feasibility` needs it only for runs whose units
    lack the feasibility columns); its bytes are still checked against the seal, and its
    columns against the schema, when the run is loaded."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_table"

    def __get__(self, obj: object | None, objtype: type | None = None) -> pd.DataFrame:
        if obj is None:  # no class-level default: the dataclass field stays required
            raise AttributeError(self._slot)
        value = obj.__dict__[self._slot]
        if callable(value):
            value = obj.__dict__[self._slot] = value()
        table: pd.DataFrame = value
        return table

    def __set__(self, obj: object, value: pd.DataFrame | Callable[[], pd.DataFrame]) -> None:
        obj.__dict__[self._slot] = value


@dataclass
class Run:
    path: Path
    manifest: dict[str, Any]
    units: pd.DataFrame
    probes: pd.DataFrame
    turns: _DecodedOnRead = _DecodedOnRead()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _rd: RunDir | None = field(default=None, repr=False)

    @property
    def rundir(self) -> RunDir:
        """The directory's files, checked against the manifest's seal as they are read."""
        if self._rd is None:
            self._rd = RunDir(self.path)
            self._rd.expect(self.manifest)
        return self._rd

    @property
    def name(self) -> str:
        """The run directory's name: `runs/nightly` reports to `reports/nightly/`."""
        return self.path.resolve().name

    def _rows(self, name: str) -> list[dict[str, Any]]:
        if name not in self._cache:
            done = set(self.units["unit_id"]) if "unit_id" in self.units else set()
            self._cache[name] = [r for r in self.rundir.journal(name) if r["unit_id"] in done]
        rows: list[dict[str, Any]] = self._cache[name]
        return rows

    def summaries(self) -> list[dict[str, Any]]:
        """``summaries.jsonl`` lines of the run's Units: {unit_id, conversation_id, config,
        generation, turn, record}."""
        return self._rows(SUMMARIES)

    def events(self) -> list[dict[str, Any]]:
        return self._rows(EVENTS)

    def texts(self) -> dict[str, Text]:
        if "texts" not in self._cache:
            self._cache["texts"] = {tid: Text(r["role"], r.get("name"), r["content"])
                                    for tid, r in self.rundir.texts().items()}
        texts: dict[str, Text] = self._cache["texts"]
        return texts

    def trace_records(self) -> dict[str, dict[str, Any]]:
        if "traces" not in self._cache:
            self._cache["traces"] = self.rundir.trace_records()
        recs: dict[str, dict[str, Any]] = self._cache["traces"]
        return recs

    def trace_record(self, unit_id: str) -> dict[str, Any] | None:
        """One Unit's trace line: from all of them when they were read (or the Unit was not
        announced, `want_traces`), else from one read of every announced Unit's lines. A report
        shows a few dozen traces of hundreds of Units: decoding every trace line was ~0.1 s."""
        wanted: set[str] = self._cache.get("wanted", set())
        if "traces" in self._cache or unit_id not in wanted:
            return self.trace_records().get(unit_id)
        some: dict[str, dict[str, Any] | None] = self._cache.setdefault("traces:some", {})
        if unit_id not in some:
            ids = wanted - some.keys()
            found = self.rundir.trace_records_of(ids)
            some.update({uid: found.get(uid) for uid in ids})
        return some[unit_id]

    def load_trace(self, unit_id: str, loader: Loader = default_loader, *, contexts_only: bool = False) -> Trace:
        """One Unit's replay with its conversation reloaded from the dataset the run pinned (by
        sha256; a changed dataset is a ConfigError): `.context_at(turn)` is then exactly what
        the engine sent at that turn.

        `contexts_only`: what a reader of contexts needs (the report's drill-down) — turns,
        texts and `summary_turns` — without `events` and the summary records (both left
        empty): the events journal is the run's largest file (~40 MB on the thresholds sweep)
        and decoding it, and every summary record, was most of the drill-down's time."""
        if "datasets" not in self._cache:
            self._cache["datasets"] = pinned_datasets(self.path, self.manifest, loader)
        record = self.trace_record(unit_id)
        if record is None:
            raise ConfigError(f"{self.path}: no trace for unit {unit_id}")
        unit = record.get("unit") or {}
        convs = {c.id: c for c in self._cache["datasets"][unit["dataset"]].conversations}
        return self.trace(unit_id, convs[unit["conversation_id"]].messages, contexts_only=contexts_only)

    def trace(self, unit_id: str, messages: Sequence[Message], *, contexts_only: bool = False) -> Trace:
        """One Unit's replay, decoded: `messages` is its conversation from the pinned dataset
        (see `load_trace`, also for `contexts_only`)."""
        record = self.trace_record(unit_id)
        if record is None:
            raise ConfigError(f"{self.path}: no trace for unit {unit_id}")
        texts = self._texts_of(unit_id)
        if contexts_only:
            return Trace.from_record(record, messages, texts, self._unit_rows(SUMMARIES, unit_id),
                                     summary_records=False)
        return decode_trace(record, messages, texts, self._unit_rows(SUMMARIES, unit_id),
                            self._unit_rows(EVENTS, unit_id))

    def _texts_of(self, unit_id: str) -> Mapping[str, Text]:
        """The texts a Unit's trace may use: all of them when they were read (or the Unit was not
        announced), else one read of the texts every announced Unit's trace names (`text_ids`)."""
        wanted: set[str] = self._cache.get("wanted", set())
        if "texts" in self._cache or unit_id not in wanted:
            return self.texts()
        some: dict[str, Text] = self._cache.setdefault("texts:some", {})
        done: set[str] = self._cache.setdefault("texts:units", set())
        if unit_id not in done:
            units = wanted - done
            ids = {t for u in units for t in ((self.trace_record(u) or {}).get("text_ids") or [])}
            some.update({tid: Text(r["role"], r.get("name"), r["content"])
                         for tid, r in self.rundir.texts_of(ids - some.keys()).items()})
            done.update(units)
        return some

    def unit_summaries(self, unit_id: str) -> list[dict[str, Any]]:
        """One Unit's ``summaries.jsonl`` lines (as `summaries`, for that Unit only; read with
        the other announced Units', see `want_traces`)."""
        return self._unit_rows(SUMMARIES, unit_id)

    def summarized_units(self) -> set[str]:
        """The run's Units with at least one summary line. From the units table's
        ``n_summaries`` when it has one (the length of the trace's summaries, as the trace's
        ``journal_rows`` count of its summary lines is), so neither the trace lines nor the
        summaries journal need be decoded; else from each trace's ``journal_rows`` when every
        trace has one; else from the journal."""
        if "summarized" not in self._cache and {"unit_id", "n_summaries"} <= set(self.units.columns):
            n = self.units["n_summaries"]
            if n.dtype.kind in "iu" and bool(n.notna().all()):
                self._cache["summarized"] = set(self.units.loc[n > 0, "unit_id"].astype(str))
        if "summarized" not in self._cache:
            done = set(self.units["unit_id"]) if "unit_id" in self.units else set()
            records = self.trace_records()
            counts = {uid: (records.get(uid) or {}).get("journal_rows") for uid in done}
            if all(isinstance(c, dict) and isinstance(c.get(SUMMARIES), int) for c in counts.values()):
                self._cache["summarized"] = {uid for uid, c in counts.items() if c[SUMMARIES] > 0}  # type: ignore[index]
            else:
                self._cache["summarized"] = {str(r["unit_id"]) for r in self.summaries()}
        out: set[str] = self._cache["summarized"]
        return out

    def want_traces(self, unit_ids: Iterable[str]) -> None:
        """Say which Units' traces are about to be decoded (the report's drill-down): their
        journal rows are then read together, decoding only their lines (`RunDir.journal_of`),
        instead of every row of every Unit. Without it a trace reads the whole journals once."""
        wanted: set[str] = self._cache.setdefault("wanted", set())
        wanted.update(unit_ids)

    def _unit_rows(self, name: str, unit_id: str) -> list[dict[str, Any]]:
        """One Unit's rows of a journal: from the whole journal when it was read (or no Units
        were announced), else from one read of every announced Unit's rows."""
        wanted: set[str] = self._cache.get("wanted", set())
        if name in self._cache or unit_id not in wanted:
            return self._by_unit(name).get(unit_id, [])
        some: dict[str, list[dict[str, Any]]] = self._cache.setdefault(f"{name}:some", {})
        if unit_id not in some:
            ids = wanted - some.keys()
            done = set(self.units["unit_id"]) if "unit_id" in self.units else set()
            for uid in ids:
                some[uid] = []
            for r in self.rundir.journal_of(name, ids):
                if r["unit_id"] in done:
                    some[r["unit_id"]].append(r)
        return some[unit_id]

    def _by_unit(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """A journal's rows grouped by Unit, built once: a report decodes dozens of traces, and
        filtering every row for each was the report's quadratic part on long runs."""
        key = f"{name}:by_unit"
        if key not in self._cache:
            groups: dict[str, list[dict[str, Any]]] = {}
            for r in self._rows(name):
                groups.setdefault(r.get("unit_id"), []).append(r)  # type: ignore[arg-type]
            self._cache[key] = groups
        out: dict[str, list[dict[str, Any]]] = self._cache[key]
        return out


def pinned_datasets(path: Path, manifest: Mapping[str, Any], loader: Loader = default_loader) -> dict[str, Dataset]:
    """The datasets a run pinned, loaded again for a reader (`rollsum score`, a drill-down):
    ``hf:`` sets from the copies the run kept in its ``datasets/`` (`data.copies`), ``synth:``
    sets from the generated-set cache beside the run's Unit cache (`data.synth_cache`, read-only
    here: a reader stores nothing; a missing or damaged file is generated), the rest from their
    source. Whatever serves them, `load_pinned` checks every set against the run's sha256."""
    info = manifest.get("unit_cache") or {}
    if loader is default_loader and info.get("enabled") and info.get("path"):
        from rollsum_evals.data.synth_cache import SynthCache, caching_loader

        loader = caching_loader(loader, SynthCache(Path(str(info["path"])).parent / "datasets", write=False))
    return load_pinned(manifest.get("datasets") or {}, loader, where=str(path),
                       copies=DatasetCopies(own_file(path / DATASET_COPIES)))


def decode_trace(record: Mapping[str, Any], messages: Sequence[Message], texts: Mapping[str, Text],
                 summary_rows: Sequence[Mapping[str, Any]], event_rows: Sequence[Mapping[str, Any]]) -> Trace:
    return Trace.from_record(record, messages, texts, summary_rows, event_rows)


def check_format(path: Path, manifest: Mapping[str, Any]) -> None:
    version = manifest.get("format_version", 1)
    if version != FORMAT_VERSION:
        raise ConfigError(f"{path}: run format {version}, this rollsum reads format {FORMAT_VERSION} "
                          "(re-run the sweep with this version; docs/run-format.md)")


def load_run(path: str | Path) -> Run:
    """A run directory as DataFrames (docs/run-format.md), verified: a missing, foreign or
    damaged directory is a user-facing `ConfigError` / `DamagedRun`, one line naming the file
    (and line or column) and what to do. A finished run is read from its tables, each checked
    against the manifest's seal; a running or killed run from its journals (committed Units
    only), read strictly (only a torn last line is tolerated)."""

    rd = RunDir(path)
    if not rd.path.is_dir():
        raise ConfigError(f"{rd.path}: not a run directory (expected the --out directory of `rollsum run`)")
    manifest = rd.read_manifest()
    check_format(rd.path, manifest)
    problem = rescoring_problem(rd.path, manifest)
    if problem is not None:
        raise ConfigError(problem)
    rd.expect(manifest)
    schema = manifest.get("schema") or {}
    unit_cols, probe_cols = schema_from_json(schema.get("units")), schema_from_json(schema.get("probes"))
    finished = manifest.get("status") not in (None, "running", "interrupted")
    tables: dict[str, pd.DataFrame] = {}
    turns: pd.DataFrame | Callable[[], pd.DataFrame] | None = None
    for name, file in TABLES.items():
        if not finished or not (rd.file(file).exists() or file in rd.sealed):
            continue
        data = rd.read_bytes(file) or b""

        def damaged(err: Exception, file: str = file, name: str = name) -> DamagedRun:
            return DamagedRun(f"{rd.file(file)}: cannot read the {name} table ({_first_line(err)})"
                              f"{rd.hint(file)}")

        try:
            # the turns table is decoded when first read (`_DecodedOnRead`): only its schema now
            if name == "turns":
                columns = _table_columns(data)
            else:
                tables[name] = read_table_bytes(data)
                columns = list(tables[name].columns)
        except Exception as err:  # pyarrow raises several unrelated types for a bad file
            raise damaged(err) from None
        declared = {"units": unit_cols, "probes": probe_cols, "turns": TURN_COLUMNS}[name]
        missing = [c.name for c in declared if c.name not in columns]
        if missing:
            raise DamagedRun(f"{rd.file(file)}: column '{missing[0]}' is missing (the manifest's schema has it)"
                             f"{rd.hint(file)}")
        if name == "turns":
            turns = _decoder(data, damaged)
    if len(tables) + (turns is not None) < len(TABLES):
        units = rd.unit_rows()
        done = set(units)
        probes = [r for r in rd.journal(PROBES_JOURNAL) if r["unit_id"] in done]
        traces = {uid: rec for uid, rec in rd.trace_records().items() if uid in done}
        tables = journal_frames(rd, list(units.values()), probes, traces, unit_cols, probe_cols)
        turns = tables["turns"]
    assert turns is not None  # read above, or rebuilt from the journals with the other tables
    return Run(path=rd.path, manifest=manifest, units=param_columns(tables["units"]), probes=tables["probes"],
               turns=turns, _rd=rd)


def _table_columns(data: bytes) -> list[str]:
    """A parquet table's column names, from its footer (nothing decoded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return list(pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).schema_arrow.names)


def _decoder(data: bytes, damaged: Callable[[Exception], DamagedRun]) -> Callable[[], pd.DataFrame]:
    """`read_table_bytes(data)` later (`_DecodedOnRead`), failing as `load_run` would have."""
    def decode() -> pd.DataFrame:
        try:
            return read_table_bytes(data)
        except Exception as err:  # pyarrow raises several unrelated types for a bad file
            raise damaged(err) from None
    return decode


def read_table_bytes(data: bytes) -> pd.DataFrame:
    """A parquet table read on the calling thread only: no Arrow thread pool, no read-ahead
    (`pyarrow.parquet.read_table` goes through the dataset scanner, which uses both).

    Arrow's pools start native threads that can still be finishing a task when a command exits
    right after reading (``compare`` with an unknown label: read, one line, exit); the pool's
    static destructor then meets a joinable thread and the process aborts ("terminate called
    without an active exception", SIGABRT; apache/arrow#34314). Run tables are small, so one
    thread costs nothing, and a reader never leaves a thread behind."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(use_threads=False)
    frame: pd.DataFrame = table.to_pandas(use_threads=False)
    return frame


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:120]
