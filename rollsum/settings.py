"""An engine's settings as one frozen, validated value (`EngineSettings`).

Why a value of its own: the engine took 33 keyword parameters, checked a dozen of them by hand
in its constructor with wordings of its own, and kept the rest as loose attributes, so a caller
holding a typed configuration had to spell it out as keywords (or a dict) again, and a range
could differ between the engine and a preset's check. Here the settings -- everything about
*how* the engine behaves, nothing it is wired to (policy, summarizer, fallback, counter, store,
callbacks, clock, its conversation id) -- are one frozen dataclass:

- validated once, when it is made, against the ranges in `rollsum.params` (the one place ranges
  live; `params.check_number`'s wording), plus the rules that tie two settings together;
- with the derived numbers every part of the engine takes from it (`limit`, `summary_budget`,
  `request_tokens`) computed in one place;
- and the engine is made from it directly: ``RollingSummarizer.from_settings(policy,
  summarizer, settings, store=...)``. The constructor's keyword parameters are the fields below
  with the same names, types and defaults (a test holds them together), so existing callers and
  `rollsum.presets` are unchanged.

`rollsum.presets` reads the engine's parameter names and types from here rather than from the
engine class, which is what lets the engine import presets (``from_preset``) without presets
importing the engine back.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, overload

from rollsum.clearing import ClearSettings
from rollsum.context import ContextFormat
from rollsum.errors import ConfigError
from rollsum.params import DEFAULT_CONTEXT_WINDOW, annotation_of, check_fields, type_problem
from rollsum.policies.base import Policy, policy_params
from rollsum.store.base import Store
from rollsum.summarizers.base import Summarizer
from rollsum.tokens import TokenCounter
from rollsum.types import SummaryEvent

LedgerMode = Literal["auto", "pin", "retry", "off"]
DepthCapMerge = Literal["select", "cut"]

T = TypeVar("T")

MIN_WINDOW = 64
"""Smallest window the guard can keep: room for the newest message's clip marker and framing."""


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """How one engine behaves. Each field is the `RollingSummarizer` keyword of the same name.

    - `context_window`: the main model's window in tokens; ratios and budgets are taken on it.
    - `enforce_window`: keep ``context_tokens() <= context_window − reserved_output_tokens`` after
      every `add()` (the window guard). None: on for policies that have a window
      (``policy.windowed``), off for the others.
    - `guard_low_water` / `guard_min_tail`: a guard compaction summarizes the oldest messages
      until the context is projected at ``guard_low_water × context_window`` (summary at its full
      share), keeping at least the newest `guard_min_tail`. Bound: at most one guard summarizer
      call per ``(1 − guard_low_water) × context_window`` tokens added.
    - `reserved_output_tokens`: room kept for the main model's answer (seed 002); the summary's
      share is taken on the window minus it.
    - `summary_share` / `max_summary_tokens` / `min_summary_tokens`: the summary never takes more
      than ``min(max_summary_tokens, summary_share × (context_window − reserved_output_tokens))``
      tokens of context; with less than `min_summary_tokens` of room it is omitted with a marker.
    - `max_request_tokens`: one summary request carries at most this many tokens of messages
      (None: one window), oldest first; a larger backlog is summarized in several requests.
    - `retries` / `backoff_s` / `max_retry_after_s`: retryable failures (transport, timeouts, a
      locked cache) are retried with backoff_s × 2**n (or the server's retry-after), each wait
      at most `max_retry_after_s`; others are not. The engine owns retries: `AnthropicModel` sets its
      SDK client's own retries to 0, so a persistent 500 costs exactly ``retries + 1`` calls.
    - `ledger` / `ledger_share` / `ledger_max_facts`: "pin" keeps facts the summary dropped in a
      Facts section (at most `ledger_share` of the summary's budget), "retry" asks the
      summarizer once more naming them (then pins), "off" skips the ledger. "auto" pins for
      model-backed summarizers and is off for the extractive one, which already selects
      fact-bearing sentences from the same span (docs/ledger.md).
    - `lag_turns`: simulate an asynchronous summarizer that lands N turns after the trigger.
      A replay setting for one long-lived engine: `close()` drops a summary still in flight
      (and logs a warning), so an engine rebuilt per request with it never summarizes; an
      application's asynchronous summaries are `rollsum.aio`'s.
    - `max_passes`: bound on the policy's decisions per message (a policy cannot spin).
    - `failure_cooldown` / `max_failure_backoff`: after k failed attempts in a row no new
      attempt for ``min(failure_cooldown × 2**(k−1), max_failure_backoff)`` messages; a primary
      summarizer that failed while the fallback answered backs off the same way.
    - `min_messages_per_attempt`: the k-th summary attempt needs k × this many messages added,
      under every policy and the window guard (0: no cap).
    - `rebuild_from_raw`: summarize all covered raw messages again instead of folding the
      previous summary (no drift, more tokens).
    - `depth_cap_merge`: what a summary past seed 003's depth cap does with the previous one:
      "select" (a summarizer that never rewrites the previous text still gets it), "cut" (the
      span alone, appended to the previous text with the oldest content cut; docs/seeds.md).
    - `clear_tool_results` and `clear_*`: tool-result clearing before the policy is asked
      (`rollsum.clearing`).
    """

    context_format: ContextFormat | str = "earlier-heading"
    context_window: int = DEFAULT_CONTEXT_WINDOW
    enforce_window: bool | None = None
    guard_low_water: float = 0.6
    guard_min_tail: int = 2
    reserved_output_tokens: int = 0
    summary_share: float = 0.10
    max_summary_tokens: int = 1024
    min_summary_tokens: int = 50
    max_request_tokens: int | None = None
    retries: int = 1
    backoff_s: float = 0.25
    max_retry_after_s: float = 60.0
    ledger: LedgerMode = "auto"
    ledger_share: float = 0.25
    ledger_max_facts: int = 60
    lag_turns: int = 0
    max_passes: int = 4
    failure_cooldown: int = 2
    max_failure_backoff: int = 64
    min_messages_per_attempt: int = 10
    rebuild_from_raw: bool = False
    depth_cap_merge: DepthCapMerge = "select"
    clear_tool_results: bool = False
    clear_trigger: int | None = None
    clear_keep: int = 3
    clear_at_least: int = 0
    clear_exclude_tools: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_fields(self)  # each value alone: its annotation and `params.RANGES` (ParamError)
        tools = self.clear_exclude_tools
        if not isinstance(tools, str) and isinstance(tools, Iterable):
            # a list given here stays the caller's to change: keep a tuple, so the value is frozen
            # (made before the rules read it: a generator is read once)
            object.__setattr__(self, "clear_exclude_tools", tuple(tools))
        found = self._rules()
        if found is not None:
            raise ConfigError(found)

    def _rules(self) -> str | None:
        """The first rule tying two settings together that these break (None: fine)."""
        if self.reserved_output_tokens >= self.context_window:
            return (f"reserved_output_tokens ({self.reserved_output_tokens}) must be >= 0 and below "
                    f"context_window ({self.context_window})")
        tools = self.clear_exclude_tools
        if isinstance(tools, str):
            return "clear_exclude_tools: expected a list of tool names, got a string"
        # (its annotation, a generic Sequence, is not checked by `check_fields`: 5 was a bare TypeError)
        if not isinstance(tools, Iterable) or not all(isinstance(t, str) for t in tools):
            return f"clear_exclude_tools: expected a list of tool names, got {tools!r}"
        return None

    def problem(self, *, windowed: bool = False) -> str | None:
        """What is wrong with these settings for an engine (None: fine). Every value and rule was
        checked when the settings were made (a frozen value: they cannot have changed since), so
        nothing is checked twice; what is left depends on the policy: `windowed`, the guard will
        be on (`enforce_window` resolved against it), so the window minus the reserved room must
        be big enough to keep."""
        if windowed and self.limit < MIN_WINDOW:
            return (f"context_window minus reserved_output_tokens must be at least {MIN_WINDOW} tokens "
                    f"to be kept, got {self.context_window} − {self.reserved_output_tokens}")
        return None

    @property
    def limit(self) -> int:
        """What the guard keeps the context within: the window minus the main model's reserved
        answer room (seed 002's budget; the whole window when nothing is reserved)."""
        return self.context_window - self.reserved_output_tokens

    @property
    def summary_budget(self) -> int:
        """Tokens the summary text may take: its share of the budget, capped."""
        return max(0, min(self.max_summary_tokens, int(self.summary_share * self.limit)))

    @property
    def request_tokens(self) -> int:
        """The most tokens of messages one summary request carries (default: one window)."""
        return self.max_request_tokens if self.max_request_tokens is not None else self.context_window

    @property
    def clearing(self) -> ClearSettings:
        """The tool-result clearing rule these settings describe (its trigger resolved)."""
        return ClearSettings.make(self.context_window, self.clear_trigger, self.clear_keep, self.clear_at_least,
                                  self.clear_exclude_tools)

    def ledger_for(self, summarizer: Summarizer) -> LedgerMode:
        """The effective ledger mode: "auto" is "off" for the extractive summarizer (it quotes
        the messages, so no fact can go missing), "pin" for the others."""
        if self.ledger != "auto":
            return self.ledger
        return "off" if getattr(summarizer, "name", "") == "extractive" else "pin"

    def config(self, *, context_format: str, enforce_window: bool, ledger_mode: LedgerMode) -> dict[str, Any]:
        """The settings' part of `RollingSummarizer.config`, in its order, with the values the
        engine resolved (the format's name, the guard against the policy, "auto" ledger against
        the summarizer) passed in."""
        clear: dict[str, Any] = {}
        if self.clear_tool_results:
            c = self.clearing
            clear = {"clear_tool_results": True, "clear_trigger": c.trigger, "clear_keep": c.keep,
                     "clear_at_least": c.clear_at_least, "clear_exclude_tools": sorted(c.exclude_tools)}
        return {
            "context_format": context_format,
            "context_window": self.context_window,
            "enforce_window": enforce_window,
            "guard_low_water": self.guard_low_water,
            "guard_min_tail": self.guard_min_tail,
            "reserved_output_tokens": self.reserved_output_tokens,
            "summary_share": self.summary_share,
            "max_summary_tokens": self.max_summary_tokens,
            "min_summary_tokens": self.min_summary_tokens,
            "summary_budget": self.summary_budget,
            "max_request_tokens": self.request_tokens,
            "ledger": ledger_mode,
            "ledger_setting": self.ledger,
            "lag_turns": self.lag_turns,
            "retries": self.retries,
            "failure_cooldown": self.failure_cooldown,
            "max_failure_backoff": self.max_failure_backoff,
            "min_messages_per_attempt": self.min_messages_per_attempt,
            "rebuild_from_raw": self.rebuild_from_raw,
            "depth_cap_merge": self.depth_cap_merge,
            **clear,
        }


