"""Print a random sample of answer_retention verdicts with their evidence, for reading by hand.

    python benchmarks/handcheck_sample.py RUN_DIR [--seed 7] [--n 20]

Draws N retained and N lost verdicts among a run's answerable asks. A retained verdict shows
the unit that supports each answer item; a lost one shows every context unit that shares a word
with the answer (or says that none does), so a reader can judge whether the context alone would
let someone give the gold answer. docs/scoring.md ("Hand-checked agreement") reports two samples.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

import rollsum_evals
from rollsum_evals.replay.trace import ContextItem
from rollsum_evals.scoring.support import Claim, Unit, claim, content, document_frequency, item_support, summary_units


def _units(items: list[ContextItem]) -> list[Unit]:
    out: list[Unit] = []
    for it in items:
        out.extend(summary_units(it.text) if it.message_index is None else [Unit(it.text, it.name or it.role)])
    return out


def show(run: Any, row: Any) -> None:
    trace = run.load_trace(row.unit_id)
    units = _units(trace.context_at(int(row.asked_turn)))
    verdict = "RETAINED" if row.retained else "LOST"
    print(f"\n{row.config} {row.conversation_id} turn {row.asked_turn} (age {row.age_turns}) | {row.category}\n"
          f"  Q: {row.question}\n  A: {row.answer}\n  verdict: {verdict}")
    names = sorted({m.name for m in trace.messages if m.name})
    c: Claim | None = claim(row.question, row.answer, names, document_frequency(m.content for m in trace.messages))
    if row.retained and c is not None:
        for item in c.items:
            hit = item_support(item, c, units)
            if hit is not None:
                u = units[hit[0]]
                print(f"  {' '.join(item)!r} <- {u.speaker}: {u.text[:300]}")
        return
    words = set(content(row.answer))
    shared = [u for u in units if words & set(content(u.text))]
    for u in shared[:6]:
        print(f"  shares a word: {u.speaker}: {u.text[:250]}")
    if not shared:
        print("  (no context unit shares a word with the answer)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a finished run directory")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n", type=int, default=20, help="verdicts of each kind (default 20)")
    args = ap.parse_args()
    run = rollsum_evals.load_run(args.run)
    probes = run.probes
    answerable = probes[probes["answerable"].astype(bool)]
    retained = answerable[answerable["retained"].astype(bool)]
    lost = answerable[~answerable["retained"].astype(bool)]
    rng = random.Random(args.seed)
    print(f"{len(answerable)} answerable asks: {len(retained)} retained, {len(lost)} lost")
    for frame in (retained, lost):
        for i in rng.sample(range(len(frame)), min(args.n, len(frame))):
            show(run, frame.iloc[i])


if __name__ == "__main__":
    main()
