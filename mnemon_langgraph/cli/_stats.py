"""``mnemon stats``: what a journal holds, per namespace, and the state of its indexes."""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    open_store,
    print_json,
)

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``stats`` subcommand."""
    p = sub.add_parser(
        "stats",
        help="record counts and index state per namespace",
        description="Show what a journal holds: its embedding model and, per namespace, the "
        "records, the last sequence number and generation, and how many records the BM25 and "
        "vector indexes cover. Reads only; a missing journal is an error.",
    )
    add_db_arg(p)
    add_namespace_arg(p, required=False, help_suffix="; default: every namespace")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the statistics."""
    from pathlib import Path

    from mnemon_langgraph.errors import ConfigurationError
    from mnemon_langgraph.store import is_postgres_url

    if is_postgres_url(args.db):
        from mnemon_langgraph.store.postgres import PostgresStore

        opened: Any = PostgresStore.for_maintenance(args.db)  # no embedder needed
    elif not Path(args.db).exists():
        raise ConfigurationError(f"no journal at {args.db}")
    else:
        opened = open_store(args.db)
    with opened as store:
        data = store.stats(namespace_of(args))
    if args.json:
        print_json(data)
        return 0
    print(f"journal: {data['path']}")
    print(f"embedding model: {data['embedding_model']} ({data['dimension']} dimensions)")
    if not data["namespaces"]:
        print("no records")
    for row in data["namespaces"]:
        print(
            f"{' / '.join(row['namespace'])}: {row['records']} records "
            f"(max seq {row['max_seq']}, generation {row['generation']}); indexed: "
            f"{row['indexed']} BM25, {row['vectors']} vectors ({row['vector_index']})"
        )
    return 0