def engine_config(preset: str, policy: Policy, summarizer: Summarizer, fallback: Summarizer | None,
                  settings: EngineSettings, *, context_format: str, enforce_window: bool) -> dict[str, Any]:
    """`RollingSummarizer.config`: everything needed to re-create an engine (its components by
    name and parameters, then the settings with every value resolved)."""
    summ_params = getattr(summarizer, "params", None)
    return {
        "preset": preset,
        "policy": {"name": policy.name, "params": policy_params(policy)},
        "summarizer": {"name": getattr(summarizer, "name", type(summarizer).__name__),
                       "params": summ_params() if callable(summ_params) else {}},
        "fallback": getattr(fallback, "name", None) if fallback is not None else None,
        **settings.config(context_format=context_format, enforce_window=enforce_window,
                          ledger_mode=settings.ledger_for(summarizer)),
    }


class EngineWiring:
    """What an engine is connected to besides its policy and summarizer: the `RollingSummarizer`
    keywords that are not settings (`rollsum.params.WIRING`, plus the fallback summarizer).
    Annotations only: `rollsum.presets` checks a ``from_preset`` override of one of them against
    these types without importing the engine."""

    counter: TokenCounter | None
    store: Store | str | None
    conversation_id: str | None
    fallback: Summarizer | None
    sleep: Callable[[float], None]
    clock: Callable[[], datetime]
    on_event: Callable[[SummaryEvent], None] | None
    takeover: bool


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(EngineSettings))
WIRING_NAMES: tuple[str, ...] = tuple(typing.get_type_hints(EngineWiring))


