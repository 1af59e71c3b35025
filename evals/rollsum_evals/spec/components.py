"""What a Unit's components are: read from the components' own declarations, in one place.

Whether a configuration calls a summarizer at all (a baseline preset), and whether its
summarizer model is offline, free, deterministic or prompt-blind, is declared once on the
component (`rollsum.presets.Preset.baseline`, `rollsum.models.spec.BACKENDS`,
`ExtractiveSummarizer.capabilities`); the harness asks here and nowhere else, so a new backend
or preset needs no harness change. A component named by import path (a ``memory``, a
``summarizer``) declares them as a ``capabilities`` attribute, read through
`rollsum.plugins.capabilities` (the conservative `rollsum.plugins.UNDECLARED` without one); when
it also takes the sweep's model, the configuration is what both are (offline only if both are).

Only `rollsum run` imports such a component (``imports=True``, at replay time and once per
configuration for the manifest, `recorded_facts`). Everything that *reads* a run (report,
compare, regress, score, the drill-down) takes the facts the run recorded (`recorded`), never
importing a name found in a run directory: a received run can name any importable module, and
a run made with a plug-in must report without it. Without a record (an older run), a component
named by import path is read as `rollsum.plugins.UNDECLARED`, never imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from typing import Any

from rollsum import plugins, presets
from rollsum.capabilities import Capabilities
from rollsum.errors import ConfigError
from rollsum.models.spec import capabilities as model_capabilities
from rollsum.summarizers.extractive import ExtractiveSummarizer
from rollsum_evals.units import Unit

BUILTIN_SUMMARIZERS: frozenset[str] = frozenset({"", "extractive"})
"""Model settings that name the built-in offline summarizer rather than a model to build."""

NO_SUMMARIZER = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)


def is_builtin(model: str) -> bool:
    """The config's "model" is the built-in extractive summarizer: there is nothing to build."""
    return model in BUILTIN_SUMMARIZERS


def is_baseline(preset: str) -> bool:
    """A preset that never calls a summarizer (model and prompt do not apply to it)."""
    try:
        return presets.get(preset).baseline
    except ConfigError:
        return False


def of_model(model: str) -> Capabilities:
    """What a model setting is: the built-in summarizer's declaration, or the backend's."""
    if is_builtin(model):
        return ExtractiveSummarizer.capabilities
    return model_capabilities(model)


def with_model(own: Capabilities, model: str) -> Capabilities:
    """A component that calls `model`: offline, free and deterministic only if both are."""
    if is_builtin(model):
        return own
    m = of_model(model)
    return Capabilities(offline=own.offline and m.offline, free=own.free and m.free,
                        deterministic=own.deterministic and m.deterministic, follows_prompt=own.follows_prompt)


def of_config(preset: str, model: str, params: Mapping[str, Any] | None = None, *,
              imports: bool = False) -> Capabilities:
    """What a configuration's summarization is: a baseline summarizes nothing at all; a memory
    by import path (in `preset`) or a summarizer override in `params` answers for itself.

    A component named by import path is imported only with ``imports=True`` (`rollsum run`,
    which replays it anyway); otherwise it is read as `plugins.UNDECLARED` (a reader uses
    `recorded`, which has the run's own record first). A model spec this version does not know
    is `plugins.UNDECLARED` too when not importing (a received run is data, not a mistake)."""
    if is_baseline(preset):
        return NO_SUMMARIZER
    try:
        if plugins.is_import_path(preset):
            own = plugins.capabilities(plugins.load(preset)) if imports else plugins.UNDECLARED
            return with_model(own, model)
        summarizer = (params or {}).get("summarizer")
        if summarizer == "extractive":
            return ExtractiveSummarizer.capabilities
        if isinstance(summarizer, str) and summarizer not in presets.BUILTIN_KINDS:
            from rollsum import summarizers

            if imports or not plugins.is_import_path(summarizer):
                return with_model(plugins.capabilities(summarizers.resolve(summarizer)[0]), model)
            return with_model(plugins.UNDECLARED, model)
        return of_model(model)
    except ConfigError:
        if imports:
            raise
        return plugins.UNDECLARED


FACTS_KEY = "components"
"""The manifest key of `recorded_facts`: ``{config label: {baseline, offline, free,
deterministic, follows_prompt}}`` (docs/run-format.md)."""


def facts(preset: str, model: str, params: Mapping[str, Any] | None = None) -> dict[str, bool]:
    """What a reader needs to know about a configuration, found at run time (imports its
    components: `rollsum run` only)."""
    return {"baseline": is_baseline(preset), **asdict(of_config(preset, model, params, imports=True))}


def recorded_facts(units: Iterable[Unit]) -> dict[str, dict[str, bool]]:
    """`facts` of every configuration of a run, by label, for its manifest."""
    out: dict[str, dict[str, bool]] = {}
    for u in units:
        if u.config not in out:
            out[u.config] = facts(u.preset, u.model, u.params)
    return dict(sorted(out.items()))


def recorded(record: object, preset: str, model: str, params: Mapping[str, Any] | None = None) -> Capabilities:
    """A configuration's capabilities as the run recorded them (`record`: its entry of the
    manifest's `FACTS_KEY`, or a trace's ``engine_config["capabilities"]``), else read without
    importing anything (`of_config`). A record that is not a mapping of booleans is ignored."""
    if isinstance(record, Mapping):
        names = [f.name for f in fields(Capabilities)]
        if all(isinstance(record.get(n), bool) for n in names):
            return Capabilities(**{n: bool(record[n]) for n in names})
    return of_config(preset, model, params)


def of_run_config(manifest: Mapping[str, Any], config: str, preset: str, model: str,
                  params: Mapping[str, Any] | None = None) -> Capabilities:
    """`recorded` for configuration `config` of the run whose manifest is `manifest`."""
    table = manifest.get(FACTS_KEY)
    return recorded(table.get(config) if isinstance(table, Mapping) else None, preset, model, params)
