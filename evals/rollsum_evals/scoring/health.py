"""health: did the configuration keep its promises while it was replayed?

A retention figure only means something if the context fitted the main model's window and the
summaries were actually made. This scorer reads what the replay recorded and says, per Unit:

- **feasibility**: turns whose assembled context exceeded the window (``overflow_turns``) and
  the largest context ÷ window (``max_context_ratio``);
- **summarizer health**: every attempt the engine made (retries, guard compactions, fallbacks,
  offline summarizers included), the attempts that failed, the summaries that did not happen,
  summaries made by the fallback, ``replay:`` cassette misses, window-guard activity, and calls
  per message (thrash: a summarizer called on nearly every message);
- **projected summarizer cost**: what the same calls would cost at a named model
  (``projected_model``), so an offline sweep shows thrash in dollars.

It never fails a Unit: a broken configuration is a *result* (9b's verdicts read these columns).
Method and the counting rules: docs/scoring.md ("health").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, Usage
from rollsum_evals.replay.trace import Trace
from rollsum_evals.scoring.base import Column, ScoreInput, Scores
from rollsum_evals.scoring.cost import price
from rollsum_evals.spec import components

DEFAULT_PROJECTED_MODEL = "claude-haiku-4-5"


@lru_cache(maxsize=1)
def prompt_overhead_tokens() -> int:
    """Tokens a summary request carries besides the span and the previous summary: the largest
    fixed text (system prompt + user template) among the library's bundled prompt templates.
    Read from the templates, so it follows them when they change."""
    from rollsum import prompts

    counter = HeuristicCounter()
    sizes = []
    for name in prompts.names():
        t = prompts.get(name)
        sizes.append(counter.count(t.system) + counter.count(t.render(transcript="", previous_summary="")))
    return max(sizes, default=0)


def failed_attempts(event: Mapping[str, Any], ledger_retry: bool) -> int:
    """Attempts of one summary/failure event that failed.

    A failure event: every attempt failed. A summary event: all but the one that produced the
    draft; with the ledger in ``retry`` mode one more attempt may have succeeded (the ledger's
    second call), which the event does not tell apart, so then one fewer is counted (never
    more failures than certainly happened)."""
    attempts = int(event.get("attempts") or 0)
    if event.get("kind") == "failure":
        return attempts
    return max(0, attempts - (2 if ledger_retry else 1))


def estimated_usage(trace: Trace, counter: HeuristicCounter | None = None) -> Usage:
    """What the summary requests of a replay would have sent and received, from its records:
    per record, the messages it covered + the previous summary + `prompt_overhead_tokens` in,
    the record's own tokens out. Failed attempts are not counted: an API does not bill a
    request that failed."""
    counter = counter or HeuristicCounter()
    by_id: dict[str, Message] = {m.id: m for m in trace.messages if m.id is not None}
    tokens: dict[str, int] = {r.id: r.tokens for r in trace.summaries}
    overhead = prompt_overhead_tokens()
    usage = Usage()
    for rec in trace.summaries:
        span = sum(counter.count_message(by_id[i]) for i in rec.covered_ids if i in by_id)
        prev = tokens.get(rec.parent_id, 0) if rec.parent_id else 0
        out = rec.tokens or counter.count(rec.render())
        usage = usage + Usage(input_tokens=span + prev + overhead, output_tokens=out, calls=1)
    return usage


class Health:
    name = "health"
    version = "2"  # 2: attempts never below the metered model calls (plugged-in memories)
    needs: frozenset[str] = frozenset()
    unit_columns = (
        Column("overflow_turns", "int", 0, "turns whose context exceeded context_window"),
        Column("max_context_ratio", "float", math.nan, "max over turns of context tokens / window"),
        Column("summarizer_attempts", "int", 0, "summarizer calls attempted (retries, guard, fallback, offline too)"),
        Column("summarizer_failures", "int", 0, "attempts that failed"),
        Column("summary_failures", "int", 0, "summaries that did not happen (failure events)"),
        Column("summarizer_fallbacks", "int", 0, "summaries made by the fallback summarizer"),
        Column("cassette_misses", "int", 0, "replay: cassette misses (each is also a failure)"),
        Column("clips", "int", 0, "window-guard clip events"),
        Column("guard_events", "int", 0, "events caused by the window guard"),
        Column("calls_per_message", "float", 0.0, "summarizer_attempts / n_messages"),
        Column("failure_rate", "float", math.nan, "summarizer_failures / summarizer_attempts"),
        Column("projected_model", "str", DEFAULT_PROJECTED_MODEL, "model offline summarizer calls are priced at"),
        Column("projected_summarizer_cost_usd", "float", 0.0,
               "what the summarizer calls would cost at projected_model (paid models: their own cost)"),
    )
    probe_columns = ()

    def score(self, inp: ScoreInput) -> Scores:
        trace, unit = inp.trace, inp.unit
        window = trace.context_window or unit.context_window
        tokens = [t.context_tokens for t in trace.turns]
        events: Sequence[Mapping[str, Any]] = trace.events
        ledger_retry = str(trace.engine_config.get("ledger", "")) == "retry"
        made = [e for e in events if e.get("kind") in ("summary", "failure")]
        failures = sum(failed_attempts(e, ledger_retry) for e in made)
        # A memory plugged in by import path (a peer) may call the model without announcing
        # attempts on its events; the metered model saw every successful call, so the count is
        # never below those plus the failures the events report.
        attempts = max(sum(int(e.get("attempts") or 0) for e in made), trace.model_calls + failures)
        n_messages = len(trace.messages)
        projected_model = inp.plan.projected_model or DEFAULT_PROJECTED_MODEL
        return Scores(unit={
            "overflow_turns": sum(1 for t in tokens if window and t > window),
            "max_context_ratio": max(tokens) / window if tokens and window else math.nan,
            "summarizer_attempts": attempts,
            "summarizer_failures": failures,
            "summary_failures": sum(1 for e in events if e.get("kind") == "failure"),
            "summarizer_fallbacks": sum(1 for e in events if e.get("kind") == "summary" and e.get("fallback")),
            "cassette_misses": trace.cassette_misses,
            "clips": sum(1 for e in events if e.get("kind") == "clip"),
            "guard_events": sum(1 for e in events if e.get("guard")),
            "calls_per_message": attempts / n_messages if n_messages else 0.0,
            "failure_rate": failures / attempts if attempts else math.nan,
            "projected_model": projected_model,
            "projected_summarizer_cost_usd": projected_cost(unit.preset, unit.model, trace, projected_model),
        })


def projected_cost(preset: str, model: str, trace: Trace, projected_model: str) -> float:
    """A paid summarizer's own nominal cost; for a free one (offline, fake, cassette) the same
    calls priced at `projected_model`: the usage the model reported when it reports any (fake
    and cassette models do), else the usage estimated from the summary records."""
    if components.is_baseline(preset):
        return 0.0
    if not components.recorded(trace.engine_config.get("capabilities"), preset, model).free:
        return price(model, trace.usage)
    usage = trace.usage if trace.usage.input_tokens > 0 else estimated_usage(trace)
    return price(projected_model, usage)
