"""What a component *is*, declared once on the component and read wherever it matters.

A harness has to know whether a summarizer model needs the network, costs money, answers the
same request the same way every time, and whether the prompt template changes what it writes.
Those facts used to be spelled out in scattered lists of names; now each model backend declares
them at its registration (`rollsum.models.spec.BACKENDS`) and each summarizer class on itself
(`ExtractiveSummarizer.capabilities`), so adding a backend is one class plus one registration
and nothing else has to learn its name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Capabilities:
    offline: bool = False
    """Needs no network and no API key."""
    free: bool = False
    """A call costs nothing (no price applies)."""
    deterministic: bool = False
    """The same request always gets the same answer: a failure is a result, not an accident,
    and a replay can be cached and gated exactly."""
    follows_prompt: bool = True
    """The prompt template changes what it writes. False (prompt-blind: an extractive
    summarizer, a scripted fake model) means comparing prompts on it measures nothing."""


ONLINE_MODEL = Capabilities()
OFFLINE_SCRIPTED = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=False)
OFFLINE_MODEL = Capabilities(offline=True, free=True, deterministic=True, follows_prompt=True)
