"""The run-directory format (contract: docs/run-format.md): its files, its tables' columns, its rows.

This module is the one place that says what a run directory holds. The tables' columns are the
base columns below plus the columns scorers declare (`rollsum_evals.scoring.base.Column`); the
manifest records the resulting schema, so a reader never needs to know which scorers exist, and
a column no one declared is still kept (`frame`), never silently dropped.

Version history: 1 = scores computed during the replay, journals ``units/probes/turns.jsonl``.
2 = replay → trace → score: ``traces.jsonl`` (per-turn numbers and context compositions) and
``texts.jsonl`` (non-verbatim context texts) are the replay; ``units``/``probes`` are scored from
them and can be re-scored (`rollsum score`); ``turns.parquet`` is derived from the traces.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rollsum_evals.scoring.asks import Ask
from rollsum_evals.scoring.base import Column, Scores, ScoringPlan
from rollsum_evals.units import Unit

if TYPE_CHECKING:
    import pandas as pd

    from rollsum_evals.replay.trace import Trace

FORMAT_VERSION = 2

MANIFEST = "manifest.json"
TEXTS = "texts.jsonl"
SUMMARIES = "summaries.jsonl"
EVENTS = "events.jsonl"
TRACES = "traces.jsonl"
PROBES_JOURNAL = "probes.jsonl"
UNITS_JOURNAL = "units.jsonl"
LOCK = "run.lock"
"""Held (``flock``) by the one process writing the run directory (`rundir.lock`)."""
DATASET_COPIES = "datasets"
"""Copies of the ``hf:`` sets replayed, ``<sha256>.jsonl.gz``, checked by name (`data.copies`)."""
REPLAY_JOURNALS: tuple[str, ...] = (SUMMARIES, EVENTS, TRACES)
"""A Unit's replay lines, in the order they are written: its ``traces.jsonl`` line last (the
replay's commit record). Its texts go before all of them."""
SCORE_JOURNALS: tuple[str, ...] = (PROBES_JOURNAL, UNITS_JOURNAL)
"""A Unit's scored lines, after its replay: its ``units.jsonl`` line last (the Unit's commit)."""
TABLES = {"units": "units.parquet", "probes": "probes.parquet", "turns": "turns.parquet"}

NAN = math.nan

STATUS_OK, STATUS_ERROR, STATUS_STOPPED = "ok", "error", "stopped: budget"
"""A Unit's run status (the ``status`` column; not a verdict). ``stopped: budget``: a model call
was refused by ``--max-cost-usd``; such a Unit is replayed again by ``--resume``."""

