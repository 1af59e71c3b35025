"""The report's model-graded section: QA failures, the judge's reliability, and what it cost.

Only for runs scored with ``qa`` (columns from `rollsum_evals.analysis.config_table`). Kept apart
from `rollsum_evals.report` so the report's layout code does not grow a branch per scorer.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rollsum_evals.formatting import fmt_num, fmt_usd
from rollsum_evals.verdicts import MAX_JUDGE_FALSE_ACCEPT

QA_CSV_COLUMNS = ("qa_f1", "qa_failures", "judge_accuracy", "judge_failures", "judge_controls",
                  "judge_false_accept", "judge_matcher_agreement", "cost_judge_usd", "cost_judge_list_usd")
"""configs.csv columns of the model-graded path, after the others (runs scored with qa v2+)."""
QA_TITLE = "Model-graded answers"
QA_TEXT = ("QA F1 and judge accuracy leave failed calls out (counted under 'QA failed'). The judge also "
           "grades negative controls (a vague answer, the other speaker's, the gold answer negated); "
           f"a judge accepting more than {100 * MAX_JUDGE_FALSE_ACCEPT:g} % of them is flagged "
           "judge-unreliable. Agreement: how often the judge and the text matcher give the same verdict on "
           "the asks both grade. Cost: at batch price when [qa] batch = true, and at list price.")
QA_HEADERS = ("config", "QA F1", "QA failed", "judge accuracy", "judge false-accept", "judge–matcher agreement",
              "QA+judge cost / unit", "at list price")


def _pct(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(f) else f"{100 * f:.0f} %"


def has_qa(table: pd.DataFrame) -> bool:
    """Scored by qa version 2 or later (a run scored before it keeps its configs.csv header)."""
    return len(table) > 0 and "qa_failures" in table.columns


def judge_notes(table: pd.DataFrame) -> list[str]:
    """The banner line: which configurations' judge grades are not evidence."""
    if not len(table) or "flags" not in table.columns:
        return []
    bad = table[table["flags"].astype(str).str.contains("judge-unreliable")]
    if bad.empty:
        return []
    rate = pd.to_numeric(bad["judge_false_accept"], errors="coerce").max() if "judge_false_accept" in bad else math.nan
    return [f"The QA judge is unreliable for {len(bad)} configuration(s): it accepted up to {_pct(rate)} of "
            f"answers that are wrong by construction (limit {100 * MAX_JUDGE_FALSE_ACCEPT:g} %); its "
            "judge_accuracy is not evidence."]


def qa_rows(table: pd.DataFrame, keys: Any) -> list[list[str]]:
    if not has_qa(table):
        return []
    rows = []
    for r in table.to_dict("records"):
        failed = pd.to_numeric(pd.Series([r.get("qa_failures")]), errors="coerce").iloc[0]
        rows.append([str(keys[r["config"]]), fmt_num(r.get("qa_f1", math.nan), 3),
                     "–" if pd.isna(failed) else f"{int(failed):,}",
                     _pct(r.get("judge_accuracy")), _pct(r.get("judge_false_accept")),
                     _pct(r.get("judge_matcher_agreement")), fmt_usd(r.get("cost_judge_usd", math.nan)),
                     fmt_usd(r.get("cost_judge_list_usd", math.nan))])
    return rows
