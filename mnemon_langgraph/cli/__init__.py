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

from mnemon_langgraph.errors import MnemonError

__all__ = ["build_parser", "main"]

# Subcommand modules, in the order `mnemon --help` lists them.
_COMMAND_MODULES: tuple[str, ...] = (
    "ingest",
    "search",
    "view",
    "explain",
    "stats",
    "list",
    "export",
    "importing",
    "demo",
    "bench",
    "consolidate",
    "eval",
    "erase",
    "doctor",
    "train",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the ``mnemon`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="mnemon",
        description="Long-term memory for LangGraph agents: raw records, fast judgments.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(f"mnemon_langgraph.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mnemon`` command line; returns the process exit code.

    Exit codes: 0 done, 1 the command failed (its own report, or an unexpected error shown as
    one line; ``-v`` shows the traceback), 2 bad setup or input (a typed error: one line),
    130 interrupted, 141 the reader of stdout went away (``mnemon view … | head``).
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
        # Typed errors carry a message meant for the user; no traceback.
        print(f"mnemon: error: {_redacted(exc, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mnemon: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.verbose:
            raise
        # A provider or network error from a model call (an unreachable model …): one line.
        text = _redacted(exc, args).strip().splitlines()
        print(
            f"mnemon: error: {type(exc).__name__}: {text[0] if text else ''} "
            "(run with -v for the traceback)",
            file=sys.stderr,
        )
        return 1
    return int(code or 0)


def _redacted(exc: BaseException, args: argparse.Namespace) -> str:
    """``exc``'s message with no database password: the raw ``--db`` value is replaced by
    its redacted form, and any other URL in the message is redacted too."""
    from mnemon_langgraph.cli._common import redact_db

    text = str(exc)
    db = getattr(args, "db", None)
    if isinstance(db, str) and db:
        text = text.replace(db, redact_db(db))
    return redact_db(text)


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
