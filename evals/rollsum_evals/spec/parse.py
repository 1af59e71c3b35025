"""Sweep specs: TOML -> `SweepSpec` (`rollsum_evals.spec.schema`), every field checked at its line.

`load_spec` validates a spec into a `SweepSpec`; `rollsum_evals.spec.expand.expand` turns it
into Units (what is replayed), and `SweepSpec.scoring` is the `ScoringPlan` (how every replay is
scored). Every mistake is one `ConfigError` naming file, line and field (`spec.where.Where`).
A preset config's parameters are checked here, once, by `rollsum_evals.spec.params` against the
library's own ranges; components are checked by `rollsum_evals.spec.configs`. The format is
documented in ``docs/sweeps.md``.

Over ~400 lines because a sweep spec is validated field by field at its TOML line (numbers as
numbers, ranges, datasets, probes, models, scorers) before any unit runs; one module so every
error has the same file:line form.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.params import DEFAULT_CONTEXT_WINDOW, Range, check_number
from rollsum.plugins import is_import_path as plugins_is_import_path
from rollsum.safejson import past_digit_limit
from rollsum_evals.data.checks import unknown_key
from rollsum_evals.data.formats import LOADERS
from rollsum_evals.data.pinned import DatasetSpec
from rollsum_evals.scoring.asks import ProbeTiming
from rollsum_evals.spec.configs import nth, preset_or_memory, runnable, summarizer_params, with_components
from rollsum_evals.spec.params import check_params
from rollsum_evals.spec.schema import (
    DEFAULT_MAIN_MODEL,
    DEFAULT_PROJECTED_MODEL,
    LOCOMO_PLACEHOLDER,
    ConfigSpec,
    ReadOptions,
    SweepSpec,
)
from rollsum_evals.spec.where import Where

_TOP_KEYS = {"name", "description", "datasets", "configs", "prompts", "models", "scorers",
             "context_window", "probes", "seeds", "main_model", "projected_model", "qa", "cache",
             "unit_cache", "limits", "report", "tune"}
_DATASET_KEYS = {"name", "source", "format", "limit", "questions"}
_CONFIG_KEYS = {"preset", "memory", "summarizer", "summarizer_params", "label", "params", "grid", "prompts",
                "models"}
_PROBE_KEYS = {"ask", "after_turns", "ages", "end", "draws", "seed"}
_QA_KEYS = {"model", "judge", "judge_model", "batch"}
_LIMIT_KEYS = {"requests_per_minute"}
_REPORT_KEYS = {"budgets", "truncate_curve"}
MIN_RPM = Range(0.1)
"""At least one request every ten minutes: below that a sweep would wait for hours per call."""


def load_spec(path: str | Path, *, model_override: str | None = None,
              locomo: str | None = None, overrides: Sequence[str] = (), limit: int | None = None,
              read: ReadOptions | None = None) -> SweepSpec:
    """Read and validate a sweep spec. Every mistake is a ConfigError naming file, line, field."""
    return parse_spec(read_spec_text(path), str(path), model_override=model_override, locomo=locomo,
                      overrides=overrides, limit=limit, read=read)


def read_spec_text(path: str | Path, what: str = "sweep spec") -> str:
    """A spec file's text, for `load_spec` and `rollsum tune` alike: a file that cannot be read
    or is not UTF-8 is one line naming the file (and the line of the first bad byte). A byte
    order mark, as editors on Windows write one, is no part of TOML and is left out."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: {what} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a directory (expected a {what}, a TOML file)") from None
    except OSError as err:
        raise ConfigError(f"{p}: cannot read {what}: {err.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        start = err.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data[:start].count(b"\n") + 1
        raise ConfigError(f"{p}:{line}: invalid UTF-8 at byte {start} (expected a UTF-8 TOML file)") from None


def parse_spec(text: str, path: str = "<spec>", *, model_override: str | None = None,
               locomo: str | None = None, overrides: Sequence[str] = (), limit: int | None = None,
               read: ReadOptions | None = None) -> SweepSpec:
    """``limit`` (``--limit N``): at most N conversations per dataset (recorded in the spec).
    Dataset paths are relative to the spec file (`data_path`); ``locomo`` to the cwd. ``read``:
    how every dataset file is read (``--skip-bad-records``, ``--max-line-bytes``): recorded
    with each dataset in the manifest, not in the spec (it changes what a dataset holds only
    through its content hash)."""
    text = text.removeprefix("\ufeff")  # a byte order mark: TOML has none, Windows editors write one
    try:
        raw = toml_loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from None
    w = Where(path, text)
    _check_keys(w, "", raw, _TOP_KEYS)

    if model_override is not None and not model_override.strip():
        raise ConfigError("--model: expected a model spec such as anthropic:claude-haiku-4-5, got ''")
    if model_override:
        raw["models"] = [model_override]
        for cfg in raw.get("configs") or []:
            if isinstance(cfg, dict):
                cfg.pop("models", None)

    set_by: dict[tuple[int, str], str] = {}
    for item in overrides:
        for i in apply_override(raw, item, path):
            set_by[(i, item.partition("=")[0].strip().rpartition(".")[2])] = item
    if limit is not None:
        apply_limit(raw, limit)

    name = _str(w, raw, "name", default=Path(path).stem)
    if not name.strip() or not name.isprintable():
        raise w.error("name", "a printable, non-empty name", name)
    datasets = _datasets(w, raw.get("datasets"), os.path.abspath(locomo) if locomo else None, read or ReadOptions())
    if locomo:
        raw["locomo"] = locomo
    configs = _configs(w, raw.get("configs"), set_by)
    prompts = _str_list(w, raw, "prompts", default=("",))
    _check_prompts(w, "prompts", prompts, w.line_of("prompts"))  # top-level keys precede every table
    models = _str_list(w, raw, "models", default=("extractive",))
    _check_models(w, "models", models, model_override)
    scorers = _str_list(w, raw, "scorers", default=("answer_retention", "fact_survival", "cost"))
    from rollsum_evals.scoring import get as get_scorer
    from rollsum_evals.scoring import names as scorer_names
    from rollsum_evals.scoring import with_always

    for i, s in enumerate(scorers):
        if s in scorer_names():
            continue
        if not plugins_is_import_path(s):
            raise w.error(f"scorers[{i}]", f"one of {', '.join(scorer_names())} or an import path "
                          "'package.module:Class'", s, key="scorers")
        try:
            get_scorer(s)  # a scorer by import path: imported and constructed once, here
        except ConfigError as err:
            raise ConfigError(f"{w.location('scorers')}: field 'scorers[{i}]': {err}") from None
    if len(set(scorers)) != len(scorers):
        raise w.error("scorers", "each scorer listed once", list(scorers))
    scorers = with_always(scorers)
    windows = _numbers(w, raw, "context_window", DEFAULT_CONTEXT_WINDOW, integer=True, range=Range(1),
                       what="a positive integer or a non-empty list of them")
    configs = with_components(w, configs, raw["configs"], models, windows)
    configs, skipped = runnable(configs, os.environ)
    if not configs:
        raise w.error("configs", "at least one config that can run here", "; ".join(skipped))
    probes = _probes(w, raw.get("probes", {}))
    seeds = _numbers(w, raw, "seeds", 0, integer=True, what="a non-empty list of integers")
    main_model = _str(w, raw, "main_model", default=DEFAULT_MAIN_MODEL)
    _check_priced(w, "main_model", main_model)
    projected_model = _str(w, raw, "projected_model", default=DEFAULT_PROJECTED_MODEL)
    _check_priced(w, "projected_model", projected_model)
    qa = raw.get("qa", {})
    if not isinstance(qa, dict):
        raise w.error("qa", "a table with 'model' and 'judge'", qa)
    _check_keys(w, "qa.", qa, _QA_KEYS)
    qa_model = qa.get("model")
    if qa_model is not None and not isinstance(qa_model, str):
        raise w.error("qa.model", "a model spec string", qa_model, key="model")
    if qa_model and (problem := model_problem(qa_model)) is not None:
        raise w.error("qa.model", f"a model spec ({problem})", qa_model, key="model")
    judge = qa.get("judge", False)
    if not isinstance(judge, bool):
        raise w.error("qa.judge", "true or false", judge, key="judge")
    judge_model, qa_batch = _qa_judge_batch(w, qa)
    from rollsum_evals.scoring import needs

    if "model" in needs(scorers) and not qa_model:
        answering = [s for s in scorers if "model" in needs([s])]
        raise w.error("qa.model", f"a model spec (scorer {', '.join(answering)} needs a model to answer)",
                      key="scorers")
    cache = _str(w, raw, "cache", default="user")
    if cache not in ("user", "run", "off"):
        raise w.error("cache", "'user', 'run' or 'off'", cache)
    unit_cache = raw.get("unit_cache", True)
    if not isinstance(unit_cache, bool):
        raise w.error("unit_cache", "true or false", unit_cache)
    limits = raw.get("limits", {})
    if not isinstance(limits, dict):
        raise w.error("limits", "a table", limits)
    _check_keys(w, "limits.", limits, _LIMIT_KEYS)
    rpm = limits.get("requests_per_minute")
    rpm_problem = None if rpm is None else check_number(rpm, integer=False, range=MIN_RPM)
    if rpm_problem is not None:
        raise w.error("limits.requests_per_minute", rpm_problem, rpm, key="requests_per_minute")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise w.error("description", "a string", description)
    budgets, curve = _report(w, raw.get("report", {}))
    if curve is None:
        curve = os.environ.get(CURVE_ENV, "1").strip().lower() not in ("0", "false", "off", "no")
    if curve:
        configs = auto_truncate_curve(configs, windows)
    return SweepSpec(name=name, datasets=datasets, configs=configs, prompts=prompts, models=models,
                     scorers=scorers, context_windows=windows, probes=probes, seeds=seeds,
                     main_model=main_model, projected_model=projected_model, qa_model=qa_model,
                     judge=judge, judge_model=judge_model, qa_batch=qa_batch, cache=cache,
                     unit_cache=unit_cache, requests_per_minute=None if rpm is None else float(rpm),
                     budgets=budgets, description=description, raw=raw, path=path, skipped=skipped)


def _qa_judge_batch(w: Where, qa: Mapping[str, Any]) -> tuple[str, bool]:
    """``[qa] judge_model`` (a model spec, checked by form) and ``[qa] batch`` (true/false)."""
    judge_model = qa.get("judge_model", "")
    if not isinstance(judge_model, str):
        raise w.error("qa.judge_model", "a model spec string", judge_model, key="judge_model")
    if judge_model and (problem := model_problem(judge_model)) is not None:
        raise w.error("qa.judge_model", f"a model spec ({problem})", judge_model, key="judge_model")
    batch = qa.get("batch", False)
    if not isinstance(batch, bool):
        raise w.error("qa.batch", "true or false", batch, key="batch")
    return judge_model.strip(), batch


CURVE_ENV = "ROLLSUM_TRUNCATE_CURVE"
"""``0`` turns the added truncate grid off for specs that do not set ``[report] truncate_curve``:
the test suite sets it (its specs count their Units exactly); a spec's own setting always wins."""


def _report(w: Where, v: Any) -> tuple[tuple[float, ...], bool | None]:
    """``[report]``: ``budgets`` (main-model tokens per call) and ``truncate_curve`` (None when
    the spec does not say: on, unless `CURVE_ENV` is ``0``)."""
    if not isinstance(v, dict):
        raise w.error("report", "a table with 'budgets' and 'truncate_curve'", v)
    _check_keys(w, "report.", v, _REPORT_KEYS)
    budgets = v.get("budgets", [])
    if (not isinstance(budgets, list)
            or any(isinstance(b, bool) or not isinstance(b, (int, float)) or b <= 0 for b in budgets)):
        raise w.error("report.budgets", "a list of positive numbers (main-model tokens per call)", budgets,
                      key="budgets")
    curve = v.get("truncate_curve")
    if curve is not None and not isinstance(curve, bool):
        raise w.error("report.truncate_curve", "true or false", curve, key="truncate_curve")
    return tuple(float(b) for b in sorted(budgets)), curve


def auto_truncate_curve(configs: tuple[ConfigSpec, ...], windows: Sequence[int]) -> tuple[ConfigSpec, ...]:
    """`configs` plus the truncate grid gain is measured against (`rollsum_evals.gain`), labelled
    `gain.CURVE_LABEL`, unless a truncate config already sweeps `keep` over enough values (the
    spec's grid is then the curve). Capped at the window (`max_tokens`) when the spec has one
    window, so every point fits: a truncation a team would ship."""
    from rollsum_evals.gain import CURVE_KEEPS, CURVE_LABEL, MIN_CURVE_POINTS, REFERENCE_PRESET

    for c in configs:
        if c.preset == REFERENCE_PRESET and len(c.grid.get("keep", ())) >= MIN_CURVE_POINTS:
            return configs
    params: dict[str, Any] = {"max_tokens": int(windows[0])} if len(windows) == 1 else {}
    return (*configs, ConfigSpec(preset=REFERENCE_PRESET, params=params, grid={"keep": CURVE_KEEPS},
                                 label=CURVE_LABEL))


def _check_prompts(w: Where, fieldname: str, prompts: Sequence[str], line: int | None) -> None:
    """Every prompt is a shipped template or a template file that parses, checked when the spec
    is read: a missing file or an unknown placeholder is one line at the spec's line (it was an
    error from the run's first engine, naming the configuration but not the spec), and checked
    even where only offline models would run, as models are (`_check_models`)."""
    from rollsum import prompts as templates

    for p in prompts:
        if not p:
            continue
        try:
            templates.get(p)
        except ConfigError as err:
            raise ConfigError(f"{w.path}:{line}: field '{fieldname}': {err}" if line else
                              f"{w.path}: field '{fieldname}': {err}") from None


def _check_models(w: Where, key: str, models: Sequence[str], override: str | None) -> None:
    """Every model spec is one the library knows (checked by form, without building it: that
    may need a key), even where only baselines would use it: a typo is never silently unused."""
    from rollsum_evals.spec import components

    for m in models:
        if components.is_builtin(m):
            continue
        problem = model_problem(m)
        if problem is not None:
            if override is not None:
                raise ConfigError(f"--model {override!r}: {problem}") from None
            raise w.error(key, f"a model spec ({problem})", m, key=key.rsplit(".", 1)[-1]) from None


def model_problem(spec: str) -> str | None:
    """What is wrong with a model spec, checked without building the model (that may need a
    key): its form, and an Anthropic model's name against the installed SDK's. A misspelt name
    (or a ``[qa] model`` of an unknown form, which was not checked at all) used to pass the spec
    check and fail later in one line naming neither the file nor the field."""
    from rollsum.models.anthropic_model import UNKNOWN_MODEL_HINT, resolve_model_name
    from rollsum.models.spec import capabilities, recorded

    try:
        capabilities(spec)  # the form first: a malformed record: spec is refused here
        inner = recorded(spec)
        if inner.startswith("anthropic:"):
            resolve_model_name(inner.split(":", 1)[1])
    except ConfigError as err:
        # a spec or a flag cannot pass the library's allow_unknown_model=True: say what can be done
        return str(err).replace(UNKNOWN_MODEL_HINT, "(a model newer than the installed anthropic SDK needs a "
                                                    "newer one: pip install -U anthropic)")
    return None


def _check_priced(w: Where, key: str, model: str) -> None:
    """A model a cost is computed at must be in the price table: an unknown one would price at 0."""
    from rollsum.models.pricing import default_table

    table = default_table()
    name = model.split(":", 1)[1] if model.startswith("anthropic:") else model
    known = set(table.models())
    if not {name, re.sub(r"-\d{8}$", "", name), name.removesuffix("-latest")} & known:
        raise w.error(key, f"a model of the price table {table.source} (e.g. {DEFAULT_PROJECTED_MODEL})", model)


def _toml_value(text: str) -> Any:
    """`10` -> 10, `0.8` -> 0.8, `true` -> True, `"x"` or a bare word -> str."""
    try:
        return toml_loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def toml_loads(text: str) -> dict[str, Any]:
    """`tomllib.loads`, but an integer of more digits than ``int()`` converts
    (`sys.get_int_max_str_digits`) is a `TOMLDecodeError` naming its line: tomllib let the
    interpreter's ValueError through, a traceback for a typo in a spec or a ``--set``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as err:
        if not past_digit_limit(err):
            raise
        limit = sys.get_int_max_str_digits()
        line = next((n for n, ln in enumerate(text.splitlines(), 1)
                     if re.search(rf"\d{{{limit + 1}}}", ln.replace("_", ""))), None)
        where = f" (at line {line})" if line else ""
        raise tomllib.TOMLDecodeError(f"an integer of more than {limit:,} digits{where}: expected a number "
                                      "Python can read") from None


def apply_override(raw: dict[str, Any], item: str, path: str = "<spec>") -> list[int]:
    """``--set SELECTOR.PARAM=VALUE``: fix one parameter of every config whose preset or label
    is SELECTOR, replacing a grid over it. The label does not change when the config has an
    explicit ``label``, so a baseline keyed by label still gates the degraded run.
    """
    target, eq, value = item.partition("=")
    selector, dot, param = target.strip().rpartition(".")
    if not eq or not dot or not selector or not param:
        raise ConfigError(f"--set {item!r}: expected PRESET.PARAM=VALUE (or LABEL.PARAM=VALUE), "
                          "e.g. since-last.keep_last=2")
    configs = raw.get("configs")
    matched: list[int] = []
    for i, cfg in enumerate(configs if isinstance(configs, list) else []):
        if isinstance(cfg, dict) and selector in (cfg.get("preset"), cfg.get("label"), cfg.get("memory")):
            params = cfg.setdefault("params", {})
            grid = cfg.get("grid")
            if isinstance(grid, dict):
                grid.pop(param, None)
            if isinstance(params, dict):
                params[param] = _toml_value(value.strip())
                matched.append(i)
    if not matched:
        known = sorted({str(c.get(k)) for c in configs if isinstance(c, dict) for k in ("preset", "label")
                        if c.get(k)} if isinstance(configs, list) else set())
        raise ConfigError(f"{path}: --set {item!r}: no config with preset or label {selector!r} "
                          f"(expected one of: {', '.join(known) or 'none'})")
    return matched


def apply_limit(raw: dict[str, Any], limit: int) -> None:
    """``--limit N``: every dataset to at most N conversations (a smoke run)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"--limit {limit}: expected a positive number of conversations per dataset")
    for d in raw.get("datasets") or []:
        if isinstance(d, dict):
            own = d.get("limit")
            d["limit"] = min(own, limit) if isinstance(own, int) and not isinstance(own, bool) else limit


