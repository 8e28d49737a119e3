"""``mnemon export``: one namespace as JSON Lines (format: docs/transfer.md).

Examples::

    mnemon export --db memory.db --user ada > ada.jsonl
    mnemon export --db memory.db --namespace teams --namespace blue --out blue.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    open_for_reading,
)

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``export`` subcommand."""
    p = sub.add_parser(
        "export",
        help="write a namespace as JSON Lines (messages and index items)",
        description="Write one namespace as JSON Lines: a header line, then one line per "
        "stored message (id, role, speaker, text, and the id, session, date, position and "
        "source of its record), then one line per consolidated index item with its record "
        "links. `mnemon import` reads it back into any store. Vectors are not written (the "
        "importing store computes them); reads only.",
    )
    add_db_arg(p)
    add_namespace_arg(p)
    p.add_argument(
        "--out", metavar="FILE", help="write to FILE instead of stdout ('-': stdout, as without it)"
    )
    p.add_argument(
        "--format",
        choices=("jsonl", "json"),
        default="jsonl",
        help="jsonl (default): the file `mnemon import` reads; json: one document of "
        "everything stored about the namespace (records, index items with their links, "
        "the audit trail), for a data-access request",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Export the namespace; a summary goes to stderr when writing to a file."""
    from mnemon_langgraph.errors import InputError
    from mnemon_langgraph.transfer import export_document, export_lines

    ns = namespace_of(args)
    assert ns is not None  # --namespace is required
    with open_for_reading(args.db) as store:
        if ns not in store.namespaces():
            raise InputError(f"namespace {list(ns)!r} holds no records (see `mnemon list`)")
        if args.format == "json":
            lines = [json.dumps(export_document(store, ns), ensure_ascii=False, indent=2)]
        else:
            lines = export_lines(store, ns)
    if not args.out or args.out == "-":  # '-' is stdout, as `mnemon import -` reads stdin
        for line in lines:
            sys.stdout.write(line + "\n")
        return 0
    _write_atomically(Path(args.out), lines)
    if args.format == "json":
        print(f"exported namespace {list(ns)!r} to {args.out}", file=sys.stderr)
        return 0
    head = json.loads(lines[0])
    print(
        f"exported namespace {list(ns)!r} to {args.out}: {head['records']} records, "
        f"{head['messages']} messages, {head['items']} index items",
        file=sys.stderr,
    )
    return 0


def _write_atomically(path: Path, lines: list[str]) -> None:
    """Write ``lines`` to a temporary file beside ``path``, then rename it: a reader never
    sees half an export, and a failed export leaves an earlier file as it was."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fp:
            for line in lines:
                fp.write(line + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