def engine_parameters() -> set[str]:
    """Every keyword `RollingSummarizer` takes besides policy, summarizer and preset."""
    return set(SETTING_NAMES) | set(WIRING_NAMES)


def owner_of(name: str) -> Any:
    """Where `rollsum.params.annotation_of` finds engine parameter `name`'s declared type."""
    return EngineSettings if name in SETTING_NAMES else EngineWiring




class Setting(Generic[T]):
    """A read-only engine attribute that shows one of its settings (``rs.context_window`` is
    ``rs.settings.context_window``): the attributes callers read before the settings were one
    value keep working, and cannot drift from the value the engine actually uses."""

    __slots__ = ("name",)

    def __init__(self) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object | None, owner: type) -> T | Setting[T]:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self.name)  # type: ignore[attr-defined]
        return value



class SettingAttributes:
    """The settings as read-only attributes of the object holding them in `settings` (the
    engine: ``rs.context_window`` is ``rs.settings.context_window``), as callers read them
    before the settings were one value."""

    settings: EngineSettings

    context_window = Setting[int]()
    guard_low_water = Setting[float]()
    guard_min_tail = Setting[int]()
    reserved_output_tokens = Setting[int]()
    summary_share = Setting[float]()
    max_summary_tokens = Setting[int]()
    min_summary_tokens = Setting[int]()
    retries = Setting[int]()
    backoff_s = Setting[float]()
    max_retry_after_s = Setting[float]()
    ledger = Setting[LedgerMode]()
    ledger_share = Setting[float]()
    ledger_max_facts = Setting[int]()
    lag_turns = Setting[int]()
    max_passes = Setting[int]()
    failure_cooldown = Setting[int]()
    max_failure_backoff = Setting[int]()
    min_messages_per_attempt = Setting[int]()
    rebuild_from_raw = Setting[bool]()
    depth_cap_merge = Setting[DepthCapMerge]()
    clear_tool_results = Setting[bool]()