def data_path(value: str, spec_path: str) -> str:
    """A dataset path as written in a spec, resolved against the spec file's directory (so a
    spec and its data move together; generator specs, hub names and ``@locomo`` stay as they
    are). The spec's own symbolic links are followed first (evals/sweeps -> rollsum_evals/sweeps)."""
    from rollsum_evals.data.formats import SYNTH_PREFIX
    from rollsum_evals.data.hf import HUB_PREFIX

    if value.startswith((SYNTH_PREFIX, HUB_PREFIX)) or value == LOCOMO_PLACEHOLDER:
        return value
    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return path
    spec = Path(spec_path)
    base = spec.resolve().parent if spec.is_file() else spec.parent
    return os.path.normpath(os.path.abspath(base / path))


def _check_keys(w: Where, prefix: str, table: Mapping[str, Any], allowed: set[str],
                occurrence: int = 0) -> None:
    for k in table:
        if k not in allowed:
            raise w.error(f"{prefix}{k}", unknown_key(k, allowed), key=k, occurrence=occurrence)


def _numbers(w: Where, table: Mapping[str, Any], key: str, default: int, *, integer: bool,
             range: Range | None = None, what: str) -> tuple[Any, ...]:
    """A number or a non-empty list of them (a grid axis): each checked as a number."""
    v = table.get(key, default)
    values = tuple(v) if isinstance(v, list) else (v,)
    if not values:
        raise w.error(key, what, v)
    for x in values:
        if check_number(x, integer=integer, range=range) is not None:
            raise w.error(key, what, x)
    if len(set(values)) != len(values):  # a value twice is every Unit of it twice
        raise w.error(key, f"each value listed once ({what})", list(values))
    return values


