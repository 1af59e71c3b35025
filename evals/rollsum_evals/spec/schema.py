"""What a sweep spec is once read: `SweepSpec` and its `ConfigSpec`s (frozen, validated data).

`rollsum_evals.spec.parse` makes them from TOML; `rollsum_evals.spec.expand` turns a `SweepSpec`
into Units; `SweepSpec.scoring` is the `ScoringPlan` every replay is scored with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rollsum.params import DEFAULT_CONTEXT_WINDOW
from rollsum_evals.data.pinned import DatasetSpec
from rollsum_evals.scoring.asks import ProbeTiming
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.units import canonical_json

LOCOMO_PLACEHOLDER = "@locomo"
"""A dataset whose source is this placeholder is only included when ``--locomo PATH`` is given."""

DEFAULT_MAIN_MODEL = "claude-haiku-4-5"
DEFAULT_PROJECTED_MODEL = "claude-haiku-4-5"


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How a run reads its dataset files (command-line options, not part of the spec)."""

    skip_bad_records: bool = False
    max_line_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ConfigSpec:
    preset: str
    """A preset name, or a memory's import path (``memory = "pkg.mod:MyMemory"``); a
    ``summarizer`` override travels in `params` (see `rollsum_evals.spec.imports`)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    grid: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    label: str | None = None
    prompts: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    code: str = ""
    """Fingerprint of the components the config names by import path ("" for none)."""
    line: int | None = field(default=None, compare=False)
    """The line of its ``[[configs]]`` table in the spec file (None: added by the harness), for
    mistakes found only once the configs are expanded (`rollsum_evals.spec.expand.expand`)."""


@dataclass(frozen=True, slots=True)
class SweepSpec:
    name: str
    datasets: tuple[DatasetSpec, ...]
    configs: tuple[ConfigSpec, ...]
    prompts: tuple[str, ...] = ("",)
    models: tuple[str, ...] = ("extractive",)
    scorers: tuple[str, ...] = ("answer_retention", "fact_survival", "cost", "health")
    context_windows: tuple[int, ...] = (DEFAULT_CONTEXT_WINDOW,)
    probes: ProbeTiming = field(default_factory=ProbeTiming)
    seeds: tuple[int, ...] = (0,)
    main_model: str = DEFAULT_MAIN_MODEL
    projected_model: str = DEFAULT_PROJECTED_MODEL
    """Whose prices offline summarizer calls are projected at (the health scorer)."""
    qa_model: str | None = None
    judge: bool = False
    judge_model: str = ""
    """``[qa] judge_model``: who grades the answers ("" = the answering model)."""
    qa_batch: bool = False
    """``[qa] batch``: QA and judge calls go through the Message Batches API (half price)."""
    cache: str = "user"
    """``user`` (~/.cache/rollsum, shared between runs), ``run`` (inside the run dir) or ``off``."""
    unit_cache: bool = True
    """Copy finished Units from the Unit-result cache (needs ``cache = "user"``)."""
    requests_per_minute: float | None = None
    budgets: tuple[float, ...] = ()
    """``[report] budgets``: main-model tokens per call; the report names the best config within each."""
    description: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The parsed TOML (after CLI overrides): goes into the manifest."""
    path: str = ""
    skipped: tuple[str, ...] = ()
    """One line per config left out because it cannot run here (a memory whose ``needs_env``
    is unset, e.g. an API peer without ``ANTHROPIC_API_KEY``): said, not failed."""

    def sha256(self) -> str:
        """The spec's identity for resume: its content, and the code of the components it names
        by import path (a run is not continued by an edited memory or summarizer)."""
        codes = [c.code for c in self.configs if c.code]
        payload = {"spec": self.raw, "code": codes} if codes else self.raw
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()

    @property
    def scoring(self) -> ScoringPlan:
        return ScoringPlan(scorers=self.scorers, timing=self.probes, main_model=self.main_model,
                           model=self.qa_model or "", judge=self.judge, projected_model=self.projected_model,
                           judge_model=self.judge_model, batch=self.qa_batch)

