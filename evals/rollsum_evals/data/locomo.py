"""LoCoMo (`locomo10.json` shape): long two-person chats with QA pairs and session summaries.

The first speaker becomes `user` and the second `assistant`, so rolling summaries see the
usual alternation; the speaker's real name stays in `Message.name`. Evidence ids in the
released file are sometimes joined ("D8:6; D9:17") or zero-padded ("D30:05"); they are
normalised, and any that still point nowhere are kept in the probe's meta, not silently lost.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, cast

from rollsum.errors import ConfigError
from rollsum.safejson import JSONInputError, loads
from rollsum.types import Message, Role
from rollsum_evals.data.checks import Issue, RecordError
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits, SkipLog, read_json_bytes
from rollsum_evals.data.types import Conversation, Probe, Reference

log = logging.getLogger(__name__)

CATEGORIES: Mapping[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                                 5: "adversarial"}
UNANSWERABLE = "Not mentioned in the conversation"
"""Gold answer of an adversarial item with no `answer`: LoCoMo scores these as correct when the
model declines; the tempting wrong answer (`adversarial_answer`) is kept in the probe's meta."""

_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"^D:?(\d+):0*(\d+)$")


def iter_locomo(path: str | os.PathLike[str], *, strict: bool = False, limits: Limits = DEFAULT_LIMITS,
                skips: SkipLog | None = None) -> Iterator[Conversation]:
    file = os.fspath(path)
    try:
        data = loads(read_json_bytes(file, limits.max_json_bytes))
    except JSONInputError as err:
        where = f"line {err.line}: invalid JSON: " if err.line is not None else ""
        raise ConfigError(f"{file}: {where}{err.message} (expected a LoCoMo JSON array)") from None
    samples = data if isinstance(data, list) else [data]
    log_skips = skips if skips is not None else SkipLog(file, log)
    try:
        for index, sample in enumerate(samples):
            try:
                yield from_sample(sample, index=index, file=file)
            except ConfigError as err:
                problem = RecordError([Issue(file, None, None, "", str(err))])
                if strict:
                    raise problem from None
                log_skips.skip(problem)
    finally:
        if skips is None:
            log_skips.close()


def parse_session_date(raw: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'; None when the shape is unknown."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).isoformat()
        except ValueError:
            continue
    return None


_JSON_KINDS: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}


def _need(d: Mapping[str, Any], key: str, typ: type, where: str) -> Any:
    """``d[key]`` when it is a `typ`; else a line in JSON's words (it said "expected dict, got
    NoneType" for a missing ``conversation``, e.g. a chat export read with ``--format locomo``)."""
    from rollsum_evals.data.exports import describe

    v = d.get(key)
    if not isinstance(v, typ):
        got = "nothing (the key is missing)" if key not in d else describe(v)
        raise ConfigError(f"{where} field {key}: expected {_JSON_KINDS.get(typ, typ.__name__)}, got {got}")
    return v


