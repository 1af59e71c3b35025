"""What a preset parameter may be: checked in one place, so the library and the harness refuse
the same values with the same words.

A parameter's **type** is what its owners declare: `rollsum.presets.build` routes an override by
name to every component that takes it (the policy's dataclass field, the engine's or the
summarizer's constructor parameter), and each owner's annotation must accept the value. A
parameter's **range** is declared here once, by name, because a name means one thing
everywhere (``context_window`` is the same window for the policy and the engine).

Why not leave it to the components: Python's ``bool`` is an ``int`` and ``nan`` compares false
with everything, so ``keep_last=True`` kept one message, ``keep_last=inf`` or ``2.5`` got
through ``keep_last < 0`` checks and failed (or silently misbehaved) deep inside a replay.
Numbers are therefore checked as numbers: ``bool`` is not an integer, NaN and ±inf are
refused, an integer parameter takes no float, and the range is checked before anything runs.

`check_number` is the routine every other number a user writes goes through too (sweep specs,
command-line options): one wording for "expected an integer >= 1, got 0".
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from rollsum.errors import ConfigError


class ParamError(ConfigError, ValueError):
    """A parameter's value is not of its declared type or out of its range. A `ConfigError` (one
    line for a user) and a `ValueError` (what a policy's constructor raised before its checks
    came here, so a caller catching that keeps working)."""


@dataclass(frozen=True, slots=True)
class Range:
    """An interval: ``Range(0)`` is ``>= 0``; ``Range(0, 1, low_open=True)`` is ``(0, 1]``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None and (value > self.high or (self.high_open and value == self.high)))

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return (f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}"
                    f"{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return ""


DEFAULT_CONTEXT_WINDOW = 200_000
"""The main model's context window when none is given (Claude's 200K): the one place it is
written; the engine, `WindowState`, the models and the harness's spec read it from here."""

MAX_INT = 2**53
"""The largest integer a parameter may be: exact as a float, and it fits the 64-bit columns of a
run's tables (a TOML or JSON integer has no such limit of its own)."""
AT_LEAST_0, AT_LEAST_1 = Range(0), Range(1)
SHARE = Range(0, 1, low_open=True)
"""A fraction of something: more than nothing, at most all of it."""

RANGES: Mapping[str, Range] = {
    # messages
    "keep_last": AT_LEAST_0, "messages_per_summary": AT_LEAST_1, "message_count_threshold": AT_LEAST_0,
    "messages_to_summarize": AT_LEAST_1, "recent_messages_to_keep": AT_LEAST_0, "min_keep": AT_LEAST_0,
    "min_messages": AT_LEAST_0, "preserve_recent": AT_LEAST_0, "min_preserve": AT_LEAST_0,
    "cooldown_messages": AT_LEAST_0, "rearm_messages": AT_LEAST_0, "head": AT_LEAST_0, "tail": AT_LEAST_0,
    "min_evicted": AT_LEAST_1, "keep": AT_LEAST_1, "guard_min_tail": AT_LEAST_1, "lag_turns": AT_LEAST_0,
    "failure_cooldown": AT_LEAST_0, "max_failure_backoff": AT_LEAST_0, "ledger_max_facts": AT_LEAST_0,
    "min_messages_per_attempt": AT_LEAST_0, "clear_keep": AT_LEAST_0,
    # summaries and passes
    "max_depth": AT_LEAST_1, "max_passes": AT_LEAST_1, "retries": Range(0, 100),
    # tokens and characters
    "context_window": AT_LEAST_1, "max_context_tokens": AT_LEAST_1, "max_tokens": AT_LEAST_1,
    "token_threshold": AT_LEAST_0, "reserved_output_tokens": AT_LEAST_0, "max_summary_tokens": AT_LEAST_1,
    "min_summary_tokens": AT_LEAST_0, "max_request_tokens": AT_LEAST_1, "max_output_tokens": AT_LEAST_1,
    "transcript_budget": AT_LEAST_1, "max_message_chars": AT_LEAST_1,
    "clear_trigger": AT_LEAST_0, "clear_at_least": AT_LEAST_0,
    # ratios of the window
    "trigger_ratio": Range(0, low_open=True), "reset_ratio": Range(0, low_open=True),
    "emergency_ratio": Range(0, low_open=True), "low_water": SHARE, "summary_share": SHARE,
    "ledger_share": SHARE, "guard_low_water": Range(0, 1, low_open=True, high_open=True),
    # seconds
    "backoff_s": Range(0, 3600), "max_retry_after_s": Range(0, 86_400),
}
"""Every numeric preset parameter's range. A new numeric parameter gets one entry here (its
type comes from its annotation; without an entry only the type is checked)."""

