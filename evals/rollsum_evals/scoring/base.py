"""The scorer seam: a scorer reads one replayed Unit and returns columns for its rows.

Scorers are pure functions of (Unit, Conversation, Trace) plus, for the `qa` scorer, a model.
They return *columns* rather than rows so that the runner owns the row schema (every column of
``docs/run-format.md`` exists whatever scorers ran) and a new scorer is one class plus one
registration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rollsum_evals.data.types import Conversation

if TYPE_CHECKING:
    from rollsum_evals.replay import Trace
    from rollsum_evals.spec import Unit
    from rollsum.models.base import Model


@dataclass(frozen=True, slots=True)
class ScoreContext:
    unit: Unit
    conversation: Conversation
    trace: Trace
    qa_model: Model | None = None
    """Answers probes for the `qa` scorer (already cached and metered by the runner)."""


@dataclass(slots=True)
class Scores:
    unit: dict[str, Any] = field(default_factory=dict)
    """Columns of the Unit's row in ``units``."""
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """ask key (the probe id, or ``id@turn`` when probes are asked at several ages) -> columns
    of that row in ``probes``."""


@runtime_checkable
class Scorer(Protocol):
    name: str
    version: str
    """Bumped whenever the method changes a number: part of every Unit's id."""

    def score(self, ctx: ScoreContext) -> Scores: ...


def merge(into: Scores, other: Scores) -> None:
    into.unit.update(other.unit)
    for pid, cols in other.probes.items():
        into.probes.setdefault(pid, {}).update(cols)


def as_mapping(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj)