def wiring_problem(policy: object, summarizer: object, settings: object, conversation_id: object) -> str | None:
    """What is wrong with an engine's three required parts and its conversation id (None: fine),
    in a user's words: checked when the engine is made, else a wrong part was an AttributeError
    there or a failure on every summary later."""
    if not isinstance(settings, EngineSettings):
        return (f"settings: expected an EngineSettings, got {type(settings).__name__} "
                "(EngineSettings(**values) makes one)")
    if conversation_id is not None and not (isinstance(conversation_id, str) and conversation_id):
        # "" (an app's missing id) made a fresh random conversation on every open: history gone
        return f"conversation_id: expected a non-empty string or None (a new id), got {conversation_id!r}"
    if not callable(getattr(policy, "decide", None)):
        return (f"policy: expected a Policy (with decide()), got {type(policy).__name__} "
                "(rollsum.policies.get(NAME)() makes one)")
    if not callable(getattr(summarizer, "summarize", None)):
        return (f"summarizer: expected a Summarizer (with summarize()), got {type(summarizer).__name__} "
                "(rollsum.summarizers.create(NAME) makes one)")
    return None


def wiring_type_problem(counter: object, sleep: object, clock: object, on_event: object) -> str | None:
    """What is wrong with an engine's callbacks and counter (None: fine), by `EngineWiring`'s
    annotations: the rule and words `from_preset` and every typed setting use
    (`rollsum.params.type_problem`). Without it a counter given by name was an AttributeError
    and a clock that is not callable failed every summary (an internal error after each stored
    message, the context held by the guard alone)."""
    for name, value in (("counter", counter), ("sleep", sleep), ("clock", clock), ("on_event", on_event)):
        if (found := type_problem(name, value, annotation_of(EngineWiring, name))) is not None:
            return f"{name}: expected {found}, got {value!r}"
    return None


__all__ = ["MIN_WINDOW", "SETTING_NAMES", "WIRING_NAMES", "DepthCapMerge", "EngineSettings", "EngineWiring",
           "LedgerMode", "Setting", "SettingAttributes", "engine_config", "engine_parameters", "owner_of",
           "wiring_problem", "wiring_type_problem"]
