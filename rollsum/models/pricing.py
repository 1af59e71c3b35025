"""Turning token usage into dollars from a dated price file.

Prices live in data (`prices.toml`, with its `as_of` date) rather than code so a price change
is a one-line diff and a user can substitute their own negotiated rates (``ROLLSUM_PRICES`` or
an explicit path). Offline models cost nothing; an unknown model costs 0.0 *and logs a warning*,
because a silently missing price makes a sweep look cheaper than it was.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.models.spec import BACKENDS, recorded
from rollsum.redact import redacting_logger
from rollsum.types import Usage

log = redacting_logger(__name__)

PRICES_ENV = "ROLLSUM_PRICES"
BUILTIN_SUMMARIZERS: tuple[str, ...] = ("extractive", "rule")
"""Names a config may give instead of a model: the offline summarizers, which cost nothing."""
_DATE_SUFFIX = re.compile(r"-\d{8}$")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    model: str = ""
    known: bool = True

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_read_tokens * self.cache_read
                + usage.cache_write_tokens * self.cache_write) / 1_000_000


FREE = Price(model="free")


def _field(path: str, model: str, row: dict[str, Any], name: str) -> float:
    value = row.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"price file {path}, [models.\"{model}\"], field {name!r}: "
                          f"expected a non-negative number, got {value!r}")
    return float(value)


class PriceTable:
    """One parsed price file; `price_for` resolves aliases, dated ids and spec prefixes."""

    def __init__(self, data: dict[str, Any], source: str = "<memory>") -> None:
        self.source = source
        self.as_of = str(data.get("as_of", ""))
        models = data.get("models")
        if not isinstance(models, dict) or not models:
            raise ConfigError(f"price file {source}: expected a [models.\"NAME\"] table per model")
        self._prices: dict[str, Price] = {}
        for model, row in models.items():
            if not isinstance(row, dict):
                raise ConfigError(f"price file {source}, [models.\"{model}\"]: expected a table")
            price = Price(input=_field(source, model, row, "input"),
                          output=_field(source, model, row, "output"),
                          cache_read=_field(source, model, row, "cache_read"),
                          cache_write=_field(source, model, row, "cache_write"), model=model)
            self._prices[model] = price
            for alias in row.get("aliases", []):
                self._prices[str(alias)] = price
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        if path is None:
            text = resources.files("rollsum.models").joinpath("prices.toml").read_text(encoding="utf-8")
            source = "rollsum/models/prices.toml"
        else:
            try:
                text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is no TOML
            except OSError as err:
                raise ConfigError(f"price file {path}: cannot read ({err.strerror})") from err
            except UnicodeDecodeError as err:
                raise ConfigError(f"price file {path}: invalid UTF-8 at byte {err.start} (expected a TOML "
                                  "file)") from None
            source = str(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"price file {source}: not valid TOML ({err})") from err
        return cls(data, source)

    def models(self) -> list[str]:
        return sorted({p.model for p in self._prices.values()})

    def price_for(self, model_name: str) -> Price:
        """The price of a model spec or API model id.

        ``anthropic:X`` and ``record:PATH:anthropic:X`` price as X; dated ids fall back to their
        undated alias; ``fake``, ``extractive``, ``local:`` and ``replay:`` are free (a replayed
        call pays nothing; to price what the recording cost, price the Completion's `model`,
        which is the recorded API model id).
        """
        name = recorded(model_name)
        head = name.split(":", 1)[0]
        backend = BACKENDS.get(head)
        if head in BUILTIN_SUMMARIZERS or (backend is not None and backend.capabilities.free):
            return FREE
        if head == "anthropic":
            name = name.split(":", 1)[1]
        for candidate in (name, _DATE_SUFFIX.sub("", name), name.removesuffix("-latest")):
            if candidate in self._prices:
                return self._prices[candidate]
        with self._lock:
            first = model_name not in self._warned
            self._warned.add(model_name)
        if first:
            log.warning("no price for model %r in %s (as of %s): its cost is counted as 0.0",
                        model_name, self.source, self.as_of)
        return Price(model=model_name, known=False)

    def cost_usd(self, model_name: str, usage: Usage) -> float:
        return self.price_for(model_name).cost(usage)


@functools.lru_cache(maxsize=8)
def _table_at(path: str | None) -> PriceTable:
    return PriceTable.load(path)


def default_table(path: str | Path | None = None) -> PriceTable:
    """The table from `path`, else ``$ROLLSUM_PRICES``, else the packaged file (each parsed once)."""
    chosen = path if path is not None else (os.environ.get(PRICES_ENV) or None)
    return _table_at(None if chosen is None else str(chosen))


def price_for(model_name: str, path: str | Path | None = None) -> Price:
    return default_table(path).price_for(model_name)


def cost_usd(model_name: str, usage: Usage, path: str | Path | None = None) -> float:
    return default_table(path).cost_usd(model_name, usage)
