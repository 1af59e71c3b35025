"""`rollsum data`: make, check, convert and describe conversation datasets.

Handlers import the data package lazily so `rollsum --help` stays instant. A bad input file is
a user mistake: it is reported in one line per problem and exits 2, never with a traceback.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from rollsum_evals.cli.args import INT, NON_NEGATIVE_INT, POSITIVE_INT, dataset_format, message_count

EXIT_OK, EXIT_USAGE = 0, 2
log = logging.getLogger(__name__)


def _user_errors(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """File-system failures on the user's paths are user mistakes: one line, exit 2."""

    @wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except (OSError, UnicodeDecodeError) as err:
            from rollsum.errors import ConfigError
            from rollsum_evals.fsfaults import describe_os_error

            raise ConfigError(describe_os_error(err) if isinstance(err, OSError) else str(err)) from None

    return run


def register(sub: Any) -> None:  # argparse's _SubParsersAction is private
    data = sub.add_parser("data", help="make, validate, convert and describe conversation datasets",
                          description="Conversation datasets: synthetic generation, validation, "
                          "conversion to canonical JSONL or Hugging Face, and statistics.")
    dsub = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    dsub.required = True

    p = dsub.add_parser("synth", help="generate synthetic conversations with planted facts",
                        description="Stream seeded synthetic conversations (with probes) to canonical JSONL.")
    p.add_argument("--flavor", choices=("chat", "agent", "mixed"), default="chat")
    p.add_argument("--conversations", type=POSITIVE_INT, default=1, metavar="N")
    p.add_argument("--messages", type=message_count, default="300", metavar="M",
                   help="messages per conversation, or a range LOW-HIGH (seeded per conversation)")
    p.add_argument("--seed", type=INT, default=0)
    p.add_argument("--facts", type=NON_NEGATIVE_INT, default=None,
                   help="probes per conversation (default: messages/30)")
    p.add_argument("--out", required=True, metavar="FILE", help="output .jsonl (written atomically)")
    p.add_argument("--manifest", default=None, metavar="FILE",
                   help="record the spec, generator version and sha256 of --out in this manifest.json")
    p.set_defaults(func=cmd_synth)

    p = dsub.add_parser("validate", help="check a dataset file; exit 2 if anything is wrong",
                        description="Check every record; each problem names file, line, conversation, field "
                        "and what was expected.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", type=dataset_format, default=None, help="jsonl, chat, locomo, hf (default: guessed)")
    p.add_argument("--questions", metavar="Q", default=None,
                   help="also check a questions sidecar (.jsonl, .json or .csv) against the chat")
    p.add_argument("--strict", action="store_true", help="warnings are errors; stop at the first error")
    _limit_args(p)
    p.set_defaults(func=cmd_validate)

    p = dsub.add_parser("convert", help="convert between canonical JSONL, chat exports and Hugging Face",
                        description="Read any supported format and write canonical JSONL (default), a "
                        "Hugging Face dataset directory (--to hf), or a chat export (--to openai, anthropic, "
                        "sharegpt; .json or .jsonl by OUT's extension). Export formats have no place for "
                        "probes: they go to a questions sidecar beside OUT (<OUT>.questions.jsonl).")
    p.add_argument("--from", dest="from_format", type=dataset_format, default=None, metavar="FORMAT",
                   help="jsonl, chat, locomo, hf, synth (default: guessed)")
    p.add_argument("--to", dest="to_format", choices=("jsonl", "hf", "openai", "anthropic", "sharegpt"),
                   default="jsonl", help="what to write (default jsonl: canonical)")
    p.add_argument("--questions", metavar="Q", default=None,
                   help="attach a questions sidecar (.jsonl, .json or .csv) to IN as probes")
    p.add_argument("--strict", action="store_true", help="fail on the first bad record instead of skipping it "
                   "with a warning (nothing left at all is an error either way)")
    p.add_argument("input", metavar="IN", help="a dataset file, a Hugging Face directory, .parquet or .arrow, "
                   "hf:OWNER/NAME[:SPLIT], or synth:FLAVOR?...")
    p.add_argument("output", metavar="OUT", help="the file to write (a new or empty directory, or an earlier "
                   "output, with --to hf); must differ from IN")
    _limit_args(p)
    p.set_defaults(func=cmd_convert)

    p = dsub.add_parser("stats", help="conversations, messages, tokens and probes of a dataset",
                        description="Counts by role and probe category; tokens by the chars/4 heuristic.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", type=dataset_format, default=None)
    p.add_argument("--questions", metavar="Q", default=None, help="count a questions sidecar's questions too")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--skip-bad-records", action="store_true",
                   help="count the records that can be read (bad ones are logged and left out) instead of "
                   "stopping at the first bad one")
    _limit_args(p)
    p.set_defaults(func=cmd_stats)


