"""The model layer: one `Model` protocol, real and offline models, and wrappers that cache,
record/replay, rate-limit and price calls. Build models from spec strings with `from_spec`.

Heavy or optional dependencies (the anthropic SDK, llama-cpp-python, tiktoken) are imported
only by the modules that need them.
"""

from __future__ import annotations

from rollsum.models.base import Completion, CompletionRequest, Model
from rollsum.models.cache import CachedModel, CacheMissError, CacheStats
from rollsum.models.cassette import RecordingModel, ReplayMissError, ReplayModel
from rollsum.models.fake import FakeModel
from rollsum.models.limits import LimitedModel, RateLimiter
from rollsum.models.pricing import Price, PriceTable, cost_usd, price_for
from rollsum.models.retrying import RetryingModel
from rollsum.models.spec import BACKENDS, Backend, capabilities, from_spec, spec_forms

__all__ = [
    "BACKENDS",
    "Backend",
    "CacheMissError",
    "CacheStats",
    "CachedModel",
    "Completion",
    "CompletionRequest",
    "FakeModel",
    "LimitedModel",
    "Model",
    "Price",
    "PriceTable",
    "RateLimiter",
    "RecordingModel",
    "ReplayMissError",
    "ReplayModel",
    "RetryingModel",
    "capabilities",
    "cost_usd",
    "from_spec",
    "price_for",
    "spec_forms",
]


def __getattr__(name: str) -> object:
    # AnthropicModel, LocalModel and the counters load the SDK / optional extras on first use.
    lazy = {
        "AnthropicModel": "rollsum.models.anthropic_model",
        "LocalModel": "rollsum.models.local",
        "AnthropicTokenCounter": "rollsum.models.counting",
        "BPETokenCounter": "rollsum.models.counting",
    }
    if name in lazy:
        import importlib
        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(f"module 'rollsum.models' has no attribute {name!r}")
