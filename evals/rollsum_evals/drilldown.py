"""The report's drill-down: pick a configuration and a fact it lost, see why.

For each lost fact (an answerable ask whose answer the context did not support) the page shows
the context at the turn the question was asked, rebuilt exactly from the run's trace
(`Trace.context_at`): the summary text(s) that were in it, the verbatim tail, and where the
evidence went (the last turn its message was still verbatim in context, and the summary
generation that dropped it, from the fact_survival scorer).

report.html stays one self-contained file: the data is embedded as JSON in a
``<script type="application/json">`` (every ``<``, ``>`` and ``&`` escaped as ``\\u003c`` etc., so
no conversation text can close the element or be parsed as HTML) and read by a few lines of plain
JavaScript that only ever set ``textContent``. The embedded size is bounded (`Limits`); the
page says what was cut.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from rollsum.errors import ConfigError
from rollsum.redact import env_secrets, redact_obj
from rollsum_evals.analysis import by_config, lost_asks
from rollsum_evals.replay.trace import TextRef, Trace
from rollsum_evals.report_keys import ConfigKeys
from rollsum_evals.rundir.read import Run

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Limits:
    """What the page embeds at most (it must stay small enough to mail)."""

    facts_per_config: int = 6
    """Lost facts per configuration, oldest evidence first (the ones a summary had to carry)."""
    configs: int = 40
    tail_messages: int = 8
    """The last messages of the verbatim tail; the page says how many earlier ones it omits."""
    summary_items: int = 4
    """The last non-verbatim items (summaries, clipped messages) of a context; the rest counted."""
    chars: int = 2_000
    """Characters per text (a summary, a message); longer ones end with a note."""


DEFAULT_LIMITS = Limits()
DATA_ID = "drilldown-data"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit:,} more characters not embedded]"


def _last_verbatim(trace: Trace, index: int, until: int) -> int | None:
    """The last turn ≤ `until` whose context held message `index` verbatim."""
    for t in range(min(until, len(trace.turns) - 1), index - 1, -1):
        for seg in trace.turns[t].composition:
            if not isinstance(seg, TextRef) and seg[0] <= index < seg[1]:
                return t
    return None


def _context(trace: Trace, turn: int, limits: Limits) -> dict[str, Any]:
    items = trace.context_at(turn)
    written = [i for i in items if not i.verbatim]
    summary = [{"role": i.role, "text": _cut(i.text, limits.chars), "from": i.message_index}
               for i in written[-limits.summary_items:]]
    verbatim = [i for i in items if i.verbatim]
    tail = [{"index": i.message_index, "role": i.role, "text": _cut(i.text, limits.chars)}
            for i in verbatim[-limits.tail_messages:]]
    tokens = trace.turns[turn].context_tokens if 0 <= turn < len(trace.turns) else None
    return {"turn": turn, "tokens": tokens, "summary": summary, "tail": tail,
            "omitted": max(0, len(verbatim) - limits.tail_messages),
            "summary_omitted": max(0, len(written) - limits.summary_items)}


def _where(trace: Trace, row: Mapping[Any, Any]) -> str:
    ev, asked = int(row.get("evidence_turn", -1)), int(row.get("asked_turn", -1))
    if not 0 <= ev < len(trace.messages):
        return "The evidence is not one message of the conversation."
    parts = []
    last = _last_verbatim(trace, ev, asked)
    if last is None:
        parts.append(f"Message {ev} (the evidence) was never verbatim in the context.")
    elif last >= asked:
        parts.append(f"Message {ev} (the evidence) was still verbatim in the context at turn {asked}, "
                     "yet did not support the answer (the answer is not stated in it as asked).")
    else:
        parts.append(f"Message {ev} (the evidence) was verbatim in the context until turn {last}; "
                     f"from turn {last + 1} on it was summarized or dropped.")
    died = row.get("died_at_generation")
    if died is not None and not pd.isna(died) and int(died) >= 0:
        g = int(died)
        at = f" (written at turn {trace.summary_turns[g]})" if g < len(trace.summary_turns) else ""
        parts.append(f"Summary generation {g}{at} is the first that lost the fact after a summary had it.")
    elif last is not None and last < asked:
        parts.append("No summary ever carried the answer.")
    return " ".join(parts)


FACT_COLUMNS = ("question", "answer", "conversation_id", "asked_turn", "evidence_turn", "age_turns", "unit_id",
                "died_at_generation")
"""The ask columns a fact of the drill-down reads (converting all ~30 per row was a visible cost)."""


@dataclass(frozen=True)
class Plan:
    """Which lost facts the drill-down embeds (`plan`), known before any trace is read."""

    chosen: list[tuple[str, pd.DataFrame]]
    """(configuration label, its lost asks oldest evidence first), in key order."""
    omitted: int
    """Configurations with lost facts past `Limits.configs`."""
    units: frozenset[str]
    """The Units whose traces the embedded facts show."""


def plan(probes: pd.DataFrame, keys: ConfigKeys, limits: Limits = DEFAULT_LIMITS) -> Plan:
    """The drill-down's choice of facts: a report announces its Units (`Run.want_traces`) with
    the checkpoint's, so the summaries journal is scanned once for both."""
    chosen: list[tuple[str, pd.DataFrame]] = []
    omitted = 0
    if probes.empty or "retained" not in probes.columns:
        return Plan(chosen, omitted, frozenset())
    # the columns read here only: the ask table comes with ~30 columns in many blocks (columns
    # added one by one), and every `head` below consolidated them all again (~0.1 s a report)
    probes = probes[[c for c in dict.fromkeys(("config", "retained", *FACT_COLUMNS)) if c in probes.columns]]
    # one grouping, not a mask over every ask per configuration
    of_label = {str(cfg): grp for cfg, grp in by_config(probes).items()}
    for label in keys.labels():
        lost = lost_asks(of_label.get(label, probes.iloc[:0]), label)
        if lost.empty:
            continue
        if len(chosen) >= limits.configs:
            omitted += 1
            continue
        chosen.append((label, lost))
    units = frozenset(str(u) for _, lost in chosen for u in lost.head(limits.facts_per_config)["unit_id"])
    return Plan(chosen, omitted, units)


