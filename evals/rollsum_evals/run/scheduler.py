"""Which Unit to start next (see `Scheduler`). Scheduling never changes results: tables are
sorted by Unit id."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rollsum_evals.spec import components
from rollsum_evals.units import Unit


class Scheduler:
    """Which Unit to start next: expected-longest first, learning what each configuration costs
    as its Units finish.

    The sweep's wall time is bounded below by its slowest Unit, so that Unit must start in the
    first wave, not the last. Message count alone cannot find it: in the benchmark every
    conversation has 120 messages, yet a ``since-last`` Unit makes 58 model calls and a
    ``token-ratio`` one 3, and starting them in id order cost 6.8 s against 4.8 s for
    longest-first. So each configuration is sampled early (unknown ones first, spread across
    configurations), then the rest run by observed seconds per message × messages.
    Baselines and offline models are assumed cheap until measured.
    """

    def __init__(self, units: Sequence[Unit], messages: Callable[[Unit], int]) -> None:
        self._n = messages
        groups: dict[str, list[Unit]] = {}
        for u in units:
            groups.setdefault(u.config, []).append(u)
        self._groups = {c: sorted(us, key=lambda u: (self._n(u), u.unit_id), reverse=True)
                        for c, us in sorted(groups.items())}
        self._started: dict[str, int] = dict.fromkeys(self._groups, 0)
        self._rate: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return sum(len(us) for us in self._groups.values())

    def _key(self, config: str) -> tuple[float, int, int]:
        u = self._groups[config][0]
        n = self._n(u)
        if config in self._rate:
            total, count = self._rate[config]
            est = total / count * n
        elif components.is_baseline(u.preset) or components.is_builtin(u.model):  # no model calls
            est = 0.0
        else:
            est = math.inf
        return (est, -self._started[config], n)

    def peek(self) -> Unit | None:
        best: str | None = None
        best_key: tuple[float, int, int] | None = None
        for c, us in self._groups.items():
            if not us:
                continue
            k = self._key(c)
            if best_key is None or k > best_key:
                best, best_key = c, k
        return self._groups[best][0] if best is not None else None

    def pop(self) -> Unit:
        unit = self.peek()
        if unit is None:
            raise IndexError("no Unit left to schedule")
        self._groups[unit.config].pop(0)
        self._started[unit.config] += 1
        return unit

    def observe(self, unit: Unit, wall_s: float) -> None:
        total, count = self._rate.get(unit.config, (0.0, 0))
        self._rate[unit.config] = (total + wall_s / max(1, self._n(unit)), count + 1)
