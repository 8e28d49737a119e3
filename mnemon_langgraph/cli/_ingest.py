"""``mnemon ingest``: write conversation files into the journal and the search indexes.

Example::

    mnemon ingest conv-26.json --db memory.db --namespace users --namespace caroline
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg, add_namespace_arg, namespace_of, open_store

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``ingest`` subcommand."""
    p = sub.add_parser(
        "ingest",
        help="ingest conversation files (LoCoMo JSON, JSONL, transcript)",
        description="Chunk messages into dated records, embed them, append them to the "
        "journal and update the namespace's BM25 and vector indexes. Messages already in "
        "the journal (same id) are skipped, so ingesting a file twice writes nothing new.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="files to ingest")
    add_db_arg(p)
    add_namespace_arg(p)
    p.add_argument(
        "--format",
        choices=("auto", "locomo", "jsonl", "transcript"),
        default="auto",
        help="input format (default: by extension and content)",
    )
    p.add_argument(
        "--one-turn-per-record",
        action="store_true",
        help="do not pack short consecutive turns into one record",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Ingest every file; prints one summary line per file."""
    from tqdm import tqdm

    from mnemon_langgraph.store import load_messages

    namespace = namespace_of(args)
    assert namespace is not None
    loaded = [(path, load_messages(path, format=args.format)) for path in args.files]
    with open_store(args.db, create=True) as store:
        for path, parts in loaded:
            for source, messages in parts:
                with tqdm(
                    desc=f"ingest {source}",
                    unit="record",
                    disable=args.no_progress,
                    file=sys.stderr,
                ) as bar:

                    def advance(done: int, total: int, bar: Any = bar) -> None:
                        bar.total = total
                        bar.update(done - bar.n)

                    result = store.ingest(
                        namespace,
                        messages,
                        origin=source,
                        pack=not args.one_turn_per_record,
                        progress=advance,
                    )
                print(
                    f"{path}: {result.records_written} records written from "
                    f"{result.messages_written} messages; "
                    f"{result.messages_skipped} messages already stored"
                )
    return 0