def collect(run: Run, probes: pd.DataFrame, keys: ConfigKeys, limits: Limits = DEFAULT_LIMITS,
            chosen_facts: Plan | None = None) -> dict[str, Any]:
    """The drill-down's data: configurations in key order, each with its lost facts; contexts
    stored once per (unit, turn) since many asks share one (every question asked at the end).
    `chosen_facts`: `plan(probes, keys, limits)` when the caller made it already."""
    data: dict[str, Any] = {"limits": asdict(limits), "configs": [], "contexts": {}, "missing": ""}
    if probes.empty or "retained" not in probes.columns:
        return data
    facts_plan = chosen_facts if chosen_facts is not None else plan(probes, keys, limits)
    chosen = facts_plan.chosen
    if facts_plan.omitted:
        data["configs_omitted"] = facts_plan.omitted
    # the traces shown are read together: only their journal lines are decoded
    run.want_traces(facts_plan.units)
    for label, lost in chosen:
        facts = []
        traces: dict[str, Trace] = {}  # this configuration's (at most facts_per_config)
        shown = lost.head(limits.facts_per_config)
        for r in shown[[c for c in FACT_COLUMNS if c in shown.columns]].to_dict("records"):
            fact = {"question": str(r.get("question", "")), "answer": str(r.get("answer", "")),
                    "conversation": str(r.get("conversation_id", "")), "asked_turn": int(r["asked_turn"]),
                    "evidence_turn": int(r.get("evidence_turn", -1)), "age": int(r.get("age_turns", -1)),
                    "where": "", "evidence": "", "context": None}
            unit = str(r["unit_id"])
            if not data["missing"]:
                try:
                    if unit not in traces:
                        traces[unit] = run.load_trace(unit, contexts_only=True)
                except (ConfigError, KeyError, OSError) as err:
                    data["missing"] = str(err)
            if unit in traces:
                trace = traces[unit]
                asked = int(r["asked_turn"])
                ctx_id = f"{unit}@{asked}"
                if ctx_id not in data["contexts"]:
                    data["contexts"][ctx_id] = _context(trace, asked, limits)
                fact["context"] = ctx_id
                fact["where"] = _where(trace, r)
                ev = int(r.get("evidence_turn", -1))
                if 0 <= ev < len(trace.messages):
                    fact["evidence"] = _cut(trace.messages[ev].content, limits.chars)
            facts.append(fact)
        data["configs"].append({"key": keys[label], "label": label, "lost": len(lost), "facts": facts})
    # contexts and evidence are rebuilt from the dataset, not read from the (redacted) run
    # directory: a key quoted in the conversation must be masked here too (issue #11)
    masked: dict[str, Any] = redact_obj(data, env_secrets())
    return masked