IDENTITY_COLUMNS: tuple[Column, ...] = (
    Column("unit_id", "str", "", "hash of the replay identity (not of the scoring)"),
    Column("dataset", "str", ""),
    Column("conversation_id", "str", ""),
    Column("config", "str", "", "the configuration's label, unique in the run"),
    Column("preset", "str", ""),
)
BASE_UNIT_COLUMNS: tuple[Column, ...] = (
    *IDENTITY_COLUMNS,
    Column("params", "str", "{}", "JSON of the overrides applied to the preset"),
    Column("prompt", "str", ""),
    Column("model", "str", "", "summarizer model spec"),
    Column("seed", "int", 0),
    Column("context_window", "int", 0, "the main model's simulated window"),
    Column("n_messages", "int", 0),
    Column("n_probes", "int", 0),
    Column("n_summaries", "int", 0),
    Column("n_failures", "int", 0, "failure events (summaries that did not happen)"),
    Column("cost_usd", "float", 0.0, "sum of every cost_*_usd column"),
    Column("wall_s", "float", 0.0, "replay + scoring wall time (not part of equality checks)"),
    Column("status", "str", "ok", "ok, error, or stopped: budget"),
    Column("error", "str", "", "one line, empty when ok"),
    Column("probe_timing", "str", "end", "when probes were asked (the scoring plan's timing)"),
    Column("main_model", "str", "", "whose prices the simulated main-model cost uses"),
    Column("scorers", "str", "", "name@version of each scorer that ran, comma-separated"),
)
BASE_PROBE_COLUMNS: tuple[Column, ...] = (
    *IDENTITY_COLUMNS,
    Column("model", "str", ""),
    Column("seed", "int", 0),
    Column("probe_id", "str", ""),
    Column("category", "str", ""),
    Column("question", "str", ""),
    Column("answer", "str", ""),
    Column("evidence_turn", "int", -1, "index of the last evidence message, -1 if none"),
    Column("asked_turn", "int", -1),
    Column("age_turns", "int", 0, "asked_turn - evidence_turn"),
)
TURN_COLUMNS: tuple[Column, ...] = (
    Column("unit_id", "str", ""),
    Column("config", "str", ""),
    Column("conversation_id", "str", ""),
    Column("turn", "int", 0, "index of the message just added"),
    Column("context_tokens", "int", 0, "what the main model would be sent"),
    Column("context_window", "int", 0),
    Column("summary_tokens", "int", 0, "tokens of the latest summary record"),
    Column("active_messages", "int", 0),
    Column("pending_messages", "int", 0, "evicted, waiting for the next summary"),
    Column("context_items", "int", 0, "messages in the context"),
)
NON_DETERMINISTIC_UNIT_COLUMNS: tuple[str, ...] = ("wall_s", "summarizer_latency_s")
"""Wall-clock measurements: excluded when two runs are compared for equality."""
PROCESS_MANIFEST_KEYS: tuple[str, ...] = ("pid", "host", "started_at", "finished_at", "resumed_at", "timing",
                                          "repairs", "files", "unit_cache")
"""Manifest keys about the processes that wrote the run (when, where, how long, what a resume
repaired, the cache's hits, the seal over files whose wall-clock columns differ): excluded when
two runs are compared for equality. A run repaired by ``--resume`` has every other key equal to
the undamaged run's, and says what it repaired in ``repairs``."""

UNIT_SORT, PROBE_SORT, TURN_SORT = ["unit_id"], ["unit_id", "probe_id", "asked_turn"], ["unit_id", "turn"]


def table_columns(scorer_unit: Iterable[Column], scorer_probe: Iterable[Column]
                  ) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """The units and probes tables' columns: base columns, then the scorers'."""
    unit = {c.name: c for c in BASE_UNIT_COLUMNS}
    for c in scorer_unit:
        unit.setdefault(c.name, c)
    probe = {c.name: c for c in BASE_PROBE_COLUMNS}
    for c in scorer_probe:
        probe.setdefault(c.name, c)
    return tuple(unit.values()), tuple(probe.values())


def schema_to_json(columns: Sequence[Column]) -> list[list[Any]]:
    return [[c.name, c.dtype, None if isinstance(c.default, float) and math.isnan(c.default) else c.default]
            for c in columns]


def schema_from_json(data: Any) -> tuple[Column, ...]:
    out = []
    for name, dtype, default in data or []:
        if dtype == "float" and default is None:
            default = NAN
        out.append(Column(str(name), dtype, default))
    return tuple(out)


def scorers_label(plan: ScoringPlan, versions: Mapping[str, str]) -> str:
    return ",".join(f"{n}@{versions[n]}" for n in plan.scorers)


