"""Writing a run directory: append-only journals while running, tables at the end.

Durability rule: a Unit's texts, summaries and events go first, then its ``traces.jsonl`` line
(the replay is committed), then its probe lines, then its ``units.jsonl`` line (the Unit is
committed); each file gets one ``write`` of whole lines followed by ``fsync``. After a SIGKILL,
`RunDir.repair` drops torn lines and lines of uncommitted work: a Unit with a trace but no
``units.jsonl`` line is scored again from its trace, one without a trace is replayed whole.
Texts are content-addressed, so a text written for a Unit that did not commit is harmless.

Over ~400 lines because it is the one writer of a run directory (issue #12) and the repair of
what that writer leaves after a kill, a full disk or tampering belongs with it: the rules for
what a committed line is and for what repair may drop are the same rules.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollsum.errors import ConfigError
from rollsum.safejson import JSONInputError, loads
from rollsum_evals.fileio import atomic_write_bytes, atomic_writer, overwrite_in_place
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
    BadValue,
    frame,
    frame_of_columns,
    schema_from_json,
    turn_columns,
    units_frame,
)
from rollsum_evals.rundir.integrity import (
    DamagedRun,
    check_manifest,
    content_problem,
    describe_bad,
    file_digest,
    own_file,
    scan_jsonl,
    size_problem,
    spec_hash_problem,
)
from rollsum_evals.rundir.integrity import (
    read_jsonl as read_jsonl,
)
from rollsum_evals.scoring.base import Column

if TYPE_CHECKING:
    import pandas as pd


def dumps(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)


def lines(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(dumps(r) + "\n" for r in rows)


_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:@+=/-]*")
"""Ids whose JSON form is the id itself (nothing escaped), so `_lines_naming` finds them."""

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


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=True, default=str) + "\n").encode("utf-8")


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, _json_bytes(obj))


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


def first_per_unit(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """unit id -> its first line (one writer never writes a Unit twice: `repair` treats a
    second line as damage)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        uid = r.get("unit_id")
        if isinstance(uid, str) and uid not in out:
            out[uid] = r
    return out


JOURNAL_KEYS: dict[str, tuple[str, ...]] = {
    TEXTS: ("id", "role", "content"), SUMMARIES: ("unit_id",), EVENTS: ("unit_id",), TRACES: ("unit_id",),
    PROBES_JOURNAL: ("unit_id",), UNITS_JOURNAL: ("unit_id",)}
"""Every journal, in the order a Unit's lines are written, and the string fields each line must
hold."""
REPLAY_FILES: frozenset[str] = frozenset({TEXTS, *REPLAY_JOURNALS})


@dataclass(slots=True)
class Repair:
    """What `RunDir.repair` found: committed Units, Units whose replay is whole, and one line
    per thing it fixed (for the log and the manifest)."""

    done: set[str]
    replayed: set[str]
    notes: list[str] = field(default_factory=list)


def _group(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["unit_id"], []).append(r)
    return out


