"""The scorer seam: a scorer reads one replay's trace and returns columns for its rows.

A scorer is a class with a `name`, a `version` (bumped whenever the method changes a number),
the columns it adds to the Unit and probe tables (`unit_columns`, `probe_columns`, each with a
dtype and a default), what it `needs` beyond the trace's numbers (``"contexts"``: the text of the
context at asking turns; ``"model"``: a model that answers, built from the spec's ``[qa] model``)
and `score`. It never sees the engine: everything comes from the `Trace` (see
`rollsum_evals.replay.trace`), which is why a finished run can be re-scored without replaying.
Returning columns rather than rows lets the run format own the row schema
(`rollsum_evals.rundir.format`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from rollsum_evals.data.types import Conversation
from rollsum_evals.scoring.asks import Ask, ProbeTiming

if TYPE_CHECKING:
    from rollsum.models.base import Model
    from rollsum_evals.replay.trace import Trace
    from rollsum_evals.units import Unit

Dtype = Literal["str", "int", "float", "bool", "boolean"]
"""``boolean`` is a nullable bool (NA where a probe does not apply)."""
Need = Literal["contexts", "model"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    dtype: Dtype
    default: Any
    doc: str = ""


@dataclass(frozen=True, slots=True)
class ScoringPlan:
    """How every replay of a run is scored: the same for all its Units, recorded in the
    manifest and in the tables, changeable afterwards with `rollsum score`."""

    scorers: tuple[str, ...] = ("answer_retention", "fact_survival", "cost", "health")
    timing: ProbeTiming = field(default_factory=ProbeTiming)
    main_model: str = "claude-haiku-4-5"
    """Whose prices the simulated main-model input is charged at (the cost scorer)."""
    model: str = ""
    """The model a scorer that needs one answers with (the spec's ``[qa] model``)."""
    judge: bool = False
    projected_model: str = "claude-haiku-4-5"
    """Whose prices an offline summarizer's calls are projected at (the health scorer)."""
    judge_model: str = ""
    """The spec's ``[qa] judge_model``: who grades the answers ("" = the answering `model`)."""
    batch: bool = False
    """The spec's ``[qa] batch``: QA and judge calls go as Message Batches (half price)."""

    @property
    def grader(self) -> str:
        """The model spec that judges: `judge_model`, else the answering `model`."""
        return self.judge_model or self.model

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"scorers": list(self.scorers), "probe_timing": self.timing.key,
                             "main_model": self.main_model, "model": self.model, "judge": self.judge,
                             "projected_model": self.projected_model}
        # only when set: a plan without them keeps its recorded form (and its cache keys)
        if self.judge_model:
            d["judge_model"] = self.judge_model
        if self.batch:
            d["batch"] = True
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoringPlan:
        from rollsum_evals.scoring.asks import parse_timing

        return cls(scorers=tuple(d.get("scorers") or ()),
                   timing=parse_timing(str(d.get("probe_timing") or "end")),
                   main_model=str(d.get("main_model") or ""), model=str(d.get("model") or ""),
                   judge=bool(d.get("judge", False)),
                   projected_model=str(d.get("projected_model") or "claude-haiku-4-5"),
                   judge_model=str(d.get("judge_model") or ""), batch=bool(d.get("batch", False)))


@dataclass(frozen=True, slots=True)
class ScoreInput:
    """What a scorer reads: one Unit's replay and the asks the plan's timing makes of it."""

    unit: Unit
    conversation: Conversation
    trace: Trace
    asks: Sequence[Ask]
    plan: ScoringPlan
    model: Model | None = None
    """Only for scorers that need one: already cached and metered by the caller."""
    judge_model: Model | None = None
    """The plan's `judge_model` when it differs from `model` (None: `model` judges)."""
    views: Any = None
    """Per-Unit caches (`rollsum_evals.scoring.views.ContextViews`)."""
    shared: Any = None
    """Per-conversation caches (`rollsum_evals.scoring.views.Shared`): normalized texts and the
    support index, shared by the Units of one conversation when the caller scores several."""


@dataclass(slots=True)
class Scores:
    unit: dict[str, Any] = field(default_factory=dict)
    """Columns of the Unit's row in ``units``."""
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """ask key (the probe id, or ``id@turn`` when probes are asked at several ages) -> columns
    of that row in ``probes``."""


@runtime_checkable
class Scorer(Protocol):
    """Read-only members, so a plain class attribute satisfies them."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str:
        """Bumped whenever the method changes a number: recorded in the manifest and the tables."""
        ...

    @property
    def unit_columns(self) -> tuple[Column, ...]: ...

    @property
    def probe_columns(self) -> tuple[Column, ...]: ...

    @property
    def needs(self) -> frozenset[str]:
        """Beyond the trace's numbers: "contexts" (context text at asking turns), "model"."""
        ...

    def score(self, inp: ScoreInput) -> Scores: ...


def merge(into: Scores, other: Scores) -> None:
    into.unit.update(other.unit)
    for key, cols in other.probes.items():
        into.probes.setdefault(key, {}).update(cols)
