"""``mnemon import FILE``: read a ``mnemon export`` file into a store.

Example::

    mnemon import ada.jsonl --db postgresql://mnemon@db.internal/memory

The whole file is checked first (a malformed line is named with its line number, exit code
2, and nothing is written: a refused file creates no journal); importing the same file
again writes nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg, open_store, print_json

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``import`` subcommand."""
    p = sub.add_parser(
        "import",
        help="read a `mnemon export` file into a store",
        description="Read a JSON Lines file written by `mnemon export` into the journal "
        "(a new one is created) or a PostgreSQL database, in the file's namespace. The "
        "whole file is checked before anything is written; messages already stored (same "
        "id) and items already there are skipped, so importing twice writes nothing. The "
        "records are embedded again with the store's model.",
    )
    p.add_argument("file", metavar="FILE", help="the export file ('-': standard input)")
    add_db_arg(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Import the file; prints what was written."""
    import dataclasses

    from mnemon_langgraph.transfer import check_import, import_jsonl, read_export

    name = "<stdin>" if args.file == "-" else args.file
    parsed = read_export(_lines(args.file, name), name=name)
    check_import(parsed, parsed.record_chars, name=name)  # before a journal is created
    with open_store(args.db, create=True, record_chars=parsed.record_chars) as store:
        result = import_jsonl(store, parsed, name=name)
    if args.json:
        data = dataclasses.asdict(result)
        data["namespace"] = list(result.namespace)
        data["record_ids"] = list(result.record_ids)
        print_json(data)
        return 0
    print(
        f"{name}: namespace {json.dumps(list(result.namespace), ensure_ascii=False)}: "
        f"{result.records_written} records written from {result.messages_written} messages, "
        f"{result.messages_skipped} messages already stored, {result.items_written} index "
        f"items written"
        + (
            f"; {result.positions_renumbered} records took a new position in their session"
            if result.positions_renumbered
            else ""
        )
    )
    return 0


def _lines(path: str, name: str) -> list[str]:
    """The file's lines as text; a line that is not UTF-8 is named by its number.

    Raises:
        ConfigurationError: The file cannot be read.
        InputError: A line is not UTF-8.
    """
    import sys

    from mnemon_langgraph.errors import ConfigurationError, InputError

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {name}: {exc.strerror or exc}") from None
    lines = []
    for lineno, raw in enumerate(data.splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{name}:{lineno}: not UTF-8 text ({exc.reason})") from None
    return lines