def new_manifest(*, name: str, spec_raw: Mapping[str, Any], spec_path: str, spec_sha256: str,
                 datasets: Mapping[str, Mapping[str, Any]], plan: ScoringPlan,
                 scorer_versions: Mapping[str, str], unit_columns: Sequence[Column],
                 probe_columns: Sequence[Column], seeds: Sequence[int], replay_fingerprint: str,
                 scoring_fingerprint: str, git_sha: str | None, package_versions: Mapping[str, str],
                 started_at: str, spec_code: Sequence[str] = ()) -> dict[str, Any]:
    """The manifest's fixed part (docs/run-format.md lists every key); the runner adds its own
    bookkeeping (cache, executor, timing) and the final status."""
    return {
        "format_version": FORMAT_VERSION, "name": name, "spec": dict(spec_raw), "spec_path": spec_path,
        "spec_sha256": spec_sha256, "spec_code": list(spec_code), "datasets": {k: dict(v) for k, v in datasets.items()},
        "scoring": {**plan.to_dict(), "versions": dict(scorer_versions), "fingerprint": scoring_fingerprint},
        "scorer_versions": dict(scorer_versions), "probe_timing": plan.timing.key,
        "main_model": plan.main_model,
        "schema": {"units": schema_to_json(unit_columns), "probes": schema_to_json(probe_columns)},
        "seeds": list(seeds), "replay_fingerprint": replay_fingerprint, "git_sha": git_sha,
        "versions": dict(package_versions), "started_at": started_at, "finished_at": None,
        "status": "running",
    }


def rescored_manifest(manifest: Mapping[str, Any], plan: ScoringPlan, scorer_versions: Mapping[str, str],
                      unit_columns: Sequence[Column], probe_columns: Sequence[Column],
                      scoring_fingerprint: str, scored_at: str) -> dict[str, Any]:
    """The manifest after `rollsum score`: the replay's provenance unchanged, the scoring new."""
    out = dict(manifest)
    out.update({
        "scoring": {**plan.to_dict(), "versions": dict(scorer_versions),
                    "fingerprint": scoring_fingerprint, "scored_at": scored_at},
        "scorer_versions": dict(scorer_versions), "probe_timing": plan.timing.key,
        "main_model": plan.main_model,
        "schema": {"units": schema_to_json(unit_columns), "probes": schema_to_json(probe_columns)},
    })
    return out


# ----------------------------------------------------------------------------------------------
# rows


def _complete(row: Mapping[str, Any], columns: Sequence[Column]) -> dict[str, Any]:
    out = {c.name: c.default for c in columns}
    out.update(row)
    return out


def unit_row(unit: Unit, trace: Trace, plan: ScoringPlan, versions: Mapping[str, str],
             scores: Scores | None, *, n_probes: int, wall_s: float, columns: Sequence[Column],
             error: str = "") -> dict[str, Any]:
    """A Unit's ``units`` row. `scores` None (with `error`) = the replay or the scoring failed."""
    row: dict[str, Any] = {
        "unit_id": unit.unit_id, "dataset": unit.dataset, "conversation_id": unit.conversation_id,
        "config": unit.config, "preset": unit.preset, "params": unit.params_json,
        "prompt": unit.prompt, "model": unit.model, "seed": unit.seed,
        "context_window": unit.context_window, "n_messages": len(trace.messages),
        "n_probes": n_probes, "n_summaries": len(trace.summaries), "n_failures": trace.failures,
        "probe_timing": plan.timing.key, "main_model": plan.main_model,
        "scorers": scorers_label(plan, versions),
    }
    if scores is None:
        row.update(status=STATUS_ERROR if trace.status == STATUS_OK else trace.status, error=error or trace.error)
    else:
        row.update(scores.unit)
        row.update(status=STATUS_OK, error="")
    row["cost_usd"] = sum(float(v) for k, v in row.items()
                          if k.startswith("cost_") and k.endswith("_usd") and k != "cost_usd")
    row["wall_s"] = wall_s
    return _complete(row, columns)


def probe_rows(unit: Unit, asks: Sequence[Ask], scores: Scores, columns: Sequence[Column]) -> list[dict[str, Any]]:
    """One ``probes`` row per ask (a probe at one asking turn)."""
    base = {"unit_id": unit.unit_id, "dataset": unit.dataset, "conversation_id": unit.conversation_id,
            "config": unit.config, "preset": unit.preset, "model": unit.model, "seed": unit.seed}
    rows = []
    for ask in asks:
        p = ask.probe
        row = {**base, "probe_id": p.id, "category": p.category, "question": p.question,
               "answer": p.answer, "evidence_turn": ask.evidence_turn, "asked_turn": ask.asked_turn,
               "age_turns": ask.age_turns}
        row.update(scores.probes.get(ask.key, {}))
        rows.append(_complete(row, columns))
    return rows


