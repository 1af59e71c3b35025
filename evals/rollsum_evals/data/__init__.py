"""Conversation datasets: the canonical records, loaders, validator and synthetic generator.

Everything a run needs from data goes through `load` / `iter_conversations`, which accept a
file (canonical JSONL, chat export, LoCoMo JSON), a Hugging Face dataset (directory, parquet,
`hf:NAME`) or a generator spec (`synth:chat?conversations=4&messages=300&seed=1`).
"""

from __future__ import annotations

from rollsum_evals.data.checks import Issue, RecordError
from rollsum_evals.data.formats import LOADERS, guess_format, iter_conversations, load, parse_synth_spec
from rollsum_evals.data.jsonl import write_jsonl, write_streamed
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, dataset_hash
from rollsum_evals.data.types import PROBE_CATEGORIES, Conversation, Probe, Reference
from rollsum_evals.data.validate import ValidationReport, validate

__all__ = [
    "DEFAULT_LIMITS",
    "LOADERS",
    "PROBE_CATEGORIES",
    "Conversation",
    "Issue",
    "Limits",
    "Probe",
    "RecordError",
    "Reference",
    "ValidationReport",
    "dataset_hash",
    "guess_format",
    "iter_conversations",
    "load",
    "parse_synth_spec",
    "validate",
    "write_jsonl",
    "write_streamed",
]
