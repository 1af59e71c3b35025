"""Counting synthetic generations: tests that a reader takes a stored set instead of making it again.

A run keeps the synthetic conversations it replayed (the user cache's ``*.synth`` files, the run's
``datasets/`` copy). Whether a later command reused them or silently generated them again is
invisible in its output, so these tests count the generations themselves.
"""

from __future__ import annotations

import pytest
from rollsum_evals.data import synth
from rollsum_evals.data.types import Conversation


def count_generations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Patch `SyntheticConversation.conversation` to record the id of every conversation it
    generates from now on (in this test); returns the list it appends to."""
    generated: list[str] = []
    real = synth.SyntheticConversation.conversation

    def counted(self: synth.SyntheticConversation) -> Conversation:
        generated.append(self.id)
        return real(self)

    monkeypatch.setattr(synth.SyntheticConversation, "conversation", counted)
    return generated
