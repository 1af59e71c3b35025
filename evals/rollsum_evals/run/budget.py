"""``--max-cost-usd``: stop submitting Units before real spend would pass the budget.

Real spend is what missed the model cache (summarizer and scoring-model calls; the main model is
simulated). A Unit is only submitted when what is spent, plus what Units in flight are expected
to spend, plus this Unit's estimate stays under the cap; estimates start as an upper-bound guess
from the conversation's size and are replaced by the observed cost per message of Units with
the same models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rollsum.types import Usage
from rollsum_evals import components
from rollsum_evals.data.types import Conversation
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.cost import price
from rollsum_evals.units import Unit


@dataclass(slots=True)
class Budget:
    max_usd: float | None
    plan: ScoringPlan
    model_scorers: bool
    """Whether a scorer of the plan calls the scoring model."""
    spent: float = 0.0
    per_message: dict[str, float] = field(default_factory=dict)

    def _key(self, unit: Unit) -> str:
        return f"{unit.model}|{self.plan.model if self.model_scorers else ''}"

    def estimate(self, unit: Unit, conv: Conversation, *, replay: bool = True) -> float:
        """Upper-bound guess of a Unit's real spend before it runs, refined by what similar
        Units actually cost. A Unit whose replay is already done only pays for scoring."""
        if self.max_usd is None:
            return 0.0
        n = max(1, len(conv.messages))
        key = self._key(unit)
        if key in self.per_message and replay:
            return self.per_message[key] * n * 1.25
        tokens = sum(len(m.content) for m in conv.messages) // 4 + 4 * n
        est = 0.0
        if replay and not components.of_config(unit.preset, unit.model).free:
            est += price(unit.model, Usage(input_tokens=2 * tokens, output_tokens=tokens // 4))
        if self.model_scorers and self.plan.model and not components.of_model(self.plan.model).free:
            p = len(conv.probes)
            est += price(self.plan.model, Usage(input_tokens=p * tokens, output_tokens=p * 64))
        return est

    def allows(self, estimate: float, in_flight: float) -> bool:
        return self.max_usd is None or self.spent + in_flight + estimate <= self.max_usd

    def observe(self, unit: Unit, paid_usd: float, n_messages: int) -> None:
        self.spent += paid_usd
        key = self._key(unit)
        self.per_message[key] = max(self.per_message.get(key, 0.0), paid_usd / max(1, n_messages))
