"""health: feasibility (context vs window), summarizer health (attempts, failures, fallbacks,
cassette misses, guard activity, calls per message) and projected summarizer cost.

First the counting rules on a hand-built trace, then a small real sweep with one configuration
of each kind: healthy, failing on every call, a ``replay:`` cassette that no longer matches,
overflowing (window enforcement off), thrashing (a summary per message), and full context."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import rollsum_evals
from rollsum_evals import scoring
from rollsum_evals.data.types import Conversation
from rollsum_evals.replay.trace import Trace, TurnRecord
from rollsum_evals.run import run_sweep
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.cost import price
from rollsum_evals.scoring.health import estimated_usage, failed_attempts, prompt_overhead_tokens
from rollsum_evals.spec.parse import parse_spec
from rollsum_evals.units import Unit

from rollsum.tokens import HeuristicCounter
from rollsum.types import Message, SummaryRecord, Usage

MSGS = tuple(Message("user" if i % 2 == 0 else "assistant", f"message {i} " + "words " * 20, id=f"m{i}")
             for i in range(10))
CONV = Conversation("c", MSGS, ())


def _unit(model: str = "extractive", window: int = 100) -> Unit:
    return Unit(unit_id="u", dataset="d", conversation_id="c", dataset_hash="h", config="cfg",
                preset="since-last", params_json="{}", prompt="", model=model, seed=0, context_window=window)


def _event(kind: str, attempts: int = 0, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, "attempts": attempts, "fallback": None, "guard": False, **kw}


def _trace(events: list[dict[str, Any]], tokens: list[int], **kw: Any) -> Trace:
    return Trace(unit_id="u", messages=MSGS, context_window=100, events=events,
                 turns=[TurnRecord(i, m.role, tokens[i], 0, 1, 0, ((0, i + 1),)) for i, m in enumerate(MSGS)], **kw)


def _health(trace: Trace, unit: Unit | None = None, projected: str = "claude-haiku-4-5") -> dict[str, Any]:
    plan = ScoringPlan(scorers=("health",), timing=parse_timing("end"), projected_model=projected)
    return scoring.score(plan, unit or _unit(), CONV, trace)[1].unit


EVENTS = [
    _event("summary", 1),                                   # made at the first try
    _event("summary", 2),                                   # one failed try, then made
    _event("failure", 3, error_kind="server"),              # three tries, no summary
    _event("summary", 4, fallback="extractive"),            # three failed tries, the fallback made it
    _event("failure", 2, guard=True),                       # a guard compaction that failed
    _event("evict", guard=True), _event("clip", guard=True), _event("clip", guard=True),
    _event("failure", 0, error_kind="internal"),            # no attempt: an engine error
]


def test_every_attempt_and_every_failure_is_counted() -> None:
    h = _health(_trace(EVENTS, [10, 20, 50, 90, 100, 101, 130, 80, 90, 100]))
    assert h["summarizer_attempts"] == 1 + 2 + 3 + 4 + 2
    assert h["summarizer_failures"] == 0 + 1 + 3 + 3 + 2
    assert h["summary_failures"] == 3 and h["summarizer_fallbacks"] == 1
    assert h["clips"] == 2 and h["guard_events"] == 4
    assert h["calls_per_message"] == pytest.approx(12 / 10)
    assert h["failure_rate"] == pytest.approx(9 / 12)
    assert h["overflow_turns"] == 2  # 101 and 130 > 100; 100 fits
    assert h["max_context_ratio"] == pytest.approx(1.3)


def test_with_the_ledger_in_retry_mode_a_second_successful_call_is_not_a_failure() -> None:
    assert failed_attempts(_event("summary", 2), ledger_retry=False) == 1
    assert failed_attempts(_event("summary", 2), ledger_retry=True) == 0
    assert failed_attempts(_event("failure", 2), ledger_retry=True) == 2
    h = _health(_trace([_event("summary", 2)], [1] * 10, engine_config={"ledger": "retry"}))
    assert h["summarizer_failures"] == 0 and h["summarizer_attempts"] == 2


def test_no_attempt_gives_nan_failure_rate_and_cassette_misses_come_from_the_replay() -> None:
    h = _health(_trace([], [1] * 10, cassette_misses=4))
    assert math.isnan(h["failure_rate"]) and h["summarizer_attempts"] == 0 and h["cassette_misses"] == 4
    assert h["overflow_turns"] == 0 and h["max_context_ratio"] == pytest.approx(0.01)


def _records() -> list[SummaryRecord]:
    r0 = SummaryRecord(id="r0", conversation_id="c", text="first summary " * 10, covered_ids=("m0", "m1", "m2"),
                       tokens=40, seq=0)
    r1 = SummaryRecord(id="r1", conversation_id="c", text="second " * 10, covered_ids=("m3", "m4"),
                       parent_id="r0", tokens=25, seq=1)
    return [r0, r1]


def test_an_offline_summarizer_is_priced_from_its_records_at_the_projected_model() -> None:
    trace = _trace([_event("summary", 1), _event("summary", 1)], [1] * 10, summaries=_records(), summary_turns=[3, 5])
    c = HeuristicCounter()
    span0 = sum(c.count_message(m) for m in MSGS[:3])
    span1 = sum(c.count_message(m) for m in MSGS[3:5])
    want = Usage(input_tokens=span0 + span1 + 40 + 2 * prompt_overhead_tokens(), output_tokens=40 + 25, calls=2)
    assert estimated_usage(trace) == want
    assert 100 < prompt_overhead_tokens() < 1000
    h = _health(trace)
    assert h["projected_model"] == "claude-haiku-4-5"
    assert h["projected_summarizer_cost_usd"] == pytest.approx(price("claude-haiku-4-5", want))
    dearer = _health(trace, projected="claude-sonnet-4-5")
    assert dearer["projected_summarizer_cost_usd"] == pytest.approx(3 * h["projected_summarizer_cost_usd"])


def test_a_free_model_that_reports_usage_is_priced_by_it_and_a_paid_one_by_its_own_cost() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, calls=2)
    trace = _trace([_event("summary", 1)], [1] * 10, summaries=_records(), usage=usage)
    fake = _health(trace, _unit("fake:mode=extractive"))
    assert fake["projected_summarizer_cost_usd"] == pytest.approx(price("claude-haiku-4-5", usage))
    paid = scoring.score(ScoringPlan(scorers=("cost", "health"), timing=parse_timing("end")),
                         _unit("anthropic:claude-sonnet-4-5"), CONV, trace)[1].unit
    assert paid["cost_summarizer_usd"] > 0
    assert paid["projected_summarizer_cost_usd"] == pytest.approx(paid["cost_summarizer_usd"])


# -- a small real sweep ------------------------------------------------------------------------------

SWEEP = """
name = "health"
context_window = 1500
cache = "off"
[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=120&seed=3"
[[configs]]
preset = "since-last"
label = "healthy"
params = {{ messages_per_summary = 20, keep_last = 4 }}
[[configs]]
preset = "since-last"
label = "fails"
params = {{ messages_per_summary = 20, keep_last = 4 }}
models = ["fake:mode=extractive,fail_rate=1.0"]
[[configs]]
preset = "since-last"
label = "overflows"
params = {{ messages_per_summary = 40, keep_last = 30, enforce_window = false }}
[[configs]]
preset = "since-last"
label = "thrashes"
params = {{ messages_per_summary = 1, keep_last = 1, min_messages_per_attempt = 0 }}  # the cap off: thrash
[[configs]]
preset = "full-context"
label = "full-context"
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    tmp = tmp_path_factory.mktemp("health")
    result = run_sweep(parse_spec(SWEEP.format(), "health.toml"), tmp / "run", jobs=2, progress=False)
    assert result.errors == 0 and result.done == 10
    units = rollsum_evals.load_run(tmp / "run").units
    assert set(units["status"]) == {"ok"}  # a broken configuration is a result, not an error
    label = units["config"].str.split("[").str[0]
    numeric = units.drop(columns=[c for c in units.columns if c.startswith("param_")])  # nullable grid columns
    return {str(k): {str(c): float(x) for c, x in v.mean(numeric_only=True).items()}
            for k, v in numeric.groupby(label)}


def test_the_healthy_config_is_feasible_and_healthy(sweep: dict[str, dict[str, float]]) -> None:
    h = sweep["healthy"]
    assert h["summarizer_attempts"] > 0 and h["summarizer_failures"] == 0 and h["failure_rate"] == 0
    assert h["overflow_turns"] == 0 and h["max_context_ratio"] <= 1
    assert h["calls_per_message"] < 0.1 and h["projected_summarizer_cost_usd"] > 0


def test_a_summarizer_that_fails_every_call_is_counted_offline_too(sweep: dict[str, dict[str, float]]) -> None:
    f = sweep["fails"]
    assert f["summarizer_attempts"] > 0 and f["failure_rate"] == 1.0
    assert f["summary_failures"] > 0 and f["n_summaries"] == 0 and f["cassette_misses"] == 0


def test_a_cassette_that_no_longer_matches_is_a_unit_error_not_a_health_finding(tmp_path: Path) -> None:
    """Issue #19: a replay that is not the recorded one is not a result to score (the engine's
    fallback would make it look like one): the Unit is an error row naming the cassette."""
    cassette = tmp_path / "stale.jsonl"  # recorded for other prompts: every request misses
    cassette.write_text(json.dumps({"v": 1, "key": "0" * 64, "model": "anthropic:claude-haiku-4-5",
                                    "response": {"text": "an old answer"}}) + "\n")
    spec = SWEEP.split("[[configs]]")[0] + (f'[[configs]]\npreset = "since-last"\nlabel = "stale-cassette"\n'
                                            f'params = {{ messages_per_summary = 20, keep_last = 4 }}\n'
                                            f'models = ["replay:{cassette}"]\n')
    result = run_sweep(parse_spec(spec, "health.toml"), tmp_path / "run", jobs=1, progress=False)
    assert result.errors == result.total == 2
    units = rollsum_evals.load_run(tmp_path / "run").units
    assert set(units["status"]) == {"error"}
    assert units["error"].str.contains(f"cassette {cassette} has no answer", regex=False).all()


def test_a_config_without_window_enforcement_overflows(sweep: dict[str, dict[str, float]]) -> None:
    o = sweep["overflows"]
    assert o["overflow_turns"] > 50 and o["max_context_ratio"] > 2
    assert sweep["full-context"]["overflow_turns"] > 50 and sweep["full-context"]["summarizer_attempts"] == 0
    for ok in ("healthy", "thrashes", "fails"):  # the window guard holds for the rest
        assert sweep[ok]["overflow_turns"] == 0 and sweep[ok]["max_context_ratio"] <= 1, ok


def test_a_summary_per_message_is_thrash_and_shows_in_projected_dollars(sweep: dict[str, dict[str, float]]) -> None:
    t, h = sweep["thrashes"], sweep["healthy"]
    assert t["calls_per_message"] > 0.9 and t["failure_rate"] == 0
    assert t["projected_summarizer_cost_usd"] > 5 * h["projected_summarizer_cost_usd"]
    assert t["cost_summarizer_usd"] == 0  # what the v2 report showed: offline looks free


def test_cost_is_reported_per_turn_and_at_the_asks(sweep: dict[str, dict[str, float]]) -> None:
    for label, row in sweep.items():
        assert row["main_tokens_per_turn"] > 0 and row["main_tokens_at_asks"] > 0, label
    # full context grows all along: at the asks (late-weighted) it is larger than per turn
    assert sweep["full-context"]["main_tokens_at_asks"] > sweep["full-context"]["main_tokens_per_turn"]


def test_the_cost_columns_are_what_their_labels_say(tmp_path: Path) -> None:
    conv = Conversation("c", MSGS, ())
    trace = _trace([], [10 * (i + 1) for i in range(10)])
    plan = ScoringPlan(scorers=("cost",), timing=parse_timing("end"))
    s = scoring.score(plan, _unit(), conv, trace)[1].unit
    # assistant messages are 1, 3, 5, 7, 9: each main-model call is sent the context before it
    assert s["main_input_tokens"] == 10 + 30 + 50 + 70 + 90
    assert s["main_tokens_per_turn"] == pytest.approx((10 + 30 + 50 + 70 + 90) / 5)
    assert math.isnan(s["main_tokens_at_asks"])  # no probes, no asks


def test_model_calls_no_event_announced_still_count_as_attempts() -> None:
    """A plugged-in memory (LangChain, LlamaIndex) calls the model without putting attempts on
    its events: its calls per message must not read 0.00 while the model was called."""
    trace = _trace([_event("summary", 0)], [10] * len(MSGS), model_calls=5)
    h = _health(trace)
    assert h["summarizer_attempts"] == 5 and h["calls_per_message"] == pytest.approx(0.5)
    h = _health(_trace([_event("summary", 1), _event("failure", 2)], [10] * len(MSGS), model_calls=1))
    assert h["summarizer_attempts"] == 3 and h["summarizer_failures"] == 2
