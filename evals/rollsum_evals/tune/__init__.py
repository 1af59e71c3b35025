"""`rollsum tune`: find a configuration by search (Optuna) instead of a grid.

`space` parses the spec's ``[tune]`` table, `evaluate` runs one configuration on the first few
conversations through the normal sweep machinery, `search` is the ask-and-tell loop with
successive halving and resume, `output` writes what it found (docs/tuning.md).
"""
