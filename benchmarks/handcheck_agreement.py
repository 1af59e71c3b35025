"""Agreement of hand judgments with answer_retention, weighted to the verdicts a run gives.

    python benchmarks/handcheck_agreement.py JUDGMENTS.tsv [DATA] [--format locomo] [--window 8000]

`handcheck_sample.py` draws with *equal allocation*: per category 10 retained (5 by the matcher
or a copy, 5 by verbatim evidence, where there are enough) and 10 lost verdicts. A run's verdicts
are not spread that way (on LoCoMo dev most are lost, and open-domain asks are a few per cent of
them), so the plain share of agreeing judgments over such samples over-weights the small strata.
The estimate of the agreement a user meets on a run's verdicts is the stratified one,
sum_h (N_h / N) * p_h, with N_h the stratum's size in the population the sample was drawn from and
p_h the stratum's observed agreement. This script re-creates that population exactly as the draw
does (`handcheck_sample.verdicts`: the same configs, window, timing and data), re-scores every
judged ask with the current scorer, and prints the per-stratum table, then the unweighted and the
stratified figures with 95 % intervals — over all judgments, per sheet and per category — for
the draw's population, for a quickstart-like run (its six ranked configs on the same data) and
for each config alone.

JUDGMENTS is a tab-separated file with a header naming at least `sheet`, `config`,
`conversation`, `turn`, `question` and `judge` (retained | lost); `drawn_stratum` (the stratum
the ask was drawn in), if present, gives a sensitivity line. The judgments stay outside the
repository with the keys of the blind sheets; docs/scoring.md ("Hand-checked agreement") reports
the figures.

Intervals. *Bootstrap*: each stratum's judgments resampled on their own (a binomial draw at its
observed share), percentile interval; a stratum where every judgment agreed contributes no spread,
so this interval is too narrow when such strata carry weight. *Wilson (effective n)*: the Wilson
score interval at the stratified estimate with the effective sample size p(1 - p) / V, V the
stratified variance sum_h W_h^2 q_h (1 - q_h) / n_h computed with q_h = (x_h + 1) / (n_h + 2), so
that a stratum of all-agreeing judgments still carries the uncertainty of its small n_h. Both treat
the judged asks as independent draws within their stratum (the dev pool has three conversations,
so neither says how the agreement would move on other conversations).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import handcheck_sample as hs
import numpy as np
from rollsum_evals.data import load
from rollsum_evals.data.types import Conversation

KINDS = ("matcher", "verbatim", "lost")
"""A verdict's stratum within its category, as the draw splits them: retained without every
evidence message verbatim (the matcher or a copy), retained by verbatim evidence, lost."""
DRAWN = {"non-verbatim retained": "matcher", "verbatim-evidence retained": "verbatim", "lost": "lost"}
QUICKSTART = ("truncate", "count-and-tokens", "since-last", "budget-rule-based", "token-ratio", "evict-window")
"""The quickstart spec's ranked configs (evals/rollsum_evals/sweeps/quickstart.toml; full-context is
its reference and is left out: every one of its verdicts is verbatim by construction)."""
QUICKSTART_PARAMS = {"count-and-tokens": '{"token_threshold": 2000}'}
REQUIRED = ("sheet", "config", "conversation", "turn", "question", "judge")
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Stratum:
    """One stratum: its size in the population and its judged and agreeing counts."""

    size: int
    judged: int
    agreed: int

    @property
    def share(self) -> float:
        return self.agreed / self.judged


def weights(strata: Sequence[Stratum]) -> list[float]:
    total = sum(s.size for s in strata)
    if total <= 0:
        raise ValueError("the population is empty")
    return [s.size / total for s in strata]


def _check(strata: Sequence[Stratum]) -> list[Stratum]:
    """Strata that carry weight must have judgments: their agreement cannot be guessed."""
    missing = [s for s in strata if s.size > 0 and s.judged == 0]
    if missing:
        raise ValueError(f"{len(missing)} stratum(s) of the population have no judgment")
    return list(strata)


def stratified(strata: Sequence[Stratum]) -> float:
    """sum_h W_h p_h, W_h = N_h / N (strata of size 0 do not count)."""
    strata = _check(strata)
    return sum(w * s.share for w, s in zip(weights(strata), strata, strict=True) if w > 0)


def unweighted(strata: Sequence[Stratum]) -> float:
    """The plain share of agreeing judgments: what a sample reports when its allocation is ignored."""
    return sum(s.agreed for s in strata) / sum(s.judged for s in strata)


def wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a share p observed over n (n may be an effective, non-integer size)."""
    if n <= 0:
        return (0.0, 1.0)
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z / d * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def stratified_wilson(strata: Sequence[Stratum], z: float = Z95) -> tuple[float, float]:
    """Wilson interval at the stratified estimate with the effective size p(1-p)/V (module doc)."""
    strata = _check(strata)
    w = weights(strata)
    live = [(wh, s) for wh, s in zip(w, strata, strict=True) if wh > 0]
    q = [(s.agreed + 1) / (s.judged + 2) for _, s in live]
    var = sum(wh * wh * qh * (1 - qh) / s.judged for (wh, s), qh in zip(live, q, strict=True))
    qbar = sum(wh * qh for (wh, _), qh in zip(live, q, strict=True))
    return wilson(stratified(strata), qbar * (1 - qbar) / var, z)


