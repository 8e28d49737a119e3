"""``mnemon bench peers``: ``store.search`` beside what a LangChain user would build instead.

The same records and the same vectors go into three systems:

* mnemon's :class:`~mnemon_langgraph.store.MnemonStore` (``store.search``, k = 20: BM25 +
  dense fused by RRF, then the page's records fetched from SQLite);
* LangChain's ``EnsembleRetriever([BM25Retriever, FAISS retriever])`` (``langchain-classic``
  and ``langchain-community`` + ``rank-bm25``; weights 0.5 / 0.5, k = 20 each) — the usual
  "hybrid search" recipe;
* LangGraph's ``InMemoryStore`` with a vector index (``store.search(query=…, limit=20)``).

Records: the LoCoMo dev conversations (``$MNEMON_LOCOMO_DEV``, or the bundled sample),
chunked and embedded once by mnemon's ingest; larger sizes add synthetic records (those of
``bench search``, stand-in vectors) up to each ``--sizes`` value. Queries: the conversations'
questions. Every system gets precomputed vectors through a lookup embedder, so the query
embedding (the same model call for all three) is left out and only search is timed.

Install the peers with ``pip install "mnemon-langgraph[peers]"``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import numpy as np
from langchain_core.documents import Document

from mnemon_langgraph.bench import dev_files, embeddings_for, peak_rss_mib
from mnemon_langgraph.bench.search import LookupEmbeddings, corpus_vectors, make_corpus

__all__ = ["HELP", "add_arguments", "render", "run"]

HELP = "store.search beside EnsembleRetriever(BM25, FAISS) and LangGraph InMemoryStore"

_NS = ("bench", "peers")
_K = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench peers``."""
    parser.add_argument("files", nargs="*", metavar="FILE", help="default: $MNEMON_LOCOMO_DEV")
    parser.add_argument(
        "--sizes",
        default="0,10000",
        metavar="N,…",
        help="total records (0: the conversations' records only; default 0,10000)",
    )
    parser.add_argument(
        "--queries",
        type=int,
        default=100,
        metavar="N",
        help="the first N LoCoMo questions of the files are the queries (default 100)",
    )
    parser.add_argument(
        "--embeddings",
        choices=("minilm", "e5", "fake"),
        default="minilm",
        help="embedder of the records",
    )
    parser.add_argument(
        "--skip", default="", metavar="NAME,…", help="systems to leave out (ensemble, inmemory)"
    )


def _questions(files: list[Path], limit: int) -> list[str]:
    out: list[str] = []
    for path in files:
        if path.suffix != ".json":
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        for item in data if isinstance(data, list) else [data]:
            out.extend(str(q["question"]) for q in item.get("qa", []) if q.get("question"))
    return out[:limit] or ["what did they talk about", "where did she travel", "new job"]


def _real_records(files: list[Path], embedder: str, queries: list[str]) -> dict[str, Any]:
    """The conversations' records and vectors (one ingest), and the queries' vectors."""
    from mnemon_langgraph.store import load_messages
    from mnemon_langgraph.store.embedded import EmbeddedStore

    embeddings = embeddings_for(embedder)
    records: list[Any] = []
    by_id: dict[str, np.ndarray] = {}
    with (
        tempfile.TemporaryDirectory(prefix="mnemon-peers-") as tmp,
        EmbeddedStore(Path(tmp) / "src.db", embeddings) as store,
    ):
        for i, f in enumerate(files):
            ns = ("src", str(i))  # one namespace per file: message ids repeat across files
            for source, msgs in load_messages(f):
                store.ingest(ns, msgs, origin=source, pack=True)
            # all records then go to the one namespace the three systems search (ids made
            # unique per file: a record id does not depend on the namespace)
            records += [
                dataclasses.replace(r, namespace=_NS, id=f"{i}-{r.id}") for r in store.records(ns)
            ]
            for ids, arr in cast(EmbeddedStore, store).journal.iter_vectors(ns):
                by_id.update((f"{i}-{rid}", vec) for rid, vec in zip(ids, arr, strict=True))
        qvecs = np.asarray(embeddings.embed_documents(queries), dtype=np.float32)
    vecs = np.stack([by_id[r.id] for r in records]).astype(np.float32)
    return {"records": records, "vecs": vecs, "qvecs": qvecs, "queries": queries}


def _corpus(real: dict[str, Any], size: int, seed: int = 0) -> dict[str, Any]:
    """Texts, ids and vectors of ``size`` records: the real ones, then synthetic ones."""
    texts = [r.text for r in real["records"]]
    ids = [r.id for r in real["records"]]
    vecs = real["vecs"]
    extra = max(0, size - len(texts))
    if extra:
        corpus = make_corpus(extra, seed=seed, dim=vecs.shape[1])
        fill = corpus_vectors(corpus, np.arange(extra), np.random.default_rng(seed))
        texts = texts + corpus["texts"]
        ids = ids + [f"synthetic-{i}" for i in range(extra)]
        vecs = np.concatenate([vecs, fill])
    return {"texts": texts, "ids": ids, "vecs": vecs}