def _str(w: Where, table: Mapping[str, Any], key: str, *, default: str) -> str:
    v = table.get(key, default)
    if not isinstance(v, str):
        raise w.error(key, "a string", v)
    return v


def _str_list(w: Where, table: Mapping[str, Any], key: str, *, default: tuple[str, ...],
              prefix: str = "") -> tuple[str, ...]:
    v = table.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
        raise w.error(prefix + key, "a non-empty list of non-empty strings", v, key=key)
    if len(set(v)) != len(v) and key != "scorers":  # (scorers say it in their own words)
        raise w.error(prefix + key, "each value listed once", v, key=key)
    return tuple(v)


def _datasets(w: Where, v: Any, locomo: str | None, read: ReadOptions) -> tuple[DatasetSpec, ...]:
    if not isinstance(v, list) or not v:
        raise w.error("datasets", "at least one [[datasets]] table with name and source", v)
    out: list[DatasetSpec] = []
    names: set[str] = set()
    for i, d in enumerate(v):
        if not isinstance(d, dict):
            raise w.error(f"datasets[{i}]", "a table", d, key="datasets")
        _check_keys(w, f"datasets[{i}].", d, _DATASET_KEYS, occurrence=i)
        name, source = d.get("name"), d.get("source")
        if not isinstance(source, str) or not source:
            raise w.error(f"datasets[{i}].source", "a path or generator spec such as "
                          "'synth:chat?conversations=4&messages=300&seed=1'", source,
                          key="datasets", occurrence=i)
        if name is None:
            name = source
        if not isinstance(name, str) or not name.strip() or not name.isprintable():
            raise w.error(f"datasets[{i}].name", "a printable, non-empty string", name, key="datasets",
                          occurrence=i)
        if name in names:
            raise w.error(f"datasets[{i}].name", "a name unique in the spec", name, key="name",
                          occurrence=i)
        names.add(name)
        fmt, limit, questions = d.get("format"), d.get("limit"), d.get("questions")
        if fmt is not None and (not isinstance(fmt, str) or fmt not in LOADERS):
            raise w.error(f"datasets[{i}].format", f"a loader name, one of {', '.join(LOADERS)}", fmt, key="format",
                          occurrence=sum(1 for d in v[:i] if isinstance(d, dict) and "format" in d))
        if limit is not None and check_number(limit, integer=True, range=Range(1)):
            raise w.error(f"datasets[{i}].limit", "a positive integer", limit, key="limit")
        if questions is not None and (not isinstance(questions, str) or not questions):
            raise w.error(f"datasets[{i}].questions", "the path of a questions file (.jsonl, .json or .csv)",
                          questions, key="questions")
        if source == LOCOMO_PLACEHOLDER:
            if not locomo:
                continue
            source, fmt = locomo, fmt or "locomo"
        out.append(DatasetSpec(name=name, source=data_path(source, w.path), format=fmt, limit=limit,
                               questions=data_path(questions, w.path) if questions else None,
                               skip_bad_records=read.skip_bad_records, max_line_bytes=read.max_line_bytes))
    if not out:
        raise w.error("datasets", "at least one dataset that is not '@locomo' (or pass --locomo PATH)")
    return tuple(out)


