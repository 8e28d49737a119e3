"""``mnemon demo``: ingest a small bundled conversation offline and show what memory finds.

The sample (``mnemon_langgraph/data/sample_conversation.jsonl``, original and invented) has
three sessions between Noor and an assistant in which facts change: a move from Leeds to
Rotterdam, a wedding date that moves, a diet that changes. For each demo message,
:func:`show_for_message` runs the read graph with the offline defaults (rule planner, local
judge, bundled embedder) and prints the View the agent would read: its records in order, what
the turn cost and, in plain words, why each record is there (``--explain`` adds a glossary and
the read path's own trace). The View's budget is small (:data:`DEMO_BUDGET_CHARS`), so the demo
shows memory choosing: a few of the 40 records, and how many it left out.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["DEMO_MESSAGES", "GLOSSARY", "plain_placement", "register", "run", "show_for_message"]

DEMO_MESSAGES: tuple[str, ...] = (
    "Which city do I live in these days?",
    "Can you suggest a dinner recipe for me tonight?",
    "When is my sister's wedding again?",
    "What does Pepper need for travelling abroad?",
)
"""Messages the demo asks memory about."""

DEMO_NAMESPACE = ("demo", "noor")

DEMO_BUDGET_CHARS = 1_200
"""The demo View's size in characters. The whole sample (40 short turns) is about 4,700
characters, under the read path's default 12,000, so a View of that size would hold every
record and show no choice; a real history is far longer than any View."""


GLOSSARY = """\
How to read the demo (--explain):
  View      the short list of records the agent reads before it replies.
  search    one hybrid search (keywords + meaning) of the whole memory.
  judge     a small offline model that gives each record found a probability (p) for
            yes/no questions: screen = "is this worth a closer look?", needed = "does the
            reply need this?", stale = "has a later record replaced this?".
  batch     the judge is asked about many records at once; a batch waits for the one
            before it (the paper calls batches "waves").
  round     plan → search → judge; a second round runs when the first left a need open.
  placed    why a record is in the View, at that position (see 'why' below each message)."""

_PLAIN_PLACEMENT = (
    ("judged needed", "the judge said the reply needs it"),
    (
        "System 1 ranking",
        "not judged needed, but ranked high for what the question asks (fills room left "
        "in the View)",
    ),
    ("fused order", "search order (the judge gave it no score)"),
    (
        "neighbour of",
        "said just before or after one of the best records (an answer often continues in "
        "the next message)",
    ),
)


def plain_placement(placed_by: str) -> str:
    """The read path's placement rule in words a newcomer knows."""
    for prefix, words in _PLAIN_PLACEMENT:
        if placed_by.startswith(prefix):
            return words
    return placed_by


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith(('ch', 's')) else 's'}"


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser(
        "demo",
        help="offline demo on a bundled sample conversation",
        description="Ingest a small bundled conversation into a journal (a temporary one, "
        "deleted at the end, unless --db is given) with the offline embedder, then show what "
        "memory finds for a few messages.",
    )
    p.add_argument(
        "--db",
        metavar="PATH",
        help="keep the demo's journal in this SQLite file (default: a temporary one, deleted)",
    )
    p.add_argument(
        "-k", type=int, default=3, metavar="N", help="View records printed per message (default 3)"
    )
    p.add_argument(
        "--budget-chars",
        type=int,
        default=DEMO_BUDGET_CHARS,
        metavar="N",
        help=f"the View's size in characters (default {DEMO_BUDGET_CHARS:,}, so that memory "
        "must choose among the sample's records; the read path's own default is 12,000)",
    )
    p.add_argument(
        "--full", action="store_true", help="print each View's whole text as the agent reads it"
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="explain the terms (View, judge, batch, round) and why the first record is there",
    )
    p.set_defaults(func=run)


def _summary_lines(message: str, view: Any, total: int | None, budget: int | None) -> list[str]:
    counts = view.trace.get("counts", {})
    searches, batches, rounds = (counts.get(k, "?") for k in ("searches", "waves", "rounds"))
    chosen = len(view.records)
    size = f"{len(view.text):,}" + (f" of {budget:,}" if budget else "") + " characters"
    if total is None:
        what = f"{_plural(chosen, 'record')}, {size}"
    else:
        what = f"{chosen} of {total} records chosen ({total - chosen} left out), {size}"
    return [
        f"> {message}",
        f"  View: {what}. To build it memory ran {_plural(searches, 'search')} and asked the "
        f"judge about the records found in {_plural(batches, 'batch')} over "
        f"{_plural(rounds, 'round')}.",
    ]


