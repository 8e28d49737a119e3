"""The read path's time with a distractor document source against one journal, interleaved
(issue 45 §4).

    python benchmarks/documents_timing.py LOCOMO_FILE... --embedding-cache PATH
        [--conversations ID,...] [--limit-questions N] [--stores memory,faiss]

For each conversation, the whole history goes into one journal, and the other
conversations' turns into a document source per ``--stores`` entry (LangChain's
``InMemoryVectorStore`` and community's ``FAISS``, as ``mnemon eval locomo --distractors
--documents-store`` builds them). Each question is then asked through every read graph in
turn (the one-journal graph and one per store, the order rotating from question to
question), so every configuration runs under the same load on a shared machine; the
figure is the read path's time excluding model calls (the trace's ``read_path_s``, what the
eval rows call ``read_seconds``). Prints each configuration's median and its ratio to the
one-journal median, and the median of the per-question ratios.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from mnemon_langgraph.cli._common import embeddings_for
from mnemon_langgraph.cli._eval_common import read_graph
from mnemon_langgraph.eval.documents import DocumentSplit
from mnemon_langgraph.eval.locomo import load_locomo_items
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.search.embeddings import CachedEmbeddings
from mnemon_langgraph.store import MnemonStore


def _read_s(graph: Any, question: str, ns: tuple[str, ...], now: Any) -> float:
    out = graph.invoke(
        {"messages": [HumanMessage(question)]}, context=ReadContext(namespace=ns, now=now)
    )
    return float(out["view"].trace["timings"]["read_path_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--embedding-cache", required=True)
    parser.add_argument("--conversations", default=None)
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--stores", default="memory,faiss")
    args = parser.parse_args()
    emb = CachedEmbeddings(embeddings_for("minilm"), args.embedding_cache)
    items = load_locomo_items(args.files)
    histories = {i.conversation_id: i.messages for i in items}
    wanted = args.conversations.split(",") if args.conversations else list(histories)
    stores = args.stores.split(",")
    names = ["one", *stores]
    times: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as folder:
        journal = MnemonStore(Path(folder) / "j.sqlite", embeddings=emb)
        for item in items:
            if item.conversation_id not in wanted:
                continue
            ns = ("locomo", item.conversation_id)
            graphs = {"one": read_graph(journal, None)}
            journal.ingest(ns, item.messages, origin="locomo")
            for kind in stores:  # the documents only: the journal holds the history once
                split = DocumentSplit(journal, emb, distractors=histories, vector_store=kind)
                split.index_documents(ns, item.messages)
                graphs[kind] = read_graph(journal, {"distractors": split.source})
            qa = [q for q in item.qa if q.get("question")][: args.limit_questions]
            for n, q in enumerate(qa):
                order = names[n % len(names) :] + names[: n % len(names)]
                for name in order:
                    times[name].append(_read_s(graphs[name], str(q["question"]), ns, item.ask_date))
            print(f"{item.conversation_id}: {len(qa)} questions", flush=True)
        journal.close()
    one = statistics.median(times["one"])
    for name in names:
        med = statistics.median(times[name])
        ratios = [t / o for t, o in zip(times[name], times["one"], strict=True)]
        print(
            f"{name:8} median {1000 * med:7.1f} ms  ×{med / one:5.2f} of one journal  "
            f"(per-question ratio, median ×{statistics.median(ratios):.2f}; n={len(ratios)})"
        )


if __name__ == "__main__":
    main()
