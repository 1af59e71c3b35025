"""Coverage and retention of answer_retention per probe category, on real replays.

    python benchmarks/coverage.py [DATA] [--format locomo] [--window 8000] [--configs a,b,...]

Replays each configuration offline (extractive summaries) on every conversation of DATA
(default: LoCoMo dev at ../shared/datasets/locomo/locomo-dev.json) and prints, per category:
asks, answerable asks (coverage = answerable share of non-adversarial asks), and each
configuration's retention. docs/scoring.md ("Answerability") quotes its output.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from rollsum_evals import scoring
from rollsum_evals.data import load
from rollsum_evals.replay import replay
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.units import Unit

ROOT = Path(__file__).resolve().parents[1]
LOCOMO_DEV = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(LOCOMO_DEV))
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--timing", default="sampled:1+end")
    ap.add_argument("--configs", default="full-context,truncate,since-last,token-ratio")
    args = ap.parse_args()
    convs = load(args.data, format=args.format or None)
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing(args.timing))
    configs = args.configs.split(",")
    asks: collections.Counter[str] = collections.Counter()
    answerable: collections.Counter[str] = collections.Counter()
    retained: dict[str, collections.Counter[str]] = {c: collections.Counter() for c in configs}
    for k, config in enumerate(configs):
        for conv in convs:
            unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=config,
                        preset=config, params_json="{}", prompt="", model="extractive", seed=0,
                        context_window=args.window)
            done, scores = scoring.score(plan, unit, conv, replay(unit, conv))
            for a in done:
                row = scores.probes[a.key]
                cat = a.probe.category
                if k == 0:
                    asks[cat] += 1
                    answerable[cat] += bool(row["answerable"])
                retained[config][cat] += bool(row["answerable"] and row["retained"])
    cats = sorted(asks)
    print(f"| category | asks | answerable | coverage | {' | '.join(configs)} |")
    print("|---|---:|---:|---:|" + "---:|" * len(configs))
    for cat in [*cats, "all non-adversarial"]:
        keys = [c for c in cats if c != "adversarial"] if cat.startswith("all") else [cat]
        total, counted = sum(asks[c] for c in keys), sum(answerable[c] for c in keys)
        cov = f"{counted / total:.1%}" if total and cat != "adversarial" else "—"
        rets = [f"{sum(retained[cf][c] for c in keys) / counted:.3f}" if counted else "—" for cf in configs]
        print(f"| {cat} | {total} | {counted} | {cov} | {' | '.join(rets)} |")


if __name__ == "__main__":
    main()
