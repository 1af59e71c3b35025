"""cost: what a configuration costs to run, in tokens and dollars.

Main-model input: one main-model call per assistant message, whose input is the context as it
stood after the previous message (the user turn or tool result it answers). Summed over the
conversation, this is the number that rolling summaries exist to shrink. The main model is not
called during a replay; its cost is simulated with the plan's ``main_model`` prices.
Summarizer usage is the nominal usage of every call, cached or not, so a cached re-run reports
the same cost as the first run.

Two views of the main model's input size, to pair with retention (docs/scoring.md, "Cost and
retention at the same moments"): ``main_tokens_per_turn``, the mean input of a main-model call
over the whole conversation (what running the configuration costs per call), and
``main_tokens_at_asks``, the mean context at the turns where probes are asked (what the context
was when retention was measured).
"""

from __future__ import annotations

import math

from rollsum.models.spec import BACKENDS
from rollsum.types import Usage
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.spec import components


def price(model: str, usage: Usage) -> float:
    """USD by the price table; free summarizers and backends cost nothing. `model` is a model
    spec (``anthropic:X``, ``fake``) or a bare API model id (the main model's ``X``)."""
    is_spec = ":" in model or components.is_builtin(model) or model in BACKENDS
    if is_spec and components.of_model(model).free:
        return 0.0
    from rollsum.models.pricing import cost_usd

    # whole: the price table reads every form itself (``anthropic:X``, ``record:PATH:INNER``:
    # `PriceTable.price_for`); stripping one prefix here priced "PATH:anthropic:X", an unknown
    # model, so a recording sweep cost $0 and --max-cost-usd never charged its summarizer calls
    return float(cost_usd(model, usage))


class Cost:
    name = "cost"
    version = "2"
    needs: frozenset[str] = frozenset()
    unit_columns = (
        Column("main_input_tokens", "int", 0, "sum over assistant turns of the context before them"),
        Column("main_tokens_per_turn", "float", math.nan,
               "mean main-model input per main-model call over the whole conversation"),
        Column("main_tokens_at_asks", "float", math.nan, "mean context tokens at the asking turns"),
        Column("mean_context_tokens", "float", 0.0, "mean context size over turns"),
        Column("max_context_tokens", "int", 0, "largest context size over turns"),
        Column("summarizer_input_tokens", "int", 0, "summarizer usage (nominal: cache hits included)"),
        Column("summarizer_output_tokens", "int", 0, ""),
        Column("summarizer_calls", "int", 0, ""),
        Column("cost_main_usd", "float", 0.0, "main_input_tokens at the main model's prices"),
        Column("cost_summarizer_usd", "float", 0.0, "summarizer usage at its model's prices"),
        Column("summarizer_latency_s", "float", 0.0, "summed summarizer latency"),
    )
    probe_columns = ()

    def score(self, inp: ScoreInput) -> Scores:
        trace, unit = inp.trace, inp.unit
        turns = trace.turns
        calls = [turns[i - 1].context_tokens for i in range(1, len(turns)) if turns[i].role == "assistant"]
        main_input = sum(calls)
        tokens = [t.context_tokens for t in turns]
        at_asks = [turns[a.asked_turn].context_tokens for a in inp.asks if 0 <= a.asked_turn < len(turns)]
        summarizer_cost = price(unit.model, trace.usage)
        main_cost = price(inp.plan.main_model, Usage(input_tokens=main_input, calls=1))
        return Scores(unit={
            "main_input_tokens": main_input,
            "main_tokens_per_turn": main_input / len(calls) if calls else math.nan,
            "main_tokens_at_asks": sum(at_asks) / len(at_asks) if at_asks else math.nan,
            "mean_context_tokens": sum(tokens) / len(tokens) if tokens else 0.0,
            "max_context_tokens": max(tokens, default=0),
            "summarizer_input_tokens": trace.usage.input_tokens,
            "summarizer_output_tokens": trace.usage.output_tokens,
            "summarizer_calls": trace.usage.calls,
            "cost_main_usd": main_cost,
            "cost_summarizer_usd": summarizer_cost,
            "summarizer_latency_s": trace.latency_s,
        })
