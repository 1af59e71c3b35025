"""Write a *blind* hand-check sheet and its key: the same draw as `handcheck_sample.py`, without verdicts.

    python benchmarks/handcheck_sheet.py [DATA] [--format locomo] [--seed 26] [--per 10] --out DIR

`handcheck_sample.py` prints each verdict with its basis, for the rule writer. A judge who is to
measure the scorer must not see that: this script draws the same asks (same pool, same seed, same
equal allocation per category and stratum), shuffles them and writes

- `DIR/sheet.md`: per ask, its number, question, gold answer, category, the evidence messages as
  the conversation has them (with their dates; *not* whether they are in the context), and the
  whole context the main model was sent at the asking turn, rendered as it was sent (summaries and
  clipped copies marked, the time shown before each message when the trace shows one). No config,
  stratum or verdict.
- `DIR/key.tsv`: number, sheet, config, conversation, turn, question, drawn_stratum, scorer verdict
  — for joining the judge's answers afterwards (`handcheck_agreement.py` takes the joined file).

The judge answers per number: could someone who sees only this context give the gold answer (or one
a fair grader accepts as the same)? The key stays with whoever runs the check, outside the judge's
reach and outside the repository (it names the data's questions).
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

import handcheck_sample as hs
from rollsum_evals.data import load


def render(k: int, v: hs.Verdict) -> str:
    """One ask as the judge reads it."""
    ids = {m.id: i for i, m in enumerate(v.trace.messages)}
    out = [f"## Ask {k}", "", f"- **Question:** {v.probe.question}", f"- **Gold answer:** {v.probe.answer}",
           f"- **Category:** {v.probe.category}", "", "Evidence messages (from the whole conversation; they may "
           "or may not be in the context below):", ""]
    for e in v.probe.evidence:
        i = ids.get(e)
        if i is not None:
            m = v.trace.messages[i]
            out.append(f"> ({m.created_at}) {m.name}: {m.content}")
    out += ["", f"Context the model saw after message {v.turn + 1} of the conversation:", "", "```"]
    for item in v.trace.context_at(v.turn):
        stamp = f"{item.shown_time} " if item.shown_time else ""
        kind = "" if item.verbatim else ("[CLIPPED COPY] " if item.message_index is not None else "[SUMMARY] ")
        out.append(f"{stamp}{kind}{item.name or item.role}: {item.text}")
    out += ["```", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(hs.LOCOMO_DEV))
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--per", type=int, default=10, help="verdicts of each kind per category (default 10)")
    ap.add_argument("--sheet", default=None, help="name of the sheet in the key (default: seed-N)")
    ap.add_argument("--out", required=True, type=Path, help="directory for sheet.md and key.tsv")
    args = ap.parse_args()
    convs = load(args.data, format=args.format or None)
    picks = hs.draw(list(hs.verdicts(convs, args.window)), args.seed, args.per)
    random.Random(args.seed + 1).shuffle(picks)
    name = args.sheet or f"seed-{args.seed}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sheet.md").write_text(
        f"# Hand-check sheet {name}: {len(picks)} asks\n\nFor each ask: could someone who sees only the context "
        "give the gold answer (or one a fair grader would accept as the same)? Answer retained or lost.\n\n"
        + "\n".join(render(k, v) for k, (_, v) in enumerate(picks, 1)), encoding="utf-8")
    with open(args.out / "key.tsv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["number", "sheet", "config", "conversation", "turn", "question", "drawn_stratum", "scorer"])
        for k, (stratum, v) in enumerate(picks, 1):
            w.writerow([k, name, v.config, v.conversation, v.turn, v.probe.question, stratum,
                        "retained" if v.retained else "lost"])
    print(args.out.resolve() / "sheet.md")


if __name__ == "__main__":
    main()