def embed_json(data: Any) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` survives literally."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('drilldown-data').textContent);
  var cfg = document.getElementById('dd-config'), fact = document.getElementById('dd-fact');
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }
  function set(id, text) { document.getElementById(id).textContent = text; }
  function showFact() {
    var c = data.configs[cfg.selectedIndex], f = c && c.facts[fact.selectedIndex];
    var sum = document.getElementById('dd-summary'), tail = document.getElementById('dd-tail');
    sum.replaceChildren(); tail.replaceChildren();
    if (!f) { return; }
    set('dd-question', f.question); set('dd-answer', f.answer);
    set('dd-asked', 'conversation ' + f.conversation + ', asked at turn ' + f.asked_turn
        + ', evidence at message ' + f.evidence_turn + ' (age ' + f.age + ' turns)');
    set('dd-where', f.where || 'The conversation data was not available when the report was written.');
    set('dd-evidence', f.evidence);
    var ctx = f.context ? data.contexts[f.context] : null;
    if (!ctx) { sum.appendChild(el('p', '', '(no context recorded)')); return; }
    set('dd-tokens', ctx.tokens === null ? '' : ctx.tokens + ' tokens in context at turn ' + ctx.turn);
    if (ctx.summary_omitted) {
      sum.appendChild(el('p', 'dd-note', ctx.summary_omitted + ' earlier summary item(s) not shown'));
    }
    if (!ctx.summary.length) sum.appendChild(el('p', '', '(no summary was in the context at this turn)'));
    ctx.summary.forEach(function (s) { sum.appendChild(el('pre', 'dd-text', s.text)); });
    if (ctx.omitted) tail.appendChild(el('p', 'dd-note', ctx.omitted + ' earlier verbatim message(s) not shown'));
    ctx.tail.forEach(function (m) {
      var row = el('div', 'dd-msg' + (m.index === f.evidence_turn ? ' dd-evidence' : ''));
      row.appendChild(el('span', 'dd-role', '#' + m.index + ' ' + m.role));
      row.appendChild(el('pre', 'dd-text', m.text));
      tail.appendChild(row);
    });
  }
  function fillFacts() {
    var c = data.configs[cfg.selectedIndex];
    fact.replaceChildren();
    (c ? c.facts : []).forEach(function (f, i) {
      fact.appendChild(new Option((i + 1) + '. ' + f.question + ' (age ' + f.age + ')', String(i))); });
    set('dd-lost', c ? c.lost + ' answerable ask(s) lost; ' + c.facts.length + ' shown' : '');
    showFact();
  }
  data.configs.forEach(function (c, i) { cfg.appendChild(new Option(c.key + ': ' + c.label, String(i))); });
  cfg.addEventListener('change', fillFacts);
  fact.addEventListener('change', showFact);
  fillFacts();
})();
"""

CSS = """
.dd-pick{display:flex;gap:1em;flex-wrap:wrap;margin:.5em 0}.dd-pick select{max-width:100%;font-size:.9em}
.dd-msg{border-left:3px solid #ddd;padding-left:.5em;margin:.3em 0}.dd-evidence{border-left-color:#c0392b}
.dd-role{font-size:.8em;color:#555}.dd-note{color:#555;font-style:italic}
.dd-text{margin:.2em 0}
"""


def section(run: Run, probes: pd.DataFrame, keys: ConfigKeys, limits: Limits = DEFAULT_LIMITS,
            chosen_facts: Plan | None = None) -> str:
    """The drill-down as one HTML fragment (heading, explanation, controls, data, script)."""
    data = collect(run, probes, keys, limits, chosen_facts)
    e = html.escape
    head = ["<h2 id=\"drilldown\">Why was a fact lost? (drill-down)</h2>"]
    if not data["configs"]:
        return head[0] + "<p>No configuration lost an answerable fact: nothing to drill into.</p>"
    bounds = (f"To keep this file small it embeds at most {limits.facts_per_config} lost facts per "
              f"configuration (oldest evidence first) for at most {limits.configs} configurations, the last "
              f"{limits.summary_items} summary items and {limits.tail_messages} verbatim messages of each "
              f"context, and {limits.chars:,} characters per text; cut texts say so.")
    if data.get("configs_omitted"):
        bounds += f" {data['configs_omitted']} more configuration(s) with lost facts are not embedded."
    missing = (f'<p class="warn">The conversation data could not be loaded ({e(data["missing"])}): '
               "contexts are not shown.</p>" if data["missing"] else "")
    return "\n".join([
        *head,
        "<p>Pick a configuration and a fact it lost: the page shows the context the main model was "
        "given at the turn the question was asked — the summary text in it and the verbatim tail "
        "(the evidence message, if still there, is marked red) — and where the evidence went. "
        f"{e(bounds)}</p>", missing,
        f"<style>{CSS}</style>",
        '<div class="dd-pick"><label>configuration <select id="dd-config"></select></label>'
        '<label>lost fact <select id="dd-fact"></select></label></div>',
        '<p id="dd-lost" class="dd-note"></p>',
        "<table class=\"dd-fact\"><tr><th>question</th><td id=\"dd-question\"></td></tr>"
        "<tr><th>answer</th><td id=\"dd-answer\"></td></tr><tr><th>asked</th><td id=\"dd-asked\"></td></tr>"
        "<tr><th>where the evidence went</th><td id=\"dd-where\"></td></tr>"
        "<tr><th>evidence message</th><td><pre id=\"dd-evidence\" class=\"dd-text\"></pre></td></tr></table>",
        '<p id="dd-tokens" class="dd-note"></p>',
        '<div class="side"><div><h3>Summary in context</h3><div id="dd-summary"></div></div>'
        '<div><h3>Verbatim tail</h3><div id="dd-tail"></div></div></div>',
        f'<script type="application/json" id="{DATA_ID}">{embed_json(data)}</script>',
        f"<script>{SCRIPT}</script>",
    ])
