"""Names derived from user text, made safe to be one path component (the one sanitiser).

A spec's ``name`` becomes the default run directory (``runs/<name>-<time>``), a run's name a
report directory, configuration labels become file names of plots and comparisons. Such text
can hold anything: ``../../x``, ``/abs/x``, a NUL, a shell glob, 5,000 characters, or an API
key (a spec named after the environment it came from). `safe_component` turns it into one
harmless component: secrets masked first (`rollsum.redact`), then every character outside a
small portable set replaced, no leading dot (no hidden file, no ``..``), bounded length.
`inside` joins such a component to a root and proves the result stays under it.
"""

from __future__ import annotations

import re
from pathlib import Path

from rollsum.errors import ConfigError
from rollsum.redact import redact

MAX_COMPONENT = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def safe_component(text: str, *, default: str = "run", max_len: int = MAX_COMPONENT) -> str:
    """`text` as one path component: ``[A-Za-z0-9._=+-]`` only, runs of anything else as one
    ``_``, no leading or trailing ``.``/``_``/``-``, at most `max_len` characters, `default`
    when nothing is left. Secrets are masked before anything else (a masked key leaves ``_``)."""
    cleaned = _UNSAFE.sub("_", redact(str(text))).strip("._-")
    return cleaned[:max_len].rstrip("._-") or default


def inside(root: str | Path, *parts: str) -> Path:
    """``root / part / ...`` with every part sanitised by `safe_component`, checked to resolve
    inside `root` (a ConfigError otherwise: a path outside the output root is never written)."""
    base = Path(root)
    path = base.joinpath(*(safe_component(p) for p in parts))
    resolved, top = path.resolve(), base.resolve()
    if resolved != top and top not in resolved.parents:
        raise ConfigError(f"{path}: resolves outside {base} ({resolved})")
    return path
