"""What a configuration's numbers are worth: its status, its flags, and the reasons in words.

A ranking is a recommendation. A configuration whose context did not fit the main model's
window, whose summaries failed, or that calls the summarizer on nearly every message must not be
recommended, however good its retention looks: its retention was bought by breaking the promise
that makes it useful (an overflowing context is one the main model would refuse; a summarizer
that fails leaves every message in place, so "retention" is just full context; a thrashing one
costs a summarizer call per message). These rules are pure functions of a few per-configuration
aggregates (`Health`), so they are the same in the report, `configs.csv`, `compare` and the gate,
and can be tested without a run.

Statuses (exactly one per configuration, first that applies):

- ``error``: a Unit did not finish (error, stopped by the budget): its numbers are incomplete.
- ``reference``: a baseline (`components.is_baseline`: never summarizes) whose context does not
  fit the window — full context on long conversations (the ceiling a summary is measured
  against), or a truncation told to keep more than the window holds (neither ceiling nor
  floor: it overflows). Drawn as a line, never a candidate.
- ``broken``: every summarizer call failed (at least one call).
- ``infeasible``: the context exceeded the window on at least one turn.
- ``degraded``: more than `max_failure_rate` of summarizer calls failed, or more than
  `max_calls_per_message` summarizer calls per message (thrashing).
- ``ok``: none of the above. Only ``ok`` configurations are ranked and can be on the Pareto
  frontier.

Flags add what a reader should know whatever the status (several may apply): the conditions
above (``error``, ``overflow``, ``broken``, ``degraded``, ``thrashing``) and ``fallback``,
``cassette-miss``, ``clipped``, ``no-answerable``, ``unanswerable-heavy``, ``few-conversations``,
``health-unknown``, and ``judge-unreliable`` (the QA judge accepted more than
`MAX_JUDGE_FALSE_ACCEPT` of its negative controls: its grades are not evidence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rollsum_evals.stats import MIN_CONVERSATIONS, not_enough

OK, DEGRADED, BROKEN, INFEASIBLE, REFERENCE, ERROR = "ok", "degraded", "broken", "infeasible", "reference", "error"
STATUSES: tuple[str, ...] = (OK, DEGRADED, BROKEN, INFEASIBLE, REFERENCE, ERROR)
"""In the order the report lists their sections."""

DEFAULT_MAX_FAILURE_RATE = 0.10
"""A summarizer that fails on more than one call in ten is not one to ship: each failure leaves
its span verbatim (so retention looks better, tokens worse) and, with a paid model, is a retry
paid for. Ten per cent still tolerates the occasional transient error of a real API (rate
limits, timeouts), which a retry usually absorbs and which is counted per attempt."""

DEFAULT_MAX_CALLS_PER_MESSAGE = 0.5
"""A rolling summary exists to summarize many messages per call; more than one call for every
two messages means the trigger fires again right after it fired (issue #9: since-last with
keep_last >= messages_per_summary - 1 made 450 summaries for 460 messages)."""

MAX_JUDGE_FALSE_ACCEPT = 0.10
"""A judge that says CORRECT to more than one wrong-by-construction answer in ten (a vague
answer, the other speaker's, the gold one negated: `rollsum_evals.scoring.qa`) is not grading."""

MIN_ANSWERABLE_SHARE = 0.5
"""Below this share of answerable asks, retention speaks for a minority of the questions asked."""


@dataclass(frozen=True)
class Thresholds:
    """The documented, settable limits (`rollsum report --max-failure-rate`)."""

    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE
    max_calls_per_message: float = DEFAULT_MAX_CALLS_PER_MESSAGE
    min_answerable_share: float = MIN_ANSWERABLE_SHARE

    def to_dict(self) -> dict[str, float]:
        return {"max_failure_rate": self.max_failure_rate,
                "max_calls_per_message": self.max_calls_per_message,
                "min_answerable_share": self.min_answerable_share}


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Health:
    """One configuration's aggregates over its Units (NaN where the run has no such column)."""

    baseline: bool
    units: int
    units_unfinished: int
    unfinished_reasons: tuple[str, ...] = ()
    conversations: int = 0
    asks: int = 0
    answerable: int = 0
    attempts: float = math.nan
    failures: float = math.nan
    messages: float = math.nan
    fallbacks: float = 0.0
    cassette_misses: float = 0.0
    clips: float = 0.0
    overflow_turns: float = math.nan
    max_context_ratio: float = math.nan
    context_window: int = 0
    judge_controls: float = 0.0
    judge_controls_accepted: float = 0.0

    @property
    def judge_false_accept(self) -> float:
        """Pooled over the configuration's Units; NaN without controls."""
        return self.judge_controls_accepted / self.judge_controls if self.judge_controls else math.nan

    @property
    def failure_rate(self) -> float:
        return self.failures / self.attempts if self.attempts and not math.isnan(self.attempts) else math.nan

    @property
    def calls_per_message(self) -> float:
        if math.isnan(self.attempts) or not self.messages or math.isnan(self.messages):
            return math.nan
        return self.attempts / self.messages


@dataclass(frozen=True)
class Verdict:
    status: str
    flags: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default=())
    """One sentence per flag that explains it, in the flags' order."""

    @property
    def ranked(self) -> bool:
        """Only ok configurations with a retention to rank by are ranked."""
        return self.status == OK and "no-answerable" not in self.flags

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.1f} %"


