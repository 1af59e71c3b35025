"""When probes are asked: a scoring choice, not part of the replay.

The trace records the context at every turn, so asking a probe 5 turns after its evidence, at
the end, or at any other turn is decided when the trace is scored. `rollsum score RUN --timing
...` re-asks a finished run's probes at other turns without replaying it.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rollsum.types import Message
from rollsum_evals.data.types import Probe

TIMINGS = ("sampled", "end", "after", "ages")


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    """When probes are asked.

    ``sampled`` (the default): ``draws`` turns per probe drawn uniformly from the life the fact
    has left after its last evidence message (the evidence turn itself up to the end), plus
    the end when ``end`` is true. Every fact gets the same number of asks whatever its age,
    the asks of all facts together cover the conversation without steps, and the draws are
    a pure function of (probe id, ``seed``), so re-scoring gives identical rows.
    ``end``: once, at the end of the conversation. ``after``: once, N turns after the probe's
    last evidence message. ``ages``: once per listed age (N turns after the evidence, when the
    conversation is that long), plus once at the end when ``end`` is true: a deliberate grid,
    e.g. for a gate that must see what happens where verbatim tails end.
    """

    ask: str = "sampled"
    after_turns: int = 0
    ages: tuple[int, ...] = ()
    end: bool = True
    draws: int = 1
    seed: int = 0

    @property
    def key(self) -> str:
        end = "+end" if self.end else ""
        if self.ask == "ages":
            return f"ages:{','.join(str(a) for a in self.ages)}{end}"
        if self.ask == "sampled":
            return f"sampled:{self.draws}{f',seed={self.seed}' if self.seed else ''}{end}"
        return "end" if self.ask == "end" else f"after:{self.after_turns}"


_SAMPLED = re.compile(r"(\d+)(?:,seed=(-?\d+))?")


def parse_timing(key: str) -> ProbeTiming:
    """The inverse of `ProbeTiming.key` (manifests and tables carry the key, a plain string).
    A malformed key is a ValueError naming it."""
    if key == "end":
        return ProbeTiming(ask="end")
    kind, _, rest = key.partition(":")
    end = rest.endswith("+end")
    body = rest.removesuffix("+end")
    try:
        if kind == "after":
            n = int(rest)
            if n > 0:
                return ProbeTiming(ask="after", after_turns=n)
        elif kind == "ages":
            ages = tuple(sorted({int(a) for a in body.split(",") if a}))
            if ages and all(a > 0 for a in ages):
                return ProbeTiming(ask="ages", ages=ages, end=end)
        elif kind == "sampled":
            m = _SAMPLED.fullmatch(body)
            if m and int(m[1]) > 0:
                return ProbeTiming(ask="sampled", draws=int(m[1]), seed=int(m[2] or 0), end=end)
    except ValueError:
        pass
    raise ValueError(f"probe timing {key!r}: expected 'sampled:N[,seed=S][+end]', 'end', 'after:N' "
                     "or 'ages:A,B,...[+end]' with positive integers")


@dataclass(frozen=True, slots=True)
class Ask:
    """One probe asked at one turn: one row of ``probes.parquet``."""

    key: str
    """Unique within a Unit: the probe id when each probe is asked once, else ``id@turn``."""
    probe: Probe
    asked_turn: int
    evidence_turn: int
    """The probe's last evidence message, -1 when it has none."""

    @property
    def age_turns(self) -> int:
        return self.asked_turn - self.evidence_turn if self.evidence_turn >= 0 else 0


def sampled_turns(probe_id: str, evidence: int, last: int, draws: int, seed: int, *, end: bool) -> list[int]:
    """`draws` distinct turns drawn uniformly from ``evidence .. last`` (the end left out when it
    is asked anyway, so it is never drawn twice), as a pure function of (probe id, seed).

    A hash of the id seeds the draw rather than the probe's position, so adding or dropping a
    probe never moves another probe's asks, and no state is shared between calls."""
    candidates = range(evidence, last if end else last + 1)
    if not candidates:
        return []
    digest = hashlib.sha256(f"{seed}\0{probe_id}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    return sorted(rng.sample(candidates, min(draws, len(candidates))))


def schedule_asks(probes: Sequence[Probe], messages: Sequence[Message], timing: ProbeTiming) -> list[Ask]:
    """Every (probe, asking turn) of a Unit, in probe order then turn order.

    An age the conversation is too short for is skipped rather than clipped to the end, so an
    ``age_turns`` value always means the same thing. A probe without evidence has no age: it
    is asked once, at the end. Two timings landing on the same turn give one ask. A probe
    with its own ``ask_at`` (`own_turn`) is asked there only, whatever the timing.
    """
    last = len(messages) - 1
    index = {m.id: i for i, m in enumerate(messages)}
    asks: list[Ask] = []
    many = timing.ask in ("ages", "sampled")
    for p in probes:
        ev = max((index[e] for e in p.evidence if e in index), default=-1)
        own = own_turn(p, last)
        if own is not None:  # the question says when it is asked: that turn only
            turns = [own] if own >= 0 else []
        elif timing.ask == "end" or ev < 0:
            turns = [last]
        elif timing.ask == "after":
            turns = [min(ev + timing.after_turns, last)]
        else:
            if timing.ask == "ages":
                turns = [ev + a for a in timing.ages if ev + a <= last]
            else:
                turns = sampled_turns(p.id, ev, last, timing.draws, timing.seed, end=timing.end)
            if timing.end and last not in turns:
                turns.append(last)
        asks += [Ask(f"{p.id}@{t}" if many else p.id, p, t, ev) for t in turns]
    return asks


def own_turn(probe: Probe, last: int) -> int | None:
    """The turn a probe asks to be asked at (``meta["ask_at"]``: a message position or "end",
    from a questions sidecar), None when it leaves it to the timing; -1 when that turn is not
    in this conversation."""
    at = probe.meta.get("ask_at")
    if at is None:
        return None
    if at == "end":
        return last
    return at if isinstance(at, int) and not isinstance(at, bool) and 0 <= at <= last else -1