def _limit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-line-bytes", type=POSITIVE_INT, default=None, metavar="N",
                   help="longest accepted JSONL line (default 32 MiB)")


def _limits(args: argparse.Namespace) -> Any:
    from rollsum_evals.data.reader import DEFAULT_LIMITS, Limits

    if getattr(args, "max_line_bytes", None):
        return Limits(max_line_bytes=args.max_line_bytes)
    return DEFAULT_LIMITS


def _progress(total: int | None, desc: str, unit: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty(),
                unit_scale=True, mininterval=0.5)


@_user_errors
def cmd_synth(args: argparse.Namespace) -> int:
    from rollsum_evals.data import synth
    from rollsum_evals.data.formats import parse_synth_spec
    from rollsum_evals.data.jsonl import write_streamed

    spec = f"synth:{args.flavor}?conversations={args.conversations}&messages={args.messages}&seed={args.seed}"
    if args.facts is not None:
        spec += f"&facts={args.facts}"
    items = parse_synth_spec(spec)
    if args.manifest:  # a manifest that cannot be recorded into is refused before the set is written
        from rollsum_evals.data import manifest

        manifest.read(args.manifest)
    low, _, high = str(args.messages).partition("-")
    total = args.conversations * (int(high) if high else int(low)) if low.isdigit() else None
    with _progress(total, f"synth {args.flavor}", "msg") as bar:
        n = write_streamed(items, args.out, on_message=lambda: bar.update(1))
    print(f"wrote {n} conversation(s) to {Path(args.out).resolve()} (generator {synth.GENERATOR_VERSION}, spec {spec})")
    if args.manifest:
        from rollsum_evals.data import manifest

        command = (f"rollsum data synth --flavor {args.flavor} --conversations {args.conversations} "
                   f"--messages {args.messages} --seed {args.seed}"
                   + (f" --facts {args.facts}" if args.facts is not None else "")
                   + f" --out {args.out} --manifest {args.manifest}")
        entry = manifest.record(args.manifest, args.out, spec=spec, generator_version=synth.GENERATOR_VERSION,
                                command=command)
        print(f"recorded sha256 {entry['sha256']} in {Path(args.manifest).resolve()}")
    return EXIT_OK


