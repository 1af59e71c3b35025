"""`rollsum tune`: search a preset's parameters with Optuna instead of gridding them.

The loop is Optuna's ask-and-tell: the sampler (TPE) proposes a configuration, the configuration
is evaluated on the first few conversations of every dataset, and successive halving (Optuna's
`SuccessiveHalvingPruner`) lets only the promising ones go on to more conversations. Every
evaluation is an ordinary run directory (`tune.evaluate`), so the number optimised is the report's
own: **gain over truncation at matched tokens** (`rollsum_evals.gain`), for configurations whose
verdict is ``ok`` and which meet the spec's constraints. Infeasible, broken and degraded trials are
told to the sampler as constraint violations (``Trial.set_constraint``), so it learns to avoid
them, and they are never the best.

What a user relies on:

- **Survives a kill.** The study lives in ``DIR/study.journal`` (Optuna's journal storage, an
  append-only log). ``--resume`` continues: finished trials are not repeated; a trial that was
  running is continued from its last finished rung (its units come from the Unit cache).
- **Same seed, same data, same best.** The sampler is re-seeded from (seed, trial number) before
  every proposal, so a resumed tune proposes what an uninterrupted one would have: the proposals
  depend only on the finished trials, which are the same.
- **Honest cost.** ``units_evaluated`` counts distinct Units (configuration × conversation × seed)
  the tune needed, the truncation grid included; ``units_full_grid`` what the equivalent grid
  (`TuneSpec.grid_configs`, written to ``DIR/grid.toml``) needs on every conversation.
Over ~400 lines because it is the one place that owns a tune's life cycle — spec checks, the
study and its resume (a killed trial continued from its last rung), the per-rung evaluation, the
constraint bookkeeping, the final run — the way `run.sweep` owns a run's; the pieces it calls live
in their own modules (`space`, `evaluate`, `trials`, `output`).

- **A run directory to report.** The best trials and the Pareto set, beside the spec's own
  ``[[configs]]`` (e.g. the presets' defaults), are finally run on every conversation into
  ``DIR/run`` (free where the trials already did: Unit cache), which
  `rollsum report DIR/run` reads like any run; its interval is the one ``tune.md`` quotes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import re
import shutil
import time
import tomllib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rollsum.errors import ConfigError
from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.rundir.format import MANIFEST
from rollsum_evals.rundir.lock import RunLock
from rollsum_evals.spec import components
from rollsum_evals.spec.expand import variants
from rollsum_evals.spec.parse import parse_spec, read_spec_text, toml_loads
from rollsum_evals.spec.schema import SweepSpec
from rollsum_evals.tune.evaluate import Measured, measure, sub_spec, unit_ids
from rollsum_evals.tune.output import equivalent_grid, write_outputs
from rollsum_evals.tune.space import CATEGORICAL_KEYS, PresetSpace, TuneSpec, parse_tune
from rollsum_evals.tune.trials import (
    FINAL_RUN,
    TrialRecord,
    TuneResult,
    best_of,
    fill,
    final_configs,
    jsonable,
    pareto_of,
    records,
)
from rollsum_evals.units import canonical_json

log = logging.getLogger(__name__)

STUDY = "study.journal"
STATE = "tune-state.json"
EVALUATIONS = "evaluations.jsonl"
TRIALS_DIR = "trials"
STUDY_NAME = "rollsum-tune"


@dataclass(slots=True)
class TuneOptions:
    seed: int | None = None
    trials: int | None = None
    max_units: int | None = None
    jobs: int = 1
    executor: str = "auto"
    resume: bool = False
    locomo: str | None = None
    on_trial: Callable[[TrialRecord, int], None] | None = None
    """Called after every trial ends (the CLI's progress line)."""
    on_rung: Callable[[int, int], None] | None = None
    """Called after every rung's evaluation with (trial number, conversations): lets a test stop
    the tune at a known point, as a kill would."""


# ----------------------------------------------------------------------------------------------
# set-up


def _window(raw: Mapping[str, Any]) -> int:
    cw = raw.get("context_window", DEFAULT_CONTEXT_WINDOW)
    first = cw[0] if isinstance(cw, list) and cw else cw
    return int(first) if isinstance(first, int) and not isinstance(first, bool) else DEFAULT_CONTEXT_WINDOW


def rungs(first: int, eta: int, most: int) -> list[int]:
    """Conversations per dataset at each rung: first, first·eta, … and finally all of them."""
    out = []
    n = max(1, min(first, most))
    while n < most:
        out.append(n)
        n *= eta
    out.append(most)
    return out


def _identity(raw: Mapping[str, Any], tune: TuneSpec, locomo: str | None) -> str:
    """What a resume must find unchanged: the spec (its [tune] table included) after the
    command line's overrides, and the LoCoMo file given."""
    payload = {"spec": raw, "seed": tune.seed, "objective": tune.objective, "locomo": locomo}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _moot(spec: SweepSpec, space: PresetSpace) -> list[str]:
    """Categorical dimensions that cannot change anything: prompts with only offline (built-in)
    summarizer models, which read no prompt — the same rule as `compare`'s prompt-blind check."""
    notes = []
    dims = {d.name: d for d in space.dims}
    if "prompt" in dims:
        models = list(dims["model"].choices) if "model" in dims else list(spec.models)
        if all(components.is_builtin(str(m)) for m in models):
            notes.append(f"{space.preset}: prompt not tuned: its summarizer model ({', '.join(map(str, models))}) "
                         "reads no prompt (a prompt A/B needs a model: --model or [tune.params] model)")
    return notes


# ----------------------------------------------------------------------------------------------
# the study


def _sampler(tune: TuneSpec, number: int) -> Any:
    """A TPE sampler seeded from (seed, trial number): what it proposes depends only on the
    finished trials, so a resumed tune proposes what an uninterrupted one would."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=(tune.seed * 1_000_003 + number) % 2**32,
                                          n_startup_trials=max(4, min(10, tune.trials // 4)),
                                          multivariate=True, group=True)


def _open_study(out: Path, tune: TuneSpec, first_rung: int, *, create: bool) -> Any:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(out / STUDY)))
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=first_rung,
                                                    reduction_factor=tune.reduction_factor)
    directions: list[Literal["minimize", "maximize"]] = (["maximize"] if tune.objective == "gain"
                                                         else ["maximize", "minimize"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if create:
            return optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=directions,
                                       sampler=_sampler(tune, 0), pruner=pruner)
        try:
            return optuna.load_study(study_name=STUDY_NAME, storage=storage, sampler=_sampler(tune, 0),
                                     pruner=pruner)
        except KeyError:  # the journal holds no study of this name (damaged, or not a tune's)
            raise ConfigError(f"{out / STUDY}: holds no tune study to continue; the tune directory is damaged "
                              "(choose another --out)") from None


def _read_state(path: Path) -> dict[str, Any]:
    """The tune directory's identity record (absent: {}); a damaged one is one line, not a traceback."""
    from rollsum.safejson import JSONInputError, loads

    try:
        state = loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except JSONInputError as err:
        raise ConfigError(f"{path}: not usable JSON ({err}); the tune directory is damaged") from None
    if not isinstance(state, dict):
        raise ConfigError(f"{path}: expected a JSON object, found {type(state).__name__}; the tune directory "
                          "is damaged")
    return state


class _Tuner:
    def __init__(self, raw: dict[str, Any], path: str, tune: TuneSpec, out: Path, opts: TuneOptions,
                 base: SweepSpec, conversation_ids: Mapping[str, Sequence[str]]) -> None:
        self.raw, self.path, self.tune, self.out, self.opts, self.base = raw, path, tune, out, opts, base
        self.conversation_ids = {k: list(v) for k, v in conversation_ids.items()}
        most = max(len(v) for v in self.conversation_ids.values())
        self.rungs = rungs(tune.min_conversations, tune.reduction_factor, most)
        self.notes: list[str] = [n for s in tune.spaces for n in _moot(base, s)]
        from rollsum_evals.analysis import pairing_of

        self.tokens = pairing_of(base.probes.key)[1].header
        """The report's name for the token figure trials are measured and constrained by."""
        self.evaluated: set[str] = set()
        for d in sorted((out / TRIALS_DIR).glob("*/c*")):
            if (d / "manifest.json").exists():
                self.evaluated |= unit_ids(d)

    @property
    def over_budget(self) -> bool:
        return self.tune.max_units is not None and len(self.evaluated) >= self.tune.max_units

    # -- one trial ---------------------------------------------------------------------------

    def _suggest(self, trial: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
        names = [s.preset for s in self.tune.spaces]
        preset = trial.suggest_categorical("preset", names) if len(names) > 1 else names[0]
        space = self.tune.space(preset)
        moot = {d for d in CATEGORICAL_KEYS if any(n.startswith(f"{preset}: {d} not tuned") for n in self.notes)}
        params: dict[str, Any] = dict(space.fixed)
        extra: dict[str, Any] = {}
        for dim in space.dims:
            if dim.name in moot:
                continue
            key = f"{preset}.{dim.name}"
            if dim.kind == "categorical":
                value: Any = trial.suggest_categorical(key, list(dim.choices))
            elif dim.kind == "int":
                value = trial.suggest_int(key, int(dim.low), int(dim.high), step=int(dim.step or 1), log=dim.log)
            else:
                value = trial.suggest_float(key, float(dim.low), float(dim.high), step=dim.step, log=dim.log)
            (extra if dim.name in CATEGORICAL_KEYS else params)[dim.name] = value
        return preset, params, extra

    def _config(self, preset: str, params: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
        cfg: dict[str, Any] = {"preset": preset, "params": dict(params)}
        if "prompt" in extra:
            cfg["prompts"] = [extra["prompt"]]
        if "model" in extra:
            cfg["models"] = [extra["model"]]
        return cfg

    def _first(self, conversations: int) -> dict[str, list[str]]:
        """The first `conversations` of every dataset: a rung's Units, with the ids a full run
        gives them (so the next rung and the final run find them in the Unit cache)."""
        return {name: ids[:conversations] for name, ids in self.conversation_ids.items()}

    def _where(self, number: int, config: Mapping[str, Any], conversations: int) -> tuple[SweepSpec, str, Path]:
        spec = sub_spec(self.raw, self.path, [config], locomo=self.opts.locomo,
                        name=f"{self.base.name}-trial-{number}")
        label = next(u.label for u in variants(spec) if u.preset == config["preset"])
        return spec, label, self.out / TRIALS_DIR / f"{number:04d}" / f"c{conversations}"

    def _reread(self, number: int, config: Mapping[str, Any], conversations: int) -> tuple[str, Measured]:
        _spec, label, d = self._where(number, config, conversations)
        return label, measure(d, [label])[label]

    def _evaluate(self, number: int, config: Mapping[str, Any], conversations: int) -> tuple[str, Measured]:
        from rollsum_evals.run import run_sweep

        spec, label, d = self._where(number, config, conversations)
        before = len(self.evaluated)
        result = run_sweep(spec, d, jobs=self.opts.jobs, resume=(d / "manifest.json").exists(),
                           executor=self.opts.executor, progress=False, only=self._first(conversations))
        self.evaluated |= unit_ids(d)
        m = measure(d, [label])[label]
        line = {"trial": number, "conversations": conversations, "units": result.total, "replayed": result.ran,
                "from_cache": result.cached, "new_units": len(self.evaluated) - before, "gain": m.gain,
                "status": m.status}
        with (self.out / EVALUATIONS).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, allow_nan=True) + "\n")
        if self.opts.on_rung is not None:
            self.opts.on_rung(number, conversations)
        return label, m

    def run_trial(self, study: Any, trial: Any) -> TrialRecord:
        import optuna

        preset, params, extra = self._suggest(trial)
        config = self._config(preset, params, extra)
        record = TrialRecord(number=trial.number, preset=preset, params=dict(params), label="", state="failed",
                             prompt=str(extra.get("prompt", "")), model=str(extra.get("model", "")))
        done = [int(s) for s in trial.user_attrs.get("rungs_done", [])]
        todo = self.rungs if self.tune.objective == "gain" else self.rungs[-1:]
        measured: Measured | None = None
        violations: dict[str, float] = {"status": 1.0}
        for n in todo:
            if self.over_budget and measured is not None:
                record.state = "budget"
                break
            resumed = n in done  # this rung finished before a kill: read it, don't redo it
            try:
                record.label, measured = (self._reread if resumed else self._evaluate)(trial.number, config, n)
            except ConfigError as err:
                record.reason = str(err)
                _constrain(trial, {"status": 1.0})
                trial.set_user_attr("record", jsonable(asdict(record)))
                study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
                return record
            fill(record, measured, n)
            violations = {"status": -1.0 if measured.ok else 1.0,
                          **self.tune.constraints.violations(measured.tokens_per_call, measured.calls_per_message)}
            if not resumed:
                done.append(n)
                trial.set_user_attr("rungs_done", list(done))
            if any(v > 0 for v in violations.values()):
                record.state, record.reason = "infeasible", self._why_infeasible(measured)
                break
            if self.tune.objective == "gain" and not resumed:
                trial.report(measured.gain, n)
                if n != todo[-1] and trial.should_prune():
                    record.state = "pruned"
                    break
        else:
            record.state = "complete"
        record.units_after = len(self.evaluated)
        _constrain(trial, violations)
        trial.set_user_attr("record", jsonable(asdict(record)))
        values = self._values(record)
        if record.state in ("pruned", "budget"):
            study.tell(trial.number, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial.number, values)
        return record

    def _why_infeasible(self, m: Measured) -> str:
        if m.status != "ok":
            return f"status {m.status}: {m.reason}".rstrip(": ")
        if not math.isfinite(m.gain):
            return f"no gain: its {self.tokens} lie outside truncation's curve"
        return "; ".join(self._violated(m))

    def _violated(self, m: Measured) -> list[str]:
        c, out = self.tune.constraints, []
        if c.max_tokens_per_call is not None and m.tokens_per_call > c.max_tokens_per_call:
            out.append(f"{m.tokens_per_call:,.0f} {self.tokens} > {c.max_tokens_per_call:,.0f}")
        if c.max_calls_per_message is not None and m.calls_per_message > c.max_calls_per_message:
            out.append(f"{m.calls_per_message:.3f} summarizer calls per message > {c.max_calls_per_message:g}")
        return out

    def _values(self, r: TrialRecord) -> list[float]:
        """What the sampler is told: gain (−1 when there is none: never a good region), or
        (retention, tokens per call) for the Pareto objective."""
        if self.tune.objective == "gain":
            return [r.gain if math.isfinite(r.gain) else -1.0]
        return [r.retention if math.isfinite(r.retention) else 0.0,
                r.tokens_per_call if math.isfinite(r.tokens_per_call) else 1e12]

    # -- the loop ----------------------------------------------------------------------------

    def search(self, study: Any) -> None:
        import optuna

        for frozen in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            # killed mid-trial: continue it where it stopped (its finished rungs are in the Unit cache)
            log.info("continuing trial %d, interrupted by a kill", frozen.number)
            trial = optuna.trial.Trial(study, frozen._trial_id)
            self._announce(self.run_trial(study, trial))
        while len(study.trials) < self.tune.trials and not self.over_budget:
            study.sampler = _sampler(self.tune, len(study.trials))
            self._announce(self.run_trial(study, study.ask()))

    def _announce(self, record: TrialRecord) -> None:
        if self.opts.on_trial is not None:
            self.opts.on_trial(record, self.tune.trials)


def _constrain(trial: Any, violations: Mapping[str, float]) -> None:
    """Tell TPE how far the trial is from feasible (> 0: violated), once, when it ends: Optuna
    keeps the first value set, so a rung's value would stand for the whole trial."""
    for key, value in violations.items():
        trial.set_constraint(key, value)


# ----------------------------------------------------------------------------------------------
# entry point


def _located(err: ConfigError, path: str, text: str) -> ConfigError:
    """`parse_tune`'s ``PATH: [tune] KEY: ...`` with the line KEY is written on, as every other
    spec mistake names its line (`rollsum_evals.spec.where`)."""
    from rollsum_evals.spec.where import Where

    m = re.match(rf"^{re.escape(path)}: \[tune\] ([^:]+?): (.*)$", str(err), re.DOTALL)
    line = Where(path, text).line_of_path(["tune", *m.group(1).split(".")]) if m else None
    return ConfigError(f"{path}:{line}: [tune] {m.group(1)}: {m.group(2)}") if m and line else err


def run_tune(spec_path: str | Path, out: str | Path, opts: TuneOptions | None = None) -> TuneResult:
    """Search, then run the best trials on every conversation into ``DIR/run`` and write
    ``tune.json`` / ``tune.md``. One writer: the directory is locked for the whole call."""
    from rollsum_evals.data.pinned import default_loader
    from rollsum_evals.run.resume import load_datasets

    opts = opts or TuneOptions()
    t0 = time.perf_counter()
    path = str(spec_path)
    text = read_spec_text(path, "tune spec")
    # the sweep part first, by the sweep's parser on the user's own text (so a mistake names its
    # line); a spec that only tunes has no [[configs]] of its own: one is added after its last line
    try:
        own = toml_loads(text)
    except tomllib.TOMLDecodeError:
        own = {}  # parse_spec below says what is wrong, and where
    base = parse_spec(text if own.get("configs") else text + '\n[[configs]]\npreset = "truncate"\n', path,
                      locomo=opts.locomo)
    raw = {k: v for k, v in base.raw.items() if k not in ("configs", "locomo")}
    raw["configs"] = own.get("configs", [])
    configured = [str(c.get("preset")) for c in raw["configs"] if isinstance(c, dict)]
    try:
        tune = parse_tune(raw, path, context_window=_window(raw), configured=configured)
    except ConfigError as err:
        raise _located(err, path, text) from None
    if opts.seed is not None:
        tune = dataclasses.replace(tune, seed=opts.seed)
    if opts.trials is not None:
        tune = dataclasses.replace(tune, trials=opts.trials)
    if opts.max_units is not None:
        tune = dataclasses.replace(tune, max_units=opts.max_units)
    datasets = load_datasets(base, default_loader, {})
    total_conversations = sum(len(d.conversations) for d in datasets.values())

    target = Path(out)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target}: exists and is not a directory (expected a tune directory: --out DIR)")
    if (target / MANIFEST).exists():  # a `rollsum run` directory: the study would be written among its files
        raise ConfigError(f"{target}: holds a run directory (its {MANIFEST}), not a tune: choose another --out "
                          f"(the tune writes its own run to {target / FINAL_RUN})")
    target.mkdir(parents=True, exist_ok=True)
    lock = RunLock(target)
    lock.acquire()
    try:
        identity = _identity(raw, tune, opts.locomo)
        state_file = target / STATE
        if (target / STUDY).exists():
            if not opts.resume:
                raise ConfigError(f"{target}: already holds a tune; pass --resume to continue it, or choose another "
                                  "--out")
            state = _read_state(state_file)
            if state.get("identity") != identity:
                raise ConfigError(f"{target}: the tune there was started with another spec, seed or --locomo; "
                                  "--resume needs the same ones (or choose another --out)")
        else:
            atomic_write_text(state_file, json.dumps({"identity": identity, "spec": path}, indent=2) + "\n")
        tuner = _Tuner(raw, path, tune, target, opts, base,
                       {n: [c.id for c in d.conversations] for n, d in datasets.items()})
        study = _open_study(target, tune, tuner.rungs[0], create=not (target / STUDY).exists())
        tuner.search(study)
        trials = records(study)
        final = _final_run(tuner, trials)
        best = best_of(trials)
        curve_units = _curve_units(target / FINAL_RUN)
        seeds = len(base.seeds)
        result = TuneResult(out=target, best=best, pareto=pareto_of(trials), trials=trials,
                            units_evaluated=len(tuner.evaluated),
                            units_full_grid=tune.grid_configs() * total_conversations * seeds + curve_units,
                            grid_configs=tune.grid_configs(), final=final, notes=tuner.notes,
                            wall_s=time.perf_counter() - t0, rungs=tuner.rungs, tokens=tuner.tokens)
        atomic_write_text(target / "grid.toml", equivalent_grid(raw, tune))
        write_outputs(result, tune, raw)
        return result
    finally:
        lock.release()


