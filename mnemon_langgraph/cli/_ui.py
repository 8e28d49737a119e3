"""``mnemon ui --db PATH|URL``: a local page to look at a memory and at the read path's Views.

Examples::

    mnemon ui --db memory.db
    mnemon ui --db memory.db --port 8765 --judge local --budget-chars 6000
    mnemon ui --db memory.db --allow-forget

Listens on 127.0.0.1 (any free port unless ``--port``) and prints the URL with this start's
token; a non-loopback ``--host`` needs ``--allow-remote``. Opens the journal read-only:
nothing is written to the database file or its index folder unless ``--allow-forget``
(then a record page can forget its record, audited). Needs the ``[ui]`` extra.
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_read_args,
    judge,
    open_store,
    planner,
    read_settings,
    require_journal,
)

__all__ = ["open_inspected", "register"]


def register(sub: Any) -> None:
    """Add the ``ui`` subcommand."""
    p = sub.add_parser(
        "ui",
        help="a local web page to browse a memory and see why a View holds what it holds",
        description="Serve a local inspector: namespaces, records, Views with why each record "
        "is in or out, consolidated items. Read-only unless --allow-forget.",
    )
    add_db_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host that is not a loopback address (anyone with the token can read)",
    )
    p.add_argument(
        "--allow-forget",
        action="store_true",
        help="open the store for writing so a record page can forget its record (audited)",
    )
    add_read_args(p)
    p.set_defaults(func=run)


def open_inspected(db: str, *, writable: bool) -> Any:
    """The store the inspector reads: an embedded journal opened read-only (its indexes
    are then kept in memory only) unless ``writable``; a PostgreSQL URL as it is (the
    inspector calls no writing method but the audited forget)."""
    from mnemon_langgraph.store import is_postgres_url

    if writable or is_postgres_url(db):
        return open_store(db)
    from mnemon_langgraph.store.embedded._journal import Journal

    require_journal(db)
    return open_store(db, journal=Journal(db, read_only=True))


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C)."""
    from mnemon_langgraph.ui import serve
    from mnemon_langgraph.ui.app import Inspector

    settings = read_settings(args.read_setting, args.budget_chars)
    store = open_inspected(args.db, writable=args.allow_forget)
    try:
        items = store.item_store()
        inspector = Inspector(
            store,
            judge=judge(args.judge, getattr(store, "embeddings", None)),
            planner=planner(args.planner),
            settings=settings,
            items=items,
            allow_forget=args.allow_forget,
        )
        serve(inspector, host=args.host, port=args.port, allow_remote=args.allow_remote)
    finally:
        store.close()
    return 0