@_user_errors
def cmd_validate(args: argparse.Namespace) -> int:
    from rollsum_evals.data import validate

    report = validate(args.file, strict=args.strict, format=args.format, limits=_limits(args))
    if args.questions and report.ok:
        report.issues.extend(question_issues(args.file, args.questions, args.format, _limits(args),
                                             strict=args.strict))
    for issue in report.issues:
        print(f"{issue.severity}: {issue}", file=sys.stderr if issue.severity == "error" else sys.stdout)
    verdict = "ok" if report.ok else "invalid"
    print(f"{args.file}: {verdict}: {report.records} record(s), {report.valid_records} valid, "
          f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return EXIT_OK if report.ok else EXIT_USAGE


def question_issues(chat: str, questions: str, fmt: str | None, limits: Any, *, strict: bool = False) -> list[Any]:
    """Every problem of a questions sidecar against its chat, plus a warning for each answer the
    scorers could never find (not in the chat, as answer_retention normalises text)."""
    from rollsum_evals.data import load
    from rollsum_evals.data.checks import Issue
    from rollsum_evals.data.sidecar import check, read_rows

    convs, issues = check(load(chat, fmt, limits=limits), read_rows(questions, limits=limits))
    issues += unfindable_answers(convs, questions)
    if strict:
        issues = [Issue(i.file, i.line, i.conversation_id, i.field, i.expected, "error") for i in issues]
    return issues


def unfindable_answers(convs: Any, file: str) -> list[Any]:
    """A warning per probe answer_retention will not count, or will count but cannot find even
    in full context, saying exactly what it will do: the scorer's own rule
    (`rollsum_evals.scoring.answerability.at_end`), so validator and run cannot disagree."""
    from rollsum_evals.data.checks import Issue
    from rollsum_evals.replay.trace import DEFAULT_TIMESTAMPS, with_ids
    from rollsum_evals.scoring.answerability import at_end, describe

    out = []
    for conv in convs:
        if not conv.probes:
            continue
        for p, verdict, caveat in at_end(with_ids(conv.messages), conv.probes, DEFAULT_TIMESTAMPS):
            if verdict.excluded in ("", "adversarial") and not caveat:
                continue
            what = f"answer_retention: counted, but {caveat}" if caveat else f"answer_retention: {describe(verdict)}"
            out.append(Issue(file, None, conv.id, f"probe {p.id}", what, "warning"))
    return out


def _same_file(a: str, b: str) -> bool:
    """The same path, or one file reached two ways (a symbolic link, a hard link): writing the
    output would replace the file being read."""
    if os.path.abspath(a) == os.path.abspath(b) or os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@_user_errors
def cmd_convert(args: argparse.Namespace) -> int:
    from rollsum.errors import ConfigError
    from rollsum_evals.data.jsonl import write_jsonl

    if _same_file(args.input, args.output):
        raise ConfigError(f"{args.output}: output must differ from the input {args.input} (it is the same file"
                          + (", through a symbolic link)" if os.path.islink(args.output) or os.path.islink(args.input)
                             else ")"))
    if args.to_format == "hf" and os.path.isdir(args.output) and os.listdir(args.output):
        from rollsum_evals.data.hf import is_hf_dir

        if not is_hf_dir(args.output):  # save_to_disk would write its files among someone else's
            raise ConfigError(f"{args.output}: a directory that is not empty and holds no Hugging Face dataset "
                              "(expected a new or empty directory, or an earlier --to hf output to replace)")
    convs = iter(_conversations(args))
    first = next(convs, None)
    if first is None:  # every record skipped (warned above), or none at all: never an empty output and exit 0
        raise ConfigError(f"{args.input}: no conversation to convert (every record was skipped, see the warnings "
                          "above, or there was none); nothing written")
    convs = itertools.chain([first], convs)
    lost = {"times": 0, "names": 0}  # what an export format has no place for (left out, said below)
    with _progress(None, "convert", "conv") as bar:
        def counted() -> Any:
            for c in convs:
                bar.update(1)
                lost["times"] += sum(1 for m in c.messages if m.created_at)
                lost["names"] += sum(1 for m in c.messages if m.name and (
                    args.to_format == "sharegpt" or (args.to_format == "anthropic" and m.role != "tool")))
                yield c

        side = None
        if args.to_format == "hf":
            from rollsum_evals.data import hf

            conversations = list(counted())
            hf.save(conversations, args.output)
            n = len(conversations)
        elif args.to_format == "jsonl":
            n = write_jsonl(counted(), args.output)
        else:
            from rollsum_evals.data.convert import write_export

            n, side = write_export(counted(), args.output, args.to_format)
    print(f"wrote {n} conversation(s) to {Path(args.output).resolve()} ({args.to_format})")
    if side is not None:
        print(f"wrote their questions to {Path(side).resolve()} (a questions sidecar: `rollsum init "
              f"{args.output} --questions {side}`)")
    left = [f"{what} of {k:,} message(s)" for what, k in (("created_at", lost["times"]), ("name", lost["names"])) if k]
    if left and args.to_format not in ("jsonl", "hf"):
        when = "; a question about when something was said cannot be answered from it" if lost["times"] else ""
        print(f"note: left out of the {args.to_format} file (the format has no field for them): {', '.join(left)}"
              f"{when} (--to jsonl or hf keeps them)")
    return EXIT_OK


def _conversations(args: argparse.Namespace) -> Any:
    """The input's conversations, streamed; loaded whole and given its probes with --questions."""
    from rollsum_evals.data import iter_conversations

    convs = iter_conversations(args.input, getattr(args, "from_format", None) or getattr(args, "format", None),
                               strict=getattr(args, "strict", False), limits=_limits(args))
    if getattr(args, "questions", None):
        from rollsum_evals.data.sidecar import attach

        return attach(list(convs), args.questions, limits=_limits(args))
    return convs


@_user_errors
def cmd_stats(args: argparse.Namespace) -> int:
    from rollsum.tokens import HeuristicCounter

    counter = HeuristicCounter()
    roles: Counter[str] = Counter()
    cats: Counter[str] = Counter()
    convs = msgs = tokens = refs = 0
    longest = 0
    args.input = args.file
    args.strict = not args.skip_bad_records  # numbers of a file are of all of it, unless asked
    for conv in _conversations(args):
        convs += 1
        msgs += len(conv.messages)
        longest = max(longest, len(conv.messages))
        refs += len(conv.references)
        for m in conv.messages:
            roles[m.role] += 1
            tokens += counter.count(m.content) + counter.overhead
        cats.update(p.category for p in conv.probes)
    if convs == 0:
        from rollsum.errors import ConfigError

        raise ConfigError(f"{args.file}: no readable conversation (see the warnings above, or run "
                          "`rollsum data validate` on it)")
    stats = {"conversations": convs, "messages": msgs, "max_messages": longest, "tokens": tokens,
             "references": refs, "messages_by_role": dict(sorted(roles.items())),
             "probes": sum(cats.values()), "probes_by_category": dict(sorted(cats.items()))}
    if args.json:
        print(json.dumps(stats, indent=2))
        return EXIT_OK
    rows = [("conversations", convs), ("messages", msgs), ("longest conversation", longest),
            ("tokens (chars/4 + overhead)", tokens), ("references", refs)]
    rows += [(f"  role {k}", v) for k, v in sorted(roles.items())]
    rows += [("probes", sum(cats.values()))] + [(f"  {k}", v) for k, v in sorted(cats.items())]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v:>12,}")
    return EXIT_OK
