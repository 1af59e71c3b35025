"""``--max-cost-usd``: a hard cap on real spend, enforced call by call.

Real spend is what missed the model cache (summarizer and scoring-model calls; the main model is
simulated). Estimating a whole Unit's cost before starting it cannot hold a cap: a Unit can cost
more than any estimate of it (the issue: ``--max-cost-usd 0.10`` spent $0.98). So every paid
call goes through `BudgetedModel`, which *reserves* the call's worst-case cost before sending
it — its request tokens (counted generously, see `ESTIMATE_CALIBRATION`) and its full
``max_tokens`` of output at the model's price — and refuses the call (`BudgetRefused`) when
spent + reserved + this call would pass the cap. After the call the reservation is replaced by
what the call actually cost (nothing for a cache hit or a call that failed unanswered; what the
provider billed for one answered but unusable: a refusal, a reply with no text). Spent therefore never
passes the cap, whatever the number of threads or worker processes.

The account is shared through the run directory (`FileAccount`: a small JSON file guarded by an
``flock`` on a lock file), which is what makes it hold across worker processes as well as
threads. The first refusal marks the account stopped: no further paid call is sent, the Unit
that was refused ends as ``stopped: budget``, and no further Unit starts.

Without a cap the account is kept all the same whenever the run has a model that costs money
(with an infinite cap: nothing is refused): it is the only record of what a killed invocation
spent, so the manifest's ``spent_usd`` after a SIGKILL and ``--resume`` still counts every paid
call (`metered`). A run of free models has no account.

An *account*, not a "ledger": in this project the ledger is the library's fact ledger
(`rollsum.ledger`, what a summary pins); the file is still ``budget.json``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rollsum.errors import ModelError
from rollsum.models.base import Completion, CompletionRequest, Model, ModelWrapper
from rollsum.models.batch import BATCH_DISCOUNT
from rollsum.tokens import HeuristicCounter
from rollsum.types import Usage
from rollsum_evals.replay import BudgetRefused
from rollsum_evals.rundir.integrity import own_file
from rollsum_evals.scoring.cost import price
from rollsum_evals.spec import components

ACCOUNT_FILE = "budget.json"
log = logging.getLogger(__name__)
ESTIMATE_CALIBRATION = 1.5
"""Request tokens are estimated at chars/4 × this: above Claude's tokenizer on English text
(× 1.15, docs/models.md) with room to spare, so a reservation is an upper bound unless a text
tokenizes worse than ~2.7 characters a token. Output is reserved at the request's full
``max_tokens``, which a provider never exceeds."""

_LOCK = threading.Lock()
"""flock excludes other processes (and other open file descriptions); this lock keeps threads
of one process from interleaving their read-modify-write even on platforms where flock is
per-process."""


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """What a worker (thread or process) needs to reach the run's account: plain, picklable.

    With ``--executor ray`` the account is a Ray actor (`actor`, a handle) that every worker on
    every node reaches, instead of the run directory's file: workers need no shared file
    system, and the driver alone writes ``budget.json`` (`rollsum_evals.run.ray_executor`)."""

    path: str
    cap: float
    actor: Any = None

    def account(self) -> Account:
        if self.actor is not None:
            return ActorAccount(self.actor)
        return FileAccount(Path(self.path))


@dataclass(frozen=True, slots=True)
class AccountState:
    cap: float
    spent: float = 0.0
    reserved: float = 0.0
    stopped: bool = False


class Account(Protocol):
    """What `BudgetedModel` and the dispatcher need of a account: a file (`FileAccount`), or
    the in-memory one (`LocalAccount`) a Ray actor holds for a whole cluster."""

    def state(self) -> AccountState: ...

    def reserve(self, usd: float) -> bool: ...

    def settle(self, reserved: float, actual: float) -> None: ...


class ActorAccount:
    """A worker's view of the cluster's account actor (the `Account` protocol; the actor itself is
    `rollsum_evals.run.ray_executor.AccountActor`). Here, not there, so that reaching a account
    never imports the Ray executor (the executor imports this module)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self.actor, method).remote(*args))

    def state(self) -> AccountState:
        state: AccountState = self._call("state")
        return state

    def reserve(self, usd: float) -> bool:
        return bool(self._call("reserve", usd))

    def settle(self, reserved: float, actual: float) -> None:
        self._call("settle", reserved, actual)