def turn_rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``turns`` rows of one ``traces.jsonl`` line (no dataset needed: roles are not a column)."""
    cols = turn_columns(record)
    return [dict(zip(cols, values, strict=True)) for values in zip(*cols.values(), strict=True)]


def turn_columns(record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """`turn_rows` as columns (`TURN_COLUMNS`' names, in order): the trace stores its turns
    column-wise already, so the table is built without a dict per turn. As many turns as the
    shortest of the trace's per-turn lists."""
    unit = record.get("unit") or {}
    cols = record.get("turns") or {}
    window = int(record.get("context_window") or 0)
    items = _item_counts(cols.get("context") or [])
    lists = [list(cols.get("context_tokens") or []), list(cols.get("summary_tokens") or []),
             list(cols.get("active") or []), list(cols.get("pending") or []), items]
    n = min(len(v) for v in lists)
    uid, config, conv = record["unit_id"], unit.get("config", ""), unit.get("conversation_id", "")
    return {"unit_id": [uid] * n, "config": [config] * n, "conversation_id": [conv] * n,
            "turn": list(range(n)), "context_tokens": lists[0][:n], "context_window": [window] * n,
            "summary_tokens": lists[1][:n], "active_messages": lists[2][:n], "pending_messages": lists[3][:n],
            "context_items": items[:n]}


def _item_counts(codes: Sequence[str]) -> list[int]:
    """Number of context items per turn, straight from the composition strings."""
    out: list[int] = []
    n = 0
    for code in codes:
        if code == "+":
            n += 1
        elif code != "=":
            n = 0
            for part in code.split(",") if code else []:
                a, sep, b = part.partition("-")
                n += int(b) - int(a) + 1 if sep and not part.startswith("#") else 1
        out.append(n)
    return out


# ----------------------------------------------------------------------------------------------
# tables

PARAM_PREFIX = "param_"
"""``param_<name>``: one units column per parameter any configuration of the run sets."""

_PANDAS_DTYPE = {"int": "int64", "float": "float64", "bool": "bool", "boolean": "boolean"}


def frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], sort: Sequence[str]) -> pd.DataFrame:
    """Rows as a typed DataFrame: declared columns first (defaults where a row lacks one), then
    any column a row has that nobody declared, in name order (kept, never dropped)."""
    declared = [c.name for c in columns]
    known = set(declared)
    extra = sorted({k for r in rows for k in r} - known)
    # column by column: no intermediate dict per row
    data: dict[str, list[Any]] = {c.name: [r.get(c.name, c.default) for r in rows] for c in columns}
    data.update({k: [r.get(k) for r in rows] for k in extra})
    return frame_of_columns(data, columns, sort, rows)


