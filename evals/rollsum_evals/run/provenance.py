"""What a run records about the code and machine that made it: fingerprints, git sha, versions.

Two fingerprints, because two things can go stale. The *replay* fingerprint covers the code
that decides what a replay records: the library, plus the harness's replay, run and run-dir
modules and the run format's version. The *scoring* fingerprint covers the scorers. A Unit's
cached replay is keyed by the first, its cached scores by both; so editing a scorer re-scores
without replaying, and editing a report or a plot invalidates nothing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

_PACKAGES = ("rollsum", "anthropic", "pandas", "pyarrow", "numpy", "rouge-score", "tqdm", "datasets", "nltk")
_SKIP_DIRS = frozenset({"__pycache__", "sweeps"})
REPLAY_PARTS = ("replay", "run", "rundir", "units.py", "data/pinned.py")
"""Parts of the harness that affect what a replay records (with the whole library)."""
SCORING_PARTS = ("scoring",)


def _hash_tree(h: hashlib._Hash, root: Path, label: str) -> None:
    files: list[Path] = []
    if root.is_file():
        files = [root]
        base = root.parent
    else:
        base = root
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            files += [Path(dirpath) / f for f in filenames if not f.endswith((".pyc", ".pyo"))]
    for f in sorted(files):
        h.update(b"\0" + f"{label}/{f.relative_to(base).as_posix()}".encode() + b"\0")
        h.update(f.read_bytes())


def _version() -> bytes:
    try:
        return importlib.metadata.version("rollsum").encode()
    except importlib.metadata.PackageNotFoundError:
        return b"unversioned"


def _roots() -> tuple[Path, Path]:
    """(the library's folder, the harness's folder); the harness is this file's grandparent
    (importing the top-level package for its path would make run/ depend on the package that
    lazily re-exports it)."""
    import rollsum

    return Path(rollsum.__file__ or "").resolve().parent, Path(__file__).resolve().parents[1]


@functools.cache
def replay_fingerprint(library: Path | None = None, harness: Path | None = None) -> str:
    """sha256 over the library's source, the harness parts in `REPLAY_PARTS`, the package
    version and the run format's version. Once per process: code cannot change under a sweep.
    (`library`/`harness`: other source trees, for tests.)"""
    from rollsum_evals.rundir.format import FORMAT_VERSION

    lib_root, harness_root = _roots()
    h = hashlib.sha256(_version() + f"|format {FORMAT_VERSION}".encode())
    _hash_tree(h, library or lib_root, "rollsum")
    for part in REPLAY_PARTS:
        _hash_tree(h, (harness or harness_root) / part, f"rollsum_evals/{part}")
    return h.hexdigest()


@functools.cache
def scoring_fingerprint(harness: Path | None = None) -> str:
    from rollsum_evals.rundir.format import FORMAT_VERSION

    h = hashlib.sha256(_version() + f"|format {FORMAT_VERSION}".encode())
    for part in SCORING_PARTS:
        _hash_tree(h, (harness or _roots()[1]) / part, f"rollsum_evals/{part}")
    return h.hexdigest()


def project_root(package_dir: Path) -> Path | None:
    """The checkout the library was imported from, when it is one: the directory above the
    package holding this project's pyproject.toml. An installed package sits in site-packages,
    which may well be inside some other repository: that repository's sha would be a lie."""
    root = package_dir.resolve().parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "rollsum"' in text and (root / ".git").exists() else None


def git_sha(package_dir: Path | None = None) -> str | None:
    """HEAD of this project's checkout, or None when the code is not running from one."""
    if package_dir is None:
        import rollsum

        package_dir = Path(rollsum.__file__ or "").parent
    root = project_root(package_dir)
    if root is None:
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions() -> dict[str, str]:
    v = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            v[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    return v


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
