"""PostgreSQL BM25 at 1M records: build a bench database once, then time it as often as needed.

The figures of the README's "BM25 at 1M, term at a time" paragraph. ``mnemon bench backend``
builds a throwaway database for every run (~35 min at 1M on 2 cores); this keeps one:

    python benchmarks/pg_bm25_1m.py build /tmp/pg1m 1000000 PASSAGES.txt
    python benchmarks/pg_bm25_1m.py measure /tmp/pg1m 1000000 PASSAGES.txt out.json
    python benchmarks/pg_bm25_1m.py parts /tmp/pg1m 1000000 PASSAGES.txt

``build`` starts a persistent server in the folder (pgserver, ``cleanup_mode=None``; stop
it with ``pg_ctl -D FOLDER stop`` as the server's user) and writes the bench's namespaces
by its bulk path (``bench.backend._ingest_big`` with ``--bulk-index``; vectors from the
cache beside PASSAGES.txt, no embedding). ``measure`` gives the bench's timed figures
without ingesting (hybrid, hybrid without pruning, BM25 top 48 pruned vs full with the
same-ranking counts, BM25 at depth 100), for both query kinds; ``parts`` splits the hybrid
search into BM25 (depth 100) and dense (the store's ``ef_search`` and 200), two rounds,
then prints the recall@48 of the store's dense path against an exact scan. Run the timed
ones under the CPU lock; compare code versions on the same database.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mnemon_langgraph.bench import backend as B
from mnemon_langgraph.store import MnemonStore


def _url(folder: str) -> str:
    import pgserver

    return str(pgserver.get_server(folder, cleanup_mode=None).get_uri())


def _p(values: list[float]) -> tuple[float, float]:
    return round(B._pct(values, 0.5), 2), round(B._pct(values, 0.95), 2)


def build(url: str, n: int, corpus: str) -> dict[str, Any]:
    args = argparse.Namespace(batch=2000, bulk_index=True, queries=40, seed=0, corpus=corpus)
    work = B._corpus_workload(corpus, n, 40, 0)
    with MnemonStore(url, work["embeddings"]) as store:
        out = B._ingest_big(store, url, n, work["big"], args)
        store.ingest(("bench", f"small-{n}"), work["small"], origin="bench", pack=False)
    B._analyze(url)
    return out


def measure(url: str, n: int, corpus: str) -> dict[str, Any]:
    work = B._corpus_workload(corpus, n, 40, 0)
    big, row = ("bench", f"big-{n}"), {"records": n}
    with MnemonStore(url, work["embeddings"]) as store:
        qs, common = work["queries"], work["common"]
        store.search(qs[0], namespace=big, k=20)
        for name, queries in (("hybrid", qs), ("hybrid_common", common)):
            _, ms = B._timed(lambda q: store.search(q, namespace=big, k=20), queries)
            row[f"{name}_ms_p50_p95"] = _p(ms)
        unpruned = store.with_settings(bm25_prune=False)
        _, ms = B._timed(lambda q: unpruned.search(q, namespace=big, k=20), qs)
        row["hybrid_unpruned_ms_p50_p95"] = _p(ms)
        row["bm25_topic"] = B._bm25_figures(store, big, qs)
        row["bm25_common"] = B._bm25_figures(store, big, common)
        for name, queries in (("topic", qs), ("common", common)):
            _, ms = B._timed(lambda q: store.lexical_ranking(q, namespace=big, k=100), queries)
            row[f"bm25_depth100_{name}_ms_p50_p95"] = _p(ms)
    return row


def parts(url: str, n: int, corpus: str) -> dict[str, Any]:
    work = B._corpus_workload(corpus, n, 40, 0)
    big, out = ("bench", f"big-{n}"), {}
    with MnemonStore(url, work["embeddings"]) as store:
        qs = work["queries"]
        for rnd in (1, 2):
            _, h = B._timed(lambda q: store.search(q, namespace=big, k=20), qs)
            _, b = B._timed(lambda q: store.lexical_ranking(q, namespace=big, k=100), qs)
            _, d = B._timed(lambda q: store.dense_ranking(q, namespace=big, k=100), qs)
            ef200 = store.with_settings(ef_search=200, client_ann=False)  # pgvector's
            _, d2 = B._timed(lambda q, s=ef200: s.dense_ranking(q, namespace=big, k=100), qs)
            out[f"round{rnd}"] = {
                "hybrid": _p(h),
                "bm25_depth100": _p(b),
                "dense_store_ef": _p(d),
                "dense_ef200": _p(d2),
            }
        out["dense_recall48_store_path"] = _recall(store, big, qs)
    return out


def _recall(store: Any, ns: tuple[str, ...], queries: list[str]) -> dict[str, Any]:
    """Recall@48 of the dense path the store chooses (HNSW at its ``ef_search`` past
    ``exact_below`` records) against an exact scan, mean and min over the queries."""
    from mnemon_langgraph.store.postgres import ef_search_for

    got = []
    for q in queries:
        exact = {rid for rid, _ in store.dense_ranking(q, namespace=ns, k=48, exact=True)}
        found = {rid for rid, _ in store.dense_ranking(q, namespace=ns, k=48)}
        got.append(len(exact & found) / max(1, len(exact)))
    docs = store.count(ns)
    return {
        "path": "hnsw" if docs >= store.settings.exact_below else "exact",
        "ef_search": ef_search_for(docs),
        "mean": round(sum(got) / len(got), 4),
        "min": round(min(got), 4),
    }


def main(argv: list[str]) -> int:
    cmd, folder, n, corpus = argv[0], argv[1], int(argv[2]), argv[3]
    url = _url(folder)
    result = {"build": build, "measure": measure, "parts": parts}[cmd](url, n, corpus)
    print(json.dumps(result, indent=1))
    if len(argv) > 4:
        with open(argv[4], "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
