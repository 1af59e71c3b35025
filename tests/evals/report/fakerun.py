"""Writes a small run directory through the runner's own writer, without replaying anything.

The traces, rows and manifest are made by the same functions a sweep uses
(`encode_replay`, `unit_row`, `probe_rows`, `new_manifest`, `RunDir`); only the numbers are
chosen here. Each probe draws one uniform number shared by every configuration; a configuration
with keep rate p retains the probe when that number is below p. So two configurations with the
same p have identical outcomes, and a higher p dominates probe by probe, like a real verbatim
tail that is longer.

Rows carry the issue #9 columns (CONTRACT-issue9.md): answerable asks and why others are
excluded (`excluded`: probe index -> reason, the same in every configuration), summarizer
health, feasibility, tokens per call. `unit_overrides` sets any unit column of every Unit of a
configuration (e.g. every summarizer call failed, or overflow turns); `conversation_overrides`
those of one (configuration, conversation index).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rollsum_evals import scoring
from rollsum_evals.data.types import Probe
from rollsum_evals.replay.trace import ContextEncoder, Trace, TurnRecord
from rollsum_evals.run.unit import encode_replay
from rollsum_evals.rundir.format import new_manifest, probe_rows, table_columns, unit_row
from rollsum_evals.rundir.integrity import spec_sha256
from rollsum_evals.rundir.journal import RunDir, ScoredLines, UnitResult, lines
from rollsum_evals.scoring.asks import Ask
from rollsum_evals.scoring.base import Scores, ScoringPlan
from rollsum_evals.units import Unit

from rollsum.types import Message, SummaryRecord

INJECTION = "<script>window.__pwned=1;document.title='PWNED'</script>"
PLAN = ScoringPlan(scorers=("answer_retention",))
VERSIONS = {"answer_retention": "1"}


def _trace(unit: Unit, n_turns: int, ci: int, text: str) -> Trace:
    """Messages, a context that keeps the last 20 plus the latest summary, three summaries at
    turns 15 + 15 g + ci."""
    msgs = tuple(Message("user" if t % 2 == 0 else "assistant", f"message {t} of {unit.conversation_id}",
                         id=f"m{t}") for t in range(n_turns))
    trace = Trace(unit_id=unit.unit_id, messages=msgs, context_window=unit.context_window)
    enc = ContextEncoder(msgs)
    summary: Message | None = None
    parent = None
    for t in range(n_turns):
        g = (t - 15 - ci) // 15
        if t >= 15 + ci and (t - 15 - ci) % 15 == 0 and g < 3:
            rec = SummaryRecord(id=f"{unit.unit_id}-s{g}", conversation_id=unit.conversation_id,
                                text=f"Summary gen {g} of {unit.conversation_id} under {unit.config}. "
                                     f"{INJECTION}\n{text}", depth=0, parent_id=parent,
                                key_points=(f"point {g}",), covered_ids=(f"m{t - 20}",) if t >= 20 else (),
                                seq=g, tokens=50, created_at=f"2025-01-01T00:00:0{g}Z")
            parent = rec.id
            trace.summaries.append(rec)
            trace.summary_turns.append(t)
            trace.events.append({"turn": t, "engine_turn": t, "kind": "summary", "reason": "trigger",
                                 "record_id": rec.id})
            summary = Message("system", rec.render(), id=f"summary:{rec.id}")
        ctx = [*([summary] if summary else []), *msgs[max(0, t - 19): t + 1]]
        trace.turns.append(TurnRecord(t, msgs[t].role, 100 * t, 50 if summary else 0, min(t + 1, 20), 0,
                                      enc.encode(ctx, t)))
    trace.texts = enc.texts
    return trace


def make_run(path: Path, configs: Mapping[str, float], *, n_conversations: int = 8, n_probes: int = 12,
             n_turns: int = 60, seed: int = 0, name: str | None = None,
             tokens: Mapping[str, int | Sequence[int]] | None = None,
             errors: Mapping[str, int] | None = None, dataset_sha: str = "d" * 64,
             excluded: Mapping[int, str] | None = None,
             unit_overrides: Mapping[str, Mapping[str, object]] | None = None,
             conversation_overrides: Mapping[tuple[str, int], Mapping[str, object]] | None = None,
             models: Mapping[str, str] | None = None, prompts: Mapping[str, str] | None = None,
             retained_of: Mapping[str, Mapping[tuple[int, int], bool]] | None = None) -> Path:
    rng = random.Random(seed)
    draws = {(c, p): rng.random() for c in range(n_conversations) for p in range(n_probes)}
    ages = {(c, p): rng.randrange(0, n_turns) for c in range(n_conversations) for p in range(n_probes)}
    cats = ["fact", "number", "identifier", "date"]
    unit_cols, probe_cols = table_columns(*scoring.columns(PLAN.scorers))
    results = []
    for ci, (config, keep) in enumerate(configs.items()):
        preset, _, rest = config.partition("[")
        tok_of = (tokens or {}).get(config, 20_000 + 1000 * ci)
        for c in range(n_conversations):
            conv = f"conv-{c}"
            tok = tok_of if isinstance(tok_of, int) else tok_of[c]
            unit = Unit(unit_id=hashlib.sha256(f"{config}/{conv}".encode()).hexdigest()[:16],
                        dataset="synthetic", conversation_id=conv, dataset_hash=dataset_sha, config=config,
                        preset=preset, params_json=json.dumps({"raw": rest.rstrip("]")}),
                        prompt=(prompts or {}).get(config, ""), model=(models or {}).get(config, "extractive"),
                        seed=0, context_window=8000)
            failed = (errors or {}).get(config, -1) == c
            asks: list[Ask] = []
            cols: dict[str, dict[str, Any]] = {}
            for p in range(n_probes):
                age = ages[(c, p)]
                why = (excluded or {}).get(p, "")
                retained = (retained_of or {}).get(config, {}).get((c, p), draws[(c, p)] < keep) and not why
                probe = Probe(f"{conv}-p{p}", f"What is fact {p}? {INJECTION if p == 0 else ''}",
                              f"value-{p} & <b>bold</b>", category="adversarial" if why == "adversarial"
                              else cats[p % len(cats)])
                asks.append(Ask(probe.id, probe, n_turns - 1, n_turns - age - 1))
                cols[probe.id] = {"retained": retained, "stale": False, "in_summary": retained and age > 10,
                                  "in_verbatim": retained and age <= 10, "baseline_retained": not why,
                                  "died_at_generation": -1 if retained else p % 3,
                                  "checkable": why != "uncheckable", "answerable": not why, "excluded": why,
                                  "retained_containment": retained or draws[(c, p)] < keep + 0.1,
                                  "support_at": f"m:{n_turns - age - 1}" if retained else ""}
            kept = sum(v["retained"] for v in cols.values())
            n_ans = sum(v["answerable"] for v in cols.values())
            cost_main, cost_sum = tok * 3e-6, 1e-7 * tok
            scores = Scores(unit={
                "retention": kept / n_ans if n_ans else math.nan,
                "retention_containment": sum(v["retained_containment"] for v in cols.values() if v["answerable"])
                / n_ans if n_ans else math.nan,
                "relative_retention": kept / n_probes, "stale_rate": 0.0,
                "n_asks": n_probes, "n_answerable": n_ans,
                **{f"n_excluded_{r}": sum(v["excluded"] == r for v in cols.values())
                   for r in ("adversarial", "uncheckable", "unsupported")},
                "main_input_tokens": tok + 10 * c, "main_tokens_per_turn": (tok + 10 * c) / (n_turns // 2),
                "main_tokens_at_asks": 1.1 * (tok + 10 * c) / (n_turns // 2), "mean_context_tokens": tok / n_turns,
                "max_context_tokens": 8000, "summarizer_input_tokens": 3000, "summarizer_output_tokens": 400,
                "summarizer_calls": 3, "summarizer_attempts": 3, "summarizer_failures": 0, "summary_failures": 0,
                "summarizer_fallbacks": 0, "cassette_misses": 0, "clips": 0, "guard_events": 0,
                "calls_per_message": 3 / n_turns, "failure_rate": 0.0, "overflow_turns": 0,
                "max_context_ratio": 1.0, "projected_model": "claude-haiku-4-5",
                "projected_summarizer_cost_usd": 3000 * 1e-6 + 400 * 5e-6,
                "cost_main_usd": cost_main, "cost_summarizer_usd": cost_sum,
                "summarizer_latency_s": 0.01, "qa_f1": math.nan, "rouge_l": math.nan,
                **(unit_overrides or {}).get(config, {}),
                **(conversation_overrides or {}).get((config, c), {})}, probes=cols)
            trace = _trace(unit, n_turns, ci, f"Facts kept: {kept}.")
            urow = unit_row(unit, trace, PLAN, VERSIONS, None if failed else scores, n_probes=n_probes,
                            wall_s=0.2, columns=unit_cols, error="boom" if failed else "")
            prows = [] if failed else probe_rows(unit, asks, scores, probe_cols)
            results.append(UnitResult(unit_id=unit.unit_id, replay=encode_replay(unit, trace),
                                      scored=ScoredLines(probes=lines(prows), units=lines([urow]))))
    manifest = new_manifest(
        name=name or path.name, spec_raw={"configs": list(configs)}, spec_path="",
        spec_sha256=spec_sha256({"configs": list(configs)}, None),
        datasets={"synthetic": {"sha256": dataset_sha, "source": "fake", "conversations": n_conversations}},
        plan=PLAN, scorer_versions=VERSIONS, unit_columns=unit_cols, probe_columns=probe_cols, seeds=[0],
        replay_fingerprint="f" * 64, scoring_fingerprint="g" * 64, git_sha="abc123",
        package_versions={"rollsum": "0.1.0", "python": "3.11"}, started_at="2025-01-01T00:00:00Z")
    manifest["status"] = "complete"
    rd = RunDir(path)
    rd.repair()
    rd.append_many(results)
    rd.write_tables(manifest)
    rd.write_manifest(manifest)
    return path
