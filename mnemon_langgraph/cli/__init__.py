"""The ``mnemon`` command line.

Each subcommand lives in its own module under :mod:`mnemon_langgraph.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (returns an exit code).
Modules are imported only when ``main`` runs, so importing the package stays cheap.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from mnemon_langgraph.errors import MnemonError

__all__ = ["build_parser", "main"]

# Subcommand modules, in the order `mnemon --help` lists them.
_COMMAND_MODULES: tuple[str, ...] = (
    "_ingest",
    "_search",
    "_view",
    "_explain",
    "_mcp",
    "_stats",
    "_list",
    "_export",
    "_importing",
    "_demo",
    "_bench",
    "_consolidate",
    "_eval",
    "_erase",
    "_retention",
    "_rename",
    "_doctor",
    "_train",
    "_ui",
)


class _Parser(argparse.ArgumentParser):
    """A parser that accepts the global options after any subcommand too.

    ``add_subparsers`` makes every subcommand's parser of the same class, so each one (and
    each ``bench NAME``) gets ``-v``. There its default is ``SUPPRESS``: a subcommand that
    is not given ``-v`` leaves the value the top level set, instead of resetting it.
    """

    def __init__(self, *args: Any, top_level: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=False if top_level else argparse.SUPPRESS,
            help="log at INFO level and show the traceback of an error",
        )


def build_parser() -> argparse.ArgumentParser:
    """Build the ``mnemon`` argument parser with every subcommand registered."""
    parser = _Parser(
        prog="mnemon",
        description="Long-term memory for LangGraph agents: raw records, fast judgments.",
        top_level=True,
    )
    version = importlib.import_module("mnemon_langgraph").__version__  # the package's own
    parser.add_argument("--version", action="version", version=f"mnemon {version}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(f"mnemon_langgraph.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mnemon`` command line; returns the process exit code.

    Exit codes: 0 done, 1 the command failed (its own report, or an unexpected error shown as
    one line), 2 bad setup or input (a typed error, or a file that cannot be read: one
    line), 130 interrupted, 141 the reader of stdout went away (``mnemon view … | head``).
    With ``-v`` (before or after the subcommand) every error also prints its traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler below
    except BrokenPipeError:
        _detach_stdout()
        return 141
    except MnemonError as exc:
        # Typed errors carry a message meant for the user; the traceback only with -v.
        _traceback_if(args)
        print(f"mnemon: error: {_redacted(exc, args)}", file=sys.stderr)
        return 2
    except _UNREADABLE as exc:
        # A path the user gave that cannot be used (a missing --corpus, a folder for a
        # file): input, like a typed error, not an "unexpected" failure.
        _traceback_if(args)
        where = f": {exc.filename}" if exc.filename else ""
        print(_redact_text(f"mnemon: error: {exc.strerror or exc}{where}", args), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mnemon: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        _traceback_if(args)
        # A provider or network error from a model call (an unreachable model …): one line.
        text = _redacted(exc, args).strip().splitlines()
        hint = "" if args.verbose else " (run with -v for the traceback)"
        print(
            f"mnemon: error: {type(exc).__name__}: {text[0] if text else ''}{hint}",
            file=sys.stderr,
        )
        return 1
    return int(code or 0)


_UNREADABLE = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def _traceback_if(args: argparse.Namespace) -> None:
    """With ``-v``: the traceback of the exception being handled, on stderr, redacted."""
    if not getattr(args, "verbose", False):
        return
    import traceback

    text = "".join(traceback.format_exc())
    sys.stderr.write(_redact_text(text, args))


def _redact_text(text: str, args: argparse.Namespace) -> str:
    from mnemon_langgraph.cli._common import redact_db

    db = getattr(args, "db", None)
    if isinstance(db, str) and db:
        text = text.replace(db, redact_db(db))
    return redact_db(text)


def _redacted(exc: BaseException, args: argparse.Namespace) -> str:
    """``exc``'s message with no database password: the raw ``--db`` value is replaced by
    its redacted form, and any other URL in the message is redacted too."""
    return _redact_text(str(exc), args)


def _detach_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again.

    This is the recipe of Python's ``signal`` documentation (note on SIGPIPE); under a test
    harness whose stdout has no file descriptor there is nothing to detach.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - captured stdout
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
