"""`rollsum init CHAT [--questions Q]`: a ready sweep spec for your own chat, in one command.

It reads the chat (any format `rollsum data` reads) and its questions, checks both (each
problem one line naming file and line), and writes a spec next to the data: a threshold grid
for since-last and token-ratio, the truncate and full-context references, a context window
sized for the chat, probe ages the chat is long enough for, and the questions wired in. Paths
in the spec are relative to the spec, so the pair can be moved together. Then it prints the
command to run.

Names derived from the user's files (the spec's and the dataset's name, the default spec file
name, the run folder in the printed command) go through the same masking as everything printed
(`rollsum.redact`): a chat file whose name holds a piece of a key gives ``chat-***``, in the spec
and on the terminal alike, so the printed command names the file that was written. The paths the
spec records (``source``, ``questions``) stay exact: they must find the files.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsum.errors import ConfigError
from rollsum.redact import redact
from rollsum_evals.cli.args import dataset_format

MIN_SUGGESTED_WINDOW = 2_000
MAX_SUGGESTED_WINDOW = 200_000
AGES = (5, 20, 60, 150)


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    p = sub.add_parser("init", help="write a ready sweep spec for a chat export (and its questions)",
                       description="Check a chat export and its questions sidecar, then write a sweep spec "
                       "next to the data: since-last and token-ratio threshold grids, truncate and "
                       "full-context references, a window sized for the chat. Prints the next command.")
    p.add_argument("chat", metavar="CHAT", help="the chat: OpenAI/Anthropic message arrays, ShareGPT or "
                   "canonical JSONL (docs/datasets.md)")
    p.add_argument("--questions", metavar="Q", help="questions sidecar (.jsonl, .json or .csv) about the chat")
    p.add_argument("--out", metavar="SPEC", help="where to write the spec (default: <chat>.sweep.toml "
                   "beside the chat)")
    p.add_argument("--format", type=dataset_format, default=None,
                   help="the chat's format if guessing picks the wrong one (jsonl, chat, locomo, hf)")
    p.add_argument("--model", metavar="SPEC", default=None,
                   help="summarizer model (default: the offline extractive summarizer)")
    p.add_argument("--force", action="store_true", help="overwrite an existing spec")
    p.set_defaults(func=cmd_init)


@dataclass(frozen=True, slots=True)
class ChatShape:
    """What the spec is sized from."""

    conversations: int
    messages: int
    """Median messages per conversation."""
    tokens: int
    """Median tokens per conversation."""
    longest_message: int
    """Tokens of the 95th-percentile message (a window must hold a few of them)."""
    questions: int


def suggest_window(shape: ChatShape) -> int:
    """A simulated window about a quarter of the chat: small enough that summaries decide what
    the model sees (a chat that fits its window makes every configuration equal full context),
    large enough for a few long messages; rounded to a number a person would write."""
    want = max(shape.tokens // 4, 4 * shape.longest_message, MIN_SUGGESTED_WINDOW)
    want = min(want, MAX_SUGGESTED_WINDOW, max(shape.tokens // 2, MIN_SUGGESTED_WINDOW))
    step = 500 if want < 20_000 else 1_000 if want < 100_000 else 5_000
    return max(MIN_SUGGESTED_WINDOW, want // step * step)


def fits_window(shape: ChatShape, window: int) -> bool:
    """Whether the chat fits the window init writes (a chat under ~8,000 tokens fits the
    smallest, `MIN_SUGGESTED_WINDOW`): then no configuration summarizes because of the window."""
    return shape.tokens <= window


def window_comment(shape: ChatShape, window: int) -> list[str]:
    """The spec's comment above ``context_window``: what the window does for this chat. Why: it
    said "about a quarter of the chat" above a window that held the whole chat."""
    if fits_window(shape, window):
        return [f"# the smallest window init writes; the chat (~{shape.tokens:,} tokens) fits in it, so the window",
                "# never makes a configuration summarize (token-ratio replays like full context): a longer chat",
                "# measures more"]
    return [f"# about a quarter of the chat (~{shape.tokens:,} tokens): small enough that the summary decides what",
            "# the model sees; a window that holds the whole chat makes every configuration equal full context"]


def grids(shape: ChatShape) -> tuple[list[int], list[int], list[int]]:
    """(messages_per_summary, keep_last, probe ages) the chat is long enough for."""
    from rollsum import EngineSettings

    # the engine attempts a summary at most once per `min_messages_per_attempt` messages (10): a
    # smaller messages_per_summary replays exactly like 10, two identical rows in the report
    floor = EngineSettings().min_messages_per_attempt
    if shape.messages >= 160:
        every, tail = [10, 20, 40], [2, 10, 20]
    else:
        every, tail = [10, 15, 20], [2, 5, 10]
    every = sorted({max(e, floor) for e in every})
    ages = [a for a in AGES if a < shape.messages] or [1]
    return every, tail, ages


def measure(convs: Sequence[Any]) -> ChatShape:
    from rollsum.tokens import HeuristicCounter

    counter = HeuristicCounter()
    per_conv, per_msg = [], []
    for c in convs:
        sizes = [counter.count(m.content) + counter.overhead for m in c.messages]
        per_msg.extend(sizes)
        per_conv.append(sum(sizes))
    per_msg.sort()
    p95 = per_msg[min(len(per_msg) - 1, int(len(per_msg) * 0.95))] if per_msg else 0
    return ChatShape(conversations=len(convs), messages=int(statistics.median(len(c.messages) for c in convs)),
                     tokens=int(statistics.median(per_conv)), longest_message=p95,
                     questions=sum(len(c.probes) for c in convs))


def _rel(path: str, spec_dir: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), spec_dir)).as_posix()


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_spec(name: str, chat: str, questions: str | None, fmt: str | None, shape: ChatShape,
                model: str | None, spec_dir: Path, spec_file: str = "SPEC") -> str:
    window = suggest_window(shape)
    every, tail, ages = grids(shape)
    lines = [
        f"# Written by `rollsum init` for {redact(Path(chat).name)}: {shape.conversations} conversation(s), median "
        f"{shape.messages} messages",
        f"# (~{shape.tokens:,} tokens), {shape.questions} question(s). Paths are relative to this file.",
        f"# Run it:      rollsum run {spec_file} --out runs/{name}   (--limit 1: a quick smoke run)",
        f"# Real model:  rollsum run {spec_file} --model anthropic:claude-haiku-4-5 --max-cost-usd 2",
        f"name = {_toml_str(name)}",
        f'description = "Threshold grid for {name}: since-last and token-ratio against truncate and full context."',
        f"models = [{_toml_str(model or 'extractive')}]",
        'scorers = ["answer_retention", "fact_survival", "cost"]',
        *window_comment(shape, window),
        f"context_window = {window}",
        "seeds = [0]",
        "",
        "# each question is asked N messages after its evidence and at the end; a question with its",
        "# own ask_at (questions sidecar) is asked at that message only",
        "[probes]",
        f"ages = {ages}",
        "end = true",
        "",
        "[[datasets]]",
        f"name = {_toml_str(name)}",
        f"source = {_toml_str(_rel(chat, spec_dir))}",
    ]
    if fmt:
        lines.append(f"format = {_toml_str(fmt)}")
    if questions:
        lines.append(f"questions = {_toml_str(_rel(questions, spec_dir))}")
    lines += [
        "",
        "[[configs]]",
        'preset = "full-context"',
        "",
        "[[configs]]",
        'preset = "truncate"',
        "",
        "[[configs]]",
        'preset = "since-last"',
        f"grid = {{ messages_per_summary = {every}, keep_last = {tail} }}",
        "",
        "[[configs]]",
        'preset = "token-ratio"',
        "# the seed resets at 0.7, which must stay below the trigger: lowered so the grid can go below it",
        "params = { reset_ratio = 0.5 }",
        "grid = { trigger_ratio = [0.6, 0.7, 0.8, 0.9] }",
        "",
    ]
    return "\n".join(lines)


def derived_name(chat: str) -> str:
    """The chat file's stem, masked as it would be printed (a piece of a key in a file name must
    not become a spec name, and the name printed must be the name written)."""
    p = Path(chat)
    return redact(p.name.removesuffix(p.suffix))


def default_spec_path(chat: str) -> Path:
    return Path(chat).with_name(derived_name(chat) + ".sweep.toml")


def cmd_init(args: argparse.Namespace) -> int:
    from rollsum_evals.cli.data_cmd import unfindable_answers
    from rollsum_evals.data import load
    from rollsum_evals.data.sidecar import attach
    from rollsum_evals.spec.parse import parse_spec

    if args.model:  # named as the flag, not as the spec line it would become
        from rollsum.models.spec import capabilities
        from rollsum_evals.spec import components

        if not components.is_builtin(args.model):
            try:
                capabilities(args.model)
            except ConfigError as err:
                raise ConfigError(f"--model {args.model!r}: {err}") from None
    if not os.path.isfile(args.chat):
        found = "is a directory" if os.path.isdir(args.chat) else "no such file"
        raise ConfigError(f"{args.chat}: {found} (expected a chat export: docs/datasets.md)")
    spec_path = Path(args.out) if args.out else default_spec_path(args.chat)
    if spec_path.exists() and not args.force:
        raise ConfigError(f"{spec_path}: already exists (pass --force to overwrite it, or --out another path)")
    convs = load(args.chat, args.format, strict=True)
    if not convs:
        raise ConfigError(f"{args.chat}: no conversation in it (run `rollsum data validate {args.chat}`)")
    if args.questions:
        convs = attach(convs, args.questions)
    shape = measure(convs)
    if shape.questions == 0:
        print("warning: no questions: retention cannot be measured, only tokens and cost; write a "
              "questions sidecar and pass it with --questions (docs/datasets.md)")
    missing = unfindable_answers(convs, args.questions or args.chat)
    for issue in missing[:3]:
        print(f"warning: {issue}")
    if len(missing) > 3:
        print(f"warning: ... {len(missing)} questions in all that answer_retention will not count or cannot hold")
    if fits_window(shape, suggest_window(shape)):
        print(f"warning: the chat (~{shape.tokens:,} tokens) fits the smallest window init writes "
              f"({suggest_window(shape):,} tokens): no configuration summarizes because of the window, so "
              "token-ratio replays like full context; a longer chat (or several) measures more")
    name = derived_name(args.chat)
    spec_dir = spec_path.resolve().parent
    text = render_spec(name, args.chat, args.questions, args.format, shape, args.model, spec_dir, spec_path.name)
    from rollsum_evals.fileio import atomic_write_text

    # checked before it is written: a mistake in what the user gave (--model) must not leave a
    # spec that `run` refuses (nor replace the one --force would have replaced)
    spec = parse_spec(text, str(spec_path))
    atomic_write_text(spec_path, text)
    from rollsum_evals.spec.expand import expand

    units = expand(spec, {d.name: ("-", [c.id for c in convs]) for d in spec.datasets})
    # the truncate curve the harness adds is counted apart: "configurations" are the spec's own, the
    # ones the report ranks, so the count here matches the report's and the regress gate's
    from rollsum_evals.gain import is_curve

    configs = {u.config for u in units}
    curve = {c for c in configs if is_curve(c)}
    print(f"wrote {spec_path.resolve()}: {shape.conversations} conversation(s), median {shape.messages} messages "
          f"(~{shape.tokens:,} tokens), {shape.questions} question(s); window {spec.context_windows[0]:,} "
          f"tokens; {len(configs - curve)} configurations + {len(curve)} truncation-curve points "
          f"(the yardstick), {len(units)} units")
    print(f"next: rollsum run {shlex.quote(str(spec_path))} --out {shlex.quote(f'runs/{name}')}")
    return 0
