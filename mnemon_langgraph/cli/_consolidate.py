"""``mnemon consolidate``: fold a namespace's journal into the index, as a batch job.

Example::

    mnemon consolidate --db memory.db --user ada@example.com --model openai:gpt-4.1-mini

The chat model is created with ``langchain.chat_models.init_chat_model`` (only when the
command runs). A progress bar counts the records folded; a summary at the end gives the
batches, items added and updated, failures, model calls and tokens. Exit code 0 when every
batch was folded, 1 when a batch failed (it is recorded in ``consolidation_failures``; by
default the run stops there and the next run retries it, ``--skip-failed`` moves past it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import (
    add_embeddings_arg,
    add_namespace_arg,
    embeddings_for,
    namespace_of,
)
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.items import ItemStore

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``consolidate`` subcommand to the ``mnemon`` parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "consolidate",
        help="fold the journal into topic timelines, value histories and instructions",
        description=(
            "Read the journal of a namespace from its watermark in batches of about 10,000 "
            "characters and let a chat model fold each batch into the index. Safe to stop "
            "and rerun: each batch's items and the watermark are written in one transaction."
        ),
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the journal's SQLite file")
    add_namespace_arg(p)
    p.add_argument(
        "--model",
        required=True,
        metavar="PROVIDER:MODEL",
        help="chat model for init_chat_model, e.g. openai:gpt-4.1-mini",
    )
    p.add_argument(
        "--max-batches", type=int, default=None, metavar="N", help="stop after N batches"
    )
    p.add_argument(
        "--batch-chars",
        type=int,
        default=10_000,
        metavar="N",
        help="characters of records per batch, i.e. per model call (default 10000)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit of one model call folding a batch, in seconds (default: none)",
    )
    p.add_argument(
        "--skip-failed",
        action="store_true",
        help="record a batch that keeps failing and move past it (default: stop there)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="drop the namespace's index and watermark first, then fold from the start",
    )
    add_embeddings_arg(p, what="embedder of the consolidated items")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _init_model(spec: str) -> Any:
    """Create the chat model named by ``spec`` (``provider:model``)."""
    from mnemon_langgraph.cli._common import chat_model

    return chat_model(spec, "--model")


def _open_items(args: argparse.Namespace) -> tuple[Any, ItemStore]:
    """What holds the records (to close last) and the item store beside them.

    A journal file opens only the journal (no search index is needed to fold), with the
    embedder it records; a PostgreSQL URL opens the store and asks it for its item store.
    """
    from mnemon_langgraph.store import MnemonStore, is_postgres_url
    from mnemon_langgraph.store.embedded._items import EmbeddedItemStore, recorded_model
    from mnemon_langgraph.store.embedded._journal import Journal

    if is_postgres_url(args.db):
        store = MnemonStore(args.db, embeddings_for(args.embeddings))
        try:
            return store, store.item_store()
        except BaseException:
            store.close()
            raise
    journal = Journal(args.db)
    try:
        return journal, EmbeddedItemStore(
            journal, embeddings_for(args.embeddings, recorded_model(journal))
        )
    except BaseException:
        journal.close()
        raise


def run(args: argparse.Namespace, *, out: Any = None) -> int:
    """Run the ``consolidate`` subcommand; returns the exit code."""
    from tqdm import tqdm

    from mnemon_langgraph.consolidation import (
        ConsolidationReport,
        ConsolidationSettings,
        create_consolidation_graph,
    )
    from mnemon_langgraph.store import is_postgres_url

    stream = out or sys.stdout
    if not is_postgres_url(args.db) and not Path(args.db).exists():
        raise ConfigurationError(f"no journal at {args.db} (ingest something first)")
    namespace = namespace_of(args)
    if namespace is None:  # argparse requires one; this keeps callers of run() honest
        raise ConfigurationError("mnemon consolidate: pass --user or --namespace")
    settings = ConsolidationSettings(
        batch_chars=args.batch_chars,
        max_batches=args.max_batches,
        on_failure="skip" if args.skip_failed else "stop",
        fold_timeout_s=args.timeout,
    )
    model = _init_model(args.model)
    owner, items = _open_items(args)
    try:
        if args.rebuild:
            dropped = items.drop_index(namespace)
            print(f"dropped {dropped} items; rebuilding from the records", file=stream)
        pending = sum(1 for _ in items.records_after(namespace, items.watermark(namespace)))
        graph = create_consolidation_graph(model=model, store=items, settings=settings)
        report: ConsolidationReport | None = None
        added = failed = 0
        with tqdm(
            total=pending, unit="rec", desc="consolidate", disable=args.no_progress, file=sys.stderr
        ) as bar:
            for update in graph.stream({"namespace": namespace}, stream_mode="updates"):
                written = update.get("write")
                if written:
                    for batch in written.get("batches", []):
                        added += batch.items_added
                        failed += int(batch.failed)
                        bar.update(batch.records)
                        bar.set_postfix(items=added, failed=failed)
                finished = update.get("finish")
                if finished and finished.get("report") is not None:
                    report = finished["report"]
        if report is None:  # pragma: no cover - the graph always ends in finish
            raise ConfigurationError("the consolidation graph ended without a report")
        print(report.summary(), file=stream)
        return 1 if report.failures else 0
    finally:
        items.close()
        owner.close()


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin wrapper
    """Run ``mnemon consolidate`` alone (for ``python -m``)."""
    parser = argparse.ArgumentParser(prog="mnemon")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["consolidate", *(argv or sys.argv[1:])])
    return int(args.func(args))
