"""Trigger policies: one class per seed design, plus baselines, in one registry."""

from __future__ import annotations

from rollsum.errors import ConfigError
from rollsum.policies.base import Action, Decision, Policy, WindowState, policy_params
from rollsum.policies.baselines import FitWindow, FullContext, Truncate
from rollsum.policies.budget_trim import BudgetTrim
from rollsum.policies.count_and_tokens import CountAndTokens
from rollsum.policies.eviction_window import EvictionWindow
from rollsum.policies.since_last import SinceLast
from rollsum.policies.token_ratio import TokenRatio
from rollsum.registry import Registry

POLICIES: Registry[type] = Registry("policy", {
    cls.name: cls
    for cls in (CountAndTokens, SinceLast, BudgetTrim, TokenRatio, EvictionWindow, FullContext, Truncate,
                FitWindow)
}, name_of=lambda cls: getattr(cls, "name", None))
"""What presets (`Preset.policy`) and the ``policy=`` override read: a policy class registered
here (``POLICIES.register(cls.name, cls)``, under its own ``name``) is reachable by name from
`RollingSummarizer.from_preset` and from a sweep's ``params``."""


def get(name: str) -> type:
    """The policy class registered under `name`."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ConfigError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None


__all__ = [
    "POLICIES", "Action", "BudgetTrim", "CountAndTokens", "Decision", "EvictionWindow", "FitWindow", "FullContext",
    "Policy", "SinceLast", "TokenRatio", "Truncate", "WindowState", "get", "policy_params",
]
