"""Structured summaries (seed 003): a validated JSON record with narrative, key points, facets.

Models wrap JSON in fences or chat around it often enough that rejecting those would waste
calls, so the parser accepts one object inside a fence or prose. Everything else about the shape
is checked. Over-long arrays are capped with a note (the content is still good); a wrong shape
is a validation error, which the engine does not retry, since asking again tends to loop. The
first 200 characters of a bad answer are logged with secrets masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rollsum.errors import ErrorKind, SummarizeError
from rollsum.redact import redact, redacting_logger
from rollsum.summarizers.prompted import _ModelSummarizer, _Parsed
from rollsum.types import FACET_NAMES

log = redacting_logger(__name__)

MAX_KEY_POINTS = 30
MAX_FACET_ITEMS = 20
MAX_ITEM_CHARS = 300
LOG_RAW_CHARS = 200

_FENCE_RE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.S)
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "key_points": ("key_points", "keyPoints"),
    "participants": ("participants",),
    "decisions": ("decisions",),
    "action_items": ("action_items", "actionItems"),
    "unresolved": ("unresolved",),
    "entities": ("entities", "domainEntities", "domain_entities"),
}
_TEXT_KEYS = ("task", "text", "name", "description", "item", "value")


class _Invalid(Exception):
    pass


def parse_structured(raw: str) -> _Parsed:
    """Parse and validate a structured answer; raises SummarizeError(validation) if unusable."""
    try:
        obj = _find_object(raw)
        return _validate(obj)
    except _Invalid as e:
        shown = redact(raw)
        log.warning("structured summary rejected (%s); first %d chars: %r", e, LOG_RAW_CHARS,
                    shown[:LOG_RAW_CHARS])
        raise SummarizeError(f"invalid structured summary: {e}", transport=False,
                             kind=ErrorKind.EMPTY if not raw.strip() else ErrorKind.MALFORMED,
                             raw=shown) from None


def _find_object(raw: str) -> dict[str, Any]:
    text = raw.strip()
    if not text:
        raise _Invalid("empty output")
    fence = _FENCE_RE.search(text)
    candidates = [fence.group(1), text] if fence else [text]
    decoder = json.JSONDecoder()
    last_error = "no JSON object found"
    for cand in candidates:
        start = cand.find("{")
        tries = 0
        while start >= 0 and tries < 8:
            try:
                obj, _end = decoder.raw_decode(cand, start)
            except json.JSONDecodeError as e:
                last_error = f"malformed JSON: {e.msg} at char {e.pos}"
            else:
                if isinstance(obj, dict):
                    return obj
                last_error = f"expected a JSON object, got {type(obj).__name__}"
            start = cand.find("{", start + 1)
            tries += 1
    raise _Invalid(last_error)


def _validate(obj: Mapping[str, Any]) -> _Parsed:
    summary = obj.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise _Invalid("field 'summary': expected a non-empty string")
    notes: list[str] = []
    arrays: dict[str, tuple[str, ...]] = {}
    for field, aliases in _ALIASES.items():
        value = next((obj[a] for a in aliases if a in obj), None)
        cap = MAX_KEY_POINTS if field == "key_points" else MAX_FACET_ITEMS
        arrays[field] = _string_list(field, value, cap, notes)
    facets = {name: arrays[name] for name in FACET_NAMES}
    return _Parsed(summary.strip(), arrays["key_points"], facets, tuple(notes))


def _string_list(field: str, value: Any, cap: int, notes: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid(f"field {field!r}: expected an array, got {type(value).__name__}")
    items: list[str] = []
    cut = 0
    for i, v in enumerate(value):
        s = _item_text(field, i, v)
        if not s:
            continue
        if len(s) > MAX_ITEM_CHARS:
            s = s[: MAX_ITEM_CHARS - 1].rstrip() + "…"
            cut += 1
        items.append(s)
    if cut:
        notes.append(f"cut {cut} {field} item(s) to {MAX_ITEM_CHARS} chars")
    if len(items) > cap:
        notes.append(f"capped {field} from {len(items)} to {cap} items")
        items = items[:cap]
    return tuple(items)


def _item_text(field: str, i: int, v: Any) -> str:
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, bool) or v is None:
        raise _Invalid(f"field {field!r} item {i}: expected a string, got {json.dumps(v)}")
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, dict):
        main = next((v[k] for k in _TEXT_KEYS if isinstance(v.get(k), str) and v[k].strip()), None)
        if main is None:
            raise _Invalid(f"field {field!r} item {i}: expected a string or an object with a 'task' "
                           f"or 'text' string, got keys {sorted(v)}")
        extras = [f"{k}: {v[k]}" for k in ("owner", "due") if isinstance(v.get(k), str | int) and v.get(k)]
        return main.strip() + (f" ({', '.join(extras)})" if extras else "")
    raise _Invalid(f"field {field!r} item {i}: expected a string, got {type(v).__name__}")


class StructuredSummarizer(_ModelSummarizer):
    """JSON summary with key points and facets, validated; see module docstring."""

    name = "structured"

    default_prompt = "structured/v1"

    def _parse(self, raw: str) -> _Parsed:
        return parse_structured(raw)

    def _fold(self, parsed: _Parsed) -> str:
        parts = [parsed.text]
        if parsed.key_points:
            parts.append("Key points:\n" + "\n".join(f"- {p}" for p in parsed.key_points))
        for name, items in (parsed.facets or {}).items():
            if items:
                parts.append(f"{name}: " + "; ".join(items))
        return "\n\n".join(parts)

    def _merge(self, parts: Sequence[_Parsed]) -> _Parsed:
        """The last chunk's narrative (it folded the others in) with the union of all arrays."""
        if len(parts) == 1:
            return parts[0]
        last = parts[-1]
        kp = _union([p.key_points for p in parts], MAX_KEY_POINTS)
        facets = {name: _union([(p.facets or {}).get(name, ()) for p in parts], MAX_FACET_ITEMS)
                  for name in FACET_NAMES}
        return _Parsed(last.text, kp, facets, ())


def _union(seqs: Sequence[Sequence[str]], cap: int) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for seq in reversed(seqs):  # newest first: the later chunk knows the current state
        for s in seq:
            seen.setdefault(s.casefold(), s)
    return tuple(seen.values())[:cap]
