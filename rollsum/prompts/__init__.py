"""Named, versioned prompt templates kept as data files.

Prompts live in text files (``<name>.v<N>.txt``) rather than Python strings so that a prompt
change is a reviewable data diff, and so that a template's sha256 can go into every summary
record and cache key: an edited prompt can never be mistaken for the old one. A template is
addressed as ``name/vN`` (``since-last/v1``); a path to a file in the same format is accepted
too, for prompt A/B sweeps.

File format (see docs/prompts.md)::

    # comment lines
    max_words: 300
    --- system ---
    system prompt text
    --- user ---
    user prompt text with {transcript} {previous_summary} {max_words} {must_keep} {meta}

Literal braces in the text are written ``{{`` and ``}}`` (str.format escaping).
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rollsum.errors import ConfigError

PLACEHOLDERS: frozenset[str] = frozenset(
    {"transcript", "previous_summary", "max_words", "must_keep", "meta"})
"""What a template may reference; anything else is a typo that would crash at render time."""

REQUIRED_PLACEHOLDERS: frozenset[str] = frozenset({"transcript", "previous_summary"})
"""A summary prompt without the span or the previous summary cannot be incremental."""

DEFAULT_MAX_WORDS = 300
DEFAULT_SYSTEM = "You summarize conversations accurately and concisely, without inventing details."

_ID_RE = re.compile(r"^([a-z0-9][a-z0-9-]*)/v(\d+)$")
_FILE_RE = re.compile(r"^([a-z0-9][a-z0-9-]*)\.v(\d+)\.txt$")
_SECTION_RE = re.compile(r"^---\s*(system|user)\s*---\s*$")
_HEADER_RE = re.compile(r"^([a-z_]+)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    id: str
    system: str
    user_template: str
    max_words: int
    sha256: str
    """Of the file's bytes: the identity that goes into records and cache keys."""

    def render(self, *, transcript: str, previous_summary: str, must_keep: str = "",
               max_words: int | None = None, meta: str = "") -> str:
        return self.user_template.format(
            transcript=transcript,
            previous_summary=previous_summary,
            must_keep=must_keep,
            max_words=self.max_words if max_words is None else max_words,
            meta=meta,
        )


def names() -> list[str]:
    """Ids of the templates shipped with the library, sorted."""
    out = []
    for entry in resources.files(__name__).iterdir():
        m = _FILE_RE.match(entry.name)
        if m:
            out.append(f"{m.group(1)}/v{m.group(2)}")
    return sorted(out)


def get(prompt_id: str) -> PromptTemplate:
    """A shipped template by id (``since-last/v1``), or a template file by path."""
    m = _ID_RE.match(prompt_id)
    if m:
        res = resources.files(__name__).joinpath(f"{m.group(1)}.v{m.group(2)}.txt")
        if res.is_file():
            return parse(res.read_bytes(), prompt_id=prompt_id, source=f"rollsum/prompts/{res.name}")
    path = Path(prompt_id).expanduser()
    if path.is_file():
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ConfigError(f"{path}: cannot read prompt template: {e.strerror}") from e
        return parse(data, prompt_id=str(prompt_id), source=str(path))
    if path.is_dir():
        raise ConfigError(f"prompt {prompt_id!r}: a directory; expected one of {', '.join(names())} "
                          "or the path of a template file")
    raise ConfigError(
        f"prompt {prompt_id!r}: no such template; expected one of {', '.join(names())} "
        "or the path of a template file")


def parse(data: bytes, *, prompt_id: str, source: str = "<prompt>") -> PromptTemplate:
    """Parse a template file's bytes; errors name the source, line and what was expected.

    A file without section markers is taken whole as the user template, so a plain text prompt
    pasted from elsewhere still works (with the default system prompt).
    """
    try:
        text = data.decode("utf-8-sig")  # a byte order mark (Windows editors) is not part of the prompt
    except UnicodeDecodeError as e:
        raise ConfigError(f"{source}: prompt template must be UTF-8 ({e.reason} at byte {e.start})") from e
    lines = text.splitlines()
    headers: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for lineno, line in enumerate(lines, 1):
        sec = _SECTION_RE.match(line)
        if sec:
            name = sec.group(1)
            if name in sections:
                raise ConfigError(f"{source}:{lineno}: section '--- {name} ---' appears twice")
            sections[name] = []
            current = name
            continue
        if current is not None:
            sections[current].append(line)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        hm = _HEADER_RE.match(stripped)
        if hm and hm.group(1) in ("max_words", "id"):
            headers[hm.group(1)] = hm.group(2)
            continue
        if not any(_SECTION_RE.match(x) for x in lines):
            break  # a plain prompt without markers: the whole file is the user template
        raise ConfigError(
            f"{source}:{lineno}: expected 'max_words: N', a '# comment' or '--- system ---' "
            f"before the sections, got {stripped[:60]!r}")
    if sections:
        if "user" not in sections:
            raise ConfigError(f"{source}: missing '--- user ---' section (the user prompt template)")
        system = "\n".join(sections.get("system", [])).strip() or DEFAULT_SYSTEM
        user = "\n".join(sections["user"]).strip("\n")
    else:
        system, user = DEFAULT_SYSTEM, text.strip("\n")
    max_words = DEFAULT_MAX_WORDS
    if "max_words" in headers:
        try:
            max_words = int(headers["max_words"])
        except ValueError:
            max_words = 0
        if max_words <= 0:
            raise ConfigError(
                f"{source}: field max_words: expected a positive integer, got {headers['max_words']!r}")
    _check_placeholders(user, source, text)
    return PromptTemplate(id=prompt_id, system=system, user_template=user, max_words=max_words,
                          sha256=hashlib.sha256(data).hexdigest())


def _check_placeholders(user: str, source: str, text: str = "") -> None:
    """The user template's placeholders are known ones and include the required ones; an
    unknown one is named at its line of the file's `text` (the first line holding it)."""
    found: set[str] = set()
    try:
        for _literal, field, spec, conv in string.Formatter().parse(user):
            if field is None:
                continue
            if field not in PLACEHOLDERS or spec or conv:
                at = text.find("{" + field)
                where = f"{source}:{text.count(chr(10), 0, at) + 1}" if at >= 0 else source
                raise ConfigError(
                    f"{where}: unknown placeholder {{{field}}}; expected only "
                    f"{', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))} (write literal braces as {{{{ }}}})")
            found.add(field)
    except ValueError as e:
        raise ConfigError(f"{source}: malformed braces in user template ({e}); "
                          "write literal braces as {{ and }}") from e
    missing = REQUIRED_PLACEHOLDERS - found
    if missing:
        raise ConfigError(f"{source}: user template must contain "
                          f"{', '.join('{' + p + '}' for p in sorted(missing))}")
