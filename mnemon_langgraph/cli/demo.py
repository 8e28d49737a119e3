"""``mnemon demo``: ingest a small bundled conversation offline and show what memory finds.

The sample (``mnemon_langgraph/data/sample_conversation.jsonl``, original and invented) has
three sessions between Noor and an assistant in which facts change: a move from Leeds to
Rotterdam, a wedding date that moves, a diet that changes. For each demo message,
:func:`show_for_message` prints what memory would give the agent — for now the top hybrid
search hits; replace that one function to show the read graph's View instead.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg

__all__ = ["DEMO_MESSAGES", "SAMPLE_PATH", "register", "run", "show_for_message"]

SAMPLE_PATH = Path(__file__).resolve().parent.parent / "data" / "sample_conversation.jsonl"
"""The bundled sample conversation."""

DEMO_MESSAGES: tuple[str, ...] = (
    "Which city do I live in these days?",
    "Can you suggest a dinner recipe for me tonight?",
    "When is my sister's wedding again?",
    "What does Pepper need for travelling abroad?",
)
"""Messages the demo asks memory about."""

DEMO_NAMESPACE = ("demo", "noor")


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser(
        "demo",
        help="offline demo on a bundled sample conversation",
        description="Ingest a small bundled conversation into a journal (a temporary one "
        "unless --db is given) with the offline embedder, then show what memory finds for "
        "a few messages.",
    )
    add_db_arg(p, required=False)
    p.add_argument("-k", type=int, default=3, metavar="N", help="hits per message (default 3)")
    p.set_defaults(func=run)


def show_for_message(store: Any, namespace: tuple[str, ...], message: str, *, k: int = 3) -> str:
    """What memory gives the agent for ``message``, as printable text.

    Today: the top ``k`` hybrid search hits. (To be replaced by the read graph's View.)
    """
    hits = store.search(message, namespace=namespace, k=k)
    lines = [f"> {message}"]
    if not hits:
        lines.append("  (nothing found)")
    for hit in hits:
        lines.append(f"  [{hit.record.header}]  (rank {hit.rank}, score {hit.score:.4f})")
        lines.extend(f"    {line}" for line in hit.record.text.splitlines())
    return "\n".join(lines)


def _demo(db: Path, k: int) -> None:
    from mnemon_langgraph.sources import load_jsonl
    from mnemon_langgraph.store import MnemonStore

    messages = load_jsonl(SAMPLE_PATH)
    with MnemonStore(db) as store:
        # One turn per record: with 40 short turns, packing would leave only a handful of
        # records and the demo would show little of how search picks among them.
        result = store.ingest(DEMO_NAMESPACE, messages, source="sample_conversation", pack=False)
        print(
            f"Ingested {len(messages)} messages ({result.records_written} new records, one "
            f"turn each) into {db} with {store.model_name}.\n"
        )
        for message in DEMO_MESSAGES:
            print(show_for_message(store, DEMO_NAMESPACE, message, k=k))
            print()


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    if args.db:
        _demo(Path(args.db), args.k)
        return 0
    with tempfile.TemporaryDirectory(prefix="mnemon-demo-") as tmp:
        _demo(Path(tmp) / "demo.db", args.k)
    return 0
