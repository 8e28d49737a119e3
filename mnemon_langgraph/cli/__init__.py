"""The ``mnemon`` command line.

Each subcommand lives in its own module under :mod:`mnemon_langgraph.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (returns an exit code).
Modules are imported only when ``main`` runs, so importing the package stays cheap.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from mnemon_langgraph.errors import MnemonError

__all__ = ["build_parser", "main"]

# Subcommand modules, in the order `mnemon --help` lists them.
_COMMAND_MODULES: tuple[str, ...] = (
    "ingest",
    "search",
    "view",
    "stats",
    "demo",
    "bench",
    "consolidate",
    "eval",
    "erase",
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
    """Run the ``mnemon`` command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code = args.func(args)
    except MnemonError as exc:
        # Typed errors carry a message meant for the user; no traceback.
        print(f"mnemon: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mnemon: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
