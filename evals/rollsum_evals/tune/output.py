"""What a tune says it found: ``tune.json`` (for scripts), ``tune.md`` (for people), the
convergence plot and ``grid.toml`` (the equivalent grid, to check the tune against it).

Every number in ``tune.md`` names what it is: the best configuration's gain is the final run's
(every conversation) with its conversation-clustered interval, not the rung value a pruned trial
stopped at; the cost line compares distinct Units with what the equivalent grid needs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomli_w

from rollsum_evals.fileio import atomic_write_text
from rollsum_evals.tune.space import CATEGORICAL_KEYS, TuneSpec
from rollsum_evals.tune.trials import FINAL_RUN, TrialRecord, TuneResult

TUNE_JSON = "tune.json"
TUNE_MD = "tune.md"
CONVERGENCE_PNG = "convergence.png"


def equivalent_grid(raw: Mapping[str, Any], tune: TuneSpec) -> str:
    """The sweep spec that grids every value the tune could have proposed (`Dim.values`): run it
    with `rollsum run` to check the tune against the grid it replaces."""
    grid = {k: v for k, v in raw.items() if k != "tune"}
    grid["name"] = f"{raw.get('name', 'tune')}-grid"
    configs = []
    for space in tune.spaces:
        cfg: dict[str, Any] = {"preset": space.preset}
        if space.fixed:
            cfg["params"] = dict(space.fixed)
        axes = {d.name: d.values() for d in space.dims if d.name not in CATEGORICAL_KEYS}
        if axes:
            cfg["grid"] = axes
        for key, plural in (("prompt", "prompts"), ("model", "models")):
            dim = next((d for d in space.dims if d.name == key), None)
            if dim is not None:
                cfg[plural] = list(dim.choices)
        configs.append(cfg)
    grid["configs"] = configs
    return ("# The grid equivalent to this tune's search space (written by `rollsum tune`):\n"
            "#   rollsum run grid.toml --out runs/grid && rollsum report runs/grid\n" + tomli_w.dumps(grid))


def _num(v: float) -> float | None:
    return v if isinstance(v, float | int) and math.isfinite(v) else None


def _trial_json(t: TrialRecord) -> dict[str, Any]:
    return {"number": t.number, "label": t.label, "preset": t.preset, "params": t.params, "prompt": t.prompt or None,
            "model": t.model or None, "state": t.state, "conversations_per_dataset": t.conversations,
            "gain": _num(t.gain), "gain_low": _num(t.gain_low), "gain_high": _num(t.gain_high),
            "retention": _num(t.retention), "tokens_per_call": _num(t.tokens_per_call),
            "calls_per_message": _num(t.calls_per_message), "status": t.status, "reason": t.reason,
            "units_after": t.units_after}


def summary(result: TuneResult, tune: TuneSpec) -> dict[str, Any]:
    """``tune.json``."""
    best = result.best
    final = result.final.get(best.label) if best else None
    return {
        "best": best.label if best else None,
        "best_preset": best.preset if best else None,
        "best_params": best.params if best else None,
        "best_gain": _num(final.gain) if final else None,
        "best_gain_low": _num(final.gain_low) if final else None,
        "best_gain_high": _num(final.gain_high) if final else None,
        "objective": tune.objective,
        "constraints": tune.constraints.to_dict(),
        "seed": tune.seed,
        "units_evaluated": result.units_evaluated,
        "units_full_grid": result.units_full_grid,
        "grid_configs": result.grid_configs,
        "rungs_conversations_per_dataset": result.rungs,
        "pareto": [t.label for t in result.pareto],
        "trials": [_trial_json(t) for t in result.trials],
        "final_run": FINAL_RUN,
        "notes": result.notes,
        "wall_s": round(result.wall_s, 2),
    }


def importance(result: TuneResult) -> dict[str, dict[str, float]]:
    """Per preset, how much each parameter explains the gain of its completed trials (Optuna's
    PED-ANOVA evaluator, which needs no scikit-learn); empty below 4 trials of a preset."""
    import optuna

    out: dict[str, dict[str, float]] = {}
    by_preset: dict[str, list[TrialRecord]] = {}
    for t in result.trials:
        if t.feasible and math.isfinite(t.gain):
            by_preset.setdefault(t.preset, []).append(t)
    for preset, trials in by_preset.items():
        names = sorted({k for t in trials for k, v in t.params.items() if isinstance(v, int | float)})
        varied = [n for n in names if len({t.params.get(n) for t in trials}) > 1]
        if len(trials) < 4 or not varied:
            continue
        study = optuna.create_study(direction="maximize")
        for t in trials:
            dists: dict[str, optuna.distributions.BaseDistribution] = {}
            params = {}
            for n in varied:
                lo = min(float(x.params[n]) for x in trials)
                hi = max(float(x.params[n]) for x in trials)
                dists[n] = optuna.distributions.FloatDistribution(lo, hi)
                params[n] = float(t.params[n])
            study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=t.gain))
        try:
            evaluator = optuna.importance.PedAnovaImportanceEvaluator()
            scores = optuna.importance.get_param_importances(study, evaluator=evaluator)
        except (ValueError, RuntimeError):
            continue
        out[preset] = {k: round(float(v), 3) for k, v in scores.items()}
    return out


def convergence_points(result: TuneResult) -> list[tuple[int, float]]:
    """(units evaluated, best feasible gain so far) after each trial that completed."""
    points: list[tuple[int, float]] = []
    best = -math.inf
    for t in sorted(result.trials, key=lambda t: t.number):
        if t.feasible and math.isfinite(t.gain) and t.gain > best:
            best = t.gain
        if math.isfinite(best):
            points.append((t.units_after, best))
    return points


def _f(v: float, sign: bool = False) -> str:
    if not math.isfinite(v):
        return "–"
    return f"{v:+.3f}" if sign else f"{v:.3f}"


def _snippet(best: TrialRecord) -> str:
    cfg: dict[str, Any] = {"preset": best.preset, "label": best.label}
    if best.params:
        cfg["params"] = best.params
    if best.prompt:
        cfg["prompts"] = [best.prompt]
    if best.model:
        cfg["models"] = [best.model]
    return tomli_w.dumps({"configs": [cfg]})


def all_failed(trials: Sequence[TrialRecord]) -> bool:
    """Every trial ended in an error (state "failed"): a tune that measured nothing, which a
    looser constraint cannot fix (`rollsum tune` exits 1)."""
    return bool(trials) and all(t.state == "failed" for t in trials)


def markdown(result: TuneResult, tune: TuneSpec, imp: Mapping[str, Mapping[str, float]]) -> str:
    lines = [f"# Tune: {result.out.name}", ""]
    best = result.best
    final = result.final.get(best.label) if best else None
    share = result.units_evaluated / result.units_full_grid if result.units_full_grid else math.nan
    if best is None and all_failed(result.trials):
        first = result.trials[0].reason if result.trials else ""
        lines += ["**Every trial failed** (an error, not the constraints: see the trials below"
                  + (f"; the first: {first}" if first else "") + "). Fix what they say and run the tune "
                  "again; loosening `[tune.constraints]` would not help.", ""]
    elif best is None or final is None:
        lines += ["**No trial beat the constraints**: every trial was infeasible, degraded, broken, pruned or "
                  "failed (see the trials below). Loosen `[tune.constraints]` or widen the space.", ""]
    else:
        beats = math.isfinite(final.gain_low) and final.gain_low > 0
        interval = (f" [{_f(final.gain_low, True)}, {_f(final.gain_high, True)}]" if math.isfinite(final.gain_low)
                    else " (no interval: fewer than 5 conversations)")
        lines += [f"**Best: `{best.label}`** — gain over truncation at matched tokens "
                  f"{_f(final.gain, True)}{interval} on every conversation; retention {_f(final.retention)}, "
                  f"{final.tokens_per_call:,.0f} {result.tokens}, "
                  f"{final.calls_per_message:.3f} summarizer calls per message."
                  + ("" if beats else " Its interval does not exclude 0: it is not shown to beat truncation."), ""]
    lines += [f"Cost: **{result.units_evaluated:,} units evaluated** of the {result.units_full_grid:,} the "
              f"equivalent grid ({result.grid_configs:,} configurations, `grid.toml`) needs on every conversation "
              f"({share:.0%}); {len(result.trials)} trials, rungs of {', '.join(map(str, result.rungs))} "
              f"conversations per dataset (successive halving, keep the best 1/{tune.reduction_factor}); "
              f"{result.wall_s:.0f} s.", ""]
    if tune.constraints.to_dict():
        lines += ["Constraints: " + ", ".join(f"{k} ≤ {v:g}" for k, v in tune.constraints.to_dict().items())
                  + "; a trial whose status is not ok is never best either.", ""]
    for note in result.notes:
        lines += [f"> {note}", ""]
    lines += ["## Final run (every conversation)", "",
              f"`rollsum report {result.out / FINAL_RUN}` shows these with the truncation curve.", "",
              f"| configuration | gain [95 % CI] | retention | {result.tokens} | calls / message | status |",
              "|---|---|---|---|---|---|"]
    for label, m in sorted(result.final.items(), key=lambda kv: -kv[1].gain if math.isfinite(kv[1].gain) else 0):
        ci = f" [{_f(m.gain_low, True)}, {_f(m.gain_high, True)}]" if math.isfinite(m.gain_low) else ""
        lines.append(f"| `{label}` | {_f(m.gain, True)}{ci} | {_f(m.retention)} | {m.tokens_per_call:,.0f} | "
                     f"{m.calls_per_message:.3f} | {m.status} |")
    lines += ["", f"## Pareto set (retention vs {result.tokens}, feasible trials)", ""]
    lines += [f"- `{t.label}`: retention {_f(t.retention)} at {t.tokens_per_call:,.0f} {result.tokens}, gain "
              f"{_f(t.gain, True)}" for t in result.pareto] or ["- none"]
    lines += ["", "## Parameter importance (PED-ANOVA over each preset's completed trials)", ""]
    if imp:
        for preset, scores in imp.items():
            lines.append(f"- {preset}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    else:
        lines.append("- not enough completed trials per preset (needs 4 with a varied parameter)")
    lines += ["", "## Convergence", "", f"![best gain vs units evaluated]({CONVERGENCE_PNG})", "",
              "## Trials", "", f"| # | configuration | state | conversations | gain | {result.tokens} | reason |",
              "|---|---|---|---|---|---|---|"]
    for t in result.trials:
        lines.append(f"| {t.number} | `{t.label or t.preset}` | {t.state} | {t.conversations} | {_f(t.gain, True)} | "
                     f"{t.tokens_per_call:,.0f} | {t.reason.replace('|', '/')[:120]} |"
                     if math.isfinite(t.tokens_per_call) else
                     f"| {t.number} | `{t.label or t.preset}` | {t.state} | {t.conversations} | – | – | "
                     f"{t.reason.replace('|', '/')[:120]} |")
    if best is not None:
        lines += ["", "## Paste into a nightly gate spec", "", "```toml", _snippet(best).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def write_outputs(result: TuneResult, tune: TuneSpec, raw: Mapping[str, Any]) -> Path:
    """``tune.json``, ``convergence.png`` and ``tune.md`` (written last: its presence means the
    others are there)."""
    from rollsum_evals.plots import tune_convergence

    out = result.out
    atomic_write_text(out / TUNE_JSON, json.dumps(summary(result, tune), indent=2, allow_nan=False) + "\n")
    points = convergence_points(result)
    tune_convergence(points, out / CONVERGENCE_PNG,
                     grid_units=result.units_full_grid)
    path = out / TUNE_MD
    atomic_write_text(path, markdown(result, tune, importance(result)))
    return path


def trial_line(t: TrialRecord, total: int) -> str:
    """The CLI's progress line for one trial."""
    what = f"gain {_f(t.gain, True)}" if math.isfinite(t.gain) else t.reason[:80] or "no gain"
    return f"trial {t.number + 1}/{total} {t.label or t.preset}: {t.state} at {t.conversations} conv/dataset, {what}"


__all__ = ["CONVERGENCE_PNG", "TUNE_JSON", "TUNE_MD", "convergence_points", "equivalent_grid", "importance",
           "markdown", "summary", "trial_line", "write_outputs"]