def _p50(fn: Any, queries: list[str]) -> float:
    fn(queries[0])  # warm up
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 3)


def _mnemon(real: dict[str, Any], corpus: dict[str, Any], table: Any, folder: Path) -> Any:
    """A MnemonStore holding the real records (as written) and the synthetic ones."""
    from mnemon_langgraph.store.embedded import EmbeddedStore
    from mnemon_langgraph.types import Message

    store = EmbeddedStore(folder / "peers.db", table)
    n_real = len(real["records"])
    store.journal.append(_NS, real["records"], real["vecs"])
    extra = corpus["texts"][n_real:]
    for start in range(0, len(extra), 20_000):
        batch = [
            Message(t.split(": ", 1)[1], t.split(": ", 1)[0], id=f"s-{start + j}", session=1)
            for j, t in enumerate(extra[start : start + 20_000])
        ]
        store.ingest(_NS, batch, origin="synthetic", pack=False)
    store.index(_NS).sync()
    return store


def _ensemble(corpus: dict[str, Any], table: Any) -> Any:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS

    docs = [
        Document(t, metadata={"id": i}) for t, i in zip(corpus["texts"], corpus["ids"], strict=True)
    ]
    bm25 = BM25Retriever.from_documents(docs, k=_K)
    pairs = list(zip(corpus["texts"], corpus["vecs"].tolist(), strict=True))
    faiss = FAISS.from_embeddings(pairs, table, metadatas=[d.metadata for d in docs])
    dense = faiss.as_retriever(search_kwargs={"k": _K})
    return EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])


def _inmemory(corpus: dict[str, Any], table: Any) -> Any:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(
        index={"dims": corpus["vecs"].shape[1], "embed": table, "fields": ["text"]}
    )
    # InMemoryStore.batch embeds each distinct text once and then fails on repeated texts
    # ("Number of embeddings … does not match number of indices"): batches of distinct texts.
    batch: list[Any] = []
    seen: set[str] = set()
    for rid, text in zip(corpus["ids"], corpus["texts"], strict=True):
        if text in seen:
            store.batch(batch)
            batch, seen = [], set()
        batch.append(_put(("peers",), rid, {"text": text}))
        seen.add(text)
    store.batch(batch)
    return store


def _put(ns: tuple[str, ...], key: str, value: dict[str, Any]) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(ns, key, value)


def _measure(real: dict[str, Any], size: int, skip: set[str]) -> dict[str, Any]:
    corpus = _corpus(real, size)
    table_map = dict(zip(corpus["texts"], corpus["vecs"], strict=True))
    table_map.update(zip(real["queries"], real["qvecs"], strict=True))
    table = LookupEmbeddings(table_map, corpus["vecs"].shape[1])
    queries = real["queries"]
    row: dict[str, Any] = {"records": len(corpus["texts"])}
    with tempfile.TemporaryDirectory(prefix="mnemon-peers-") as tmp:
        store = _mnemon(real, corpus, table, Path(tmp))
        try:
            row["mnemon_p50_ms"] = _p50(lambda q: store.search(q, namespace=_NS, k=_K), queries)
        finally:
            store.close()
    if "ensemble" not in skip:
        ensemble = _ensemble(corpus, table)
        row["ensemble_p50_ms"] = _p50(ensemble.invoke, queries)
        del ensemble
    if "inmemory" not in skip:
        mem = _inmemory(corpus, table)
        row["inmemory_p50_ms"] = _p50(lambda q: mem.search(("peers",), query=q, limit=_K), queries)
        del mem
    row["peak_rss_mib"] = round(peak_rss_mib(), 1)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the comparison at every size; returns its figures."""
    files = dev_files(list(args.files))
    queries = _questions(files, args.queries)
    real = _real_records(files, args.embeddings, queries)
    sizes = sorted(
        {max(int(s), len(real["records"])) for s in str(args.sizes).split(",") if s.strip()}
    )
    skip = {s.strip() for s in str(args.skip).split(",") if s.strip()}
    return {
        "benchmark": "peers",
        "embeddings": args.embeddings,
        "queries": len(queries),
        "k": _K,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "sizes": [_measure(real, n, skip) for n in sizes],
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable table (p50 ms per query, query embedding excluded)."""
    lines = [
        f"search beside peers ({result['embeddings']} vectors, {result['queries']} queries, "
        f"k={result['k']}, {result['cpu_count']} CPUs, load {result['load_average_1min']}); p50 ms",
        f"{'records':>9} {'mnemon':>9} {'Ensemble(BM25,FAISS)':>21} {'InMemoryStore':>14} "
        f"{'peak MiB':>9}",
    ]
    for r in result["sizes"]:
        lines.append(
            f"{r['records']:>9} {r['mnemon_p50_ms']:>9} {r.get('ensemble_p50_ms', '-'):>21} "
            f"{r.get('inmemory_p50_ms', '-'):>14} {r['peak_rss_mib']:>9}"
        )
    return "\n".join(lines)
