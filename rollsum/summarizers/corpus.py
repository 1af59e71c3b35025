"""How often each word occurs in the conversation so far: the document frequencies behind salience.

"Specific to this conversation" is a property of the whole conversation, not of one span: in an
agent transcript "test", "edit" and "function" are in hundreds of sentences and say little,
while a ticket number said once says a lot. A span of ten messages cannot tell them apart, so
the extractive summarizer keeps, per conversation, the number of sentences seen (``n``) and how
many contained each word key (``df``), updated with every span it summarizes.

With them, the position in the conversation of each sentence of the summary they led to: a
summary line does not say where it came from, and coverage across time needs to know.

The statistics are keyed by the summary text they lead to, so they follow the summary chain
exactly, whatever happens around the call:

- the next call's ``previous.text`` is the text this call produced: the statistics continue;
- the engine could not commit that summary (store error) and calls again with the older
  ``previous``: the last span's counts are rolled back first, so nothing is counted twice;
- anything else (a process restart, an engine rebuilt for every request, a previous summary
  written by another summarizer, a conversation evicted from the cache): the caller rebuilds
  them (`checkout`'s ``rebuild``). After a restart the extractive summarizer counts again
  every message the chain already covers (read from the store, `SummaryRequest.covered`) and
  takes the positions its previous summary saved with the record, which are the statistics the
  chain had; after another summarizer's summary (it is that one's fallback), or without the
  messages, it takes the previous summary's lines, as an uninterrupted chain does there.

So a replay of the same conversation gives byte-identical summaries, and so does a resumed one
(a server that rebuilds its engine from the store for every message gets the summaries of one
long-lived engine: when a restart took the statistics from the previous summary's lines, such
a server's LoCoMo retention was up to 0.07 lower). Memory is bounded: `max_conversations`
entries, least recently used evicted; each holds one vocabulary-sized table.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

MAX_CONVERSATIONS = 256
_N_LOGS = 4096
_LOGS = tuple(math.log(d) if d else 0.0 for d in range(_N_LOGS))
"""ln(df) for the common small document frequencies (0 counts as 1): a table lookup is the same
float as the call."""
_RECURRENCE = tuple(min(1.5, 1.0 + 0.15 * ld) for ld in _LOGS)
"""`Counts.recurrence` by frequency, for the same frequencies."""
SIZE_BITS = 4
"""Significant bits of the conversation's size (``n``) that the factors see (`table_size`)."""


def table_size(n: int) -> int:
    """``n`` rounded down to `SIZE_BITS` significant bits (exact below ``2 ** SIZE_BITS``): the
    size the summarizer's factors are computed for (`Counts.factor_table` with ``rounded``).

    A factor sees ``n`` only through ``ln(n + 1)``, which this lowers by less than ``ln(8/7)``
    = 0.134: a specificity ``1 - ln d / ln(n + 1)`` drops by at most ``0.134 ln d / (ln(n + 1)
    ln(size + 1))``, under 0.05 at n = 16 and 0.016 at n = 4,000 (for a word in every
    sentence), and by less the rarer the word. In exchange the factors stay the same from one
    summary to the next until ``n`` passes the next of eight steps per doubling: a
    conversation's table is computed about once per octave-eighth instead of once per summary
    (on a mixed stream, 44 tables for 200 summaries over 4,000 messages; fewer the longer it runs)."""
    shift = n.bit_length() - SIZE_BITS
    return n if shift <= 0 else (n >> shift) << shift


class FactorTable(dict[int, float]):
    """A key's factors for one ``n``, filled on demand (`Counts.factor_table`), keyed by
    code: ``d`` for a word and ``~d`` (``-d - 1``) for a name, where ``d`` is the key's count
    in `Counts.df` and 0 (a key no sentence holds) counts as 1. The summarizer gets ``d`` from
    ``df[key]`` (a Counter gives 0 for a missing key) and a name's code with ``d ^ -1``."""

    __slots__ = ("_inv", "_log_n1", "n")

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self._log_n1 = math.log(n + 1)
        self._inv = 1.0 / self._log_n1 if n > 0 else 0.0

    def __missing__(self, code: int) -> float:
        # a few lines: it runs for each distinct code of every summary (~90)
        if code >= 0:
            spec = (self._log_n1 - (_LOGS[code] if code < _N_LOGS else math.log(code))) * self._inv
            out = spec if spec > 0.0 else 0.0
        else:
            d = ~code
            ld = _LOGS[d] if d < _N_LOGS else math.log(d)
            spec = (self._log_n1 - ld) * self._inv
            rec = _RECURRENCE[d] if d < _N_LOGS else min(1.5, 1.0 + 0.15 * ld)
            out = rec * math.sqrt(spec if spec > 0.0 else 0.0)
        self[code] = out
        return out


class _Flat(FactorTable):
    """The table while at most one sentence has been seen: every factor is 1."""

    __slots__ = ()

    def __missing__(self, code: int) -> float:
        self[code] = 1.0
        return 1.0


