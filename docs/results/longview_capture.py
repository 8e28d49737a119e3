"""Capture the View's inputs on LongMemEval questions already ingested (longmemeval.md).

Reads a LongMemEval-format file and a journal that ``mnemon eval longmemeval FILE --store
JOURNAL --keep-namespaces`` filled (each question's history in ``("longmemeval", id)``),
asks each question through the default read graph at its ``question_date`` and keeps the
inputs of its ``compose_view`` (pool, judgments, keyword arguments), and the question's
turn-level RRF ranking (bm25 + cosine over whole turns, as ``turns+rrf`` of the eval) with
each turn's rendered size and message ids, so the baseline can be cut to any View's size.
``compose_view`` is pure: a replay with a changed View rule gives exactly the View the read
graph would give. The gold labels are kept beside the inputs for scoring only.

Usage::

    python docs/results/longview_capture.py FILE JOURNAL CACHE OUT.pkl [pool_size]
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import mnemon_langgraph.read.nodes as nodes
from mnemon_langgraph.cli._common import embeddings_for, judge
from mnemon_langgraph.eval.baselines import TurnIndex
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.records.chunking import chunk_messages
from mnemon_langgraph.search.embeddings import CachedEmbeddings
from mnemon_langgraph.sources.longmemeval import load_longmemeval
from mnemon_langgraph.store import MnemonStore


def main(file: str, journal: str, cache: str, out: str, pool_size: int | None) -> None:
    emb = CachedEmbeddings(embeddings_for("minilm"), cache)
    store = MnemonStore(Path(journal), embeddings=emb)
    settings = ReadSettings()
    if pool_size:
        settings = dataclasses.replace(settings, pool_size=pool_size)
    graph = create_read_graph(
        source=store, judge=judge("local", emb), planner=None, settings=settings
    )
    calls: list[dict[str, Any]] = []
    original = nodes.compose_view

    def keep(pool: Any, judgments: Any, **kw: Any) -> Any:
        calls.append({"pool": list(pool), "judgments": list(judgments), "kw": kw})
        return original(pool, judgments, **kw)

    nodes.compose_view = keep
    rows: list[dict[str, Any]] = []
    try:
        for q in load_longmemeval(file):
            if q.is_abstention or not q.gold_turns:
                continue
            ns = ("longmemeval", q.question_id)
            t0 = time.perf_counter()
            graph.invoke(
                {"messages": [HumanMessage(q.question)]},
                context=ReadContext(namespace=ns, now=q.question_date),
            )
            seconds = time.perf_counter() - t0
            turns = chunk_messages(
                q.messages, namespace=("turns", q.question_id), source="t", pack=False
            )
            index = TurnIndex.build(turns, emb)
            ranking = index.rankings(q.question, depth=200)["rrf"]
            rows.append(
                dict(
                    calls[-1],
                    qid=q.question_id,
                    qtype=q.question_type,
                    gold=set(q.gold_turns),
                    rrf=ranking,
                    turn_chars=[len(t) for t in index.rendered],
                    turn_mids=[tuple(r.message_ids) for r in index.records],
                    read_seconds=seconds,
                )
            )
            print(q.question_id, f"{seconds:.1f}s", flush=True)
    finally:
        nodes.compose_view = original
        store.close()
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


if __name__ == "__main__":
    file, journal, cache, out = sys.argv[1:5]
    main(file, journal, cache, out, int(sys.argv[5]) if len(sys.argv) > 5 else None)
