"""``mnemon demo``: ingest a small bundled conversation offline and show what memory finds.

The sample (``mnemon_langgraph/data/sample_conversation.jsonl``, original and invented) has
three sessions between Noor and an assistant in which facts change: a move from Leeds to
Rotterdam, a wedding date that moves, a diet that changes. For each demo message,
:func:`show_for_message` runs the read graph with the offline defaults (rule planner, local
judge, bundled embedder) and prints the View the agent would read: its records in order, what
the turn cost, and why the first record is there.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_db_arg

__all__ = ["DEMO_MESSAGES", "register", "run", "show_for_message"]

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
    p.add_argument(
        "-k", type=int, default=3, metavar="N", help="View records printed per message (default 3)"
    )
    p.add_argument(
        "--full", action="store_true", help="print each View's whole text as the agent reads it"
    )
    p.set_defaults(func=run)


def show_for_message(
    graph: Any, namespace: tuple[str, ...], message: str, *, k: int = 3, full: bool = False
) -> str:
    """Run the read graph for ``message`` and describe its View as printable text.

    Args:
        graph: A compiled read graph (``create_read_graph``).
        namespace: Whose memory to read.
        message: The user's message.
        k: How many of the View's records to print.
        full: Print the View's whole text instead of a summary of its records.
    """
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read import ReadContext, explain

    out = graph.invoke(
        {"messages": [HumanMessage(message)]}, context=ReadContext(namespace=namespace)
    )
    view = out["view"]
    counts = view.trace.get("counts", {})
    lines = [
        f"> {message}",
        f"  View: {len(view.records)} records, {len(view.text):,} chars — "
        f"{counts.get('searches', '?')} searches, {counts.get('s1_calls', '?')} System 1 calls "
        f"in {counts.get('waves', '?')} waves, {counts.get('rounds', '?')} rounds",
    ]
    if full:
        lines.extend(f"  | {line}" for line in view.text.splitlines())
        return "\n".join(lines)
    if not view.records:
        lines.append(f"  (empty View: {view.empty_reason or 'nothing judged needed'})")
    for rec in view.records[:k]:
        day = str(rec.date or "undated").replace("T", " ")[:16]
        lines.append(f"  [Session {rec.session} — {day}]  ({rec.placed_by})")
        lines.extend(f"    {line}" for line in rec.text.splitlines())
    if view.records:
        why = explain(view, view.records[0].id).splitlines()
        lines.append("  why the first record is there:")
        lines.extend(f"    {line}" for line in why[:12])
    return "\n".join(lines)


def _demo(db: Path, k: int, full: bool) -> None:
    from mnemon_langgraph.read import create_read_graph
    from mnemon_langgraph.sources import SAMPLE_PATH, load_jsonl
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
        graph = create_read_graph(source=store)  # rule planner + local judge: no key needed
        for message in DEMO_MESSAGES:
            print(show_for_message(graph, DEMO_NAMESPACE, message, k=k, full=full))
            print()


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    if args.db:
        _demo(Path(args.db), args.k, args.full)
        return 0
    with tempfile.TemporaryDirectory(prefix="mnemon-demo-") as tmp:
        _demo(Path(tmp) / "demo.db", args.k, args.full)
    return 0
