"""Named presets: each seed design as one ready configuration.

A preset is a policy class, a context format, a prompt for model-backed summaries, the kind of
summarizer the seed used, and engine defaults. `build` routes each override by name to *every*
component that owns it (policy constructor, engine, summarizer): a parameter means one thing
everywhere, so `context_window` given to token-ratio sets the policy's window *and* the
engine's (and with it the summary's 10 % share), and `reserved_output_tokens` given to
budget-rule-based shrinks both the trim budget and the summary's share. A sweep can vary any
parameter with one flat dictionary, and a typo is an error, not a silently ignored key.

Components are looked up in their registries, so a new one is reachable without touching this
module: ``policy="NAME"`` swaps the trigger for any policy in `rollsum.policies.POLICIES` (the
preset keeps its format and summarizer), ``summarizer="NAME"`` picks any summarizer in
`rollsum.summarizers` 's registry or names one by import path (``"pkg.mod:MySummarizer"``),
with ``summarizer_params={...}`` for its constructor (conventions: `rollsum.plugins`).

`build` (what `RollingSummarizer.from_preset` calls) is two steps a caller may take apart:
`resolve` checks and routes the parameters into typed values, a `PresetConfig` (the policy
object, `EngineSettings`, the summarizer's choice), and `make` builds an engine from one for a
model and its wiring. A caller making many engines of one configuration (a sweep: every
conversation and seed) resolves once and makes many; nothing is checked again per engine.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from rollsum import params, policies
from rollsum.errors import ConfigError
from rollsum.policies.base import Policy
from rollsum.registry import Registry
from rollsum.settings import SETTING_NAMES, WIRING_NAMES, EngineSettings, engine_parameters, owner_of
from rollsum.summarizers.base import Summarizer

if TYPE_CHECKING:
    from rollsum.models.base import Model

E = TypeVar("E")
"""The engine class `build` makes (the caller's: `RollingSummarizer.from_preset` passes its own)."""
SummarizerKind = Literal["prompted", "structured", "extractive"]
BUILTIN_KINDS: tuple[str, ...] = ("prompted", "structured", "extractive")
"""The summarizers a preset shapes with its own defaults (prompt, transcript, output length)."""
MODEL_SUMMARIZER_PARAMS = ("prompt", "max_output_tokens", "transcript_budget", "transcript_overflow",
                           "filter_noise", "max_message_chars")
EXTRACTIVE_PARAMS = ("merge", "conversational")
SUMMARIZER_PARAMS = MODEL_SUMMARIZER_PARAMS + EXTRACTIVE_PARAMS
WINDOW_ALIASES: Mapping[str, str] = {"max_context_tokens": "context_window"}
"""A policy's own name for the main model's window (seed 002's maxContextTokens)."""


@dataclass(frozen=True)
class Preset:
    name: str
    seed: str
    description: str
    policy: str
    """The trigger, by its name in `rollsum.policies.POLICIES`."""
    context_format: str
    prompt: str | None
    model_summarizer: SummarizerKind
    """What a model-backed run of this preset uses; without a model it is always extractive."""
    fallback: Literal["extractive"] | None = None
    """Used when the model-backed summarizer fails for good (seed 002's rule-based fallback)."""
    extractive: Mapping[str, Any] = field(default_factory=dict)
    engine: Mapping[str, Any] = field(default_factory=dict)
    max_output_tokens: int = 1024
    baseline: bool = False
    """Never calls a summarizer (full context, truncation): what a summary has to beat; model
    and prompt do not apply to it."""
    summarizer: Mapping[str, Any] = field(default_factory=dict)
    """Defaults for the model-backed summarizer (transcript shaping the seed asks for)."""
    guard_when_given: bool = False
    """The window guard is on when `context_window` is given (seeds 000 and 001 have no
    window of their own); presets whose policy is windowed have it on anyway."""

    def doc(self) -> str:
        return f"{self.name} (seed {self.seed}): {self.description}"


PRESETS: Registry[Preset] = Registry("preset", {
    p.name: p
    for p in (
        Preset("count-and-tokens", "000",
               "more than 30 messages AND the oldest 20 over 15,000 tokens; keeps the last 10; "
               "rolling third-person summary as a bracketed assistant message",
               "count-and-tokens", "bracketed-assistant", "count-and-tokens/v1", "prompted",
               max_output_tokens=1024, guard_when_given=True),
        Preset("since-last", "001",
               ">= 20 messages since the last summary, outside the verbatim window of 10; "
               "summary under '## Earlier in this conversation' before recent history",
               "since-last", "earlier-heading", "since-last/v1", "prompted",
               engine={"max_summary_tokens": 600}, max_output_tokens=500, guard_when_given=True),
        Preset("budget-rule-based", "002",
               "over budget: drop by priority and summarize what was dropped (rule-based by "
               "default); system message '[Previous Conversation Summary]', <= 10% of budget",
               "budget-rule-based", "system-summary", "budget-rule-based/v1", "prompted", fallback="extractive",
               extractive={"merge": "append"}, max_output_tokens=500,
               summarizer={"max_message_chars": 1000}),
        Preset("token-ratio", "003",
               "tokens/window >= 0.8 with hysteresis 0.7, cooldown 4, emergency >= 1.0; folds up to "
               "depth 3, then stops rewriting (a model's summary is appended, oldest summary text cut; "
               "extractive lines keep competing); keeps the last 6 (down to 2); "
               "structured JSON summary as a tagged system message",
               "token-ratio", "tagged-system", "structured/v1", "structured", max_output_tokens=1024,
               summarizer={"filter_noise": True, "transcript_budget": 8000,
                           "transcript_overflow": "trim-oldest"}),
        Preset("evict-window", "004",
               "head + tail window; the evicted middle is summarized once >= 10 messages were "
               "evicted since the last summary; '[Conversation Summary]' between head and tail",
               "evict-window", "head-summary-tail", "evict-window/v1", "prompted", max_output_tokens=1024),
        Preset("clear-tool-results", "-",
               "baseline: Anthropic-style context editing run locally: over half the window, tool "
               "results older than the newest 3 become a placeholder (the call stays); no summary, "
               "the oldest messages dropped only if still over the window",
               "fit-window", "plain", None, "extractive", baseline=True,
               engine={"clear_tool_results": True}),
        Preset("clear+since-last", "001",
               "clear-tool-results first, then since-last (its summary and verbatim window) only "
               "while the cleared context is still over the clearing trigger",
               "since-last", "earlier-heading", "since-last/v1", "prompted",
               engine={"max_summary_tokens": 600, "clear_tool_results": True}, max_output_tokens=500,
               guard_when_given=True),
        Preset("full-context", "-", "baseline: never summarize, never drop",
               "full-context", "plain", None, "extractive", baseline=True),
        Preset("truncate", "-", "baseline: keep only the newest N messages (keep=20)",
               "truncate", "plain", None, "extractive", baseline=True),
    )
}, name_of=lambda p: p.name)
"""What `from_preset`, a sweep's ``preset`` and `rollsum list` read, in this order: a `Preset`
registered here (``PRESETS.register(preset.name, preset)``) is usable by name everywhere; its
`policy` and `context_format` are looked up by name when it is built (`POLICIES`, `FORMATS`)."""


def names() -> list[str]:
    return list(PRESETS)


def get(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}") from None


def _engine_params(engine_cls: Callable[..., Any] | None) -> set[str]:
    """What `build` may pass to the engine: its constructor's parameters, except the ones
    `build` sets itself (the policy, the summarizer, the preset's name). Without a class:
    `rollsum.RollingSummarizer`'s, as `rollsum.settings` declares them (this module does not
    import the engine, which imports it for `from_preset`)."""
    if engine_cls is None:
        return engine_parameters()
    sig = inspect.signature(engine_cls)
    return {n for n in sig.parameters if n not in ("self", "policy", "summarizer", "preset")}


CHOICE_PARAMS = ("policy", "summarizer", "summarizer_params", "fallback")
"""Overrides that pick a component rather than set a value (`build` reads them itself)."""


def owners(key: str, policy_cls: type, engine_cls: Callable[..., Any] | None = None) -> list[Any]:
    """Every component that takes parameter `key` (what `build` routes it to): the policy
    class, the built-in summarizer classes, the engine class (without one: where
    `rollsum.settings` declares the engine's parameter)."""
    from rollsum import summarizers

    out: list[Any] = []
    if key in {f.name for f in dataclasses.fields(policy_cls) if f.init}:
        out.append(policy_cls)
    if key in MODEL_SUMMARIZER_PARAMS:
        out.append(summarizers.resolve("prompted")[0])
    if key in EXTRACTIVE_PARAMS:
        out.append(summarizers.resolve("extractive")[0])
    if key in _engine_params(engine_cls):
        out.append(engine_cls or owner_of(key))
    return out


def valid_params(policy_cls: type, engine_cls: Callable[..., Any] | None = None) -> list[str]:
    policy_fields = {f.name for f in dataclasses.fields(policy_cls) if f.init}
    return sorted(policy_fields | set(SUMMARIZER_PARAMS) | _engine_params(engine_cls)
                  | set(CHOICE_PARAMS))


def param_problem(name: str, key: str, value: Any, *, policy: Any = None,
                  engine_cls: Callable[..., Any] | None = None) -> str | None:
    """What parameter `key` of preset `name` should have been, or None when `value` is fine (or
    `key` is not a parameter at all: `valid_params`): of every owner's type, in its range
    (`rollsum.params`). `policy`: a ``policy=`` override given with it. The same words for
    `from_preset` and a sweep spec."""
    preset = get(name)
    if key == "policy":  # a name that is not registered: `policies.get` says which are
        return None if isinstance(value, str) else f"a policy name, one of {', '.join(policies.POLICIES)}"
    if key == "summarizer":
        return None if isinstance(value, str) and value else "a summarizer name or an import path"
    if key == "summarizer_params":
        return None if isinstance(value, Mapping) else "a table of the summarizer's parameters"
    if key == "fallback":
        return None if value in (None, "extractive") else "'extractive' or None"
    if key == "context_format" and isinstance(value, str):
        from rollsum.context import FORMATS

        return None if value in FORMATS else f"one of {', '.join(sorted(FORMATS))}"
    policy_name = policy if isinstance(policy, str) and policy in policies.POLICIES else preset.policy
    found = owners(key, policies.get(policy_name), engine_cls)
    return params.problem(key, value, found) if found else None


def _resolve_model(model: Any) -> Model | None:
    if model is None or model == "extractive":
        return None
    if isinstance(model, str):
        from rollsum.models import from_spec

        resolved: Model = from_spec(model)
        return resolved
    if not callable(getattr(model, "complete", None)):  # else every summary fails later, as an internal error
        hint = (" (an anthropic client: wrap it, rollsum.models.AnthropicModel(client=...))"
                if type(model).__module__.split(".")[0] == "anthropic" else "")
        raise ConfigError(f"model: expected a model spec string (e.g. anthropic:claude-haiku-4-5, fake) or a "
                          f"rollsum Model (with complete()), got {type(model).__name__}{hint}")
    return model


def make_summarizer(preset: Preset, model: Model | None, params: Mapping[str, Any],
                    kind: str | None = None, extra: Mapping[str, Any] | None = None,
                    context_window: int | None = None) -> Summarizer:
    """The preset's summarizer, or `kind` (a registry name or an import path) instead.

    A built-in kind is shaped by the preset (prompt, transcript handling, output length) and
    takes the flat overrides in `params`; any other summarizer takes `extra` (the
    ``summarizer_params`` override) and the `rollsum.plugins` conventions (model, counter,
    context_window) its constructor names.
    """
    from rollsum import summarizers

    kind = kind or (preset.model_summarizer if model is not None else "extractive")
    p = dict(params)
    if kind not in BUILTIN_KINDS:
        counter = {"counter": p["counter"]} if p.get("counter") is not None else {}
        return summarizers.create(kind, model, context_window=context_window, **counter, **(extra or {}))
    if kind == "extractive":
        for key in MODEL_SUMMARIZER_PARAMS:
            p.pop(key, None)
        return summarizers.create("extractive", **{**preset.extractive, **p, **(extra or {})})
    if model is None:
        raise ConfigError(f"the {kind} summarizer needs a model (e.g. anthropic:claude-haiku-4-5 or fake:mode=json)")
    for key in EXTRACTIVE_PARAMS:
        p.pop(key, None)
    p = {**preset.summarizer, **p, **(extra or {})}
    p.setdefault("prompt", preset.prompt or "since-last/v1")
    p.setdefault("max_output_tokens", preset.max_output_tokens)
    if kind == "structured" and p["prompt"] == preset.prompt and preset.model_summarizer != "structured":
        p["prompt"] = "structured/v1"
    return summarizers.create(kind, model, **p)


def _check(name: str, key: str, value: Any, **kw: Any) -> None:
    found = param_problem(name, key, value, **kw)
    if found is not None:
        raise ConfigError(f"preset {name}: {key}: expected {found}, got {value!r}")


@dataclass(frozen=True)
class PresetConfig:
    """A preset with its parameters resolved into typed, validated values, before it meets a
    model or its wiring (`resolve` makes it, `make` builds engines from it).

    Why a value of its own: a caller that builds many engines from one configuration (a sweep
    replays each configuration over many conversations and seeds) checks and routes the
    parameters once, here, and hands the result to every engine; nothing is checked or
    re-parsed per engine. Equal configurations compare equal, so one rebuilt from its parameters
    (a sweep's Unit read back from JSON) can be held equal to the original.
    """

    preset: str
    policy: Policy
    """The trigger, constructed (a frozen dataclass: it validated its fields when made)."""
    settings: EngineSettings
    """The engine's settings (validated when made: `EngineSettings`)."""
    summarizer: str | None = None
    """A ``summarizer=`` override (a registry name or an import path), else the preset's."""
    summarizer_params: Mapping[str, Any] = field(default_factory=dict)
    """The flat overrides the built-in summarizers take (prompt, transcript shaping, merge)."""
    plugin_params: Mapping[str, Any] | None = None
    """The ``summarizer_params`` override: the constructor parameters of a summarizer by name."""
    fallback: Literal["extractive"] | None = None


def resolve(name: str, **overrides: Any) -> PresetConfig:
    """Preset `name` with `overrides` routed to every component that owns them (see the module
    docstring), as typed values: the policy object, the engine's `EngineSettings` and the
    summarizer's choice and parameters. Each value is checked once, by the typed object that
    owns it (the policy's and the settings' own validation: `rollsum.params`); a value no typed
    object owns (a summarizer's parameter, a choice) is checked here. Wiring (store, counter,
    callbacks, ...) is not a parameter of a configuration: pass it to `make`."""
    preset = get(name)
    wiring = sorted(k for k in overrides if k in WIRING_NAMES and k not in CHOICE_PARAMS)
    if wiring:
        raise ConfigError(f"preset {name}: {', '.join(wiring)} connect(s) an engine to its surroundings, not a "
                          "parameter of the configuration; pass it when the engine is made")
    policy_name = overrides.pop("policy", None)
    if policy_name is not None and preset.baseline:
        raise ConfigError(f"preset {name} is a baseline (it never summarizes); it takes no policy override")
    if policy_name is not None:
        _check(name, "policy", policy_name)
    policy_cls = policies.get(policy_name or preset.policy)
    policy_fields = {f.name for f in dataclasses.fields(policy_cls) if f.init}
    policy_kw: dict[str, Any] = {}
    engine_kw: dict[str, Any] = dict(preset.engine)
    summ_kw: dict[str, Any] = {}
    kind: str | None = overrides.pop("summarizer", None)
    extra = overrides.pop("summarizer_params", None)
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"preset {name}: summarizer: expected a summarizer name or an import path, got {kind!r}")
    if extra is not None and not isinstance(extra, Mapping):
        raise ConfigError(f"preset {name}: summarizer_params: expected a table of parameters, got {extra!r}")
    plugged = kind is not None and kind not in BUILTIN_KINDS
    shaped = sorted(k for k in overrides if k in SUMMARIZER_PARAMS)
    if plugged and shaped:
        raise ConfigError(f"preset {name}: {', '.join(shaped)} shape the built-in summarizers, not "
                          f"{kind}; give its parameters in summarizer_params")
    fallback_opt = overrides.pop("fallback", preset.fallback)
    _check(name, "fallback", fallback_opt)
    for key, value in overrides.items():
        if key == "context_format" or (key not in policy_fields and key not in SETTING_NAMES):
            # no typed object checks it (a format's name: its registry does, with other words)
            _check(name, key, value, policy=policy_name)
    for key, value in overrides.items():
        owners = 0
        if key in policy_fields:  # every owner gets it: one parameter, one meaning
            policy_kw[key] = value
            owners += 1
        if key in SUMMARIZER_PARAMS:
            summ_kw[key] = value
            owners += 1
        if key in SETTING_NAMES:
            engine_kw[key] = value
            owners += 1
        if key in WINDOW_ALIASES and key in policy_fields and value is not None:
            alias = WINDOW_ALIASES[key]
            if alias in overrides and overrides[alias] != value:
                raise ConfigError(f"preset {name}: {key}={value} and {alias}={overrides[alias]} name the same "
                                  "window with different values; give one of them")
            engine_kw[alias] = value
        if not owners:
            raise ConfigError(f"preset {name}: unknown parameter {key!r}; valid: "
                              f"{', '.join(valid_params(policy_cls))}")
    try:
        policy = policy_cls(**policy_kw)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"preset {name}: {err}") from None
    # a value the policy holds by default (reserved_output_tokens, max_summary_tokens) is the
    # engine's too, so the summary's share is taken on the same budget the policy trims to
    for key in sorted(policy_fields & set(SETTING_NAMES)):
        value = getattr(policy, key)
        if value is not None:
            engine_kw.setdefault(key, value)
    if hasattr(policy, "max_summary_tokens"):
        # the seeds' max_summary_tokens caps both the model's answer and the summary's room
        summ_kw.setdefault("max_output_tokens", policy.max_summary_tokens)
    if preset.guard_when_given and ("context_window" in overrides or any(a in overrides for a in WINDOW_ALIASES)):
        engine_kw.setdefault("enforce_window", True)
    engine_kw.setdefault("context_format", preset.context_format)
    try:
        settings = EngineSettings(**engine_kw)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"preset {name}: {err}") from None
    except ConfigError as err:  # a rule tying two settings: say which value the preset chose
        held = [f"{k}={engine_kw[k]}" for k in sorted(policy_fields & set(SETTING_NAMES))
                if k not in overrides and k in engine_kw and k in str(err)]
        raise ConfigError(f"preset {name}: {err}" + (f" ({', '.join(held)} is this preset's default; "
                                                     "give a value that fits)" if held else "")) from None
    return PresetConfig(preset=name, policy=policy, settings=settings, summarizer=kind,
                        summarizer_params=summ_kw, plugin_params=extra, fallback=fallback_opt)


