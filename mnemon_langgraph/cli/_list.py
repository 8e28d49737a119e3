"""``mnemon list``: the namespaces of a journal, with record counts and date ranges.

Example::

    mnemon list --db memory.db
    mnemon list --db postgresql://mnemon@db.internal/memory --json
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg, open_for_reading, print_json

__all__ = ["namespace_rows", "register", "run"]


def register(sub: Any) -> None:
    """Add the ``list`` subcommand."""
    p = sub.add_parser(
        "list",
        help="namespaces with record counts and date ranges",
        description="List every namespace of the journal with its records, messages, "
        "sessions and the dates of its first and last dated record. Reads only; no "
        "embedding model is loaded on PostgreSQL.",
    )
    add_db_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


def namespace_rows(store: Any) -> list[dict[str, Any]]:
    """One row per namespace: ``namespace``, ``records``, ``messages``, ``sessions``,
    ``first_date`` and ``last_date`` (ISO 8601, ``None`` when no record is dated)."""
    rows = []
    for ns in store.namespaces():
        records = messages = 0
        sessions: set[int] = set()
        seen: set[str] = set()
        first = last = None
        for record in store.records(ns):
            records += 1
            sessions.add(record.session)
            fresh = [m for m in record.message_ids if m not in seen]
            seen.update(fresh)
            messages += len(fresh)
            if record.date is not None:
                first = record.date if first is None else min(first, record.date)
                last = record.date if last is None else max(last, record.date)
        rows.append(
            {
                "namespace": list(ns),
                "records": records,
                "messages": messages,
                "sessions": len(sessions),
                "first_date": first.isoformat() if first else None,
                "last_date": last.isoformat() if last else None,
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the namespaces."""
    import json

    with open_for_reading(args.db) as store:
        rows = namespace_rows(store)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no namespaces")
    for row in rows:
        dates = (
            f"{row['first_date'][:10]} .. {row['last_date'][:10]}"
            if row["first_date"]
            else "undated"
        )
        print(
            f"{json.dumps(row['namespace'], ensure_ascii=False)}: {row['records']} records, "
            f"{row['messages']} messages, {row['sessions']} sessions, {dates}"
        )
    return 0
