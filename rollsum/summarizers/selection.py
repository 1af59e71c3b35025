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

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

DECAY = 0.3
REDUNDANT = 0.4
RHO = 0.5
MIN_VALUE = 0.9
LINES_PER_BUCKET = 2
MAX_BUCKETS = 64
_MAX_REPEATS = 15
_DECAY_POW = tuple(DECAY ** k for k in range(_MAX_REPEATS + 1))
_RHO_POW = tuple(RHO ** k for k in range(64))


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


def select(cands: Sequence[Candidate], budget: int, *, span_end: float) -> Selection:
    """The candidates to keep within `budget` tokens (see the module docstring)."""
    if not cands or budget <= 0:
        return Selection((), 0)
    v0: list[float] = []
    heap: list[tuple[float, int]] = []
    costs = [max(1, c.cost) for c in cands]
    for i, c in enumerate(cands):
        value = sum(c.weights) + c.bonus
        v0.append(value)
        if value >= MIN_VALUE and c.cost <= budget:
            heapq.heappush(heap, (-value * c.priority / costs[i], i))
    if not heap:
        return Selection((), 0)
    mean_cost = sum(costs[i] for _, i in heap) / len(heap)
    lines = max(1.0, budget / mean_cost)
    buckets = max(1, min(MAX_BUCKETS, round(lines / LINES_PER_BUCKET)))
    width = max(span_end, 1.0) / buckets
    bucket_of = [min(buckets - 1, int(c.pos / width)) if c.pos > 0 else 0 for c in cands]
    covered: dict[str, int] = {}
    covered_get = covered.get
    decay = _DECAY_POW
    rho = _RHO_POW
    in_bucket = [0] * buckets
    groups: set[int] = set()
    chosen: list[int] = []
    used = 0
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        _, i = pop(heap)
        c = cands[i]
        cost = c.join_cost if c.group in groups else costs[i]
        if used + cost > budget:
            continue
        words = 0.0
        for k, w in zip(c.keys, c.weights):
            words += w * decay[covered_get(k, 0)]
        base = v0[i] - c.bonus
        if (base > 0.0 and words < REDUNDANT * base) or words + c.bonus < MIN_VALUE:
            continue
        b = bucket_of[i]
        over = in_bucket[b] - LINES_PER_BUCKET
        gain = (words + c.bonus) * c.priority * (rho[over + 1] if over >= 0 else 1.0) / costs[i]
        if heap and -heap[0][0] > gain + 1e-12:
            push(heap, (-gain, i))
            continue
        chosen.append(i)
        used += cost
        groups.add(c.group)
        if in_bucket[b] < 63:
            in_bucket[b] += 1
        for k in c.keys:
            n = covered_get(k, 0)
            if n < _MAX_REPEATS:
                covered[k] = n + 1
    chosen.sort()
    return Selection(tuple(chosen), used)