WIRING: frozenset[str] = frozenset({"store", "on_event", "sleep", "clock", "counter", "conversation_id",
                                    "takeover", "preset"})
"""Engine parameters that connect an engine to its surroundings (objects, callbacks, its own
identity), not settings of a configuration: a library caller passes them to `from_preset`; a
sweep spec cannot (the harness sets them for every replay)."""


def check_number(value: Any, *, integer: bool, range: Range | None = None, what: str = "") -> str | None:
    """None when `value` is a number of that kind in `range`, else what was expected
    (``"an integer >= 1"``, or `what` when given): bool is not a number, NaN and ±inf are
    refused, an integer takes no float."""
    def expected() -> str:  # only for a refusal: an engine checks ~25 numbers each time it is made
        kind = "an integer" if integer else "a number"
        return what or (f"{kind} {range.describe()}".strip() if range is not None else kind)

    if isinstance(value, bool) or not isinstance(value, int | float):
        return expected()
    if integer and not isinstance(value, int):
        return expected()
    if isinstance(value, float) and not math.isfinite(value):
        return expected()
    if isinstance(value, int) and abs(value) > MAX_INT:
        return f"{expected()} (at most {MAX_INT:,})"
    if range is not None and value not in range:
        return expected()
    return None


# ----------------------------------------------------------------------------------------------
# annotations


def _split(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for arm in get_args(annotation) for a in _split(arm))
    return (annotation,)


@cache
def _cached_arms(annotation: Any) -> tuple[Any, ...]:
    """`_split`, its None arm first: an optional part left at None (most engines' counter and
    callbacks) is then taken at the first, cheapest test, before a protocol's ``isinstance``."""
    arms = _split(annotation)
    return tuple(sorted(arms, key=lambda a: not (a is None or a is type(None))))


def _arms(annotation: Any) -> tuple[Any, ...]:
    """The arms of a union annotation (the annotation itself otherwise). Kept per annotation:
    every engine checks its ~30 settings when it is made, and a server makes one per request."""
    try:
        return _cached_arms(annotation)
    except TypeError:  # an unhashable annotation (a Literal of a list): split it each time
        return _split(annotation)


def _is_callable_type(annotation: Any) -> bool:
    return annotation is Callable or get_origin(annotation) is Callable


def _accepts(arm: Any, value: Any) -> bool | None:
    """Whether one arm of an annotation takes `value` (None: cannot tell, e.g. a protocol that is
    not runtime-checkable)."""
    try:
        test = _test_of(arm)
    except TypeError:  # an unhashable arm: classify it each time
        test = _make_test(arm)
    return test(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _make_test(arm: Any) -> Callable[[Any], bool | None]:
    if arm is Any:
        return lambda value: True
    if arm is None or arm is type(None):
        return lambda value: value is None
    if get_origin(arm) is Literal:
        allowed = get_args(arm)
        return lambda value: any(value == a and type(value) is type(a) for a in allowed)
    if arm is bool:
        return lambda value: type(value) is bool
    if arm is int:
        return _is_int
    if arm is float:
        return lambda value: _is_int(value) or (isinstance(value, float) and math.isfinite(value))
    if arm is str:
        return lambda value: isinstance(value, str)
    if _is_callable_type(arm):
        return callable
    if isinstance(arm, type):
        def instance_of(value: Any) -> bool | None:
            try:
                return isinstance(value, arm)
            except TypeError:
                return None
        return instance_of
    return lambda value: None


@cache
def _test_of(arm: Any) -> Callable[[Any], bool | None]:
    """`_make_test` once per arm: which test an arm needs does not change, and every engine
    checks its settings when it is made (a server makes one per request)."""
    return _make_test(arm)


def _describe_arm(arm: Any) -> str:
    if arm is None or arm is type(None):
        return "None"
    if get_origin(arm) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(arm))
    simple = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if arm in simple:
        return simple[arm]
    if _is_callable_type(arm):
        return "a callable"
    name = getattr(arm, "__name__", str(arm))
    return f"a {name}"