def stratified_bootstrap(strata: Sequence[Stratum], rng: np.random.Generator, resamples: int = 20000,
                         alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of sum_h W_h p*_h, each p*_h a resample of the stratum's own judgments."""
    strata = _check(strata)
    total = np.zeros(resamples)
    for wh, s in zip(weights(strata), strata, strict=True):
        if wh > 0:
            total += wh * rng.binomial(s.judged, s.share, size=resamples) / s.judged
    lo, hi = np.quantile(total, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


# ---------------------------------------------------------------- the population and the judgments


Key = tuple[str, str, int, str]
"""(config, conversation, asking turn, question): one verdict of the pool."""
Cell = tuple[str, str]
"""(category, kind): one stratum."""


def kind(v: hs.Verdict) -> str:
    return "matcher" if v.by_matcher else "verbatim" if v.retained else "lost"


def population(convs: list[Conversation], window: int, configs: Sequence[str],
               params: Mapping[str, str] | None = None) -> dict[Key, tuple[Cell, bool]]:
    """Every answerable verdict of `configs` on `convs`, as the draw computes them."""
    return {(v.config, v.conversation, v.turn, v.probe.question.strip()): ((v.probe.category, kind(v)), v.retained)
            for v in hs.verdicts(convs, window, configs, params) if v.probe.category in hs.CATEGORIES}


@dataclass(frozen=True)
class Judgment:
    sheet: str
    key: Key
    judge: bool
    drawn: str | None


def read_judgments(path: Path) -> list[Judgment]:
    """The judgments TSV; a malformed file is one line naming the file, the line and what was expected."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        _fail(f"{path}: cannot read ({e.strerror})")
    rows = list(csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or any(c not in rows[0] for c in REQUIRED):
        _fail(f"{path}:1: expected a header naming {', '.join(REQUIRED)} (tab-separated)")
    col = {c: i for i, c in enumerate(rows[0])}
    out = []
    for n, row in enumerate(rows[1:], 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) < len(rows[0]):
            _fail(f"{path}:{n}: expected {len(rows[0])} tab-separated fields, got {len(row)}")
        judge = row[col["judge"]].strip().lower()
        if judge not in ("retained", "lost") or not row[col["turn"]].strip().isdigit():
            _fail(f"{path}:{n}: expected judge 'retained' or 'lost' and an integer turn")
        drawn = row[col["drawn_stratum"]].strip() if "drawn_stratum" in col else None
        if drawn is not None and drawn not in DRAWN:
            _fail(f"{path}:{n}: drawn_stratum must be one of {', '.join(DRAWN)}")
        out.append(Judgment(row[col["sheet"]].strip(),
                            (row[col["config"]].strip(), row[col["conversation"]].strip(),
                             int(row[col["turn"]]), row[col["question"]].strip()),
                            judge == "retained", DRAWN[drawn] if drawn else None))
    return out


def _fail(msg: str) -> None:
    print(msg, file=sys.stderr)
    sys.exit(2)


@dataclass(frozen=True)
class Scored:
    """A judgment placed in today's stratum, and whether the judge agreed with today's verdict."""

    sheet: str
    cell: Cell
    drawn: Cell | None
    agree: bool
    judge_retained: bool


def strata_of(scored: Iterable[Scored], sizes: Mapping[Cell, int], cells: Sequence[Cell],
              cell_of: Callable[[Scored], Cell | None] = lambda s: s.cell) -> list[Stratum]:
    """The strata over `cells`; a retained stratum with no judgment is merged with its sibling
    (matcher + verbatim of the same category) so that the estimate stays defined."""
    judged: dict[Cell, list[int]] = defaultdict(lambda: [0, 0])
    for s in scored:
        c = cell_of(s)
        if c is not None and c in cells:
            judged[c][0] += 1
            judged[c][1] += s.agree
    merged: dict[Cell, list[int]] = {c: [sizes.get(c, 0), *judged[c]] for c in cells}
    for cat in {c for c, _ in cells}:
        a, b = (cat, "matcher"), (cat, "verbatim")
        if a in merged and b in merged and (merged[a][1] == 0) != (merged[b][1] == 0):
            merged[b] = [x + y for x, y in zip(merged[a], merged[b], strict=True)]
            del merged[a]
    return [Stratum(size, n, x) for size, n, x in merged.values()]


def figures(strata: Sequence[Stratum], rng: np.random.Generator) -> str:
    est = stratified(strata)
    blo, bhi = stratified_bootstrap(strata, rng)
    wlo, whi = stratified_wilson(strata)
    return (f"{100 * est:5.1f} % (bootstrap {100 * blo:.1f}–{100 * bhi:.1f}; "
            f"Wilson eff. n {100 * wlo:.1f}–{100 * whi:.1f})")


def plain(scored: Sequence[Scored]) -> str:
    n, x = len(scored), sum(s.agree for s in scored)
    lo, hi = wilson(x / n, n)
    return f"{x}/{n} = {100 * x / n:.1f} % (Wilson {100 * lo:.1f}–{100 * hi:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("judgments", help="TSV: sheet, config, conversation, turn, question, judge [, drawn_stratum]")
    ap.add_argument("data", nargs="?", default=str(hs.LOCOMO_DEV))
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--window", type=int, default=8000)
    ap.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples")
    args = ap.parse_args()
    judgments = read_judgments(Path(args.judgments))
    convs = load(args.data, format=args.format or None)
    pool = population(convs, args.window, hs.CONFIGS)
    extra = [c for c in QUICKSTART if c not in hs.CONFIGS]
    pool_all = {**pool, **population(convs, args.window, extra, QUICKSTART_PARAMS)}
    cells: list[Cell] = [(c, k) for c in hs.CATEGORIES for k in KINDS]

    scored: list[Scored] = []
    gone = 0
    for j in judgments:
        if j.key not in pool:
            gone += 1
            continue
        cell, retained = pool[j.key]
        scored.append(Scored(j.sheet, cell, (cell[0], j.drawn) if j.drawn else None, j.judge == retained, j.judge))
    if not scored:
        _fail(f"{args.judgments}: none of the {len(judgments)} judged asks is in today's pool")

    pops: dict[str, Counter[Cell]] = {"draw pool (5 configs)": Counter(c for c, _ in pool.values()),
                                      "quickstart-like (6 configs)": Counter(
                                          cell for (cfg, *_), (cell, _) in pool_all.items() if cfg in QUICKSTART)}
    for cfg in (*hs.CONFIGS, *extra):
        pops[cfg] = Counter(cell for (c, *_), (cell, _) in pool_all.items() if c == cfg)
    rng = np.random.default_rng(args.bootstrap_seed)
    by_cell: dict[Cell, list[Scored]] = defaultdict(list)
    for s in scored:
        by_cell[s.cell].append(s)

    print(f"{len(judgments)} judgments; {len(scored)} in today's pool ({gone} no longer answerable there). "
          f"Population: {len(pool)} answerable verdicts of {', '.join(hs.CONFIGS)} on {len(convs)} "
          f"conversation(s), window {args.window}, asks sampled:1+end.\n")
    qs = pops["quickstart-like (6 configs)"]
    pn, qn = sum(pops["draw pool (5 configs)"].values()), sum(qs.values())
    print("| category | stratum | N_h (draw pool) | share | share (quickstart-like) | judged | agreed | agreement |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for c in cells:
        got = by_cell.get(c, [])
        n, x = len(got), sum(s.agree for s in got)
        size = pops["draw pool (5 configs)"][c]
        print(f"| {c[0]} | {c[1]} | {size} | {100 * size / pn:.1f} % | {100 * qs[c] / qn:.1f} % | {n} | {x} | "
              + (f"{100 * x / n:.0f} % |" if n else "— |"))
    print()

    sheets = sorted({s.sheet for s in scored})
    print("| judgments | unweighted (equal-allocation sample) | weighted to the draw pool "
          "| weighted to a quickstart-like run |")
    print("|---|---|---|---|")
    groups: list[tuple[str, list[Scored], list[Cell]]] = [("all", scored, cells)]
    groups += [(sh, [s for s in scored if s.sheet == sh], cells) for sh in sheets]
    groups += [(cat, [s for s in scored if s.cell[0] == cat], [c for c in cells if c[0] == cat])
               for cat in hs.CATEGORIES]
    for name, sub, cs in groups:
        row = [plain(sub)]
        for label in ("draw pool (5 configs)", "quickstart-like (6 configs)"):
            try:
                row.append(figures(strata_of(sub, pops[label], cs), rng))
            except ValueError as e:
                row.append(f"— ({e})")
        print(f"| {name} | " + " | ".join(row) + " |")
    print()
    print("All judgments, weighted to one config's verdicts alone:")
    for cfg in (*hs.CONFIGS, *extra):
        print(f"  {cfg:18} {figures(strata_of(scored, pops[cfg], cells), rng)}")
    if all(s.drawn for s in scored):
        moved = sum(s.drawn != s.cell for s in scored)
        est = stratified(strata_of(scored, pops["draw pool (5 configs)"], cells, lambda s: s.drawn))
        print(f"\nSensitivity: {moved} judged ask(s) are in another stratum today than when drawn; placed in "
              f"their drawn strata (same weights) the draw-pool estimate is {100 * est:.1f} %.")
    fr = sum(1 for s in scored if not s.agree and not s.judge_retained)
    print(f"\nDisagreements with today's scorer: {sum(not s.agree for s in scored)} "
          f"(false retained {fr}, false lost {sum(not s.agree for s in scored) - fr}).")


if __name__ == "__main__":
    main()