def _configs(w: Where, v: Any, set_by: Mapping[tuple[int, str], str]) -> tuple[ConfigSpec, ...]:
    if not isinstance(v, list) or not v:
        raise w.error("configs", "at least one [[configs]] table with a preset", v)
    out: list[ConfigSpec] = []
    for i, c in enumerate(v):
        if not isinstance(c, dict):
            raise w.error(f"configs[{i}]", "a table", c, key="configs")
        _check_keys(w, f"configs[{i}].", c, _CONFIG_KEYS, occurrence=i)
        preset = preset_or_memory(w, v, i)
        params = c.get("params", {})
        if not isinstance(params, dict):
            raise w.error(f"configs[{i}].params", "a table of overrides", params, key="params")
        params = summarizer_params(w, v, i, dict(params))
        grid = c.get("grid", {})
        if not isinstance(grid, dict):
            raise w.error(f"configs[{i}].grid", "a table of lists", grid, key="grid")
        g: dict[str, tuple[Any, ...]] = {}
        grid_at = nth(v, i, "grid")
        for k, vals in grid.items():
            if not isinstance(vals, list) or not vals:
                raise w.error(f"configs[{i}].grid.{k}", "a non-empty list of values", vals, key="grid",
                              occurrence=grid_at)
            if k in params:
                raise w.error(f"configs[{i}].grid.{k}", "a key not also in params", k, key="grid", occurrence=grid_at)
            if len({repr(x) for x in vals}) != len(vals):  # a value twice is every Unit of it twice
                raise w.error(f"configs[{i}].grid.{k}", "each value listed once", vals, key="grid",
                              occurrence=grid_at)
            g[k] = tuple(vals)
        if not plugins_is_import_path(preset):
            check_params(w, v, i, preset, params, g, set_by)
        label = c.get("label")
        if label is not None and (not isinstance(label, str) or not label.strip() or not label.isprintable()):
            raise w.error(f"configs[{i}].label", "a printable, non-empty string", label, key="label")
        _check_label(w, v, i, label)
        prompts = _str_list(w, c, "prompts", default=(), prefix=f"configs[{i}].") or None
        _check_prompts(w, f"configs[{i}].prompts", prompts or (), _table_line(w, "configs", i, len(v)))
        models = _str_list(w, c, "models", default=(), prefix=f"configs[{i}].") or None
        _check_models(w, f"configs[{i}].models", models or (), None)
        out.append(ConfigSpec(preset=preset, params=dict(params), grid=g, label=label,
                              prompts=prompts, models=models, line=_table_line(w, "configs", i, len(v))))
    return tuple(out)


