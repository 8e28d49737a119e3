"""``mnemon bench search``: how search latency grows with the number of records.

For each size, builds the BM25 and vector indexes of one namespace over synthetic
LoCoMo-like records (``Speaker: text`` of 15–60 words drawn from a Zipf vocabulary with topic
words mixed in) and times queries drawn from the same distribution:

* p50 latency of BM25, dense and hybrid (BM25 + dense at the search's candidate depth, fused
  by RRF, first page cut) — the query embedding and fetching the page's records from SQLite
  are left out, as neither depends on the number of records;
* each size's p50 as a ratio to the smallest size's (goal: 1M / 10k ≤ 5× for hybrid);
* peak resident memory of the process (``getrusage``) and the indexes' estimated size;
* recall@48 of HNSW against exact search (an HNSW index is built for the measurement even
  below the size where the store switches to it).

``--vectors random`` (default) uses stand-in vectors: unit vectors around one of 256 random
topic centroids (cosine ≈ 0.5 within a topic), generated in seconds at any size.
``--vectors model`` embeds the texts with the real MiniLM model (slow: use small sizes).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from typing import Any

import numpy as np

from mnemon_langgraph.bench import peak_rss_mib

__all__ = ["HELP", "add_arguments", "make_corpus", "render", "run"]

HELP = "search latency, memory and HNSW recall at 10k … 1M synthetic records"

_NAMES = [
    "Caroline",
    "Melanie",
    "Jon",
    "Gina",
    "John",
    "Maria",
    "Tim",
    "Audrey",
    "Andrew",
    "Deborah",
    "Jolene",
    "Evan",
    "Sam",
    "Calvin",
    "Dave",
    "Nate",
    "Joanna",
    "James",
    "Priya",
    "Noor",
]
_FILLER = [
    "the",
    "and",
    "to",
    "a",
    "of",
    "i",
    "it",
    "you",
    "that",
    "in",
    "is",
    "was",
    "for",
    "my",
    "on",
    "with",
    "so",
    "this",
    "but",
    "have",
    "just",
    "me",
    "be",
    "at",
    "really",
    "so",
    "what",
    "like",
    "we",
    "they",
    "not",
    "are",
    "yeah",
    "oh",
    "do",
    "can",
    "all",
    "about",
    "your",
    "how",
    "when",
    "had",
    "great",
]


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(2, 4))
        words.add(
            "".join(
                consonants[int(rng.integers(len(consonants)))] + vowels[int(rng.integers(5))]
                for _ in range(n)
            )
        )
    return sorted(words)


def make_corpus(
    n: int, *, seed: int = 0, topics: int = 256, vocab: int = 30_000, dim: int = 384
) -> dict[str, Any]:
    """Synthetic records: texts, sessions, dates, topic ids and stand-in unit vectors."""
    rng = np.random.default_rng(seed)
    words = np.array(_FILLER + _vocabulary(vocab, rng), dtype=object)
    ranks = np.arange(1, len(words) + 1, dtype=np.float64)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    topic_words = rng.integers(len(_FILLER), len(words), size=(topics, 40))
    topic_of = rng.integers(0, topics, size=n)
    lengths = rng.integers(15, 61, size=n)
    total = int(lengths.sum())
    draws = rng.choice(len(words), size=total, p=p).astype(np.int64)
    from_topic = rng.random(total) < 0.3
    row_of = np.repeat(np.arange(n), lengths)
    draws[from_topic] = topic_words[
        topic_of[row_of[from_topic]], rng.integers(0, 40, size=int(from_topic.sum()))
    ]
    texts = []
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for i in range(n):
        body = " ".join(words[draws[offsets[i] : offsets[i + 1]]])
        texts.append(f"{_NAMES[i % len(_NAMES)]}: {body}")
    centroids = rng.standard_normal((topics, dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    return {
        "texts": texts,
        "topic_of": topic_of,
        "topic_words": topic_words,
        "words": words,
        "centroids": centroids,
        "rng": rng,
    }


def _vectors(corpus: dict[str, Any], idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    centroids = corpus["centroids"]
    dim = centroids.shape[1]
    vecs = centroids[corpus["topic_of"][idx]] + rng.standard_normal((len(idx), dim)).astype(
        np.float32
    ) / np.sqrt(dim)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32)


def _queries(corpus: dict[str, Any], count: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    out = []
    words, topic_words = corpus["words"], corpus["topic_words"]
    topics = len(topic_words)
    for _ in range(count):
        t = int(rng.integers(topics))
        picked = [words[topic_words[t, int(j)]] for j in rng.integers(0, 40, size=4)]
        picked += [words[int(j)] for j in rng.integers(len(_FILLER), len(words), size=2)]
        out.append((" ".join(picked), t))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench search``."""
    parser.add_argument(
        "--records",
        default="10000,100000,1000000",
        metavar="N,N,…",
        help="sizes to measure (default 10000,100000,1000000)",
    )
    parser.add_argument("--vectors", choices=("random", "model"), default="random")
    parser.add_argument("--queries", type=int, default=50, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hnsw-threshold", type=int, default=None, metavar="N", help="default: the store's"
    )
    parser.add_argument("--recall-k", type=int, default=48, metavar="K")


def _p50(fn: Any, items: list[Any]) -> float:
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 3)