def type_problem(name: str, value: Any, annotation: Any) -> str | None:
    """None when `annotation` (an owner's declared type) takes `value` and the value is in
    `name`'s range; else what was expected, e.g. ``"an integer >= 0"``."""
    arms = _arms(annotation)
    if all(_accepts(a, value) is False for a in arms):
        described = [_describe_arm(a) for a in arms if a is not None and a is not type(None)]
        rng = RANGES.get(name)
        if rng is not None:
            described = [f"{d} {rng.describe()}" if d in ("an integer", "a number") else d for d in described]
        if any(a is None or a is type(None) for a in arms):
            described.append("None")
        return " or ".join(dict.fromkeys(described))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return check_number(value, integer=not any(a is float for a in arms), range=RANGES.get(name))
    return None


@cache
def _hints(owner: Any) -> Mapping[str, Any]:
    """Declared types of a dataclass's fields or a callable's parameters (empty when the
    annotations cannot be resolved: then nothing is type-checked for that owner)."""
    try:
        return typing.get_type_hints(owner)
    except Exception:  # an annotation naming something not importable at run time
        return {}


def annotation_of(owner: Any, name: str) -> Any:
    """`owner`'s declared type for parameter `name` (a class: its dataclass field or its
    ``__init__`` parameter), or Any."""
    for target in (owner, getattr(owner, "__init__", None)):
        if target is None:
            continue
        hints = _hints(target)
        if name in hints:
            return hints[name]
    return Any


def problem(name: str, value: Any, owners: Sequence[Any]) -> str | None:
    """What `value` should have been for parameter `name`, checked against every owner's type
    and the parameter's range (None: fine)."""
    for owner in owners:
        found = type_problem(name, value, annotation_of(owner, name))
        if found is not None:
            return found
    return None


def fields_problem(obj: Any) -> str | None:
    """The first init field of dataclass `obj` whose value its annotation does not take or is out
    of the field's range, as ``"NAME: expected ..., got ..."`` (None: every field is fine). What
    a typed configuration object (a policy, `rollsum.settings.EngineSettings`) checks when it is
    made: the same function and table as a preset's or a spec's parameter check."""
    owner: Any = type(obj)
    for name, annotation in _init_fields(owner):
        value = getattr(obj, name)
        found = type_problem(name, value, annotation)
        if found is not None:
            return f"{name}: expected {found}, got {value!r}"
    return None


@cache
def _init_fields(owner: Any) -> tuple[tuple[str, Any], ...]:
    """A dataclass's init fields with their declared types, once per class."""
    return tuple((f.name, annotation_of(owner, f.name)) for f in dataclasses.fields(owner) if f.init)


def check_fields(obj: Any) -> None:
    """Raise `ParamError` with `fields_problem`'s line when a field of `obj` is wrong: a
    policy's ``__post_init__``, so a policy built by hand is refused like a preset's override."""
    found = fields_problem(obj)
    if found is not None:
        raise ParamError(found)


__all__ = ["DEFAULT_CONTEXT_WINDOW", "RANGES", "WIRING", "ParamError", "Range", "annotation_of", "check_fields",
           "check_number", "fields_problem", "problem", "type_problem"]