def judge(h: Health, thresholds: Thresholds = Thresholds()) -> Verdict:
    """Status, flags and reasons of one configuration (rules in the module docstring)."""
    flags: list[tuple[str, str]] = []
    if h.units_unfinished:
        why = ", ".join(sorted(set(h.unfinished_reasons))) or "error"
        flags.append(("error", f"{h.units_unfinished} of {h.units} unit(s) did not finish ({why}); "
                               "the numbers shown are from the others"))
    overflow = not math.isnan(h.overflow_turns) and h.overflow_turns > 0
    if overflow:
        ratio = "" if math.isnan(h.max_context_ratio) else f", up to {h.max_context_ratio:.2f}× the window"
        window = f"{h.context_window:,}-token " if h.context_window else ""
        flags.append(("overflow", f"context over the {window}window on {int(h.overflow_turns):,} "
                                  f"turn(s){ratio}"))
    rate = h.failure_rate
    broken = not math.isnan(h.attempts) and h.attempts >= 1 and h.failures >= h.attempts
    if broken:
        flags.append(("broken", f"every summarizer call failed ({int(h.failures):,} of {int(h.attempts):,})"))
    elif not math.isnan(rate) and rate > thresholds.max_failure_rate:
        flags.append(("degraded", f"{_pct(rate)} of summarizer calls failed ({int(h.failures):,} of "
                                  f"{int(h.attempts):,}; limit {_pct(thresholds.max_failure_rate)})"))
    cpm = h.calls_per_message
    if not math.isnan(cpm) and cpm > thresholds.max_calls_per_message:
        flags.append(("thrashing", f"{cpm:.2f} summarizer calls per message (limit "
                                   f"{thresholds.max_calls_per_message:g}): the trigger fires almost every turn"))
    if h.fallbacks > 0:
        flags.append(("fallback", f"{int(h.fallbacks):,} summaries came from the fallback summarizer"))
    if h.cassette_misses > 0:
        flags.append(("cassette-miss", f"{int(h.cassette_misses):,} replay-cassette miss(es): the recorded "
                                       "calls no longer match the prompts"))
    if h.clips > 0:
        flags.append(("clipped", f"the window guard clipped messages {int(h.clips):,} time(s)"))
    if h.asks and not h.answerable:
        flags.append(("no-answerable", "no answerable asks: retention is n/a"))
    elif h.asks and h.answerable / h.asks < thresholds.min_answerable_share:
        flags.append(("unanswerable-heavy", f"only {_pct(h.answerable / h.asks)} of asks are answerable "
                                            f"({h.answerable:,} of {h.asks:,})"))
    if 0 < h.conversations < MIN_CONVERSATIONS:
        flags.append(("few-conversations", f"{not_enough(h.conversations)}: no interval "
                                           f"(needs {MIN_CONVERSATIONS})"))
    if math.isnan(h.attempts) and not h.baseline:
        flags.append(("health-unknown", "the run has no summarizer health columns (scored before "
                                        "issue #9: re-score with `rollsum score`)"))
    if h.judge_false_accept > MAX_JUDGE_FALSE_ACCEPT:
        flags.append(("judge-unreliable", f"the QA judge accepted {_pct(h.judge_false_accept)} of its negative "
                                          f"controls ({int(h.judge_controls_accepted):,} of "
                                          f"{int(h.judge_controls):,}; limit {_pct(MAX_JUDGE_FALSE_ACCEPT)}): "
                                          "its grades are not evidence"))
    names = [f for f, _ in flags]
    if "error" in names:
        status = ERROR
    elif h.baseline and overflow:
        status = REFERENCE
        flags.insert(0, ("reference", "a baseline that does not fit the window (full context, or a "
                                      "truncation that keeps more than fits): a reference, not a "
                                      "candidate"))
    elif broken:
        status = BROKEN
    elif overflow:
        status = INFEASIBLE
    elif "degraded" in names or "thrashing" in names:
        status = DEGRADED
    else:
        status = OK
    return Verdict(status, tuple(f for f, _ in flags), tuple(r for _, r in flags))
