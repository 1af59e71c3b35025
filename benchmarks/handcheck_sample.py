"""Print a stratified sample of answer_retention verdicts with their evidence, for reading by hand.

    python benchmarks/handcheck_sample.py [DATA] [--format locomo] [--seed 18] [--per 10]

Replays the summarizing presets and truncate offline (extractive summaries, 8,000-token window)
on DATA (default: LoCoMo dev) and draws, per probe category, `per`
retained and `per` lost verdicts among the answerable asks (half of the retained ones, where
there are enough, retained *without* every evidence message verbatim: the matcher's verdicts on
summaries and clipped text, and since answer_retention v7 the evidence copied into them).
Each verdict shows the question, the gold answer, the basis of the verdict, the evidence
messages (in the context verbatim or not, with the day shown) and the summary lines that share
a word with the answer (for a copy: the lines holding the evidence's words; and, for a verdict
not held by its verbatim evidence, the other verbatim messages holding half of the answer's
words), so a reader can judge whether the context alone would let someone give the gold
answer. docs/scoring.md ("Hand-checked agreement") reports it.
"""

from __future__ import annotations

import argparse
import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollsum_evals import scoring
from rollsum_evals.data import load
from rollsum_evals.data.types import Conversation, Probe
from rollsum_evals.replay import replay
from rollsum_evals.replay.trace import Trace
from rollsum_evals.scoring.asks import parse_timing
from rollsum_evals.scoring.base import ScoringPlan
from rollsum_evals.scoring.support import content, summary_units
from rollsum_evals.units import Unit

ROOT = Path(__file__).resolve().parents[1]
LOCOMO_DEV = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"
CONFIGS = ("since-last", "token-ratio", "evict-window", "budget-rule-based", "truncate")
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")


@dataclass(frozen=True)
class Verdict:
    config: str
    conversation: str
    trace: Trace
    probe: Probe
    turn: int
    row: dict[str, object]

    @property
    def retained(self) -> bool:
        return bool(self.row["retained"])

    @property
    def evidence_in_context(self) -> bool:
        ids = {m.id: i for i, m in enumerate(self.trace.messages)}
        shown = {i.message_index for i in self.trace.context_at(self.turn) if i.verbatim}
        return all(ids.get(e) in shown for e in self.probe.evidence)

    @property
    def by_matcher(self) -> bool:
        """Retained without every evidence message verbatim: the matcher judged a summary or clip."""
        return self.retained and not self.evidence_in_context


def verdicts(convs: list[Conversation], window: int, configs: Sequence[str] = CONFIGS,
             params: Mapping[str, str] | None = None) -> Iterator[Verdict]:
    """The answerable verdicts the draw samples from (`configs`, `params`: preset -> params JSON,
    are for `handcheck_agreement.py`'s other populations; the draw itself uses the defaults)."""
    plan = ScoringPlan(scorers=("answer_retention",), timing=parse_timing("sampled:1+end"))
    for config in configs:
        for conv in convs:
            unit = Unit(unit_id="u", dataset="d", conversation_id=conv.id, dataset_hash="h", config=config,
                        preset=config, params_json=(params or {}).get(config, "{}"), prompt="", model="extractive",
                        seed=0, context_window=window)
            trace = replay(unit, conv)
            asks, scores = scoring.score(plan, unit, conv, trace)
            for a in asks:
                row = scores.probes[a.key]
                if row["answerable"]:
                    yield Verdict(config, conv.id, trace, a.probe, a.asked_turn, row)


