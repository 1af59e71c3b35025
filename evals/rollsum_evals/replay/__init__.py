"""Replays: an engine fed a conversation, recorded as a `Trace` (no scoring here)."""

from rollsum_evals.replay.replay import replay
from rollsum_evals.replay.seam import (
    BudgetRefused,
    BudgetStopped,
    Engine,
    EngineFactory,
    MeteredModel,
    default_engine,
)
from rollsum_evals.replay.trace import ContextItem, Text, TextRef, Trace, TurnRecord, with_ids

__all__ = ["BudgetRefused", "BudgetStopped", "ContextItem", "Engine", "EngineFactory", "MeteredModel", "Text",
           "TextRef", "Trace", "TurnRecord", "default_engine", "replay", "with_ids"]