def _repeated(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    seen: set[str] = set()
    twice: set[str] = set()
    for r in rows:
        uid = r["unit_id"]
        (twice if uid in seen else seen).add(uid)
    return twice


class RunDir:
    """A run directory's files. Reading is strict (`rundir.integrity`): a bad journal line or
    a file that differs from the manifest's seal (`expect`) is `DamagedRun`, one line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._text_ids: set[str] | None = None
        self.sealed: dict[str, dict[str, Any]] = {}

    def file(self, name: str) -> Path:
        """The path of one of the run's files; a symbolic link or a special file there is
        `DamagedRun` (`integrity.own_file`), so no read or write through it leaves the run."""
        return own_file(self.path / name)

    def has_results(self) -> bool:
        return self.file(UNITS_JOURNAL).exists() or self.file(MANIFEST).exists()

    def read_manifest(self) -> dict[str, Any]:
        """The manifest, checked for the shape readers rely on (`integrity.check_manifest`) and
        for a spec hash that is the spec's (`integrity.spec_hash_problem`)."""
        path = self.file(MANIFEST)
        try:
            data = loads(path.read_bytes())
        except FileNotFoundError:
            raise ConfigError(f"{self.path}: not a run directory (no {MANIFEST})") from None
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a directory, not a file") from None
        except JSONInputError as err:  # not UTF-8, not JSON, NaN, nested too deeply
            raise DamagedRun(f"{path}: not usable JSON ({err}); the run directory is damaged") from None
        problem = check_manifest(data) or spec_hash_problem(data)
        if problem is not None:
            raise DamagedRun(f"{path}: {problem}; the run directory is damaged")
        manifest: dict[str, Any] = data
        return manifest

    def write_manifest(self, manifest: Mapping[str, Any], *, last_resort: bool = False) -> None:
        """Atomically; with `last_resort` (a run that is stopping on a full disk), in place over
        the existing manifest when a new file cannot be written."""
        try:
            atomic_write_json(self.file(MANIFEST), dict(manifest))
        except OSError:
            if not last_resort or not self.file(MANIFEST).exists():
                raise
            overwrite_in_place(self.file(MANIFEST), _json_bytes(manifest))

    def expect(self, manifest: Mapping[str, Any]) -> None:
        """Check files against the seal the manifest records (a finished run's), from now on:
        sizes of every sealed file at once, contents as they are read."""
        self.sealed = {str(k): dict(v) for k, v in (manifest.get("files") or {}).items()}
        for name, rec in self.sealed.items():
            problem = size_problem(self.file(name), rec)
            if problem is not None:
                raise DamagedRun(f"{self.file(name)}: {problem}{self.hint(name)}")

    def hint(self, name: str) -> str:
        """What to do about a damaged file (`name`: for a message that depends on it)."""
        return (f"; the run directory is damaged: `rollsum run SPEC --out {self.path} --resume` "
                "repairs what it can")

    def seal(self) -> dict[str, dict[str, Any]]:
        """Size and sha256 of every journal and table: what a finished run's manifest records."""
        names = [*JOURNAL_KEYS, *TABLES.values()]
        return {n: file_digest(self.file(n)) for n in names if self.file(n).exists()}

    def read_bytes(self, name: str) -> bytes | None:
        """A file's bytes, checked against the seal; None when it does not exist (and is not
        sealed: a sealed file that is missing is damage)."""
        path = self.file(name)
        rec = self.sealed.get(name)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            if rec is not None:
                raise DamagedRun(f"{path}: missing (the manifest records it){self.hint(name)}") from None
            return None
        if rec is not None:
            problem = content_problem(data, rec)
            if problem is not None:
                raise DamagedRun(f"{path}: {problem}{self.hint(name)}")
        return data

    def journal(self, name: str) -> list[dict[str, Any]]:
        """A journal's rows (strict; a torn last line is skipped: a live or killed writer's)."""
        data = self.read_bytes(name)
        if data is None:
            return []
        scan = scan_jsonl(self.file(name), data, keys=JOURNAL_KEYS[name])
        if scan.bad:
            raise DamagedRun(describe_bad(self.file(name), scan.bad) + self.hint(name))
        if scan.torn and self.sealed:
            raise DamagedRun(f"{self.file(name)}: the last line is cut short{self.hint(name)}")
        return scan.rows

    def journal_of(self, name: str, unit_ids: Iterable[str], key: str = "unit_id") -> list[dict[str, Any]]:
        """The rows of these Units only (or, with `key`, the rows whose `key` is one of these
        ids: ``"id"`` for the texts journal), in file order. A report shows a few dozen traces of
        hundreds of Units, and the events journal alone is tens of MB: when the journal's content
        was just checked against the seal (a finished run), a line is decoded only if one of its
        ``"<key>": "..."`` fields names a wanted id. Otherwise (no seal: a running or killed
        run; an id JSON would escape) every line is read strictly, as `journal` does."""
        ids = set(unit_ids)
        if not ids:
            return []
        plain = all(isinstance(u, str) and _PLAIN_ID.fullmatch(u) for u in ids)
        data = self.read_bytes(name) if name in self.sealed and plain else None  # checked against the seal
        if not data or not data.endswith(b"\n"):
            return [r for r in self.journal(name) if r[key] in ids]
        rows = read_jsonl(self.file(name), _lines_naming(data, ids, key), keys=JOURNAL_KEYS[name],
                          hint=self.hint(name))
        return [r for r in rows if r[key] in ids]

    # ------------------------------------------------------------------ reading journals

    def unit_rows(self) -> dict[str, dict[str, Any]]:
        """Committed Units' ``units.jsonl`` rows by unit id."""
        return first_per_unit(self.journal(UNITS_JOURNAL))

    def trace_records(self) -> dict[str, dict[str, Any]]:
        return self._checked_traces(first_per_unit(self.journal(TRACES)))

    def trace_records_of(self, unit_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """`trace_records` of these Units only (`journal_of`: on a sealed journal only their
        lines are decoded)."""
        return self._checked_traces(first_per_unit(self.journal_of(TRACES, unit_ids)))

    def _checked_traces(self, records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for uid, rec in records.items():
            if not isinstance(rec.get("unit"), dict) or not isinstance(rec.get("turns", {}), dict):
                raise DamagedRun(f"{self.file(TRACES)}: unit {uid}: expected objects 'unit' and 'turns'"
                                 f"{self.hint(TRACES)}")
        return records

    def texts(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.journal(TEXTS)}

    def texts_of(self, text_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """`texts` of these ids only (`journal_of` by ``"id"``: on a sealed journal only their
        lines are decoded). A report's drill-down needs ~30 % of a sweep's texts."""
        return {r["id"]: r for r in self.journal_of(TEXTS, text_ids, key="id")}

    def rows_by_unit(self, name: str, units: set[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.journal(name):
            uid = r["unit_id"]
            if units is None or uid in units:
                out.setdefault(uid, []).append(r)
        return out

    # ------------------------------------------------------------------ writing

    def repair(self, sealed: Mapping[str, Any] | None = None) -> Repair:
        """Make the journals consistent after a crash (or damage) and say what was fixed.

        - Torn last lines (a killed write) and bad lines are dropped.
        - A Unit is *replayed* when its trace line is missing or bad, or when its replay lost a
          line: its trace records how many ``summaries``/``events`` lines it wrote
          (``journal_rows``) and which texts it uses (``text_ids``), so a lost line is found
          exactly. Its other lines go with it.
        - A Unit is *scored again* when it has a trace but no ``units.jsonl`` line. A bad line
          in ``probes.jsonl`` cannot be pinned to one Unit, so then every Unit is scored again
          from its replay (exact: scores are a function of the replay).
        - Units stopped by the budget are dropped whole (replay and scores): a resume replays
          them.
        - `sealed` (the previous manifest's ``files``): a finished run's files that changed
          since. Tables are rebuilt, scored journals scored again, replay journals checked line
          by line as above (a lost line is found exactly; a line edited into other valid JSON
          of the right shape cannot be, and is kept).

        Good lines are rewritten atomically, only where something changed, so appending can
        continue safely. Texts are kept (deduplicated): they are content-addressed.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        self.sealed = {}
        notes: list[str] = []
        rescore_all = False
        for name, rec in (sealed or {}).items():
            path = self.file(name)
            problem = size_problem(path, rec) or content_problem(path.read_bytes(), rec)
            if problem is None:
                continue
            if name in REPLAY_FILES:
                notes.append(f"{name}: {problem}: checked line by line; Units whose replay lost lines are "
                             "replayed again")
            elif name in SCORE_JOURNALS:
                rescore_all = True
                notes.append(f"{name}: {problem}: every Unit is scored again from its replay")
            else:
                notes.append(f"{name}: {problem}: rebuilt from the journals")
        scans = {name: scan_jsonl(self.file(name), keys=keys) for name, keys in JOURNAL_KEYS.items()}
        for name, scan in scans.items():
            if scan.torn:
                notes.append(f"{name}: dropped its last line, cut short by an interrupted write")
            notes.extend(f"{name}, line {b.line}: {b.what}: dropped" for b in scan.bad[:3])
            if len(scan.bad) > 3:
                notes.append(f"{name}: {len(scan.bad) - 3} more bad line(s) dropped")
        if scans[PROBES_JOURNAL].bad and not rescore_all:
            rescore_all = True
            notes.append(f"{PROBES_JOURNAL}: a bad line belongs to no known Unit: every Unit is scored again "
                         "from its replay")
        if _repeated(scans[UNITS_JOURNAL].rows) and not rescore_all:
            rescore_all = True
            notes.append(f"{UNITS_JOURNAL}: a Unit was written twice (two writers?): every Unit is scored "
                         "again from its replay")
        traces = first_per_unit(scans[TRACES].rows)
        unit_rows = first_per_unit(scans[UNITS_JOURNAL].rows)
        texts = {r["id"]: r for r in scans[TEXTS].rows}
        counted = {SUMMARIES: _group(scans[SUMMARIES].rows), EVENTS: _group(scans[EVENTS].rows)}
        uncertain = bool(scans[SUMMARIES].bad or scans[EVENTS].bad or _repeated(scans[TRACES].rows))
        broken = {uid for uid, rec in traces.items() if not _replay_whole(rec, counted, texts, uncertain)}
        if broken:
            notes.append(f"{len(broken)} Unit(s) whose replay lost lines will be replayed again")
        stopped = {uid for uid, r in unit_rows.items() if r.get("status") == STATUS_STOPPED}
        traces = {uid: r for uid, r in traces.items() if uid not in stopped and uid not in broken}
        units = {} if rescore_all else {uid: r for uid, r in unit_rows.items() if uid in traces}
        self._rewrite_if_changed(TRACES, list(traces.values()))
        self._rewrite_if_changed(UNITS_JOURNAL, list(units.values()))
        for name in REPLAY_JOURNALS:
            if name != TRACES:
                self._rewrite_if_changed(name, [r for r in scans[name].rows if r["unit_id"] in traces])
        self._rewrite_if_changed(PROBES_JOURNAL, [r for r in scans[PROBES_JOURNAL].rows if r["unit_id"] in units])
        self._rewrite_if_changed(TEXTS, list(texts.values()))
        self._text_ids = set(texts)
        return Repair(set(units), set(traces), notes)

    def forget(self, unit_ids: set[str]) -> None:
        """Drop Units from the journals so that a resume runs them again (``--retry-errors``).
        Their trace lines go first: a crash after that leaves units rows without a trace, which
        `repair` drops, so a forgotten Unit is always replayed, never only re-scored."""
        if not unit_ids:
            return
        for name in (TRACES, *[n for n in REPLAY_JOURNALS if n != TRACES], PROBES_JOURNAL, UNITS_JOURNAL):
            self._rewrite_if_changed(name, [r for r in self.journal(name) if r["unit_id"] not in unit_ids])

    def unseal(self, *names: str) -> None:
        """These files are being rewritten: the seal read from the manifest no longer holds."""
        for name in names:
            self.sealed.pop(name, None)

    def _rewrite_if_changed(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self.unseal(name)
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
        self.unseal(*JOURNAL_KEYS)
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
        self.unseal(PROBES_JOURNAL, UNITS_JOURNAL)
        with atomic_writer(self.file(PROBES_JOURNAL)) as fh:
            for r in results:
                fh.write(r.probes)
        with atomic_writer(self.file(UNITS_JOURNAL)) as fh:
            for r in results:
                fh.write(r.units)

    def write_tables(self, manifest: Mapping[str, Any], unit_ids: set[str] | None = None) -> dict[str, dict[str, Any]]:
        """units/probes/turns.parquet from the journals, sorted so row order never depends on
        --jobs or on the order Units finished. Columns: the manifest's schema. Returns the
        ``units.jsonl`` rows it tabled, by unit id (`unit_rows` of `unit_ids`: the sweep's
        totals come from them without decoding the journal again)."""
        unit_cols = schema_from_json(manifest["schema"]["units"])
        probe_cols = schema_from_json(manifest["schema"]["probes"])
        units = [r for r in self.unit_rows().values() if unit_ids is None or r["unit_id"] in unit_ids]
        done = {u["unit_id"] for u in units}
        probes = [r for r in self.journal(PROBES_JOURNAL) if r["unit_id"] in done]
        frames = journal_frames(self, units, probes, {uid: rec for uid, rec in self.trace_records().items()
                                                      if uid in done}, unit_cols, probe_cols)
        self.unseal(*TABLES.values())
        for name, df in frames.items():
            with atomic_writer(self.file(TABLES[name]), binary=True) as fh:
                df.to_parquet(fh, index=False)
        return {u["unit_id"]: u for u in units}


def _lines_naming(data: bytes, ids: Iterable[str], key: str = "unit_id") -> bytes:
    """The lines of `data` (whole lines, each ending in a newline) with a ``"<key>": "<id>"``
    field naming one of `ids` (plain ids: `_PLAIN_ID`), in file order. One regex scan of the
    buffer for the field, each value looked up in a set, not a split and a search per line: the
    events journal has ~70,000 lines of which a report wants a tenth. (Inside a JSON string every
    quote is escaped, so text quoting such a field never matches.)"""
    wanted = set(ids)
    field = re.compile(rb'"' + re.escape(key.encode("ascii")) + rb'"\s*:\s*"([^"\\]*)"')
    spans: dict[int, int] = {}  # line start -> end (after its newline); a line naming two ids once
    for m in field.finditer(data):
        if m.group(1).decode("ascii", "replace") not in wanted:
            continue
        start = data.rfind(b"\n", 0, m.start()) + 1
        if start not in spans:
            spans[start] = data.index(b"\n", m.end()) + 1
    return b"".join(data[a:b] for a, b in spans.items())


def _replay_whole(record: Mapping[str, Any], counted: Mapping[str, Mapping[str, list[Any]]],
                  texts: Mapping[str, Any], uncertain: bool) -> bool:
    """Whether a Unit's journaled replay has every line its trace says it wrote."""
    uid = record["unit_id"]
    if any(t not in texts for t in record.get("text_ids") or []):
        return False
    rows = record.get("journal_rows")
    if not isinstance(rows, dict):
        return not uncertain  # a trace without counts: whole unless a line was lost somewhere
    return all(len(counted[name].get(uid, [])) == rows.get(name) for name in counted)


def journal_frames(rd: RunDir, units: Sequence[Mapping[str, Any]], probes: Sequence[Mapping[str, Any]],
                   traces: Mapping[str, Mapping[str, Any]], unit_cols: Sequence[Column],
                   probe_cols: Sequence[Column]) -> dict[str, pd.DataFrame]:
    """The three tables from journal rows; a value of the wrong type is `DamagedRun` naming
    the journal, the Unit and the column (never a pandas traceback, never a silent cast)."""
    def build(name: str, make: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        try:
            return make()
        except BadValue as err:
            raise DamagedRun(f"{rd.file(name)}: unit {err.unit_id}: column '{err.column}': expected {err.expected}, "
                             f"found {err.found}{rd.hint(name)}") from None

    def turns() -> pd.DataFrame:
        data: dict[str, list[Any]] = {c.name: [] for c in TURN_COLUMNS}
        for uid, rec in traces.items():
            try:
                cols = turn_columns(rec)
            except (TypeError, ValueError, KeyError, AttributeError) as err:
                raise BadValue(uid, "turns", "per-turn lists of numbers", _found(err)) from None
            for name, values in cols.items():
                data[name].extend(values)
        return frame_of_columns(data, TURN_COLUMNS, TURN_SORT)

    return {"units": build(UNITS_JOURNAL, lambda: units_frame(units, unit_cols)),
            "probes": build(PROBES_JOURNAL, lambda: frame(probes, probe_cols, PROBE_SORT)),
            "turns": build(TRACES, turns)}


def _found(err: BaseException) -> str:
    return str(err).splitlines()[0][:60] if str(err) else type(err).__name__