def show(k: int, v: Verdict) -> None:
    ctx = v.trace.context_at(v.turn)
    in_ctx = {i.message_index for i in ctx if i.verbatim}
    ids = {m.id: i for i, m in enumerate(v.trace.messages)}
    basis = ("evidence verbatim" if v.retained and not v.by_matcher else
             "evidence copied (v7: its sentences in a summary/clip line)" if v.row["retained_by"] == "evidence-copied"
             else f"matcher ({'summary' if v.row['in_summary'] else 'messages/clips'})" if v.retained else "lost")
    print(f"\n#{k} {v.config} {v.conversation} turn {v.turn} | {v.probe.category} | {basis} "
          f"| by {v.row['answerable_by']}\n  Q: {v.probe.question}\n  A: {v.probe.answer}")
    for e in v.probe.evidence:
        i = ids.get(e)
        if i is None:
            continue
        m = v.trace.messages[i]
        where = "IN CONTEXT" if i in in_ctx else "not in context"
        print(f"  evidence {e} ({where}, said {m.created_at}): {m.name}: {m.content[:220]}")
    at = str(v.row["support_at"])
    if v.by_matcher and at.startswith("m:"):
        m = v.trace.messages[int(at[2:])]
        print(f"  supported at message {at[2:]} (said {m.created_at}): {m.name}: {m.content[:260]}")
    elif v.by_matcher and at.startswith("t:"):
        words = set(content(v.probe.answer))
        if v.row["retained_by"] == "evidence-copied":  # the copy shares the evidence's words, not the answer's
            words = {w for e in v.probe.evidence if e in ids for w in content(v.trace.messages[ids[e]].content)}
        lines = [u for u in summary_units(v.trace.texts[at[2:]].content) if len(set(content(u.text)) & words) >= 3
                 or set(content(u.text)) & words == words]
        for u in lines[:3]:
            print(f"  supported in text: {u.speaker}: {u.text[:240]}")
    shown = 0
    for item in ctx:
        if item.verbatim:
            continue
        for u in summary_units(item.text):
            overlap = set(content(u.text)) & set(content(v.probe.answer))
            if overlap and shown < 5:
                print(f"  summary/clip: {u.speaker}: {u.text[:220]}")
                shown += 1
    if not shown:
        print("  (no summary line shares a word with the answer)")
    if v.retained and not v.by_matcher:
        return
    # a lost (or matcher-held) ask may still be answerable from other messages in the context:
    # show the verbatim ones holding at least half of the answer's content words
    answer = set(content(v.probe.answer))
    evidence = {ids.get(e) for e in v.probe.evidence}
    held = [i for i in sorted(x for x in in_ctx if x is not None) if i not in evidence
            and 2 * len(answer & set(content(v.trace.messages[i].content))) >= max(1, len(answer))]
    for i in held[:4]:
        m = v.trace.messages[i]
        print(f"  verbatim in context (said {m.created_at}): {m.name}: {m.content[:220]}")


def draw(pool: Sequence[Verdict], seed: int, per: int) -> list[tuple[str, Verdict]]:
    """The sample, with each ask's stratum, in the order it is shown: per category (in
    `CATEGORIES` order) `per // 2` retained by the matcher or a copy, the rest of `per` retained
    by verbatim evidence, and `per` lost, each drawn with one seeded generator.
    `handcheck_sheet.py` writes the same draw as a blind sheet."""
    rng = random.Random(seed)
    picks: list[tuple[str, Verdict]] = []
    for cat in CATEGORIES:
        of = [v for v in pool if v.probe.category == cat]
        matcher = [v for v in of if v.by_matcher]
        verbatim = [v for v in of if v.retained and not v.by_matcher]
        lost = [v for v in of if not v.retained]
        take_m = min(len(matcher), per // 2)
        picks += [("non-verbatim retained", v) for v in rng.sample(matcher, take_m)]
        picks += [("verbatim-evidence retained", v) for v in rng.sample(verbatim, min(len(verbatim), per - take_m))]
        picks += [("lost", v) for v in rng.sample(lost, min(len(lost), per))]
    return picks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(LOCOMO_DEV))
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--per", type=int, default=10, help="verdicts of each kind per category (default 10)")
    args = ap.parse_args()
    convs = load(args.data, format=args.format or None)
    pool = list(verdicts(convs, args.window))
    k = 0
    for cat, group in itertools.groupby(draw(pool, args.seed, args.per), key=lambda p: p[1].probe.category):
        picks = [v for _, v in group]
        of = [v for v in pool if v.probe.category == cat]
        n_matcher = sum(v.by_matcher for v in of)
        n_lost = sum(not v.retained for v in of)
        print(f"\n===== {cat}: {len(of)} answerable asks ({n_matcher} retained by the matcher, "
              f"{len(of) - n_matcher - n_lost} by verbatim evidence, {n_lost} lost); showing {len(picks)}")
        for v in picks:
            k += 1
            show(k, v)

if __name__ == "__main__":
    main()
