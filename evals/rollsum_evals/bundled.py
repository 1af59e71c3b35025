"""The sweep specs that ship with the package, found by name (`rollsum run thresholds`).

A spec argument that is an existing file is that file; otherwise a bare name (with or without
``.toml``) is looked up among the bundled specs, so the commands in the README work from any
directory once rollsum is installed, not only from a checkout.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from rollsum.errors import ConfigError

SWEEPS_DIR = Path(__file__).resolve().parent / "sweeps"


def bundled_specs() -> dict[str, Path]:
    """name -> path of every bundled spec, sorted by name."""
    return {p.stem: p for p in sorted(SWEEPS_DIR.glob("*.toml"))}


def description(path: Path) -> str:
    """A spec's one-line ``description`` (empty when it has none or cannot be read)."""
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8-sig")).get("description", "")
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return value if isinstance(value, str) else ""


def find_spec(arg: str) -> Path:
    """The spec file `arg` names: a path, or the name of a bundled spec. A directory of the same
    name in the current directory (often the run directory of an earlier `--out nightly`) does
    not hide the bundled spec."""
    path = Path(arg)
    if path.exists() and not path.is_dir():
        return path
    specs = bundled_specs()
    name = arg.removesuffix(".toml")
    if "/" not in arg and "\\" not in arg and name in specs:
        return specs[name]
    found = "a directory, not a sweep spec file," if path.is_dir() else "sweep spec not found (no such file,"
    raise ConfigError(f"{arg}: {found} and no bundled spec of that name; bundled: {', '.join(specs)}; "
                      "`rollsum list` describes them" + ("" if path.is_dir() else ")"))
