"""Which candidate lines to keep under a token budget: value per token, no repeats, spread in time.

The objective is the information kept per token of budget. A candidate arrives with the weight
of each of its informative words already set by the caller (salience × how specific the word
is to the conversation, `corpus`); here a word's weight is multiplied by

    DECAY ** (number of kept lines that already say it)

the redundancy penalty (SumBasic/MMR style): once a kept line names "Sweden", the next line
naming it gains only DECAY of that word. A candidate whose remaining value falls under
``REDUNDANT`` of its own value is a near-duplicate and is never taken; one whose value is under
``MIN_VALUE`` (about one specific word) is not worth a line.

Coverage across time: the conversation so far is cut into buckets of equal length, as many as
the budget holds lines / ``LINES_PER_BUCKET``, and once a bucket has its fair share of lines
each further line from it has its gain multiplied by ``RHO`` once more. A rich period can still
win more lines, but each extra one has to be worth 1/RHO, 1/RHO², ... times more than a line
from a period under its share, so after many merges the summary neither freezes around the
first session nor crowds it out. A thin period is never forced in: a filler line does not
beat a fact because its period is empty.

Greedy by gain/cost with lazy re-evaluation: gains only shrink as lines are kept (every factor
above is non-increasing), so a candidate whose recomputed gain still beats the next one's stale
bound is the true best. Ties go to the earlier candidate (deterministic, stable across merges).
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import pairwise, repeat
from operator import add, mul, sub, truediv

DECAY = 0.3
REDUNDANT = 0.4
RHO = 0.5
MIN_VALUE = 0.9
LINES_PER_BUCKET = 2
MAX_BUCKETS = 64
_MAX_REPEATS = 15
_DECAY_POW = tuple(DECAY ** k for k in range(_MAX_REPEATS + 1))
_DECAY_STEP = {**dict(pairwise(_DECAY_POW)), _DECAY_POW[-1]: _DECAY_POW[-1]}
"""DECAY ** n -> DECAY ** (n + 1), capped at ``_MAX_REPEATS`` (the powers are distinct floats):
a key's multiplier after one more kept line says it, from its multiplier alone."""
_RHO_POW = tuple(RHO ** k for k in range(64))
_SUM_IN_ORDER = sys.version_info < (3, 12)
"""Whether the builtin `sum` of floats adds them left to right from 0 (before Python 3.12),
as the evaluation loop of `select_columns` adds a candidate's words: then one `sum` per
candidate gives both its initial value and its words in full; 3.12's `sum` compensates the
rounding, so there the words in full are added one by one (`functools.reduce`)."""


@dataclass(slots=True)
class Candidate:
    keys: tuple[str, ...]
    weights: tuple[float, ...]
    """Each key's weight, sentence factors included."""
    cost: int
    """Tokens the candidate takes as a line of its own (speaker and date prefix included)."""
    join_cost: int
    """Tokens it takes when another sentence of its group is already kept (joined into that line)."""
    group: int
    pos: float
    """Position on the conversation's message axis (0 = first message), for time coverage."""
    bonus: float = 0.0
    """Flat value added after weighting (a failed tool call, a fact the ledger asked to keep)."""
    priority: float = 1.0
    """Multiplies the candidate's gain when it competes for the budget, not its eligibility: a
    line whose information can be had again elsewhere (a tool result) ranks below a line of
    equal value that cannot, but is still kept when there is room and it is worth a line."""


@dataclass(frozen=True, slots=True)
class Selection:
    chosen: tuple[int, ...]
    """Indices of kept candidates, ascending."""
    used: int
    """Tokens used by the kept candidates (by their costs)."""


@dataclass(slots=True)
class Columns:
    """Candidates as parallel lists, one entry per candidate (fields as in `Candidate`): what
    `select` works on. The extractive summarizer builds them directly, without a `Candidate`
    object per sentence (its hot path builds ~80 per summary)."""

    keys: list[tuple[str, ...]] = field(default_factory=list)
    weights: list[tuple[float, ...]] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    join_cost: list[int] = field(default_factory=list)
    group: list[int] = field(default_factory=list)
    pos: list[float] = field(default_factory=list)
    bonus: list[float] = field(default_factory=list)
    priority: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, cands: Sequence[Candidate]) -> Columns:
        return cls([c.keys for c in cands], [c.weights for c in cands], [c.cost for c in cands],
                   [c.join_cost for c in cands], [c.group for c in cands], [c.pos for c in cands],
                   [c.bonus for c in cands], [c.priority for c in cands])

    def __len__(self) -> int:
        return len(self.keys)


def select(cands: Sequence[Candidate], budget: int, *, span_end: float) -> Selection:
    """The candidates to keep within `budget` tokens (see the module docstring)."""
    return select_columns(Columns.of(cands), budget, span_end=span_end)