def show_for_message(
    graph: Any,
    namespace: tuple[str, ...],
    message: str,
    *,
    k: int = 3,
    full: bool = False,
    explain_first: bool = False,
    total: int | None = None,
    budget: int | None = None,
) -> str:
    """Run the read graph for ``message`` and describe its View as printable text.

    Args:
        graph: A compiled read graph (``create_read_graph``).
        namespace: Whose memory to read.
        message: The user's message.
        k: How many of the View's records to print.
        full: Print the View's whole text instead of a summary of its records.
        explain_first: Add the read path's own account of why the first record is there.
        total: How many records the namespace holds (the View's choice is said against it).
        budget: The View's size limit in characters, to print beside its size.
    """
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read import ReadContext, explain

    out = graph.invoke(
        {"messages": [HumanMessage(message)]}, context=ReadContext(namespace=namespace)
    )
    view = out["view"]
    lines = _summary_lines(message, view, total, budget)
    if full:
        lines.extend(f"  | {line}" for line in view.text.splitlines())
        return "\n".join(lines)
    if not view.records:
        lines.append(f"  (empty View: {view.empty_reason or 'nothing judged needed'})")
    shown = view.records[:k]
    if len(shown) < len(view.records):
        lines.append(
            f"  showing {len(shown)} of the {len(view.records)} chosen (-k N shows more, "
            "--full the whole View):"
        )
    for rec in shown:
        day = str(rec.date or "undated").replace("T", " ")[:16]
        lines.append(
            f"  [Session {rec.session} — {day}]  in the View because "
            f"{plain_placement(rec.placed_by)}"
        )
        lines.extend(f"    {line}" for line in rec.text.splitlines())
    if explain_first and view.records:
        why = explain(view, view.records[0].id).splitlines()
        lines.append("  why the first record is there (the read path's trace):")
        lines.extend(f"    {line}" for line in why[:12])
    return "\n".join(lines)


def _demo(db: Path, *, kept: bool, k: int, full: bool, explain_first: bool, budget: int) -> None:
    from mnemon_langgraph.loaders import SAMPLE_PATH, load_jsonl
    from mnemon_langgraph.read import ReadSettings, create_read_graph
    from mnemon_langgraph.store import MnemonStore

    messages = load_jsonl(SAMPLE_PATH)
    with MnemonStore(db) as store:
        # One turn per record: with 40 short turns, packing would leave only a handful of
        # records and the demo would show little of how search picks among them.
        result = store.ingest(DEMO_NAMESPACE, messages, origin="sample_conversation", pack=False)
        where = (
            f"into {db} (kept)"
            if kept
            else f"into a temporary journal ({db}), deleted when the demo ends; --db PATH keeps it"
        )
        print(
            f"Ingested {len(messages)} messages ({result.records_written} new records, one "
            f"turn each) {where}. Embedder: {store.model_name}.\n"
        )
        if explain_first:
            print(GLOSSARY + "\n")
        # rule planner + local judge: no key needed
        graph = create_read_graph(source=store, settings=ReadSettings(view_chars=budget))
        total = store.count(DEMO_NAMESPACE)
        for message in DEMO_MESSAGES:
            print(
                show_for_message(
                    graph,
                    DEMO_NAMESPACE,
                    message,
                    k=k,
                    full=full,
                    explain_first=explain_first,
                    total=total,
                    budget=budget,
                )
            )
            print()


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    from mnemon_langgraph.errors import ConfigurationError

    if args.budget_chars < 1:
        raise ConfigurationError("--budget-chars must be positive")
    options = {
        "k": args.k,
        "full": args.full,
        "explain_first": args.explain,
        "budget": args.budget_chars,
    }
    if args.db:
        from mnemon_langgraph.cli._common import make_journal_folder

        make_journal_folder(args.db)  # told where to write: the folder is made, as ingest does
        _demo(Path(args.db), kept=True, **options)
        return 0
    with tempfile.TemporaryDirectory(prefix="mnemon-demo-") as tmp:
        _demo(Path(tmp) / "demo.db", kept=False, **options)
    return 0