@dataclass(slots=True)
class Counts:
    n: int = 0
    """Sentences seen so far."""
    df: Counter[str] = field(default_factory=Counter)
    """Sentences that contained each word key (at least 1: a key no sentence holds any more is
    deleted, so ``df[key]`` -- 0 for a key it does not hold -- is the key's code in `factor_table`)."""
    positions: dict[str, float] = field(default_factory=dict)
    """Where in the conversation (message index) each sentence of the summary these statistics
    led to was said: a summary line does not say it, and coverage needs it."""
    table: FactorTable | None = field(default=None, repr=False, compare=False)
    """The last `factor_table` (reused while the ``n`` it is for is unchanged)."""

    def add(self, docs: Iterable[Sequence[str]]) -> None:
        docs = list(docs)
        self.n += len(docs)
        self.df.update(chain.from_iterable(docs))  # counted in C

    def remove(self, docs: Iterable[Sequence[str]]) -> None:
        docs = list(docs)
        self.n -= len(docs)
        df = self.df
        df.subtract(chain.from_iterable(docs))
        for k in {k for d in docs for k in d}:
            if df[k] <= 0:
                del df[k]

    def factor_table(self, rounded: bool = False) -> FactorTable:
        """A key's factors by its document frequency, computed when first asked: under code
        ``d`` (its count in `df`; 0, a key no sentence holds, counts as 1) a word's
        `specificity`, under ``~d`` the multiplier of a name or number, ``recurrence ×
        √specificity`` (central when it recurs, boilerplate when everywhere). Both depend on
        the key only through its frequency (and ``n``): a summary's few hundred keys share
        about a hundred frequencies, so the summarizer looks every key up in it (in C) and each
        factor is computed once.

        `rounded`: for ``n`` rounded down by `table_size`, so the same table (kept here, with
        the factors computed so far) serves every summary until ``n`` passes the next step.
        The last table is kept either way; it is a function of its ``n`` alone."""
        size = table_size(self.n) if rounded else self.n
        table = self.table
        if table is None or table.n != size:
            table = self.table = FactorTable(size) if size > 1 else _Flat(size)
        return table

    def factors(self, keys: Iterable[str], names: Iterable[str] | None = None,
                table: FactorTable | None = None) -> tuple[dict[str, float], dict[str, float]]:
        """For each key: its `specificity`, and the multiplier of a name or number
        (`factor_table`), the latter only for `names` when given (default: every key).
        `table`: this `n`'s `factor_table` when the caller already has one (its factors are
        computed once for all the keys it is asked for)."""
        keys = list(keys)
        table = self.factor_table() if table is None else table
        df = self.df  # a Counter: 0 for a key it does not hold
        return {k: table[df[k]] for k in keys}, {k: table[~df[k]] for k in (keys if names is None else names)}

    def specificity(self, key: str) -> float:
        """1 for a word seen in one sentence, falling to 0 for a word in every sentence:
        ``ln((n + 1) / df) / ln(n + 1)``, an inverse document frequency scaled to [0, 1]."""
        return self.factors((key,))[0][key]

    def recurrence(self, key: str) -> float:
        """``min(1.5, 1 + 0.15 ln df)``: a name or number that keeps coming back is central."""
        d = self.df.get(key) or 1
        return min(1.5, 1.0 + 0.15 * math.log(d))


@dataclass(slots=True)
class _Chain:
    head: str
    counts: Counts
    before: str | None = None
    """The head before the last update, that update's documents and the positions before it
    (to roll it back)."""
    last: tuple[Sequence[str], ...] = ()
    before_positions: dict[str, float] = field(default_factory=dict)


class Corpus:
    """Per-conversation document frequencies, following the summary chain (module docstring).

    Use: ``counts, found = corpus.checkout(...)``; add the span's documents to ``counts``; score;
    then ``corpus.commit(...)`` with the text produced. A call that fails between the two leaves
    no chain behind (the next call rebuilds), so a half-counted span can never be reused.
    """

    def __init__(self, max_conversations: int = MAX_CONVERSATIONS) -> None:
        self.max_conversations = max_conversations
        self._chains: OrderedDict[str, _Chain] = OrderedDict()
        self._lock = threading.Lock()

    def checkout(self, conversation: str, previous_text: str,
                 rebuild: Callable[[], Counts]) -> tuple[Counts, bool]:
        """The statistics that led to `previous_text` (taken out of the cache), and whether they
        were found; when not, they are `rebuild()`."""
        with self._lock:
            chain = self._chains.pop(conversation, None)
        if chain is not None:
            if chain.head == previous_text:
                return chain.counts, True
            if chain.before is not None and chain.before == previous_text:
                chain.counts.remove(chain.last)
                chain.counts.positions = chain.before_positions
                return chain.counts, True
        return rebuild(), False

    def commit(self, conversation: str, previous_text: str, previous_positions: dict[str, float],
               counts: Counts, docs: Sequence[Sequence[str]], new_text: str) -> None:
        """Record `counts` (which already include the span's `docs`, and hold the positions of
        `new_text`'s sentences) as leading to `new_text`."""
        with self._lock:
            self._chains[conversation] = _Chain(new_text, counts, previous_text, tuple(docs), previous_positions)
            while len(self._chains) > self.max_conversations:
                self._chains.popitem(last=False)

    def __len__(self) -> int:
        return len(self._chains)