def _table_line(w: Where, key: str, i: int, count: int) -> int | None:
    """The line of the `i`-th of `count` ``[[key]]`` tables; the first ``key`` line when the
    tables are not one a header each (an inline array ``configs = [{...}, {...}]``)."""
    headers = [n for n, text in enumerate(w.lines, 1) if re.match(rf"^\s*\[\[\s*{re.escape(key)}\s*\]\]", text)]
    return headers[i] if len(headers) == count else w.line_of(key)


_AUTO_SUFFIX = re.compile(r"#\d+$")


def _check_label(w: Where, configs: Sequence[Mapping[str, Any]], i: int, label: str | None) -> None:
    """A label names one configuration's rows: two configs with one label would be merged or
    silently renamed, so a second use is refused, and so is a ``#N`` ending (what the harness
    appends to tell two generated labels apart, `spec.expand._unique`)."""
    if label is None:
        return
    at = nth(configs, i, "label")
    if _AUTO_SUFFIX.search(label):
        raise w.error(f"configs[{i}].label", "a label that does not end in '#N' (reserved for telling two "
                      "generated labels apart)", label, key="label", occurrence=at)
    first = next((k for k, c in enumerate(configs[:i]) if isinstance(c, dict) and c.get("label") == label), None)
    if first is not None:
        raise w.error(f"configs[{i}].label", f"a label unique in the spec (configs[{first}] has it too)", label,
                      key="label", occurrence=at)


