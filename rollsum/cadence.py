"""The counts behind an engine's rate limits and failure backoff, and their saved form (`Cadence`).

Why a value of its own: every rule that says *when* a summarizer may be called reads the same
dozen counts -- messages added, attempts, failures in a row and the message at which the
backoff ends, the primary summarizer's own backoff, the window guard's last compaction,
evictions since the last summary, the lowest context seen since it. They are also what must
survive a restart (`Store.save_cadence`): an engine rebuilt from its store for every message
has to make the attempts a long-lived one makes. Keeping them together keeps the rules (`backoff`,
`in_backoff`, `rate_allows`) next to the counts they read, and the saved form in one place.

Message counts are saved absolute (``total_added`` at an event), so they stay true however many
messages arrive before the next engine reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rollsum.errors import StoreUnavailable
from rollsum.redact import redacting_logger
from rollsum.store.base import Store, StoredMessage

log = redacting_logger(__name__)

VERSION = 1


@dataclass(slots=True)
class Cadence:
    """One conversation's counts (mutable: the engine updates them as messages and summaries
    come; only the engine that holds the conversation's claim writes them)."""

    total_added: int = 0
    """Messages ever added, pinned system messages excluded."""
    since_summary: int = 0
    """Messages added since the last successful summary."""
    since_attempt: int | None = None
    """Messages added since the last attempt, successful or not (None: none yet)."""
    attempts: int = 0
    failures: int = 0
    """Failed attempts in a row."""
    retry_at: int = 0
    """`total_added` at which the failure backoff ends."""
    model_failures: int = 0
    """Failures in a row of the primary summarizer that the fallback covered."""
    model_retry_at: int = 0
    guard_at: int | None = None
    """Tokens added (the engine's running total) at the last guard compaction."""
    total_evicted: int = 0
    evicted_since: int = 0
    """Messages moved to pending since the last summary."""
    min_tokens_since: int | None = None
    """Lowest context size seen since the last summary (hysteresis)."""
    cleared_through: int | None = None
    """Sequence number of the newest tool result clearing has replaced (None: none yet): a
    resumed engine clears the results up to it again (`Window.clear_through`), as the one it
    resumes still shows them."""

    def resumed(self, rows: Sequence[StoredMessage], added: int, summaries: int, pending: int) -> None:
        """The counts as a conversation's stored rows imply them, for a store that kept no
        cadence (written before it was kept, or one that cannot keep it): rate limits resume
        from the successful summaries and everything that left the window."""
        self.total_added = added
        self.attempts = summaries
        self.total_evicted = pending + sum(1 for r in rows if r.state == "covered")
        covered_seq = max((r.seq for r in rows if r.state == "covered"), default=-1)
        self.since_summary = sum(1 for r in rows if r.seq > covered_seq and r.message.role != "system")
        self.evicted_since = pending

    def in_backoff(self) -> bool:
        return self.failures > 0 and self.total_added < self.retry_at

    def rate_allows(self, every: int) -> bool:
        """`min_messages_per_attempt` = `every`: the k-th attempt needs k × that many messages."""
        return every == 0 or (self.attempts + 1) * every <= self.total_added

    def primary_blocked(self) -> bool:
        """The primary summarizer failed (the fallback answered) and is backing off."""
        return self.model_failures > 0 and self.total_added < self.model_retry_at

    def failed(self, cooldown: int, most: int) -> None:
        """Back off: the k-th failure in a row blocks attempts for `backoff(k)` messages."""
        self.failures += 1
        self.retry_at = self.total_added + backoff(self.failures, cooldown, most)

    def primary_outcome(self, failed: bool, answered: bool, cooldown: int, most: int) -> None:
        """The primary summarizer's own backoff: a failure the fallback covered counts like any
        failure (the fallback is then used alone until the backoff ends); an answer resets it."""
        if failed:
            self.model_failures += 1
            self.model_retry_at = self.total_added + backoff(self.model_failures, cooldown, most)
        elif answered:
            self.model_failures = 0

    def attempted(self) -> None:
        self.since_attempt = 0
        self.attempts += 1

    def observed(self, context_tokens: int) -> bool:
        """The context's size after a round: the lowest since the last summary is kept. True
        when that changed it (the saved form then has to be written again)."""
        if self.min_tokens_since is None or context_tokens < self.min_tokens_since:
            self.min_tokens_since = context_tokens
            return True
        return False

    def summarized(self, added_at: int, pending: int) -> None:
        """A summary planned at `added_at` was committed; `pending` messages still wait."""
        self.since_summary = self.total_added - added_at
        self.evicted_since = pending
        self.failures = 0
        self.min_tokens_since = None

    def key(self) -> tuple[int | None, ...]:
        """What `saved` would say, cheaply: the engine compares it on every message and writes
        the store only when it changed (an attempt, a failure, an eviction)."""
        added = self.total_added
        return (self.attempts, None if self.since_attempt is None else added - self.since_attempt, self.failures,
                self.retry_at, self.model_failures, self.model_retry_at, self.guard_at, self.total_evicted,
                self.evicted_since, added - self.since_summary, self.min_tokens_since, self.cleared_through)

    def saved(self, key: tuple[int | None, ...] | None = None) -> dict[str, Any]:
        """The form `Store.save_cadence` keeps (from `key`, this cadence's `key()` when the
        caller just computed it: the engine compares it before saving)."""
        (attempts, last, failures, retry_at, model_failures, model_retry_at, guard_at, total_evicted, evicted_since,
         summary_at, low, cleared) = self.key() if key is None else key
        return {
            "version": VERSION, "attempts": attempts, "last_attempt_at": last,
            "failures": failures, "retry_at": retry_at,
            "model_failures": model_failures, "model_retry_at": model_retry_at,
            "guard_at": guard_at, "total_evicted": total_evicted, "evicted_since": evicted_since,
            "summary_at": summary_at, "min_tokens_since": low, "cleared_through": cleared,
        }

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take the saved counts (with `total_added` already known). Raises ValueError naming
        the first unreadable entry, having changed nothing: a damaged row changes nothing."""

        def num(key: str, optional: bool = False) -> int | None:
            value = saved.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{key}: expected a count, got {value!r}")
            return value

        attempts, failures, retry_at = num("attempts"), num("failures"), num("retry_at")
        model_failures, model_retry_at = num("model_failures"), num("model_retry_at")
        last, guard_at, low = num("last_attempt_at", True), num("guard_at", True), num("min_tokens_since", True)
        cleared = num("cleared_through", True)  # absent in a cadence saved before it was kept
        total_evicted, evicted_since, summary_at = num("total_evicted"), num("evicted_since"), num("summary_at")
        self.attempts = max(self.attempts, attempts or 0)
        self.since_attempt = None if last is None else max(0, self.total_added - last)
        self.failures, self.retry_at = failures or 0, retry_at or 0
        self.model_failures, self.model_retry_at = model_failures or 0, model_retry_at or 0
        self.guard_at = guard_at
        self.total_evicted, self.evicted_since = total_evicted or 0, evicted_since or 0
        self.since_summary = max(0, self.total_added - (summary_at or 0))
        self.min_tokens_since = low
        self.cleared_through = cleared


def backoff(failures: int, cooldown: int, most: int) -> int:
    """Messages to wait after `failures` failures in a row: cooldown × 2**(k−1), capped at
    `most` (`max_failure_backoff`, never below the cooldown itself)."""
    return min(cooldown * 2 ** min(failures - 1, 30), max(most, cooldown))


Key = tuple[int | None, ...]
"""`Cadence.key()`: what was last saved, compared to decide whether to save again."""


def save(store: Store, conversation_id: str, cadence: Cadence, key: Key | None = None) -> Key | None:
    """Save the cadence (the engine calls it when `Cadence.key` changed: at an attempt, a
    failure, an eviction, not on every message, and passes the `key` it compared: computed
    once, not three times, ~a fifth of a save); returns the key saved. A store without
    `save_cadence` (a third-party one) just does not keep it.

    A store whose file cannot be written now (`StoreUnavailable`: locked past its busy timeout,
    a full disk) is warned about and None returned, so the next change saves again: raised, it
    became the turn's only event ("internal error"), in place of the store failure or the
    summary the turn really had; the cadence is a rate limit, and no message depends on it."""
    if key is None:
        key = cadence.key()
    keep = getattr(store, "save_cadence", None)
    if callable(keep):
        try:
            keep(conversation_id, cadence.saved(key))
        except StoreUnavailable as err:
            log.warning("cadence not saved (saved again at its next change): %s", err)
            return None
    return key


def load(store: Store, conversation_id: str, cadence: Cadence) -> Key | None:
    """Restore the counts the store kept for a conversation into `cadence`; returns their key,
    or None when there were none or they were unreadable (then the counts the rows imply,
    `Cadence.resumed`, stay: rate limits resume from the stored summaries)."""
    read = getattr(store, "cadence", None)
    saved = read(conversation_id) if callable(read) else None
    if not saved:
        return None
    try:
        cadence.restore(saved)
    except ValueError as err:
        log.warning("conversation %s: saved cadence unreadable (%s); rate limits resume from the "
                    "stored summaries", conversation_id, err)
        return None
    return cadence.key()


__all__ = ["VERSION", "Cadence", "Key", "backoff", "load", "save"]