def frame_of_columns(data: Mapping[str, list[Any]], columns: Sequence[Column], sort: Sequence[str],
                     rows: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """`frame` from equally long columns holding every declared column, in table order
    (declared first). `rows`: the same data as rows, for naming a bad value; built from the
    columns only when one is found (the turns table has a row per message of every Unit, and a
    dict per row was most of writing a cached re-run's tables)."""
    import pandas as pd

    df = pd.DataFrame(dict(data), columns=list(data))
    for c in columns:
        _check_types(df[c.name], c, rows if rows is not None else lambda: _rows_of(data))
        if c.dtype == "str":
            df[c.name] = df[c.name].astype(str)
        else:
            df[c.name] = df[c.name].astype(_PANDAS_DTYPE[c.dtype])  # type: ignore[call-overload]
    if len(df):
        df = df.sort_values([s for s in sort if s in df.columns], kind="mergesort").reset_index(drop=True)
    return df


class BadValue(ValueError):
    """A row's value does not have its column's type (a damaged or edited journal)."""

    def __init__(self, unit_id: str, column: str, expected: str, found: str) -> None:
        super().__init__(f"unit {unit_id}: column '{column}': expected {expected}, found {found}")
        self.unit_id, self.column, self.expected, self.found = unit_id, column, expected, found


_ACCEPTED: dict[str, tuple[bool, frozenset[str], str]] = {
    # dtype: (nulls allowed, pandas.api.types.infer_dtype kinds accepted, what to say)
    "str": (False, frozenset({"string", "empty"}), "a string"),
    "int": (False, frozenset({"integer", "empty"}), "an integer"),
    "float": (True, frozenset({"floating", "integer", "mixed-integer-float", "empty"}), "a number"),
    "bool": (False, frozenset({"boolean", "empty"}), "true or false"),
    "boolean": (True, frozenset({"boolean", "empty"}), "true, false or null"),
}


def _value_ok(value: Any, dtype: str) -> bool:
    if dtype == "str":
        return isinstance(value, str)
    if dtype == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if dtype == "float":
        return value is None or (isinstance(value, int | float) and not isinstance(value, bool))
    return isinstance(value, bool) or (dtype == "boolean" and value is None)


def _rows_of(data: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(data, values, strict=True)) for values in zip(*data.values(), strict=True)]


def _check_types(series: pd.Series, column: Column,
                 rows: Sequence[Mapping[str, Any]] | Callable[[], Sequence[Mapping[str, Any]]]) -> None:
    """A column's values have its declared type, or `BadValue` names the first that does not:
    no silent cast (``"3"`` to 3, ``true`` to 1, ``5`` to ``"5"``). One vectorised check; the
    rows are walked only to name the culprit."""
    from pandas.api.types import infer_dtype

    nulls, kinds, what = _ACCEPTED[column.dtype]
    if infer_dtype(series, skipna=nulls) in kinds:
        return
    for row in rows() if callable(rows) else rows:
        value = row.get(column.name, column.default)
        if not _value_ok(value, column.dtype):
            found = json.dumps(value, ensure_ascii=False, default=str)
            raise BadValue(str(row.get("unit_id", "?")), column.name, what,
                           found if len(found) <= 40 else found[:37] + "...")


def units_frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> pd.DataFrame:
    """The units table: `frame` plus the grid's parameters as real columns (`param_columns`)."""
    return param_columns(frame(rows, columns, UNIT_SORT))


def param_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``param_<name>`` after ``params`` for every parameter set in any row's ``params``
    JSON, so a grid can be filtered and plotted without parsing JSON. Typed from the values:
    nullable integer, float, boolean, or string (other JSON values as JSON text); null where a
    configuration does not set the parameter (e.g. ``keep_last`` on full-context). Derived on
    every read and write, never journaled: the journal and the Unit cache stay as they are."""
    import json

    import pandas as pd

    if "params" not in df.columns or not len(df):
        return df
    parsed = {raw: json.loads(raw) if raw else {} for raw in df["params"].unique()}
    names = sorted({k for p in parsed.values() if isinstance(p, dict) for k in p})
    at = list(df.columns).index("params") + 1
    for offset, name in enumerate(names):
        col = PARAM_PREFIX + name
        if col in df.columns:
            continue
        values = [p.get(name) if isinstance(p, dict) else None for p in (parsed[r] for r in df["params"])]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            series = pd.Series(values, dtype="boolean")
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            series = pd.Series(values, dtype="Int64")
        elif present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
            series = pd.Series([None if v is None else float(v) for v in values], dtype="Float64")
        else:
            series = pd.Series([None if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True)
                                for v in values], dtype="string")
        df.insert(at + offset, col, series.array)
    return df
