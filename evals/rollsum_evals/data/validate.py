"""`rollsum data validate`: check a dataset file in any format and list every issue.

Canonical JSONL is checked line by line (`rollsum_evals.data.checks.iter_checked`); a chat export
by the chat loader's own pass; any other format is loaded with its loader and each record
checked in canonical form. The checks themselves live in `rollsum_evals.data.checks`, which
every loader uses, so this module is the only one here that imports the loaders.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rollsum.errors import ConfigError
from rollsum_evals.data.chat import iter_checked_chat
from rollsum_evals.data.checks import Issue, RecordError, check_record, iter_checked
from rollsum_evals.data.formats import guess_format, iter_conversations
from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits


@dataclass(slots=True)
class ValidationReport:
    file: str
    issues: list[Issue] = field(default_factory=list)
    records: int = 0
    valid_records: int = 0

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors



def validate(path: str | os.PathLike[str], strict: bool = False, *, format: str | None = None,
             limits: Limits = DEFAULT_LIMITS) -> ValidationReport:
    """Check a dataset file. In strict mode warnings count as errors and the first error stops.

    Canonical JSONL is checked line by line; other formats are loaded with their loader and
    their records checked in canonical form (line numbers are then unknown).
    """
    file = os.fspath(path)
    report = ValidationReport(file)
    if not os.path.exists(file):
        report.issues.append(Issue(file, None, None, "", "file not found"))
        return report
    fmt = format or guess_format(file)
    if fmt == "jsonl":
        rows = iter_checked(file, limits=limits)
    elif fmt == "chat":
        rows = ((line or 0, None if conv is None else conv.to_dict(), issues)
                for line, conv, issues in iter_checked_chat(file, limits=limits))
    else:
        rows = _iter_loaded(file, fmt, limits)
    for _line, _obj, issues in rows:
        report.records += 1
        if strict:
            issues = [Issue(i.file, i.line, i.conversation_id, i.field, i.expected, "error") for i in issues]
        report.issues.extend(issues)
        if not any(i.severity == "error" for i in issues):
            report.valid_records += 1
        elif strict:
            break
    if report.records == 0:  # nothing to replay is not a valid dataset
        report.issues.append(Issue(file, None, None, "", "the file is empty: no record in it (expected at least "
                                                         "one conversation)"))
    return report


def _iter_loaded(file: str, fmt: str, limits: Limits
                 ) -> Iterator[tuple[int, Mapping[str, Any] | None, list[Issue]]]:
    seen: set[str] = set()
    try:
        for conv in iter_conversations(file, fmt, strict=True, limits=limits):
            d = conv.to_dict()
            yield 0, d, check_record(d, file=file, limits=limits, seen_ids=seen)
    except RecordError as err:
        yield 0, None, err.issues
    except ConfigError as err:
        yield 0, None, [Issue(file, None, None, "", str(err).removeprefix(f"{file}: "))]