def select_columns(cands: Columns, budget: int, *, span_end: float) -> Selection:
    """`select` over candidates given as columns.

    The lazy greedy's queue is two parallel lists kept sorted by ``(gain, -index)``: the gains
    (floats) and the candidates' indices. Its last entry is the best gain and, among equal
    gains, the earliest candidate, so it yields the candidates in the order a heap of
    ``(-gain, index)`` pairs pops them (the pairs are all distinct). A pop from a list's end
    costs no comparison, a heap's pop about 2 log n tuple comparisons (a summary pops ~120),
    and the initial sort compares floats directly. A stale entry pushed back (~60 a summary)
    is placed by a binary search over the gains alone (float comparisons, not a pair's, which
    tests the gains for equality and then compares them, and no pair made), then among equal
    gains by index.

    A candidate none of whose words a kept line says yet (half the evaluations) weighs its
    words in full, added once for all candidates with the initial values (`_SUM_IN_ORDER`: the
    same additions the evaluation loop makes), not added again at each evaluation."""
    n_cands = len(cands)
    if not n_cands or budget <= 0:
        return Selection((), 0)
    keys_of, weights_of, bonus_of, priority_of = cands.keys, cands.weights, cands.bonus, cands.priority
    group_of, join_cost_of, cost_of = cands.group, cands.join_cost, cands.cost
    costs = cost_of if min(cost_of) >= 1 else [c if c > 1 else 1 for c in cost_of]
    sums = list(map(sum, weights_of, repeat(0.0)))  # (from 0.0: the float additions at once, not after an int's)
    # each candidate's words in full (w × DECAY⁰ is w), added as the evaluation loop adds them
    full = sums if _SUM_IN_ORDER else [reduce(add, w, 0.0) for w in weights_of]
    v0 = list(map(add, sums, bonus_of))  # sum(w) + b
    # the queue in index order, reversed, then sorted by gain (a stable sort of floats): equal
    # gains keep the earliest index last, the order of sorting the ``(gain, -index)`` pairs
    initial = list(map(truediv, map(mul, v0, priority_of), costs))  # value × priority / cost
    order = [i for i in range(n_cands - 1, -1, -1) if v0[i] >= MIN_VALUE and cost_of[i] <= budget]
    if not order:
        return Selection((), 0)
    order.sort(key=initial.__getitem__)
    gains = list(map(initial.__getitem__, order))
    mean_cost = sum(map(costs.__getitem__, order)) / len(order)
    lines = max(1.0, budget / mean_cost)
    buckets = max(1, min(MAX_BUCKETS, round(lines / LINES_PER_BUCKET)))
    width = max(span_end, 1.0) / buckets
    last = buckets - 1
    # (p > 0: int(p / width) >= 0; else int(p / width) <= 0, and such a position is bucket 0)
    bucket_of = [(b if b < last else last) if b > 0 else 0 for b in map(int, map(truediv, cands.pos, repeat(width)))]
    # under this many words' worth a candidate is a near-duplicate (-inf: no own value to compare)
    redundant = [REDUNDANT * base if base > 0.0 else -math.inf for base in map(sub, v0, bonus_of)]
    # each covered key's DECAY ** (lines that say it, at most _MAX_REPEATS): the inner loop
    # reads the multiplier with one lookup (an uncovered key weighs w × 1.0, which is w)
    mult: dict[str, float] = {}
    mult_get = mult.get
    covered_keys = mult.keys()
    step = _DECAY_STEP
    rho = _RHO_POW
    in_bucket = [0] * buckets
    factor = [1.0] * buckets  # each bucket's RHO ** (lines past its share + 1), 1.0 within it
    groups: set[int] = set()
    chosen: list[int] = []
    room = budget
    pop_gain, pop = gains.pop, order.pop
    smallest = min(min(join_cost_of), min(costs))
    min_value = MIN_VALUE
    while order:
        pop_gain()
        i = pop()
        cost = join_cost_of[i] if group_of[i] in groups else costs[i]
        if cost > room:
            if smallest > room:
                break  # not even the cheapest candidate (as a joined sentence) fits any more
            continue
        keys = keys_of[i]
        if covered_keys.isdisjoint(keys):
            words = full[i]  # nothing kept says any of its words yet
        else:
            words = 0.0
            for k, w in zip(keys, weights_of[i]):
                words += w * mult_get(k, 1.0)
        value = words + bonus_of[i]
        if words < redundant[i] or value < min_value:
            continue
        b = bucket_of[i]
        gain = value * priority_of[i] * factor[b] / costs[i]
        if gains and gains[-1] > gain + 1e-12:
            # back where ``insort`` would put the pair (gain, -i) among the pairs: after every
            # smaller gain, and among equal gains (rare) after the later candidates (their
            # -index is smaller) and before the earlier ones
            at = bisect_right(gains, gain)
            while at and gains[at - 1] == gain and order[at - 1] < i:
                at -= 1
            gains.insert(at, gain)
            order.insert(at, i)
            continue
        chosen.append(i)
        room -= cost
        groups.add(group_of[i])
        n = in_bucket[b]
        if n < 63:
            in_bucket[b] = n = n + 1
            if n >= LINES_PER_BUCKET:
                factor[b] = rho[n - LINES_PER_BUCKET + 1]
        for k in keys:
            mult[k] = step[mult_get(k, 1.0)]
    chosen.sort()
    return Selection(tuple(chosen), budget - room)