def _summarizers(config: PresetConfig, resolved: Model | None, counter: Any = None,
                 given: Summarizer | None = None) -> tuple[Summarizer, Summarizer | None]:
    """The summarizer configuration `config` makes for `resolved` (`given` instead, when there
    is one), and its extractive fallback (None when it has none)."""
    preset = get(config.preset)
    summ_kw = dict(config.summarizer_params)
    if counter is not None:
        summ_kw.setdefault("counter", counter)
    kind = config.summarizer
    summarizer = given if given is not None else make_summarizer(
        preset, resolved, summ_kw, kind, config.plugin_params, config.settings.context_window)
    fallback = None
    # a kept summarizer (`summarizer_for(name, model)`) brings its model: the engine built around
    # it without `model` again had no fallback (budget-rule-based's summaries failed for good)
    backed = resolved is not None or getattr(given, "model", None) is not None
    if config.fallback == "extractive" and backed and kind != "extractive":
        fb_kw = {k: v for k, v in summ_kw.items() if k in ("merge", "conversational", "counter")}
        fallback = make_summarizer(preset, None, fb_kw, "extractive")
    return summarizer, fallback


def make(engine_cls: Callable[..., E], config: PresetConfig, model: Any = None, **wiring: Any) -> E:
    """An engine of `engine_cls` from a resolved configuration: its summarizer (and fallback)
    made for `model`, the policy and settings handed over as they are (checked when they were
    made, so not again), `wiring` (counter, store, conversation_id, on_event, ...) as given.

    ``summarizer=`` in `wiring` (a `Summarizer` object, e.g. `summarizer_for`'s) is used instead
    of making one: a process that builds an engine for every request keeps one summarizer, and
    with it the statistics the extractive summarizer follows the chain with (module docstring
    of `rollsum.summarizers.corpus`), instead of counting the whole conversation again at the
    first summary of every request."""
    resolved = _resolve_model(model)
    summarizer, fallback = _summarizers(config, resolved, wiring.get("counter"), wiring.pop("summarizer", None))
    if fallback is not None:
        wiring["fallback"] = fallback
    engine: E = cast(Any, engine_cls).from_settings(config.policy, summarizer, config.settings,
                                                     preset=config.preset, **wiring)
    return engine


