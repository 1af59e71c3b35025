"""`rollsum list`: what there is to choose from, read from the registries themselves.

Presets (`rollsum.presets.PRESETS`), bundled sweep specs (`rollsum_evals.bundled`), scorers (the
scoring registry) and model spec forms (`rollsum.models.spec.BACKENDS`): nothing here repeats a
name, so a new preset, scorer or backend shows up without touching this file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("list", help="presets, bundled specs, scorers and model spec forms",
                       description="List what a sweep spec can name: presets (with their seed's rule), "
                       "bundled specs (`rollsum run NAME`), scorers and model spec forms.")
    p.add_argument("what", nargs="?", choices=("presets", "specs", "scorers", "models"), default=None,
                   help="only this section")
    p.set_defaults(func=cmd_list)


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0].strip() if (doc or "").strip() else ""


def sections() -> dict[str, list[tuple[str, str]]]:
    from rollsum import presets
    from rollsum.models.spec import BACKENDS
    from rollsum_evals import scoring
    from rollsum_evals.bundled import bundled_specs, description

    out: dict[str, list[tuple[str, str]]] = {}
    out["presets"] = [(p.name, f"(seed {p.seed}) {p.description}") for p in presets.PRESETS.values()]
    out["specs"] = [(name, description(path)) for name, path in bundled_specs().items()]
    rows = []
    for name in scoring.names():
        scorer = scoring.get(name)
        doc = _first_line(sys.modules[type(scorer).__module__].__doc__).removeprefix(f"{name}:").strip()
        needs = f" [needs {', '.join(sorted(scorer.needs - {'contexts'}))}]" if scorer.needs - {"contexts"} else ""
        rows.append((name, doc + needs))
    out["scorers"] = rows
    out["models"] = [("extractive", "the offline rule-based summarizer (no model, no key; the default)")]
    out["models"] += [(f"{b.prefix}:", b.form + ("" if b.capabilities.offline else " [needs an API key]"))
                      for b in BACKENDS.values()]
    return out


TITLES = {"presets": "Presets (configs[].preset)", "specs": "Bundled specs (rollsum run NAME)",
          "scorers": "Scorers (scorers = [...])", "models": "Model specs (models = [...], --model)"}


def render(data: dict[str, list[tuple[str, str]]], only: Sequence[str] | None = None) -> str:
    lines: list[str] = []
    for key, rows in data.items():
        if only and key not in only:
            continue
        if lines:
            lines.append("")
        lines.append(TITLES[key])
        width = max((len(n) for n, _ in rows), default=0)
        lines += [f"  {n:<{width}}  {d}".rstrip() for n, d in rows]
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    print(render(sections(), [args.what] if args.what else None))
    return 0