def _int(w: Where, v: Mapping[str, Any], key: str, default: int, expected: str, *, minimum: int) -> int:
    x = v.get(key, default)
    if check_number(x, integer=True, range=Range(minimum)) is not None:
        raise w.error(f"probes.{key}", expected, x, key=key)
    return x


def _probes(w: Where, v: Any) -> ProbeTiming:
    if not isinstance(v, dict):
        raise w.error("probes", "a table with 'ask' (sampled, end, after) or 'ages'", v)
    _check_keys(w, "probes.", v, _PROBE_KEYS)
    end = v.get("end", True)
    if not isinstance(end, bool):
        raise w.error("probes.end", "true or false (also ask every probe at the end)", end, key="end")
    if "ages" in v:
        ages = v["ages"]
        if (not isinstance(ages, list) or not ages
                or any(check_number(a, integer=True, range=Range(1)) for a in ages)):
            raise w.error("probes.ages", "a non-empty list of positive integers (turns after the "
                          "evidence)", ages, key="ages")
        if len(set(ages)) != len(ages):
            raise w.error("probes.ages", "ages listed once each", ages, key="ages")
        if v.get("ask", "ages") != "ages" or {"after_turns", "draws", "seed"} & set(v):
            raise w.error("probes.ages", "either 'ages' or 'ask' with its own keys, not both",
                          key="ages")
        return ProbeTiming(ask="ages", ages=tuple(sorted(ages)), end=end)
    ask = v.get("ask", "sampled")
    if ask not in ("sampled", "end", "after"):
        raise w.error("probes.ask", "'sampled', 'end' or 'after' (or use 'ages = [...]')", ask, key="ask")
    if ask != "sampled" and {"draws", "seed"} & set(v):
        raise w.error("probes.draws", "'draws' and 'seed' only with ask = 'sampled'", key="ask")
    if ask != "sampled" and "end" in v:
        raise w.error("probes.end", "only with ask = 'sampled' or 'ages'", key="end")
    if ask == "sampled":
        if "after_turns" in v:
            raise w.error("probes.after_turns", "only with ask = 'after'", key="after_turns")
        draws = _int(w, v, "draws", 1, "a positive integer (asks per fact)", minimum=1)
        seed = _int(w, v, "seed", 0, "a non-negative integer", minimum=0)
        return ProbeTiming(ask="sampled", draws=draws, seed=seed, end=end)
    after = _int(w, v, "after_turns", 0, "a non-negative integer", minimum=0)
    if ask == "after" and after == 0:
        raise w.error("probes.after_turns", "a positive integer when ask = 'after'", after,
                      key="ask")
    return ProbeTiming(ask=ask, after_turns=after if ask == "after" else 0)
