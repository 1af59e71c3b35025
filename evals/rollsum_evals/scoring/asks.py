"""When probes are asked: a scoring choice, not part of the replay.

The trace records the context at every turn, so asking a probe 5 turns after its evidence, at
the end, or at any other turn is decided when the trace is scored. `rollsum score RUN --ages
...` re-asks a finished run's probes at other turns without replaying it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rollsum.types import Message
from rollsum_evals.data.types import Probe


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    """When probes are asked.

    ``end``: once, at the end of the conversation. ``after``: once, N turns after the probe's
    last evidence message. ``ages``: once per listed age (N turns after the evidence, when the
    conversation is that long), plus once at the end when ``end`` is true. Users ask about facts
    of every age; only a spread of ages shows what the verbatim tail is worth.
    """

    ask: str = "end"
    after_turns: int = 0
    ages: tuple[int, ...] = ()
    end: bool = True

    @property
    def key(self) -> str:
        if self.ask == "ages":
            return f"ages:{','.join(str(a) for a in self.ages)}{'+end' if self.end else ''}"
        return "end" if self.ask == "end" else f"after:{self.after_turns}"


def parse_timing(key: str) -> ProbeTiming:
    """The inverse of `ProbeTiming.key` (manifests and tables carry the key, a plain string).
    A malformed key is a ValueError naming it."""
    if key == "end":
        return ProbeTiming()
    kind, _, rest = key.partition(":")
    try:
        if kind == "after":
            n = int(rest)
            if n > 0:
                return ProbeTiming(ask="after", after_turns=n)
        elif kind == "ages":
            end = rest.endswith("+end")
            ages = tuple(sorted({int(a) for a in rest.removesuffix("+end").split(",") if a}))
            if ages and all(a > 0 for a in ages):
                return ProbeTiming(ask="ages", ages=ages, end=end)
    except ValueError:
        pass
    raise ValueError(f"probe timing {key!r}: expected 'end', 'after:N' or 'ages:A,B,...[+end]' "
                     "with positive integers")


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
            turns = [ev + a for a in timing.ages if ev + a <= last]
            if timing.end and last not in turns:
                turns.append(last)
        many = timing.ask == "ages"
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
