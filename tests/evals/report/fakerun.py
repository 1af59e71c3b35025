"""Writes a small run directory exactly per docs/run-format.md, without running anything.

Each probe draws one uniform number shared by every configuration; a configuration with keep
rate p retains the probe when that number is below p (and the fact is young enough). So two
configurations with the same p have identical outcomes, and a higher p dominates probe by
probe, like a real verbatim tail that is longer.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

INJECTION = "<script>window.__pwned=1;document.title='PWNED'</script>"


def make_run(path: Path, configs: Mapping[str, float], *, n_conversations: int = 8, n_probes: int = 12,
             n_turns: int = 60, seed: int = 0, name: str | None = None, tokens: Mapping[str, int] | None = None,
             errors: Mapping[str, int] | None = None, dataset_sha: str = "d" * 64) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    units, probes, turns, summaries, events = [], [], [], [], []
    draws = {(c, p): rng.random() for c in range(n_conversations) for p in range(n_probes)}
    ages = {(c, p): rng.randrange(0, n_turns) for c in range(n_conversations) for p in range(n_probes)}
    cats = ["fact", "number", "identifier", "date"]
    for ci, (config, keep) in enumerate(configs.items()):
        preset, _, rest = config.partition("[")
        tok = (tokens or {}).get(config, 20_000 + 1000 * ci)
        for c in range(n_conversations):
            conv = f"conv-{c}"
            unit_id = hashlib.sha256(f"{config}/{conv}".encode()).hexdigest()[:16]
            status = "error" if (errors or {}).get(config, -1) == c else "ok"
            kept = []
            for p in range(n_probes):
                age = ages[(c, p)]
                retained = draws[(c, p)] < keep
                kept.append(retained)
                probes.append({
                    "unit_id": unit_id, "dataset": "synthetic", "conversation_id": conv, "config": config,
                    "preset": preset, "model": "extractive", "probe_id": f"{conv}-p{p}",
                    "category": cats[p % len(cats)],
                    "question": f"What is fact {p}? {INJECTION if p == 0 else ''}",
                    "answer": f"value-{p} & <b>bold</b>", "evidence_turn": n_turns - age - 1,
                    "asked_turn": n_turns - 1, "age_turns": age, "retained": retained, "stale": False,
                    "in_summary": retained and age > 10, "in_verbatim": retained and age <= 10,
                    "baseline_retained": True, "died_at_generation": -1 if retained else p % 3,
                    "qa_f1": float("nan"), "prediction": "",
                })
            retention = sum(kept) / n_probes
            cost_main = tok * 3e-6
            cost_sum = 1e-7 * tok
            units.append({
                "unit_id": unit_id, "dataset": "synthetic", "conversation_id": conv, "config": config,
                "preset": preset, "params": json.dumps({"raw": rest.rstrip("]")}), "prompt": "",
                "model": "extractive", "seed": 0, "context_window": 8000, "n_messages": n_turns,
                "n_probes": n_probes, "n_summaries": 3, "n_failures": 0, "retention": retention,
                "relative_retention": retention, "stale_rate": 0.0, "main_input_tokens": tok + 10 * c,
                "mean_context_tokens": tok / n_turns, "max_context_tokens": 8000,
                "summarizer_input_tokens": 3000, "summarizer_output_tokens": 400, "summarizer_calls": 3,
                "judge_input_tokens": 0, "judge_output_tokens": 0, "cost_main_usd": cost_main,
                "cost_summarizer_usd": cost_sum, "cost_judge_usd": 0.0, "cost_usd": cost_main + cost_sum,
                "summarizer_latency_s": 0.01, "wall_s": 0.2, "qa_f1": float("nan"), "rouge_l": float("nan"),
                "status": status, "error": "" if status == "ok" else "boom",
            })
            for t in range(0, n_turns, 5):
                turns.append({"unit_id": unit_id, "config": config, "conversation_id": conv, "turn": t,
                              "context_tokens": 100 * t, "active_messages": min(t, 20), "summary_tokens": 50})
            parent = None
            for g in range(3):
                rid = f"{unit_id}-s{g}"
                summaries.append({"unit_id": unit_id, "config": config, "id": rid, "conversation_id": conv,
                                  "text": f"Summary gen {g} of {conv} under {config}. {INJECTION}\n"
                                          f"Facts kept: {sum(kept)}.",
                                  "depth": 0, "parent_id": parent, "key_points": [f"point {g}"],
                                  "seq": g, "created_at": f"2025-01-01T00:00:0{g}Z"})
                events.append({"unit_id": unit_id, "kind": "summary", "turn": 15 + 15 * g + ci,
                               "reason": "trigger", "record_id": rid})
                parent = rid
    manifest = {"name": name or path.name, "spec": {"configs": list(configs)}, "spec_sha256": "s" * 64,
                "git_sha": "abc123", "versions": {"rollsum": "0.1.0", "python": "3.11"},
                "scorer_versions": {"answer_retention": "1"}, "dataset_sha256": {"synthetic": dataset_sha},
                "unit_count": len(units), "started_at": "2025-01-01T00:00:00Z"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    pd.DataFrame(units).to_parquet(path / "units.parquet")
    pd.DataFrame(probes).to_parquet(path / "probes.parquet")
    pd.DataFrame(turns).to_parquet(path / "turns.parquet")
    with (path / "units.jsonl").open("w") as fh:
        fh.writelines(json.dumps(u) + "\n" for u in units)
    with (path / "summaries.jsonl").open("w") as fh:
        fh.writelines(json.dumps(s) + "\n" for s in summaries)
    with (path / "events.jsonl").open("w") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in events)
    return path