def _final_run(tuner: _Tuner, trials: Sequence[TrialRecord]) -> dict[str, Measured]:
    """The best trials and the Pareto set on every conversation, into DIR/run (a run directory
    `rollsum report` reads). A previous final run of other configurations (a resumed tune that
    found more) is replaced: it is derived data, every Unit of it is in the Unit cache."""
    from rollsum_evals.run import run_sweep

    chosen = final_configs(trials, tuner.tune.top)
    if not chosen:
        return {}
    configs = [tuner._config(t.preset, t.params, {k: v for k, v in (("prompt", t.prompt), ("model", t.model)) if v})
               for t in chosen]
    configs += [dict(c) for c in tuner.raw.get("configs") or [] if isinstance(c, dict)]  # the spec's own, to compare
    spec = sub_spec(tuner.raw, tuner.path, configs, locomo=tuner.opts.locomo,
                    name=f"{tuner.base.name}-tuned")
    d = tuner.out / FINAL_RUN
    if (d / "manifest.json").exists():
        old = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        if old.get("spec_sha256") == spec.sha256() and old.get("status") == "complete":
            return measure(d, [t.label for t in chosen])
        shutil.rmtree(d)
    run_sweep(spec, d, jobs=tuner.opts.jobs, executor=tuner.opts.executor, progress=False)
    tuner.evaluated |= unit_ids(d)
    return measure(d, [t.label for t in chosen])


def _curve_units(run_dir: Path) -> int:
    """Units of the truncation grid in a run (every approach, grid or tune, needs them once)."""
    from rollsum_evals.gain import is_curve
    from rollsum_evals.rundir.journal import RunDir

    if not (run_dir / "manifest.json").exists():
        return 0
    return sum(1 for row in RunDir(run_dir).unit_rows().values() if is_curve(str(row.get("config", ""))))


__all__ = ["TrialRecord", "TuneOptions", "TuneResult", "best_of", "pareto_of", "records", "run_tune", "rungs"]