def _measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from mnemon_langgraph.search.bm25 import BM25Index
    from mnemon_langgraph.search.fusion import rrf_fuse
    from mnemon_langgraph.search.hybrid import CANDIDATE_DEPTH
    from mnemon_langgraph.search.vectors import HNSW_THRESHOLD, VectorIndex

    threshold = args.hnsw_threshold or HNSW_THRESHOLD
    rng = np.random.default_rng(args.seed + n)
    t0 = time.perf_counter()
    corpus = make_corpus(n, seed=args.seed)
    queries = _queries(corpus, args.queries, rng)
    if args.vectors == "model":
        from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

        model = MiniLMEmbeddings()
        vecs = model.embed_array(corpus["texts"])
        qvecs = model.embed_array([q for q, _ in queries])
    else:
        vecs = _vectors(corpus, np.arange(n), rng)
        qvecs = _vectors(
            {"centroids": corpus["centroids"], "topic_of": np.array([t for _, t in queries])},
            np.arange(len(queries)),
            rng,
        )
    generate_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    seqs = np.arange(1, n + 1, dtype=np.int64)
    bm25 = BM25Index()
    step = 50_000
    for start in range(0, n, step):
        end = min(n, start + step)
        bm25.add(
            seqs[start:end].tolist(),
            [f"r-{i}" for i in range(start, end)],
            corpus["texts"][start:end],
            [1 + i // 500 for i in range(start, end)],
            [1_600_000_000 + i * 60 for i in range(start, end)],
        )
    bm25.merge()
    bm25_build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    vindex = VectorIndex(vecs.shape[1], hnsw_threshold=threshold)
    vindex.add(seqs, vecs)
    vector_build_s = time.perf_counter() - t0
    texts = [q for q, _ in queries]
    for q, v in zip(texts[:5], qvecs[:5], strict=True):  # warm up
        bm25.search(q, CANDIDATE_DEPTH)
        vindex.search(v, CANDIDATE_DEPTH)

    def hybrid(i: int) -> None:
        b, _ = bm25.search(texts[i], CANDIDATE_DEPTH)
        d, _ = vindex.search(qvecs[i], CANDIDATE_DEPTH)
        rrf_fuse([b.tolist(), d.tolist()])[:20]

    idx = list(range(len(texts)))
    bm25_p50 = _p50(lambda i: bm25.search(texts[i], CANDIDATE_DEPTH), idx)
    dense_p50 = _p50(lambda i: vindex.search(qvecs[i], CANDIDATE_DEPTH), idx)
    hybrid_p50 = _p50(hybrid, idx)

    # HNSW recall@k against exact inner-product search.
    k = args.recall_k
    if vindex.kind == "hnsw":
        hnsw = vindex
    else:
        hnsw = VectorIndex(vecs.shape[1], hnsw_threshold=1)
        hnsw.add(seqs, vecs)
    recalls = []
    for v in qvecs:
        exact = seqs[np.argsort(-(vecs @ v), kind="stable")[:k]]
        got, _ = hnsw.search(v, k)
        recalls.append(len(set(got.tolist()) & set(exact.tolist())) / k)
    bm25_bytes = sum(
        a.nbytes
        for a in (
            bm25._post_doc,
            bm25._post_tf,
            bm25._indptr,
            bm25._seqs,
            bm25._ids,
            bm25._lengths,
            bm25._sessions,
            bm25._dates,
        )
    )
    vec_bytes = n * vecs.shape[1] * 4 + (n * 32 * 2 * 4 if vindex.kind == "hnsw" else 0)
    return {
        "records": n,
        "vector_index": vindex.kind,
        "bm25_p50_ms": bm25_p50,
        "dense_p50_ms": dense_p50,
        "hybrid_p50_ms": hybrid_p50,
        "hnsw_recall_at_k": round(float(np.mean(recalls)), 4),
        "recall_k": k,
        "bm25_index_mib": round(bm25_bytes / 2**20, 1),
        "vector_index_mib_est": round(vec_bytes / 2**20, 1),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "generate_s": round(generate_s, 1),
        "bm25_build_s": round(bm25_build_s, 1),
        "vector_build_s": round(vector_build_s, 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark at every size; returns its figures."""
    sizes = [int(s.replace("_", "")) for s in str(args.records).split(",") if s.strip()]
    rows = []
    for n in sorted(sizes):
        rows.append(_measure(n, args))
        gc.collect()
    base = rows[0] if rows else None
    for row in rows:
        for key in ("bm25", "dense", "hybrid"):
            b = base[f"{key}_p50_ms"] if base else 0
            row[f"{key}_ratio"] = round(row[f"{key}_p50_ms"] / b, 2) if b else None
    return {
        "benchmark": "search",
        "vectors": args.vectors,
        "queries": args.queries,
        "cpu_count": os.cpu_count(),
        "goal": "hybrid p50 at 1M / at 10k ≤ 5",
        "sizes": rows,
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable table."""
    lines = [
        f"search benchmark ({result['vectors']} vectors, {result['queries']} queries, "
        f"{result['cpu_count']} CPUs); p50 ms (ratio to smallest size)",
        f"{'records':>9} {'index':>5} {'bm25':>15} {'dense':>15} {'hybrid':>15} "
        f"{'recall':>7} {'peak MiB':>9}",
    ]
    for r in result["sizes"]:
        lines.append(
            f"{r['records']:>9} {r['vector_index']:>5} "
            f"{r['bm25_p50_ms']:>8} ({r['bm25_ratio']:>4}) "
            f"{r['dense_p50_ms']:>8} ({r['dense_ratio']:>4}) "
            f"{r['hybrid_p50_ms']:>8} ({r['hybrid_ratio']:>4}) "
            f"{r['hnsw_recall_at_k']:>7} {r['peak_rss_mib']:>9}"
        )
    lines.append(f"goal: {result['goal']}")
    return "\n".join(lines)
