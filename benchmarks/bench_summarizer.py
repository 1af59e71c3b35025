"""Retention of the extractive summarizer, old vs new, against truncation at matched tokens.

A rough stand-in for the harness's "answer supported by a context unit" metric (issue #9) until
it lands: a probe counts as *supported* at a turn when one context unit (one summary line, or
one verbatim message) holds the normalized gold answer AND at least one content word of the
question (speaker names, "user"/"assistant" and stop words excluded). Adversarial probes are
skipped. Probes are asked at the end of the conversation and at fixed ages after their last
evidence message.

For each dataset and summarizing preset the script replays every conversation with the new
summarizer and with the old one (loaded from git, `--baseline-rev`), and with `truncate` at the
`keep` whose mean context tokens over the conversations are within 5 % of the new config's. Two
probe sets are reported: *verbatim* (the answer occurs word for word in some message, so the
full conversation can support it) and *all* non-adversarial probes (answers such as "7 May
2023" that only an anchored date can support count here).

    python benchmarks/bench_summarizer.py [--locomo PATH] [--window 8000] [--baseline-rev REV]

Prints one table per probe set; the interval is a paired bootstrap over probe asks (95 %), a
rough indication only (asks within a conversation are not independent).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import string
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsum import RollingSummarizer
from rollsum.summarizers.extractive import ExtractiveSummarizer

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo-dev.json"
BASELINE_REV = "b04e782"
PRESETS = ("since-last", "evict-window", "token-ratio", "budget-rule-based")
AGES = (5, 20, 60, 150)
SYNTH = (("synth-chat", "chat", 300, 1), ("synth-agent", "agent", 300, 2), ("synth-chat-long", "chat", 900, 3))

_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’–—…"})
_ARTICLES = re.compile(r"\b(?:a|an|the|and)\b")
_STOP = frozenset("""
a about after all am an and any are as at be been before being but by can could did do does doing
for from had has have having he her here hers him his how i if in into is it its me my of on or our
out over she so some than that the their them then there these they this those to up us was we were
what when where which while who whom whose why will with would you your user users assistant
kind sort name called current value set currently new old like likely
""".split())


def norm(text: str) -> str:
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def keywords(question: str, speakers: Sequence[str]) -> tuple[str, ...]:
    names = {w.lower() for s in speakers for w in s.split()}
    words = norm(question).split()
    return tuple(dict.fromkeys(w for w in words if w not in _STOP and w not in names and len(w) > 2))


@dataclass(frozen=True)
class Ask:
    probe: str
    turn: int
    age: int | None  # None: end of conversation
    answer: str
    keys: tuple[str, ...]
    verbatim: bool


@dataclass
class Conv:
    id: str
    messages: list[Any]
    asks: list[Ask]
    speakers: tuple[str, ...]


@dataclass
class Result:
    tokens: list[int] = field(default_factory=list)
    hits: dict[Ask, bool] = field(default_factory=dict)


def load_convs(name: str, locomo: Path) -> list[Conv]:
    from rollsum_evals import data as evals_data  # the harness's loaders

    if name == "locomo":
        raw = evals_data.load(str(locomo))
    else:
        from rollsum_evals.data.synth import make_conversation

        flavor, n, seed = next((f, n, s) for nm, f, n, s in SYNTH if nm == name)
        raw = [make_conversation(flavor, n_messages=n, seed=f"{seed}.{k}", conversation_id=f"{name}-{k}")
               for k in range(3)]
    out = []
    for c in raw:
        msgs = list(c.messages)
        index = {m.id: i for i, m in enumerate(msgs)}
        speakers = tuple(dict.fromkeys(m.name for m in msgs if m.name and m.role in ("user", "assistant")))
        full = "\n".join(norm(m.content) for m in msgs)
        asks = []
        for p in c.probes:
            if p.category == "adversarial" or not p.evidence:
                continue
            ans = norm(p.answer)
            keys = keywords(p.question, speakers)
            if len(ans) < 2 or ans in ("yes", "no") or not keys:
                continue
            last = max(index.get(e, -1) for e in p.evidence)
            if last < 0:
                continue
            verbatim = f" {ans} " in f" {full.replace(chr(10), ' ')} "
            for age in AGES:
                if last + age < len(msgs) - 1:
                    asks.append(Ask(p.id, last + age, age, ans, keys, verbatim))
            asks.append(Ask(p.id, len(msgs) - 1, None, ans, keys, verbatim))
        out.append(Conv(c.id, msgs, asks, speakers))
    return out


def supported(ask: Ask, units: Sequence[str]) -> bool:
    needle = f" {ask.answer} "
    for u in units:
        padded = f" {u} "
        if needle in padded and any(f" {k} " in padded for k in ask.keys):
            return True
    return False


def replay(conv: Conv, make: Callable[[], RollingSummarizer]) -> Result:
    rs = make()
    res = Result()
    by_turn: dict[int, list[Ask]] = {}
    for a in conv.asks:
        by_turn.setdefault(a.turn, []).append(a)
    for t, m in enumerate(conv.messages):
        rs.add(m)
        res.tokens.append(rs.context_tokens())
        asks = by_turn.get(t)
        if asks:
            units = [norm(line) for line in rs.summary_text().split("\n") if line.strip()]
            units += [norm(x.content) for x in rs.messages]
            for a in asks:
                res.hits[a] = supported(a, units)
    return res


def load_old(rev: str) -> type:
    """The extractive summarizer (and its tools module) as of `rev`, as a class."""
    def source(path: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    tools = types.ModuleType("_old_tools")
    sys.modules["_old_tools"] = tools
    exec(compile(source("rollsum/summarizers/tools.py"), "old_tools.py", "exec"), tools.__dict__)
    code = source("rollsum/summarizers/extractive.py").replace("rollsum.summarizers.tools", "_old_tools")
    spec = importlib.util.spec_from_loader("_old_extractive", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_old_extractive"] = mod
    exec(compile(code, "old_extractive.py", "exec"), mod.__dict__)
    cls: type = mod.ExtractiveSummarizer
    return cls


def engine(preset: str, window: int, summarizer_cls: type | None, **kw: Any) -> Callable[[], RollingSummarizer]:
    def make() -> RollingSummarizer:
        rs = RollingSummarizer.from_preset(preset, context_window=window, **kw)
        if summarizer_cls is not None and isinstance(rs.summarizer, ExtractiveSummarizer):
            rs.summarizer = summarizer_cls(**rs.summarizer.params())
        return rs
    return make


def mean_tokens(results: Sequence[Result]) -> float:
    toks = [t for r in results for t in r.tokens]
    return sum(toks) / max(len(toks), 1)


def run_all(convs: Sequence[Conv], make: Callable[[], RollingSummarizer]) -> list[Result]:
    return [replay(c, lambda: make()) for c in convs]


def matched_truncate(convs: Sequence[Conv], window: int, target: float,
                     cache: dict[int, list[Result]]) -> tuple[int, list[Result]]:
    def at(k: int) -> float:
        if k not in cache:
            cache[k] = run_all(convs, engine("truncate", window, None, keep=k))
        return mean_tokens(cache[k])

    lo, hi = 1, max(len(c.messages) for c in convs)
    while lo < hi:
        mid = (lo + hi) // 2
        if at(mid) < target:
            lo = mid + 1
        else:
            hi = mid
    best = min((k for k in (lo - 1, lo) if k >= 1), key=lambda k: abs(at(k) - target))
    return best, cache[best]


def group_of(ask: Ask) -> str:
    return "end" if ask.age is None else f"age {ask.age}"


GROUPS = ("end", *(f"age {g}" for g in AGES), "all asks")


def rates(results: Sequence[Result], verbatim_only: bool) -> dict[str, float]:
    """Share of supported asks per group ("end", "age N", "all asks")."""
    hits: dict[str, list[int]] = {g: [0, 0] for g in GROUPS}
    for r in results:
        for a, v in r.hits.items():
            if verbatim_only and not a.verbatim:
                continue
            for g in (group_of(a), "all asks"):
                hits[g][0] += v
                hits[g][1] += 1
    return {g: (h / n if n else float("nan")) for g, (h, n) in hits.items()}


def paired_interval(a: Sequence[Result], b: Sequence[Result], verbatim_only: bool,
                    seed: int = 0, n: int = 1000) -> tuple[float, float, float]:
    diffs = [float(ra.hits[k]) - float(rb.hits[k]) for ra, rb in zip(a, b, strict=True) for k in ra.hits
             if k.verbatim or not verbatim_only]
    if not diffs:
        return float("nan"), float("nan"), float("nan")
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(n))
    return sum(diffs) / len(diffs), means[int(0.025 * n)], means[int(0.975 * n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--window", type=int, default=8_000)
    ap.add_argument("--baseline-rev", default=BASELINE_REV)
    ap.add_argument("--presets", nargs="+", default=list(PRESETS))
    ap.add_argument("--datasets", nargs="+", default=["locomo", *(s[0] for s in SYNTH)])
    args = ap.parse_args()
    old_cls = load_old(args.baseline_rev)
    rows: dict[str, list[str]] = {"verbatim": [], "all": []}
    head = (f"{'dataset':<16}{'preset':<18}{'variant':<16}{'tokens':>8}"
            + "".join(f"{g:>9}" for g in GROUPS) + f"{'new - this (95% CI), all asks':>32}")
    for ds in args.datasets:
        if ds == "locomo" and not os.path.exists(args.locomo):
            print(f"skipping locomo: {args.locomo} not found", file=sys.stderr)
            continue
        convs = load_convs(ds, args.locomo)
        trunc_cache: dict[int, list[Result]] = {}
        for preset in args.presets:
            new = run_all(convs, engine(preset, args.window, None))
            old = run_all(convs, engine(preset, args.window, old_cls))
            keep, trunc = matched_truncate(convs, args.window, mean_tokens(new), trunc_cache)
            variants = [("new", new), ("old", old), (f"truncate k={keep}", trunc)]
            for set_name, verbatim_only in (("verbatim", True), ("all", False)):
                for label, res in variants:
                    cells = rates(res, verbatim_only)
                    ci = ""
                    if label != "new":
                        d, lo, hi = paired_interval(new, res, verbatim_only)
                        ci = f"{d:+.3f} ({lo:+.3f}, {hi:+.3f})"
                    rows[set_name].append(f"{ds:<16}{preset:<18}{label:<16}{mean_tokens(res):>8.0f}"
                                          + "".join(f"{cells[g]:>9.3f}" for g in GROUPS) + f"{ci:>32}")
    for set_name, lines in rows.items():
        print(f"\n== probes: {set_name} (supported = answer + a question word in one summary line or message) ==")
        print(head)
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
