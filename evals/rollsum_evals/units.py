"""The Unit: one conversation replayed through one configuration (the replay identity).

A Unit is everything that can change what the engine does with the conversation (dataset
content hash, conversation, preset, parameters, prompt, summarizer model, seed, context window)
and nothing else; `replay_identity` is its id. How the replay is scored (scorers and their
versions, probe timing, the main model's prices, the QA model) is a `ScoringPlan` applied to
every Unit of a run, so a finished replay can be re-scored without replaying it (`rollsum
score`), and adding a scorer to a spec re-uses the replays. Units are plain frozen dataclasses of
strings and numbers: they pickle, so the executor can be threads, processes or Ray. How a spec
becomes Units is `rollsum_evals.spec.expand`.

A preset Unit made from a spec also carries its configuration as the library's typed value
(`rollsum.presets.PresetConfig`: the policy object, `EngineSettings`, the summarizer's choice),
made once per configuration when the spec is expanded and handed to the engine as it is. Its
parameters stay as canonical JSON too (`params_json`) because that is what JSON is needed for:
the Unit's id, its line in ``units.jsonl`` and the Unit cache's key. A Unit read back from JSON
has no typed value; `Unit.preset_config` decodes one, equal to the original (`configure`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rollsum.presets import PresetConfig, resolve


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
    configuration: PresetConfig | None = field(default=None, compare=False, repr=False)
    """The preset's configuration as typed values, when the Unit was expanded from a spec (None:
    read back from JSON, a memory, or made by hand; `preset_config` decodes it). Not part of the
    Unit's record or id: it is made from the fields above."""

    @property
    def params(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.params_json)
        return loaded

    def preset_config(self) -> PresetConfig:
        """The typed configuration the engine is built from: the one made when the spec was
        expanded, else decoded from `params_json` (equal to it)."""
        if self.configuration is not None:
            return self.configuration
        return configure(self.preset, self.params, self.context_window, self.prompt)

    def to_dict(self) -> dict[str, Any]:
        """The Unit's record (``units.jsonl``, journals, the Unit cache's key): its plain fields."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "configuration"}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Unit:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k != "configuration"})


def configure(preset: str, params: Mapping[str, Any], context_window: int, prompt: str) -> PresetConfig:
    """A preset Unit's configuration as the library's typed value (`rollsum.presets.resolve`):
    its params (less ``timestamps``, how the replay shows times), the Unit's window unless the
    params name one, its prompt when it has one. The one place a Unit's parameters become the
    engine's: the spec's expansion and the decode of a Unit read back from JSON both call it."""
    overrides = {k: v for k, v in params.items() if k != "timestamps"}
    overrides.setdefault("context_window", context_window)
    if prompt:
        overrides.setdefault("prompt", prompt)
    return resolve(preset, **overrides)


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
