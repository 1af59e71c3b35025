"""The `rollsum` command.

It lives in the harness, not the library: `rollsum/` never imports `evals/`, and the CLI needs
both. Each subcommand module exposes ``register(subparsers)``; heavy imports (pandas,
matplotlib, datasets) happen inside the handlers so ``--help`` stays instant.

Exit codes: 0 success, 1 a gate failed (regression found, budget exceeded), 2 a user mistake
(bad arguments, bad input file, missing API key), 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM: handled like Ctrl-C, `rollsum_evals.run.interrupt`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence

from rollsum.errors import RollsumError
from rollsum.redact import install_log_redaction, redact, redacted_output

BATCH_LOGGER = "rollsum.models.batch"
"""`rollsum.models.batch`'s logger (named, not imported: the command starts without the models)."""

SUBCOMMAND_MODULES: tuple[str, ...] = (
    "rollsum_evals.cli.run_cmd",
    "rollsum_evals.cli.score_cmd",
    "rollsum_evals.cli.data_cmd",
    "rollsum_evals.cli.report_cmd",
    "rollsum_evals.cli.compare_cmd",
    "rollsum_evals.cli.regress_cmd",
    "rollsum_evals.cli.init_cmd",
    "rollsum_evals.cli.list_cmd",
    "rollsum_evals.cli.tune_cmd",
)
HARNESS_EXTRA = "harness"
HARNESS_MODULES: frozenset[str] = frozenset({
    "pandas", "pyarrow", "numpy", "datasets", "rouge_score", "nltk", "matplotlib", "tqdm"})
"""What `pip install 'rollsum[harness]'` brings; the library itself needs none of them."""

EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130


def build_parser() -> argparse.ArgumentParser:
    from rollsum_evals.cli.args import OneLineParser

    parser = OneLineParser(
        prog="rollsum",
        description="Tune rolling conversation summaries: replay long conversations through "
        "trigger policies, prompts and models; score what survives; compare and gate.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _missing_harness_module() -> str | None:
    """The first harness dependency that cannot be imported (found, not imported: cheap)."""
    for name in sorted(HARNESS_MODULES):
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def _needs_extra(command: str, module: str) -> int:
    print(f"rollsum: error: `rollsum {command}` needs the harness extra (module {module!r} is missing): "
          f"pip install 'rollsum[{HARNESS_EXTRA}]'", file=sys.stderr)
    return EXIT_USAGE


def _user_error(text: str) -> int:
    """A user mistake: one line on stderr, exit 2. The message may span lines (a library's
    text, an underlying parser's): it is folded into one."""
    print(f"rollsum: error: {redact(' '.join(text.split()))}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Every byte the command prints goes through `rollsum.redact` (its streams are wrapped
    for the whole call, log handlers too), so a key in an error, a dataset or a model's answer
    never reaches the terminal."""
    with redacted_output():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, or a mistake argparse already reported in one line
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    level = logging.ERROR if args.quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if level > logging.INFO and not args.quiet:
        # a Message Batch's create, resume and waits (minutes to hours, nothing else moving): shown
        # by default, or a sweep with `[qa] batch = true` looked hung
        logging.getLogger(BATCH_LOGGER).setLevel(logging.INFO)
    logging.captureWarnings(True)  # warnings.warn text goes through the redacting handlers too
    install_log_redaction()
    missing = _missing_harness_module()
    if missing is not None:  # before the command writes anything a re-run would trip over
        return _needs_extra(args.command, missing)
    from rollsum_evals.run.interrupt import Interrupted, sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():  # SIGTERM ends a command the way Ctrl-C does
            return int(args.func(args) or 0)
    except Interrupted as err:
        print(f"rollsum: {redact(' '.join(str(err).split()))}", file=sys.stderr)
        return err.exit_code
    except RollsumError as err:
        return _user_error(str(err))
    except ModuleNotFoundError as err:
        name = (err.name or "").split(".")[0]
        if name not in HARNESS_MODULES:
            raise
        return _needs_extra(args.command, name)
    except KeyboardInterrupt:
        print("rollsum: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `rollsum ... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as err:
        if isinstance(err, ConnectionError | TimeoutError):
            raise
        # a path the user gave that cannot be read or written, or a file-system fault no
        # command caught (a read-only or full output directory): one line
        from rollsum_evals.fsfaults import describe_os_error

        logging.getLogger(__name__).debug("file-system fault", exc_info=True)
        return _user_error(describe_os_error(err))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