def summarizer_for(name: str, model: Any = None, *, counter: Any = None, **overrides: Any) -> Summarizer:
    """The summarizer `from_preset(name, model, **overrides)` would make, to make once and pass
    to every engine of the process as ``summarizer=`` (`build`): an application that rebuilds
    its engine from the store for every request then continues the extractive summarizer's
    statistics from memory (the same summaries either way; docs/summarizers.md)."""
    wiring = sorted(k for k in overrides if k in WIRING_NAMES and k not in CHOICE_PARAMS)
    if wiring:
        raise ConfigError(f"summarizer_for: {', '.join(wiring)} connect(s) an engine, not its summarizer; "
                          "pass it to from_preset")
    return _summarizers(resolve(name, **overrides), _resolve_model(model), counter)[0]


def _given_summarizer(name: str, overrides: dict[str, Any]) -> Summarizer | None:
    """A ``summarizer=`` override that is an object, taken out of `overrides` (wiring, not a
    parameter of the configuration); None when it is a name, an import path or absent."""
    chosen = overrides.get("summarizer")
    if chosen is None or isinstance(chosen, str):
        return None
    if isinstance(chosen, type):
        raise ConfigError(f"preset {name}: summarizer: expected a summarizer name, an import path or a "
                          f"Summarizer object, got the class {chosen.__name__} (make one: {chosen.__name__}(...))")
    if not callable(getattr(chosen, "summarize", None)):
        raise ConfigError(f"preset {name}: summarizer: expected a summarizer name, an import path or a "
                          f"Summarizer (with summarize()), got {type(chosen).__name__}")
    shaped = sorted(k for k in overrides if k in SUMMARIZER_PARAMS or k == "summarizer_params")
    if shaped:
        raise ConfigError(f"preset {name}: {', '.join(shaped)} shape(s) the summarizer the preset makes, not "
                          "one given as summarizer=; give them when you make it "
                          "(rollsum.presets.summarizer_for)")
    return cast(Summarizer, overrides.pop("summarizer"))


def build(engine_cls: Callable[..., E], name: str, model: Any = None, **overrides: Any) -> E:
    """An engine of `engine_cls` (`rollsum.RollingSummarizer`) configured as preset `name`, with
    `overrides` routed to every component that owns them (see the module docstring): `resolve`
    then `make`, the wiring among the overrides passed to `make`. ``summarizer=`` may be a
    `Summarizer` object instead of a name (`make`)."""
    get(name)
    given = _given_summarizer(name, overrides)
    wiring = {k: overrides.pop(k) for k in list(overrides) if k in WIRING_NAMES and k not in CHOICE_PARAMS}
    for key, value in wiring.items():
        _check(name, key, value, policy=overrides.get("policy"))
    if given is not None:
        if model is not None and getattr(given, "model", None) is None:  # else `model` was silently unused
            raise ConfigError(f"preset {name}: model is not used: the summarizer given as summarizer= is used as "
                              f"it is, and it was made without a model; make it with the model "
                              f"(rollsum.presets.summarizer_for({name!r}, model)) or leave model out")
        wiring["summarizer"] = given
    return make(engine_cls, resolve(name, **overrides), model, **wiring)