def reserved_state(s: AccountState, usd: float) -> tuple[AccountState, bool]:
    """The account after asking to reserve `usd`: refused (and stopped) when it could pass the cap."""
    if s.stopped or s.spent + s.reserved + usd > s.cap:
        return AccountState(s.cap, s.spent, s.reserved, stopped=True), False
    return AccountState(s.cap, s.spent, s.reserved + usd, s.stopped), True


def settled_state(s: AccountState, reserved: float, actual: float) -> AccountState:
    return AccountState(s.cap, s.spent + actual, max(0.0, s.reserved - reserved), s.stopped)


class LocalAccount:
    """The account's rules on a state in memory, behind one lock: what the cluster's account
    actor holds (one process, so one lock is all it needs)."""

    def __init__(self, state: AccountState) -> None:
        self._state = state
        self._lock = threading.Lock()

    def state(self) -> AccountState:
        with self._lock:
            return self._state

    def reserve(self, usd: float) -> bool:
        with self._lock:
            self._state, ok = reserved_state(self._state, usd)
            return ok

    def settle(self, reserved: float, actual: float) -> None:
        with self._lock:
            self._state = settled_state(self._state, reserved, actual)


class FileAccount:
    """Spent and reserved dollars of one run, in ``<run dir>/budget.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    @classmethod
    def start(cls, run_dir: Path, cap: float, spent: float = 0.0) -> FileAccount:
        """A fresh account for this invocation (a resume carries the run's earlier spend; what a
        killed run had reserved is gone with its calls).

        The earlier spend is the larger of `spent` (the manifest's) and the ledger's own: a run
        killed by SIGKILL (or the OOM killer) never rewrote its manifest, whose ``spent_usd`` is
        still what it was when that invocation started, while the ledger settled every paid call
        it made. Taking the manifest's alone let each killed-and-resumed invocation spend the
        whole cap again."""
        account = cls(run_dir / ACCOUNT_FILE)
        with account._locked():
            try:
                spent = max(spent, account._read().spent)
            except FileNotFoundError:
                pass  # a run resumed with a cap for the first time: the manifest is all there is
            except (ValueError, KeyError, TypeError) as err:
                log.warning("%s: not a spend ledger (%s); the run's earlier spend is taken from its manifest",
                            account.path, err)
            account._write(AccountState(cap=cap, spent=spent))
        return account

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The account's files are a run directory's files: never followed through a link (a
        received directory's ``budget.json.lock`` linking elsewhere would create or lock the
        file it names, and its ``budget.json`` would be read from there)."""
        with _LOCK:
            own_file(self.path)
            fd = os.open(own_file(self.lock_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def _read(self) -> AccountState:
        d = json.loads(self.path.read_text(encoding="utf-8"))
        cap = math.inf if d["cap"] is None else float(d["cap"])  # None: no cap, spend still kept
        return AccountState(cap=cap, spent=float(d["spent"]), reserved=float(d["reserved"]),
                           stopped=bool(d["stopped"]))

    def _write(self, s: AccountState) -> None:
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
        cap = None if math.isinf(s.cap) else s.cap  # JSON has no infinity
        tmp.write_text(json.dumps({"cap": cap, "spent": s.spent, "reserved": s.reserved,
                                   "stopped": s.stopped}), encoding="utf-8")
        os.replace(tmp, self.path)

    def state(self) -> AccountState:
        with self._locked():
            return self._read()

    def reserve(self, usd: float) -> bool:
        """Set `usd` aside for a call about to be sent; False (and the account stopped) when that
        could pass the cap or the account is already stopped."""
        with self._locked():
            s, ok = reserved_state(self._read(), usd)
            self._write(s)
            return ok

    def settle(self, reserved: float, actual: float) -> None:
        """A reserved call finished: release its reservation, add what it actually cost."""
        with self._locked():
            self._write(settled_state(self._read(), reserved, actual))

    def record(self, state: AccountState) -> None:
        """Replace the file's state with one kept elsewhere (the cluster's account actor, at the
        end of a Ray run): what the manifest's ``spent_usd`` is then read from."""
        with self._locked():
            self._write(state)


class BudgetedModel(ModelWrapper):
    """Sends a call only when its worst-case cost fits in the account (see the module docstring).

    `spec` is the model spec whose prices apply (the Unit's summarizer model or the plan's QA
    model): the same prices the reported cost uses."""

    def __init__(self, inner: Model, account: Account, spec: str,
                 counter: HeuristicCounter | None = None) -> None:
        super().__init__(inner)
        self.account = account
        self.spec = spec
        self.counter = counter or HeuristicCounter(calibration=ESTIMATE_CALIBRATION)

    def worst_case(self, request: CompletionRequest) -> float:
        tokens = self.counter.count(request.system) + sum(self.counter.count_message(m) for m in request.messages)
        return price(self.spec, Usage(input_tokens=tokens, output_tokens=max(1, request.max_tokens), calls=1))

    def reserve_batch(self, requests: Sequence[CompletionRequest]) -> float:
        """A Message Batch is paid for when it is created (`rollsum.models.batch.BatchBudget`):
        its worst case at the batch price is reserved before it is sent, or it is refused. Its
        answers were charged as they were used, so a cap reached by one Unit's answers left the
        other Units' batches, already paid, uncounted: ``--max-cost-usd 0.01`` spent about
        $0.019 while ``spent_usd`` said $0.0034."""
        reserved = sum(self.worst_case(r) for r in requests) * BATCH_DISCOUNT
        if not self.account.reserve(reserved):
            raise BudgetRefused(f"message batch refused: it could pass --max-cost-usd (up to ${reserved:.4f})")
        return reserved

    def settle_batch(self, reserved: float, billed: Usage | None) -> None:
        actual = reserved if billed is None else price(self.spec, billed) * BATCH_DISCOUNT
        self.account.settle(reserved, actual)

    def complete(self, request: CompletionRequest) -> Completion:
        if _prepaid(self.inner, request):  # a batch's answer: charged when the batch came back
            return self.inner.complete(request)
        reserved = self.worst_case(request)
        if not self.account.reserve(reserved):
            raise BudgetRefused(f"model call refused: it could pass --max-cost-usd (up to ${reserved:.4f})")
        actual = 0.0
        try:
            c = self.inner.complete(request)
            actual = 0.0 if c.cached or c.batched else price(self.spec, c.usage)
            return c
        except ModelError as err:  # answered but unusable (a refusal, no text): billed all the same
            actual = price(self.spec, err.billed) if err.billed is not None else 0.0
            raise
        finally:
            self.account.settle(reserved, actual)


def _prepaid(model: Model, request: CompletionRequest) -> bool:
    """Whether a layer under a `BudgetedModel` answers `request` from a paid Message Batch."""
    from rollsum.models.batch import layers

    return any(bool(getattr(m, "served", None) and m.served(request)) for m in layers(model))  # type: ignore[attr-defined]


def needs_budget(spec: str) -> bool:
    """Only models that cost money are metered against the cap."""
    return not components.of_model(spec).free


def metered(max_cost_usd: float | None, specs: Iterable[str]) -> float | None:
    """The cap of the run's account, or None when the run needs none: with ``--max-cost-usd``
    its value; else infinity when any of the run's model `specs` costs money (the spend is kept,
    nothing is refused); else None."""
    if max_cost_usd is not None:
        return max_cost_usd
    return math.inf if any(needs_budget(s) for s in specs if s) else None


def budgeted(model: Model | None, spec: str, budget: BudgetSpec | None) -> Model | None:
    """`model` behind the run's account when the run keeps one (`metered`) and the model costs money."""
    if model is None or budget is None or not needs_budget(spec):
        return model
    return BudgetedModel(model, budget.account(), spec)


def check_cap(max_cost_usd: float | None) -> None:
    """``nan`` compares false with everything, so it would silently disable the cap."""
    from rollsum.errors import ConfigError

    if max_cost_usd is not None and (math.isnan(max_cost_usd) or max_cost_usd < 0):
        raise ConfigError(f"--max-cost-usd {max_cost_usd}: expected a non-negative number of dollars")