def from_sample(sample: Any, *, index: int = 0, file: str = "<locomo>") -> Conversation:
    where = f"sample {index}"
    if not isinstance(sample, dict):
        raise ConfigError(f"{where}: expected an object with conversation and qa")
    sample_id = str(sample.get("sample_id") or f"locomo-{index}")
    where = f"sample {index} ({sample_id})"
    conv = _need(sample, "conversation", dict, where)
    speaker_a = conv.get("speaker_a")
    speaker_b = conv.get("speaker_b")
    for key, name in (("speaker_a", speaker_a), ("speaker_b", speaker_b)):
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigError(f"{where} field conversation.{key}: expected a speaker's name (a string), got {name!r}")
    numbered = [(m.group(1), k) for k in conv if (m := _SESSION.match(k))]
    for digits, k in numbered:  # int() refuses past 4,300 digits: a traceback, not a line
        if len(digits) > 18:
            raise ConfigError(f"{where} field conversation.{k[:30]}...: expected a session number of at most "
                              f"18 digits, got {len(digits):,}")
    sessions = sorted((int(digits), k) for digits, k in numbered)
    messages: list[Message] = []
    session_ids: dict[int, list[str]] = {}
    unread: list[str] = []  # session dates of a shape not read: their turns carry no time
    empty: list[str] = []  # dia_ids of turns with no text and no photo
    for number, key in sessions:
        turns = conv[key]
        if not isinstance(turns, list):
            raise ConfigError(f"{where} field conversation.{key}: expected a list of turns")
        raw_date = conv.get(f"{key}_date_time")
        created = parse_session_date(raw_date) if isinstance(raw_date, str) else None
        if isinstance(raw_date, str) and raw_date.strip() and created is None and turns:
            unread.append(f"{key}_date_time {raw_date[:40]!r}")
        for t, turn in enumerate(turns):
            f = f"conversation.{key}[{t}]"
            if not isinstance(turn, dict):
                raise ConfigError(f"{where} field {f}: expected an object with speaker, dia_id, text")
            speaker = turn.get("speaker")
            dia_id = _need(turn, "dia_id", str, f"{where} {f}")
            text = turn.get("text")
            if not isinstance(text, str):
                raise ConfigError(f"{where} field {f}.text: expected a string")
            if not isinstance(speaker, str) or not speaker.strip():
                raise ConfigError(f"{where} field {f}.speaker: expected a speaker's name (a string), got {speaker!r}")
            if speaker_a is None:
                speaker_a = speaker
            elif speaker_b is None and speaker != speaker_a:
                speaker_b = speaker
            if speaker not in (speaker_a, speaker_b):  # two people talk: a third is a typo or another file
                raise ConfigError(f"{where} field {f}.speaker: expected one of the conversation's two speakers "
                                  f"({speaker_a!r}, {speaker_b!r}), got {speaker!r}")
            role: Role = "user" if speaker == speaker_a else "assistant"
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                text = f"{text} [shares a photo: {caption.strip()}]".strip()
            if not text.strip():  # as a chat export's empty message: left out, said below
                empty.append(dia_id)
                continue
            meta: dict[str, Any] = {"session": number}
            if isinstance(raw_date, str):
                meta["session_date"] = raw_date
            messages.append(Message(role=role, content=text, id=dia_id, name=speaker,
                                    created_at=created, meta=meta))
            session_ids.setdefault(number, []).append(dia_id)
    if not messages:
        raise ConfigError(f"{where} field conversation: expected at least one session with turns")
    if empty:  # never silent, as a chat export's empty messages (`exports.empty_messages_dropped`)
        log.warning("%s: %s: %d empty turn(s) (no text, no photo) left out: %s; a question whose evidence "
                    "names one keeps it as unresolved_evidence", file, where, len(empty),
                    ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else ""))
    if unread:  # never silent: a temporal question about these sessions is lost even by full context
        log.warning("%s: %s: %s: expected a LoCoMo date such as '1:56 pm on 8 May, 2023'; their turns carry no "
                    "time (created_at), so a question about when is lost even by full context", file, where,
                    ", ".join(unread[:3]) + (f" and {len(unread) - 3} more" if len(unread) > 3 else ""))
    known = {cast(str, m.id) for m in messages}
    probes = tuple(_probe(q, i, sample_id, known, where) for i, q in enumerate(_need(sample, "qa", list, where)))
    refs: list[Reference] = []
    summaries = sample.get("session_summary") or {}
    if isinstance(summaries, dict):
        for key, text in summaries.items():
            m = re.match(r"^session_(\d{1,18})_summary$", key)
            if m and isinstance(text, str) and int(m.group(1)) in session_ids:
                n = int(m.group(1))
                refs.append(Reference(id=f"{sample_id}:session_{n}", text=text,
                                      covers=tuple(session_ids[n]), kind="session_summary"))
    refs.sort(key=lambda r: int(r.id.rsplit("_", 1)[1]))
    return Conversation(id=sample_id, messages=tuple(messages), probes=probes, references=tuple(refs),
                        meta={"source": "locomo", "speakers": [speaker_a, speaker_b]})


def _probe(q: Any, i: int, sample_id: str, known: set[str], where: str) -> Probe:
    f = f"{where} field qa[{i}]"
    if not isinstance(q, dict):
        raise ConfigError(f"{f}: expected an object with question, answer, evidence, category")
    question = q.get("question")
    if not isinstance(question, str):
        raise ConfigError(f"{f}.question: expected a string")
    number = q.get("category")
    if not isinstance(number, int) or number not in CATEGORIES:
        raise ConfigError(f"{f}.category: expected 1-5, got {number!r}")
    meta: dict[str, Any] = {"locomo_category": number}
    answer = q.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        adv = q.get("adversarial_answer")
        if adv is None:
            raise ConfigError(f"{f}.answer: expected an answer or adversarial_answer")
        meta["adversarial_answer"] = str(adv)
        meta["unanswerable"] = True
        answer = UNANSWERABLE
    elif q.get("adversarial_answer") is not None:
        meta["adversarial_answer"] = str(q["adversarial_answer"])
    evidence: list[str] = []
    unresolved: list[str] = []
    raw_ev = q.get("evidence") or []
    for raw in raw_ev if isinstance(raw_ev, list) else [raw_ev]:
        for token in re.split(r"[;,\s]+", str(raw)):
            if not token:
                continue
            m = _DIA.match(token)
            norm = f"D{m.group(1)}:{m.group(2)}" if m else token
            if norm in known:
                if norm not in evidence:
                    evidence.append(norm)
            else:
                unresolved.append(token)
    if unresolved:
        meta["unresolved_evidence"] = unresolved
    return Probe(id=f"{sample_id}:q{i}", question=question, answer=str(answer), evidence=tuple(evidence),
                 category=CATEGORIES[number], meta=meta)
