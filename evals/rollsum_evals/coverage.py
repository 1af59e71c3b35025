"""Coverage: how many of the questions asked a retention figure actually speaks for.

Retention is a mean over *answerable* asks; an ask that is not answerable is excluded, never
counted lost. That is honest only when the reader sees how much was excluded: issue #18 found a
headline counting 39 % of LoCoMo's probes, 1.4 % of its open-domain ones. So every number comes
with its coverage, per category (LoCoMo's five named categories; a sidecar's `category`):

- `probes`: asks (a probe at one asking turn) of the category;
- `answerable`: those answerable (the probe table's `answerable`, decided by the scorer);
- `counted`: answerable asks with a `retained` value (what retention averages);
- `coverage` = answerable ÷ non-adversarial asks (adversarial asks are unanswerable by design,
  so they do not lower it; NaN for the adversarial category itself).

Computed from the probe table's existing columns `category`, `answerable`, `excluded`,
`retained` only (`analysis.ok_probes` fills `answerable`/`excluded` for older runs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

LOW_COVERAGE = 0.60
"""Below this share of non-adversarial asks counted, a run's first line says so: its retention
speaks for a minority of what was asked."""
ADVERSARIAL = "adversarial"
COUNT_COLUMNS = ("probes", "answerable", "counted", "coverage")


def _flags(probes: pd.DataFrame) -> pd.DataFrame:
    """Per ask: 1 (``probes``), ``answerable``, ``counted``, ``non_adversarial``, as integers,
    computed once for the whole table (then summed per category: one groupby, not a handful of
    pandas operations per category and configuration, which was most of a report's time)."""
    index = probes.index
    ans = (probes["answerable"].astype(bool) if "answerable" in probes.columns
           else pd.Series(False, index=index))
    counted = ans & probes["retained"].notna() if "retained" in probes.columns else ans
    adv = pd.Series(False, index=index)
    if "excluded" in probes.columns:
        adv |= probes["excluded"].astype(str) == ADVERSARIAL
    if "category" in probes.columns:
        adv |= probes["category"].astype(str) == ADVERSARIAL
    return pd.DataFrame({"probes": 1, "answerable": ans.astype("int64"), "counted": counted.astype("int64"),
                         "non_adversarial": (~adv).astype("int64")}, index=index)


def _row(probes: int, answerable: int, counted: int, non_adv: int) -> dict[str, float]:
    return {"probes": probes, "answerable": answerable, "counted": counted,
            "coverage": answerable / non_adv if non_adv else math.nan, "non_adversarial": non_adv}


def _counts(probes: pd.DataFrame) -> dict[str, float]:
    if not len(probes):
        return _row(0, 0, 0, 0)
    total = _flags(probes).sum()
    return _row(len(probes), int(total["answerable"]), int(total["counted"]), int(total["non_adversarial"]))


def coverage(probes: pd.DataFrame) -> float:
    """Answerable share of the non-adversarial asks (NaN without any)."""
    return _counts(probes)["coverage"] if len(probes) else math.nan


_SUMMED = ["probes", "answerable", "counted", "non_adversarial"]


def _categories(probes: pd.DataFrame) -> pd.Series:
    return (probes["category"].fillna("").astype(str).replace("", "(none)") if "category" in probes.columns
            else pd.Series("(none)", index=probes.index))


def _table(cats: Iterable[Any], sums: Sequence[Sequence[int]]) -> pd.DataFrame:
    """`by_category`'s frame from each category's summed flags (in category order) and their total."""
    rows = {str(c): _row(*(int(v) for v in r)) for c, r in zip(cats, sums, strict=True)}
    total = [sum(int(r[i]) for r in sums) for i in range(len(_SUMMED))]
    rows["all"] = _row(*total)
    return pd.DataFrame.from_dict(rows, orient="index", columns=[*COUNT_COLUMNS, "non_adversarial"])


def by_category(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per category (sorted; "(none)" for asks without one) and an "all" row:
    `COUNT_COLUMNS` and `non_adversarial` (the coverage's denominator)."""
    if probes.empty:
        return pd.DataFrame(columns=[*COUNT_COLUMNS, "non_adversarial"])
    sums = _flags(probes).groupby(_categories(probes), sort=True).sum()
    return _table(sums.index, sums[_SUMMED].to_numpy().tolist())


def by_category_of(probes: pd.DataFrame, key: pd.Series) -> dict[str, pd.DataFrame]:
    """`by_category` of the rows of each value of `key` (compared as text; a Series on the
    probes' index, e.g. their ``config``): the same frames, from one groupby over the whole table
    instead of a mask and a groupby per configuration (40 configurations × ~30,000 asks, twice per
    report). Values without rows are absent."""
    if probes.empty:
        return {}
    sums = _flags(probes).groupby([key.astype(str).rename("_key"), _categories(probes).rename("_cat")],
                                  sort=True).sum()
    out: dict[str, pd.DataFrame] = {}
    for k, part in sums.groupby(level=0, sort=False):
        out[str(k)] = _table(part.index.get_level_values(1), part[_SUMMED].to_numpy().tolist())
    return out


def column_name(category: str) -> str:
    """`coverage_<category>` with anything but letters, digits, `-` and `_` made `_`."""
    return "coverage_" + re.sub(r"[^A-Za-z0-9_-]+", "_", category.strip()).strip("_").lower()


def coverage_columns(probes: pd.DataFrame) -> dict[str, Any]:
    """configs.csv's `coverage` and one `coverage_<category>` per non-adversarial category."""
    return columns_of(by_category(probes))


def columns_of(table: pd.DataFrame) -> dict[str, Any]:
    """`coverage_columns` from the asks' `by_category` table (NaN coverage without asks)."""
    # its "all" row is `coverage(probes)`: not counted twice
    out: dict[str, Any] = {"coverage": float(table["coverage"]["all"]) if len(table) else math.nan}
    shares = table["coverage"].to_numpy(dtype=float)  # not iterrows: a Series per row, per configuration
    for cat, share in zip(table.index, shares, strict=True):
        if cat not in ("all", ADVERSARIAL, "(none)"):
            out[column_name(str(cat))] = share
    return out


def fmt_share(v: Any) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(x) else f"{100 * x:.0f} %"


def low_coverage_line(cov: float, threshold: float = LOW_COVERAGE) -> str:
    """The first-line warning of a run counting too few of its asks ("" when it counts enough)."""
    if math.isnan(cov) or cov >= threshold:
        return ""
    return (f"Low coverage: only {fmt_share(cov)} of non-adversarial asks are answerable and counted "
            f"(below {fmt_share(threshold)}): retention speaks for a minority of what was asked.")


def summary_line(probes: pd.DataFrame) -> str:
    """"coverage 82 % (single-hop 90 %, temporal 40 %, …)": the short form for compare and regress."""
    table = by_category(probes)
    if table.empty:
        return "coverage –"
    parts = [f"{c} {fmt_share(r['coverage'])}" for c, r in table.iterrows()
             if c not in ("all", ADVERSARIAL) and not math.isnan(float(r["coverage"]))]
    total = _counts(probes)
    head = (f"coverage {fmt_share(total['coverage'])} ({int(total['answerable']):,} answerable of "
            f"{int(total['non_adversarial']):,} non-adversarial asks")
    return head + (f"; {', '.join(parts)})" if parts else ")")
