"""The manifest of committed synthetic sets: how each file was made and its sha256.

It lets anyone prove a committed file came from the committed generator (regenerate from the
recorded spec, compare hashes) and lets run manifests pin the exact data they used.
"""

from __future__ import annotations

import json
import os
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.data.reader import dataset_hash
from rollsum_evals.fileio import atomic_writer


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest at `path` (an empty one when there is none yet). One that cannot be used is a
    ConfigError naming the file and line: recording into it would replace what it holds."""
    if not os.path.exists(path):
        return {"files": {}}
    where = os.fspath(path)
    if os.path.isdir(path):
        raise ConfigError(f"{where}: is a directory (expected the manifest's JSON file, e.g. datasets/manifest.json)")
    with open(path, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{where}:{err.lineno}: invalid JSON at column {err.colno}: {err.msg} (expected a "
                              'datasets manifest: {"files": {...}})') from None
    if not isinstance(data, dict) or not isinstance(data.setdefault("files", {}), dict):
        raise ConfigError(f'{where}: expected a datasets manifest, an object with "files": {{path: entry}}')
    return dict(data)


def record(manifest_path: str | os.PathLike[str], data_path: str | os.PathLike[str], *, spec: str,
           generator_version: str, command: str) -> dict[str, Any]:
    """Add or replace the entry for `data_path` (keyed by its path relative to the manifest)."""
    manifest = read(manifest_path)
    base = os.path.dirname(os.path.abspath(manifest_path))
    key = os.path.relpath(os.path.abspath(data_path), base).replace(os.sep, "/")
    entry = {"spec": spec, "generator_version": generator_version, "sha256": dataset_hash(data_path),
             "bytes": os.path.getsize(data_path), "command": command}
    manifest["files"][key] = entry
    manifest["files"] = dict(sorted(manifest["files"].items()))
    with atomic_writer(manifest_path) as fh:
        json.dump(manifest, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    return entry
