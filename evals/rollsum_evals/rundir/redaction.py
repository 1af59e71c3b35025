"""The manifest as it is written: secrets masked, recorded paths exact.

Everything a run directory holds passes through `rollsum.redact` before it is written. The
manifest's paths are the exception: they are addresses the run is read back by (``rollsum
score`` reloads the dataset from ``source``), and a path that merely shares characters with a
secret must not become ``***data/chat.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def redact_manifest(manifest: Mapping[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    """The manifest as written: every string masked (`rollsum.redact.redact_obj`) except the
    paths it records (`spec_path`, each dataset's ``source``/``questions`` in ``datasets`` and in
    ``spec``, the caches' ``path``). A path is an address, not a secret: masking a piece of it
    leaves a manifest whose dataset cannot be found again (``rollsum score`` then fails)."""
    from rollsum.redact import redact_obj

    out: dict[str, Any] = redact_obj(manifest, secrets)

    def restore(orig: Any, red: Any, keys: Sequence[str]) -> None:
        if isinstance(orig, Mapping) and isinstance(red, dict):
            for k in keys:
                if isinstance(orig.get(k), str) and k in red:
                    red[k] = orig[k]

    restore(manifest, out, ("spec_path",))
    for block in ("cache", "unit_cache"):
        restore(manifest.get(block), out.get(block), ("path",))
    datasets, red_datasets = manifest.get("datasets"), out.get("datasets")
    if isinstance(datasets, Mapping) and isinstance(red_datasets, dict):
        for (_name, orig), red in zip(datasets.items(), red_datasets.values(), strict=False):
            restore(orig, red, ("source", "questions"))
    spec, red_spec = manifest.get("spec"), out.get("spec")
    if isinstance(spec, Mapping) and isinstance(red_spec, dict):
        orig_ds, red_ds = spec.get("datasets"), red_spec.get("datasets")
        if isinstance(orig_ds, list) and isinstance(red_ds, list):
            for orig, red in zip(orig_ds, red_ds, strict=False):
                restore(orig, red, ("source", "questions"))
    return out
