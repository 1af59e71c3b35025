"""Numbers and tables as text: Markdown and HTML cells for report, compare and regress."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

from rollsum_evals.stats import not_enough


def fmt_num(value: Any, digits: int = 3) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def fmt_usd(value: Any) -> str:
    """Dollars to four places, the sign before the currency sign (`-$0.0126`, never
    `$-0.0126`); an amount that rounds to zero has no sign (a difference of -0.00001 is `$0.0000`).
    Every money figure the harness prints or writes goes through here."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "–"
    digits = f"{abs(v):.4f}"
    return f"-${digits}" if v < 0 and digits.strip("0.") else f"${digits}"


def fmt_ci(est: Any, low: Any, high: Any, digits: int = 3) -> str:
    return f"{fmt_num(est, digits)} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


def fmt_interval(est: Any, low: Any, high: Any, clusters: int, digits: int = 3) -> str:
    """An estimate with its interval; "n/a" without an estimate (no answerable asks: never
    0.000 or 1.000), and the reason instead of the interval when there were too few
    conversations to compute one (never a zero-width [x, x])."""
    if _nan(est):
        return "n/a"
    if _nan(low) or _nan(high):
        return f"{fmt_num(est, digits)} ({not_enough(clusters)})"
    return fmt_ci(est, low, high, digits)


def _nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def md_escape(text: str) -> str:
    """Keep table cells in one cell: pipes and newlines would break the Markdown table."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, a dashed rule under the header: what the CLI prints."""
    table = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def html_table(headers: Sequence[str], rows: Iterable[Sequence[str]], classes: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f'<table class="{html.escape(classes)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
