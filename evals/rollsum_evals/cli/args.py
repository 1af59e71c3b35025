"""Command-line values checked where argparse reads them, by the same number routine as spec
values and preset parameters (`rollsum.params.check_number`): ``--jobs 0``, ``--limit -2`` or
``--max-cost-usd nan`` is one line naming the option, what it expects and what it got.

`OneLineParser` makes every argparse mistake one line too (argparse's own ``error`` prints the
whole usage first), so a wrong option reads like every other user mistake.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from rollsum.params import Range, check_number

EXIT_USAGE = 2


class OneLineParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose mistakes are one line on stderr (and exit 2), naming the
    command; ``--help`` still shows the usage."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        print(f"{self.prog}: error: {text} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def number(*, integer: bool, range: Range | None = None, what: str = "") -> Callable[[str], float]:
    """An argparse ``type=`` for a number checked as a number (no NaN, no inf, in `range`)."""

    def parse(text: str) -> float:
        try:
            value: float = int(text) if integer else float(text)
        except ValueError:
            value = float("nan")
        found = check_number(value, integer=integer, range=range, what=what)
        if found is not None:
            raise argparse.ArgumentTypeError(f"expected {found}, got {text!r}")
        return value

    return parse


POSITIVE_INT = number(integer=True, range=Range(1), what="a positive integer")
NON_NEGATIVE_INT = number(integer=True, range=Range(0), what="a non-negative integer")
INT = number(integer=True)
POSITIVE = number(integer=False, range=Range(0, low_open=True), what="a number > 0")
NON_NEGATIVE = number(integer=False, range=Range(0), what="a number >= 0")
SHARE = number(integer=False, range=Range(0, 1), what="a share between 0 and 1")


def message_count(text: str) -> str:
    """``--messages``: N or LOW-HIGH, positive, LOW <= HIGH (returned as written)."""
    low, dash, high = text.partition("-")
    bounds = [low, high] if dash else [low]
    if not all(b.strip().isdigit() and int(b) >= 1 for b in bounds) or (dash and int(low) > int(high)):
        raise argparse.ArgumentTypeError(f"expected a positive number of messages or a range LOW-HIGH with "
                                         f"1 <= LOW <= HIGH, got {text!r}")
    return text


def dataset_format(text: str) -> str:
    """``--format`` / ``--from``: a registered dataset format (`data.formats.LOADERS`), read when
    the option is given (the registry imports the data package, which ``--help`` need not)."""
    from rollsum_evals.data.formats import LOADERS

    if text not in LOADERS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOADERS.names())}, got {text!r}")
    return text


def check_locomo(path: str) -> None:
    """``--locomo PATH`` (run, tune): the LoCoMo file itself, checked before anything is read,
    saying what is wrong with it (a directory is not "no such file")."""
    from pathlib import Path

    from rollsum.errors import ConfigError

    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"--locomo {path}: a directory (expected the file, LoCoMo's locomo10.json)")
    if not p.is_file():
        raise ConfigError(f"--locomo {path}: no such file (expected LoCoMo's locomo10.json)")
