"""Models for a sweep: one fresh, cached, rate-limited model per Unit, and where caches live."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum.errors import RollsumError
from rollsum.models.base import Model
from rollsum_evals.rundir.unit_cache import UNIT_CACHE_FILE
from rollsum_evals.spec import components

CACHE_ENV = "ROLLSUM_CACHE_DIR"
log = logging.getLogger(__name__)
ModelBuilder = Callable[[str], "Model | None"]


def deterministic(spec: str) -> bool:
    """Models whose failures are results, not accidents (they fail the same way every time); a
    real API's failure may be a transient 429."""
    return components.of_model(spec).deterministic


@dataclass(slots=True)
class ModelFactory:
    """Builds a fresh summarizer/scoring model per Unit: cached, rate limited, never shared
    state that could make a Unit's result depend on which other Units ran before it.

    With a `budget`, a model that costs money is metered against the run's ledger *inside* the
    cache (cache -> limiter -> budget -> model), so a call the cache answers is never refused
    and never counted."""

    cache_path: Path | None = None
    limiter: Any = None
    budget: Any = None
    """`rollsum_evals.run.budget.BudgetSpec` or None."""
    caches: list[Any] = field(default_factory=list)
    _file: Any = None
    _unusable: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, spec: str) -> Model | None:
        if components.is_builtin(spec):
            return None
        from rollsum.models import from_spec

        model: Model = from_spec(spec)
        if self.budget is not None:
            from rollsum_evals.run.budget import budgeted

            model = budgeted(model, spec, self.budget) or model
        if self.limiter is not None:
            from rollsum.models.limits import LimitedModel

            model = LimitedModel(model, self.limiter)
        if self.cache_path is not None:
            from rollsum.models.cache import CachedModel, CacheFile

            with self._lock:  # one set of connections for every Unit's model
                if self._file is None and not self._unusable:
                    try:
                        self._file = CacheFile(self.cache_path, "on")
                    except (RollsumError, OSError) as err:
                        # a speed-up, not a requirement (docs/sweeps.md): warn once, go uncached
                        self._unusable = True
                        log.warning("model cache %s unusable (%s): model calls are not cached", self.cache_path,
                                    getattr(err, "strerror", None) or err)
                if self._file is None:
                    return model
                cached = CachedModel(model, self._file)
                self.caches.append(cached)
            model = cached
        return model

    def close(self) -> None:
        """Close the shared cache file once no Unit uses it (end of the sweep or worker)."""
        with self._lock:
            file, self._file = self._file, None
        if file is not None:
            file.close()

    def stats(self) -> dict[str, int]:
        total: dict[str, int] = {}
        with self._lock:
            for c in self.caches:
                for k, v in c.stats.to_dict().items():
                    total[k] = total.get(k, 0) + int(v)
        return total


def close_model(model: Model | None) -> None:
    inner: Any = model
    while inner is not None:
        close = getattr(inner, "close", None)
        if callable(close):
            close()
            return
        inner = getattr(inner, "inner", None)


def user_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "rollsum"))


def cache_path_for(mode: str, run_dir: Path) -> Path | None:
    """The model cache of a spec's ``cache`` mode: ``off``, ``run`` (in the run dir), ``user``."""
    if mode == "off":
        return None
    if mode == "run":
        return run_dir / "cache" / "models.sqlite"
    return user_cache_dir() / "models.sqlite"


def unit_cache_path_for(mode: str, enabled: bool) -> Path | None:
    """Only the shared user cache can serve another run: a run-local one would only ever be
    read by ``--resume``, which does not read the Unit cache by design."""
    if mode != "user" or not enabled:
        return None
    return user_cache_dir() / UNIT_CACHE_FILE
