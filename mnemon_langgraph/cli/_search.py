"""``mnemon search``: hybrid search (BM25 + embeddings, RRF) in one namespace.

Example::

    mnemon search "where does Noor live?" --db memory.db --namespace noor -k 5
    mnemon search "where does Noor live?" --db memory.db --namespace noor --before 2024-03-01
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemon_langgraph.cli._common import (
    add_db_arg,
    add_namespace_arg,
    namespace_of,
    open_store,
    print_json,
    say_if_no_namespace,
)
from mnemon_langgraph.cli._view import as_of_arg
from mnemon_langgraph.types import SearchFilters, SearchHit

__all__ = ["hit_to_dict", "register", "run"]


def register(sub: Any) -> None:
    """Add the ``search`` subcommand."""
    p = sub.add_parser(
        "search",
        help="hybrid search of one namespace's records",
        description="Rank the namespace's records by BM25 and by embedding similarity, fuse "
        "the rankings by reciprocal rank fusion (k=60) and print a page of hits.",
    )
    p.add_argument("query", help="what to search for")
    add_db_arg(p)
    add_namespace_arg(p)
    p.add_argument("-k", type=int, default=10, metavar="N", help="hits to print (default 10)")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip the first N hits")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument(
        "--before",
        metavar="DATE",
        type=as_of_arg,
        help="only records dated at or before DATE (ISO; a bare date includes that day)",
    )
    p.add_argument(
        "--after",
        metavar="DATE",
        type=_after_arg,
        help="only records dated at or after DATE (ISO; a bare date from its start)",
    )
    p.set_defaults(func=run)


def _after_arg(value: str) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date or time: {value!r}") from exc


def hit_to_dict(hit: SearchHit) -> dict[str, Any]:
    """A hit as a JSON-ready dict."""
    r = hit.record
    return {
        "rank": hit.rank,
        "id": r.id,
        "message_ids": list(r.message_ids),
        "session": r.session,
        "date": r.date.isoformat() if r.date else None,
        "text": r.text,
        "bm25_rank": hit.bm25_rank,
        "dense_rank": hit.dense_rank,
        "score": hit.score,
    }


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


def run(args: argparse.Namespace) -> int:
    """Print the hits; exit code 0 even when nothing matched (a namespace that does not
    exist is said on stderr, with the command that lists the namespaces)."""
    from mnemon_langgraph.errors import ConfigurationError

    if args.k < 1 or args.offset < 0:
        raise ConfigurationError("-k must be at least 1 and --offset at least 0")
    namespace = namespace_of(args)
    assert namespace is not None
    with open_store(args.db) as store:
        filters = None
        if args.before is not None or args.after is not None:  # undated records pass neither
            filters = SearchFilters(date_from=args.after, date_to=args.before)
        hits = store.search(
            args.query, namespace=namespace, k=args.k, offset=args.offset, filters=filters
        )
        if not hits:  # most often a mistyped --namespace: say so, and where to look
            say_if_no_namespace(store, namespace, args.db)
    if args.json:
        print_json([hit_to_dict(h) for h in hits])
        return 0
    if not hits:
        print("no records found")
    for hit in hits:
        r = hit.record
        print(
            f"#{hit.rank}  {r.id}  [{r.header}]  score={hit.score:.5f}  "
            f"bm25_rank={_rank(hit.bm25_rank)}  dense_rank={_rank(hit.dense_rank)}"
        )
        print(f"    messages: {', '.join(r.message_ids)}")
        for line in r.text.splitlines():
            print(f"    {line}")
    return 0
