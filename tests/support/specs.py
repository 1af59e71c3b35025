"""Sweep specs several harness tests run as they are (a spec is text: nothing here imports
the harness)."""

from __future__ import annotations

SMALL_FINISHED = """
name = "small"
models = ["fake:mode=extractive"]
context_window = 1500
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=2&messages=40&seed=3"

[[configs]]
preset = "since-last"

[[configs]]
preset = "truncate"
"""
"""Two configurations over two short synthetic chats, offline: a run that finishes in seconds."""


GATED_TWO_UNITS = """
name = "gated"
context_window = 1500
cache = "off"

[[datasets]]
name = "chat"
source = "synth:chat?conversations=1&messages=40&seed=5"

[[configs]]
preset = "truncate"

[[configs]]
preset = "since-last"
summarizer = "tests.support.gate:GatedSummarizer"
params = { messages_per_summary = 6, keep_last = 2 }
"""
"""Two Units on two jobs: the baseline's is journaled at once, the other waits at the test's
`tests.support.gate.Gate` (a kill or a signal then lands while a Unit is running, however slow
the machine)."""
