"""rollsum: keep a long chat inside its context budget with a rolling summary you can measure.

    from rollsum import RollingSummarizer, Message
    rs = RollingSummarizer.from_preset("since-last")          # offline, extractive
    rs = RollingSummarizer.from_preset("token-ratio", model="anthropic:claude-haiku-4-5")
    for m in chat: rs.add(Message("user", m))
    messages = rs.context(system="You are a helpful assistant.")
    system, turns = rs.to_anthropic(system="You are a helpful assistant.")   # client.messages.create
    rs = RollingSummarizer.from_preset("since-last", store=SQLiteStore("chat.db"), conversation_id="c1")
"""

from rollsum import presets
from rollsum.context import ContextFormat
from rollsum.engine import RollingSummarizer
from rollsum.errors import ConfigError, MissingCredentials, ModelError, RollsumError, SummarizeError
from rollsum.policies import Decision, Policy, WindowState
from rollsum.settings import EngineSettings
from rollsum.store import MemoryStore, SQLiteStore
from rollsum.tokens import HeuristicCounter, TokenCounter
from rollsum.types import Message, SummaryEvent, SummaryRecord, Usage

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "ContextFormat", "Decision", "EngineSettings", "HeuristicCounter", "MemoryStore", "Message",
    "MissingCredentials", "ModelError", "Policy", "RollingSummarizer", "RollsumError", "SQLiteStore", "SummarizeError",
    "SummaryEvent", "SummaryRecord", "TokenCounter", "Usage", "WindowState", "__version__", "presets",
]
