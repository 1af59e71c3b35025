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
