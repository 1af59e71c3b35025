"""The Unit: one conversation replayed through one configuration (the replay identity).

A Unit is everything that can change what the engine does with the conversation (dataset
content hash, conversation, preset, parameters, prompt, summarizer model, seed, context window)
and nothing else; `replay_identity` is its id. How the replay is scored (scorers and their
versions, probe timing, the main model's prices, the QA model) is a `ScoringPlan` applied to
every Unit of a run, so a finished replay can be re-scored without replaying it (`rollsum
score`), and adding a scorer to a spec re-uses the replays. Units are plain frozen dataclasses of
strings and numbers: they pickle, so the executor can be threads, processes or Ray. How a spec
becomes Units is `rollsum_evals.spec.expand`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Unit:
    """One conversation × configuration × model × seed. Plain, picklable data."""

    unit_id: str
    dataset: str
    conversation_id: str
    dataset_hash: str
    config: str
    """The configuration's label, unique in the run (not part of the id: it depends on what
    else the sweep varies)."""
    preset: str
    """A preset name, or the import path of the memory replayed (`rollsum_evals.spec.imports`)."""
    params_json: str
    prompt: str
    model: str
    seed: int
    context_window: int

    @property
    def params(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.params_json)
        return loaded

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Unit:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def unit_hash(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:20]


def replay_identity(dataset: str, conversation_id: str, dataset_hash: str, preset: str,
                    params: Mapping[str, Any], prompt: str, model: str, seed: int,
                    context_window: int, code: str = "") -> str:
    """The Unit id: a hash of exactly what the replay depends on. `code` fingerprints the
    components named by import path (absent for presets, whose code the run fingerprints)."""
    payload = {"dataset": dataset, "conversation_id": conversation_id,
               "dataset_hash": dataset_hash, "preset": preset, "params": dict(params),
               "prompt": prompt, "model": model, "seed": seed, "context_window": context_window}
    if code:
        payload["code"] = code
    return unit_hash(payload)
