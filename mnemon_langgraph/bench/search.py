"""``mnemon bench search``: search latency as a caller sees it, from 10k to 1M records.

For each size, ingests synthetic LoCoMo-like records (``Speaker: text`` of 15–60 words drawn
from a Zipf vocabulary with topic words mixed in) into a real :class:`MnemonStore` in a
temporary folder, then times queries drawn from the same distribution:

* **the whole call** — ``store.search(query, k=20)``: index sync check, BM25, dense, RRF
  fusion and fetching the page's 20 records from SQLite — and each part of it (``ranking``
  = :meth:`NamespaceIndex.fused_ranking`, ``fetch`` = ``Journal.get_records``); the query
  embedding is a table lookup, since it does not depend on the number of records;
* the indexes alone: BM25, dense and hybrid (both at the search's candidate depth, fused);
* each size's p50 as a ratio to the smallest size's (goal: 1M / 10k ≤ 5× for the whole call);
* peak resident memory of the bench process (``getrusage``; it holds the synthetic corpus
  and exact-search copies) and the indexes' estimated size;
* **serving**: a child process opens the saved store (indexes loaded, not rebuilt), answers
  the queries and reports its own peak RSS, the seconds to its first answer and its p50 —
  the footprint of a process that only serves searches (goal at 1M: < 3 GiB, < 10 s);
* recall@48 of the approximate index against exact search for a grid of its search
  setting (IVF: cells probed; HNSW: ``efSearch``) with dense p50, marking the store's own
  setting and the cheapest one reaching 0.98 (below the size where the store switches to
  an approximate index, one is built for the measurement; ``--compare-ann`` builds the
  other approximate kind over the same vectors too — HNSW is slow to build at 1M).

``--vectors random`` (default) uses stand-in vectors: unit vectors around one of 256 random
topic centroids (cosine ≈ 0.5 within a topic), generated in seconds at any size. They are
isotropic around well-separated topics, unlike real sentence vectors: they flatter IVF (its
k-means cells line up with the topics) and are hard for HNSW; ``docs/results/ann-real-text.md``
measures both kinds on real MiniLM vectors, where the order is the other way round.
``--vectors model`` embeds the texts with the real MiniLM model (slow: use small sizes).
``--corpus FILE`` takes real text instead: the file's first ``N`` passages (one per line) as
records, its last ``--queries`` passages as held-out queries, with the bundled MiniLM's
vectors, computed once and cached beside the file (:mod:`mnemon_langgraph.bench.corpus`):
the figures that say how the approximate index behaves on real sentence vectors.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.bench import peak_rss_mib

__all__ = [
    "HELP",
    "SPEAKER_NAMES",
    "LookupEmbeddings",
    "add_arguments",
    "common_word_queries",
    "corpus_vectors",
    "make_corpus",
    "render",
    "run",
    "topic_queries",
]

HELP = "whole-call search latency, memory and ANN recall at 10k … 1M synthetic records"

_NAMESPACE = ("bench", "search")
_EF_GRID = (64, 128, 256, 512, 1024)
_NPROBE_GRID = (4, 8, 16, 32, 64, 128)
_RECALL_GOAL = 0.98

SPEAKER_NAMES = [
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
        texts.append(f"{SPEAKER_NAMES[i % len(SPEAKER_NAMES)]}: {body}")
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


def corpus_vectors(corpus: dict[str, Any], idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    centroids = corpus["centroids"]
    dim = centroids.shape[1]
    vecs = centroids[corpus["topic_of"][idx]] + rng.standard_normal((len(idx), dim)).astype(
        np.float32
    ) / np.sqrt(dim)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32)


def topic_queries(
    corpus: dict[str, Any], count: int, rng: np.random.Generator
) -> list[tuple[str, int]]:
    """``count`` queries about the corpus's topics: ``(four topic words + two vocabulary
    words, topic)``. Shared by ``bench search`` and ``bench backend``, so both time the
    same kind of question."""
    out = []
    words, topic_words = corpus["words"], corpus["topic_words"]
    topics = len(topic_words)
    for _ in range(count):
        t = int(rng.integers(topics))
        picked = [words[topic_words[t, int(j)]] for j in rng.integers(0, 40, size=4)]
        picked += [words[int(j)] for j in rng.integers(len(_FILLER), len(words), size=2)]
        out.append((" ".join(picked), t))
    return out


def common_word_queries(corpus: dict[str, Any], count: int, rng: np.random.Generator) -> list[str]:
    """``count`` queries of five common filler words the tokenizer keeps ("really", "like",
    "yeah" …, each in a large share of the records) and one topic word: the worst case
    for a BM25 that scores every record holding a query term."""
    from mnemon_langgraph.search._bm25 import tokenize

    common = [w for w in dict.fromkeys(_FILLER) if tokenize(w)]
    words, topic_words = corpus["words"], corpus["topic_words"]
    out = []
    for _ in range(count):
        picked = [common[int(j)] for j in rng.choice(len(common), size=5, replace=False)]
        t = int(rng.integers(len(topic_words)))
        picked.append(str(words[topic_words[t, int(rng.integers(40))]]))
        out.append(" ".join(picked))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench search``."""
    parser.add_argument(
        "--records",
        default="10000,100000,1000000",
        metavar="N,N,…",
        help="sizes to measure (default 10000,100000,1000000)",
    )
    parser.add_argument(
        "--vectors",
        choices=("random", "model"),
        default="random",
        help="random = stand-in topic vectors, fast at any size (default); model = the real "
        "MiniLM (slow: use small sizes)",
    )
    parser.add_argument(
        "--corpus",
        metavar="FILE",
        default=None,
        help="real passages, one per line: the first N are the records, the last --queries "
        "are held out as queries; MiniLM vectors cached in FILE.vectors/ (overrides --vectors)",
    )
    parser.add_argument(
        "--queries", type=int, default=50, metavar="N", help="timed queries per size (default 50)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic corpus and queries (default 0)"
    )
    parser.add_argument(
        "--hnsw-threshold", type=int, default=None, metavar="N", help="default: the store's"
    )
    parser.add_argument(
        "--recall-k",
        type=int,
        default=48,
        metavar="K",
        help="depth of the recall@K measured against exact search (default 48)",
    )
    _growth_arguments(parser)
    parser.add_argument(
        "--compare-ann",
        action="store_true",
        help="also build the other approximate index kind (IVF beside HNSW, or HNSW beside "
        "IVF) over the same vectors and print its trade-off (HNSW: ~10 minutes at 1M)",
    )


def _growth_arguments(parser: argparse.ArgumentParser) -> None:
    """``--growth`` and the options only it reads."""
    parser.add_argument(
        "--growth",
        nargs="?",
        const="2000:40000",
        default=None,
        metavar="SMALL:LARGE,…",
        help="instead: how store.search grows from a small to a large namespace, both in one "
        "store, calls alternating, topical, common-word and narrow-vocabulary questions, the "
        "query embedded at every call (default pair 2000:40000; 10000:1000000 is the long run)",
    )
    parser.add_argument(
        "--growth-corpora",
        default="zipf,narrow",
        metavar="zipf,narrow",
        help="--growth: which corpora to write and ask (default both; zipf: topical and "
        "common-word questions, narrow: the 23-word vocabulary)",
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL|DIR",
        help="--growth: a postgresql:// URL or a folder for the embedded journal (default: temp); "
        "namespaces it already holds whole are reused",
    )
    parser.add_argument(
        "--client-cache-mb",
        type=int,
        default=None,
        metavar="MIB",
        help="--growth on PostgreSQL: the budget of the client's copies (default: the store's)",
    )
    parser.add_argument(
        "--bulk-index",
        action="store_true",
        help="--growth on PostgreSQL: write each namespace without the HNSW index and build "
        "it once after (a 1M-record write in minutes instead of an hour)",
    )


def _p50(fn: Any, items: list[Any]) -> float:
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 3)


class LookupEmbeddings(Embeddings):
    """Precomputed vectors looked up by text, so the bench times search, not the model."""

    model_name = "bench-lookup"

    def __init__(self, table: dict[str, np.ndarray], dim: int) -> None:
        self.table = table
        self.dimension = dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def _corpus_dataset(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """``--corpus``: real passages and their cached MiniLM vectors, as ``Speaker: text``.

    A passage's vector is the model's vector of the passage itself; the speaker prefix
    only gives the records the shape of conversation turns (the lookup is by full text).
    """
    from mnemon_langgraph.bench.corpus import real_corpus

    t0 = time.perf_counter()
    data = real_corpus(args.corpus, n, args.queries)
    names = SPEAKER_NAMES
    data["texts"] = [f"{names[i % len(names)]}: {t}" for i, t in enumerate(data["texts"])]
    data["generate_s"] = time.perf_counter() - t0
    return data


def _dataset(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Texts, queries and their vectors for one size."""
    if getattr(args, "corpus", None):
        return _corpus_dataset(n, args)
    rng = np.random.default_rng(args.seed + n)
    t0 = time.perf_counter()
    corpus = make_corpus(n, seed=args.seed)
    queries = topic_queries(corpus, args.queries, rng)
    if args.vectors == "model":
        from mnemon_langgraph.search.embeddings import MiniLMEmbeddings

        model = MiniLMEmbeddings()
        vecs = model.embed_array(corpus["texts"])
        qvecs = model.embed_array([q for q, _ in queries])
    else:
        vecs = corpus_vectors(corpus, np.arange(n), rng)
        topics = np.array([t for _, t in queries])
        qvecs = corpus_vectors(
            {"centroids": corpus["centroids"], "topic_of": topics}, np.arange(len(queries)), rng
        )
    return {
        "texts": corpus["texts"],
        "queries": [q for q, _ in queries],
        "vecs": vecs,
        "qvecs": qvecs,
        "generate_s": time.perf_counter() - t0,
    }


def _build_store(data: dict[str, Any], folder: Path, threshold: int) -> tuple[Any, float]:
    """A real store holding the records (ingested in batches, one record per message)."""
    from mnemon_langgraph.store.embedded import EmbeddedStore
    from mnemon_langgraph.types import Message

    texts, vecs = data["texts"], data["vecs"]
    table = dict(zip(texts, vecs, strict=True))
    table.update(zip(data["queries"], data["qvecs"], strict=True))
    store = EmbeddedStore(
        folder / "bench.db",
        LookupEmbeddings(table, vecs.shape[1]),
        vector_settings={"hnsw_threshold": threshold},
    )
    t0 = time.perf_counter()
    step = 20_000
    for start in range(0, len(texts), step):
        batch = []
        for i in range(start, min(len(texts), start + step)):
            speaker, body = texts[i].split(": ", 1)
            batch.append(Message(body, speaker, id=f"r-{i}", session=1 + i // 500))
        store.ingest(_NAMESPACE, batch, origin="bench", pack=False)
    store.warm(_NAMESPACE)  # timed on the approximate index the store settles on
    store.flush()
    return store, time.perf_counter() - t0


def _whole_call(store: Any, data: dict[str, Any], rounds: int = 3) -> dict[str, Any]:
    """p50 of ``store.search`` and of its two parts, ranking and record fetch.

    The three are timed back to back for each query (``rounds`` times over all queries), so
    that load from other processes on a shared machine falls on all three alike; CPU time
    of the whole call is reported too, as it does not count time spent waiting for a core.
    """
    index = store.index(_NAMESPACE)
    queries, qvecs = data["queries"], data["qvecs"]
    for q in queries[:5]:  # warm up
        store.search(q, namespace=_NAMESPACE, k=20)
    times: dict[str, list[float]] = {"search": [], "search_cpu": [], "ranking": [], "fetch": []}
    for _ in range(rounds):
        for q, v in zip(queries, qvecs, strict=True):
            t0, c0 = time.perf_counter(), time.process_time()
            store.search(q, namespace=_NAMESPACE, k=20)
            t1, c1 = time.perf_counter(), time.process_time()
            page = index.fused_ranking(q, v, k=20)
            t2 = time.perf_counter()
            store.journal.get_records(_NAMESPACE, [x.record_id for x in page])
            t3 = time.perf_counter()
            times["search"].append(t1 - t0)
            times["search_cpu"].append(c1 - c0)
            times["ranking"].append(t2 - t1)
            times["fetch"].append(t3 - t2)
    return {f"{k}_p50_ms": round(statistics.median(v) * 1000, 3) for k, v in times.items()}


def _serve(closed: Any, data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Open the closed store in a child process that only serves searches; its figures.

    The child (``python -m mnemon_langgraph.bench.search --serve …``) loads the saved
    indexes (a rebuild would show in ``reopen_rebuilds``), answers every query and reports
    its own peak RSS: the memory of a serving process, without the bench's corpus.
    """
    queries = folder / "serve-queries.npz"
    np.savez(queries, texts=np.array(data["queries"]), vectors=data["qvecs"])
    threshold = closed.vector_settings.get("hnsw_threshold")
    cmd = [sys.executable, "-m", "mnemon_langgraph.bench.search", "--serve", str(closed.path)]
    cmd += [str(queries), str(threshold or 0)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"serving child failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _own_peak_rss_mib() -> float:
    """This process's peak RSS (``VmHWM``), not ``ru_maxrss``.

    On Linux ``ru_maxrss`` survives ``execve``: a child spawned by the bench would report
    the bench's own peak (corpus included). ``VmHWM`` belongs to the new address space.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    from mnemon_langgraph.bench import peak_rss_mib

    return peak_rss_mib()  # elsewhere (macOS): the best there is


def serve_main(argv: list[str]) -> None:
    """The serving child: ``DB QUERIES.npz THRESHOLD``; prints one JSON line of figures."""
    started = time.perf_counter()
    from mnemon_langgraph.store.embedded import EmbeddedStore

    db, queries, threshold = argv[0], np.load(argv[1]), int(argv[2])
    texts = [str(t) for t in queries["texts"]]
    vectors = np.asarray(queries["vectors"], dtype=np.float32)
    embeddings = LookupEmbeddings(dict(zip(texts, vectors, strict=True)), vectors.shape[1])
    settings = {"hnsw_threshold": threshold} if threshold else {}
    t0 = time.perf_counter()
    store = EmbeddedStore(Path(db), embeddings, vector_settings=settings)
    try:
        store.search(texts[0], namespace=_NAMESPACE, k=20)
        first, first_process = time.perf_counter() - t0, time.perf_counter() - started
        rebuilds = store.index(_NAMESPACE).rebuilds
        p50 = _p50(lambda q: store.search(q, namespace=_NAMESPACE, k=20), texts * 3)
    finally:
        store.close()
    figures = {
        "reopen_first_search_s": round(first, 2),
        "serve_first_answer_process_s": round(first_process, 2),
        "reopen_rebuilds": rebuilds,
        "serve_p50_ms": p50,
        "serve_peak_rss_mib": round(_own_peak_rss_mib(), 1),
    }
    print(json.dumps(figures), flush=True)


def _index_latency(bm25: Any, vindex: Any, data: dict[str, Any]) -> dict[str, Any]:
    """p50 of BM25, dense and fused search over the indexes alone."""
    from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH, rrf_fuse

    texts, qvecs = data["queries"], data["qvecs"]

    def hybrid(i: int) -> None:
        b, _ = bm25.search(texts[i], CANDIDATE_DEPTH)
        d, _ = vindex.search(qvecs[i], CANDIDATE_DEPTH)
        rrf_fuse([b.tolist(), d.tolist()])[:20]

    idx = list(range(len(texts)))
    return {
        "bm25_p50_ms": _p50(lambda i: bm25.search(texts[i], CANDIDATE_DEPTH), idx),
        **_bm25_pruning(bm25, texts, CANDIDATE_DEPTH),
        "dense_p50_ms": _p50(lambda i: vindex.search(qvecs[i], CANDIDATE_DEPTH), idx),
        "hybrid_p50_ms": _p50(hybrid, idx),
        "vector_index": vindex.kind,
        "ef_search": vindex.effective_ef_search if vindex.kind == "hnsw" else None,
        "nprobe": vindex.effective_nprobe or None,
    }


def _bm25_pruning(bm25: Any, texts: list[str], depth: int) -> dict[str, Any]:
    """BM25 with MaxScore against reading every posting: p50s, postings read, same ranking.

    Both run back to back per query (same load); a ranking that differs is counted, not
    hidden (it would be a bug: MaxScore is exact).
    """
    full_ms, pruned_ms, full_read, pruned_read, same = [], [], [], [], 0
    for _ in range(3):
        for text in texts:
            t0 = time.perf_counter()
            a, _ = bm25.search(text, depth, prune=False)
            t1 = time.perf_counter()
            full_read.append(bm25.last_postings)
            b, _ = bm25.search(text, depth)
            t2 = time.perf_counter()
            pruned_read.append(bm25.last_postings)
            full_ms.append(t1 - t0)
            pruned_ms.append(t2 - t1)
            same += a.tolist() == b.tolist()
    return {
        "bm25_full_p50_ms": round(statistics.median(full_ms) * 1000, 3),
        "bm25_maxscore_p50_ms": round(statistics.median(pruned_ms) * 1000, 3),
        "bm25_postings_full": int(statistics.median(full_read)),
        "bm25_postings_maxscore": int(statistics.median(pruned_read)),
        "bm25_same_ranking": f"{same}/{len(full_ms)}",
    }


def _grid(vindex: Any, qvecs: np.ndarray, exact: list[set[int]], k: int) -> list[dict[str, Any]]:
    """Recall@k and dense p50 of ``vindex`` for each value of its search setting.

    IVF: cells probed (up to all cells); HNSW: ``efSearch``. The setting is restored.
    """
    from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH

    ivf = vindex.kind == "ivf"
    attr = "nprobe" if ivf else "ef_search"
    values = [v for v in _NPROBE_GRID if v <= vindex.nlist] if ivf else list(_EF_GRID)
    before, rows = getattr(vindex, attr), []
    idx = list(range(len(qvecs)))
    try:
        for value in values:
            setattr(vindex, attr, value)
            found = [set(vindex.search(v, k)[0].tolist()) for v in qvecs]
            recall = np.mean([len(f & e) / k for f, e in zip(found, exact, strict=True)])
            p50 = _p50(lambda i: vindex.search(qvecs[i], CANDIDATE_DEPTH), idx)
            rows.append({attr: value, "recall": round(float(recall), 4), "dense_p50_ms": p50})
    finally:
        setattr(vindex, attr, before)
    return rows


def _ann_tradeoff(
    vindex: Any, seqs: np.ndarray, data: dict[str, Any], k: int, compare: bool
) -> dict[str, Any]:
    """Recall@k against exact search, and dense p50, over the approximate index's setting.

    ``seqs[i]`` is the index id of ``data["vecs"][i]``. ``vindex`` is the store's index
    when it is approximate, else an index of the default kind is built over the same
    vectors for the measurement; ``compare`` adds the other approximate kind's grid.
    """
    from mnemon_langgraph.search._vectors import VectorIndex

    vecs, qvecs = data["vecs"], data["qvecs"]
    store_ann = vindex.kind != "flat"
    own = vindex.effective_nprobe if vindex.kind == "ivf" else vindex.effective_ef_search
    if not store_ann:
        vindex = VectorIndex(vecs.shape[1], hnsw_threshold=1)
        vindex.add(seqs, vecs)
        own = vindex.effective_nprobe if vindex.kind == "ivf" else vindex.effective_ef_search
    exact = []
    for v in qvecs:
        scores = vecs @ v
        top = np.argpartition(-scores, k)[:k] if len(scores) > k else np.arange(len(scores))
        exact.append(set(seqs[top].tolist()))
    rows = _grid(vindex, qvecs, exact, k)
    attr = "nprobe" if vindex.kind == "ivf" else "ef_search"
    mine = next((r for r in rows if r[attr] == own), None)
    out: dict[str, Any] = {
        # the store's own recall only where the store searches an approximate index
        "recall_at_k": mine["recall"] if mine and store_ann else None,
        "recall_k": k,
        "ann_kind": vindex.kind,
        "ann_setting": attr,
        "ann_own_setting": own,
        "ann_nlist": vindex.nlist,
        "ann_tradeoff": rows,
        "setting_for_goal": next((r[attr] for r in rows if r["recall"] >= _RECALL_GOAL), None),
    }
    if compare:
        other = VectorIndex(
            vecs.shape[1], hnsw_threshold=1, ann="ivf" if vindex.kind == "hnsw" else "hnsw"
        )
        t0 = time.perf_counter()
        other.add(seqs, vecs)
        out["other_kind"] = other.kind
        out["other_nlist"] = other.nlist
        out["other_build_s"] = round(time.perf_counter() - t0, 1)
        out["other_tradeoff"] = _grid(other, qvecs, exact, k)
    return out


def _index_mib(bm25: Any, vindex: Any, dim: int) -> dict[str, float]:
    """Estimated index sizes: BM25 arrays, and vectors plus HNSW links or IVF ids."""
    arrays = (
        "_post_doc",
        "_post_tf",
        "_indptr",
        "_seqs",
        "_ids",
        "_lengths",
        "_sessions",
        "_dates",
    )
    bm25_bytes = sum(getattr(bm25, a).nbytes for a in arrays)
    n = len(vindex)
    links = {"hnsw": vindex.hnsw_m * 2 * 4, "ivf": 8}.get(vindex.kind, 0)
    vec_bytes = n * dim * 4 + n * links
    return {
        "bm25_index_mib": round(bm25_bytes / 2**20, 1),
        "vector_index_mib_est": round(vec_bytes / 2**20, 1),
    }


def _measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """All figures of one size (a fresh store in a temporary folder)."""
    from mnemon_langgraph.search._vectors import HNSW_THRESHOLD

    threshold = args.hnsw_threshold or HNSW_THRESHOLD
    data = _dataset(n, args)
    row: dict[str, Any] = {"records": n}
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-search-") as folder:
        store, build_s = _build_store(data, Path(folder), threshold)
        try:
            index = store.index(_NAMESPACE)
            row.update(_whole_call(store, data))
            row.update(_index_latency(index.bm25, index.vectors, data))
            seqs = index.bm25.seqs()
            if len(seqs) != n:  # one record per message, ingested in order
                raise RuntimeError(f"bench store holds {len(seqs)} records, not {n}")
            row.update(_index_mib(index.bm25, index.vectors, data["vecs"].shape[1]))
            row.update(_ann_tradeoff(index.vectors, seqs, data, args.recall_k, args.compare_ann))
        finally:
            store.close()
        row.update(_serve(store, data, Path(folder)))
    row.update(
        peak_rss_mib=round(peak_rss_mib(), 1),
        generate_s=round(data["generate_s"], 1),
        store_build_s=round(build_s, 1),
    )
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark at every size; returns its figures (``--growth`` is
    :mod:`.search_command`'s)."""
    sizes = [int(s.replace("_", "")) for s in str(args.records).split(",") if s.strip()]
    rows = []
    for n in sorted(sizes):
        rows.append(_measure(n, args))
        gc.collect()
    base = rows[0] if rows else None
    for row in rows:
        for key in ("search", "search_cpu", "fetch", "bm25", "dense", "hybrid"):
            b = base[f"{key}_p50_ms"] if base else 0
            row[f"{key}_ratio"] = round(row[f"{key}_p50_ms"] / b, 2) if b else None
    return {
        "benchmark": "search",
        "vectors": f"corpus {Path(args.corpus).name}, MiniLM"
        if getattr(args, "corpus", None)
        else args.vectors,
        "queries": args.queries,
        "cpu_count": os.cpu_count(),
        "goal": f"store.search p50 at 1M / at 10k ≤ 5; recall@{args.recall_k} ≥ 0.98; "
        "serving RSS at 1M < 3 GiB, first answer < 10 s",
        "sizes": rows,
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable tables: the whole call and its parts, serving, then the trade-off."""
    lines = [
        f"search benchmark ({result['vectors']} vectors, {result['queries']} queries, "
        f"{result['cpu_count']} CPUs); p50 ms (ratio to smallest size)",
        f"{'records':>9} {'store.search':>16} {'cpu':>6} {'ranking':>8} {'fetch':>14} {'bm25':>8} "
        f"{'dense':>8} {'index':>5} {'probe':>6} {'recall':>7} {'peak MiB':>9}",
    ]
    for r in result["sizes"]:
        probe = (
            f"np{r['nprobe']}"
            if r.get("nprobe")
            else (f"ef{r['ef_search']}" if r.get("ef_search") else "-")
        )
        lines.append(
            f"{r['records']:>9} {r['search_p50_ms']:>8} ({r['search_ratio']:>5}) "
            f"{r['search_cpu_p50_ms']:>6} "
            f"{r['ranking_p50_ms']:>8} {r['fetch_p50_ms']:>6} ({r['fetch_ratio']:>5}) "
            f"{r['bm25_p50_ms']:>8} {r['dense_p50_ms']:>8} {r['vector_index']:>5} "
            f"{probe:>6} {r['recall_at_k'] or '-':>7} {r['peak_rss_mib']:>9}"
        )
    lines.append("BM25 alone, top 100 (MaxScore / every posting, back to back per query):")
    for r in result["sizes"]:
        lines.append(
            f"{r['records']:>9}  p50 {r['bm25_maxscore_p50_ms']} / {r['bm25_full_p50_ms']} ms, "
            f"postings read p50 {r['bm25_postings_maxscore']} / {r['bm25_postings_full']}, "
            f"same ranking {r['bm25_same_ranking']}"
        )
    lines.append("serving child (opens the saved store, answers the queries):")
    for r in result["sizes"]:
        lines.append(
            f"{r['records']:>9}  peak RSS {r['serve_peak_rss_mib']} MiB, first answer "
            f"{r['reopen_first_search_s']} s after opening ({r['serve_first_answer_process_s']} s "
            f"after process start), rebuilds {r['reopen_rebuilds']}, p50 {r['serve_p50_ms']} ms"
        )
    lines.append("approximate index trade-off (recall@k vs exact / dense p50 ms at depth 100):")
    for r in result["sizes"]:
        lines.append(_tradeoff_line(r, r["ann_kind"], r["ann_tradeoff"], r["setting_for_goal"]))
        if "other_tradeoff" in r:
            lines.append(_tradeoff_line(r, r["other_kind"], r["other_tradeoff"], None))
    lines.extend(_goal_lines(result))
    return "\n".join(lines)


def _tradeoff_line(r: dict[str, Any], kind: str, rows: list[dict[str, Any]], goal: Any) -> str:
    """One size's grid: ``nprobe 16: 0.99 / 0.8`` cells, the store's own setting starred."""
    attr = "nprobe" if kind == "ivf" else "ef_search"
    own = r["ann_own_setting"] if kind == r["ann_kind"] else None
    cells = "  ".join(
        f"{attr} {t[attr]}{'*' if t[attr] == own else ''}: {t['recall']} / {t['dense_p50_ms']}"
        for t in rows
    )
    mine = kind == r["ann_kind"]
    cells_n = r["ann_nlist"] if mine else r.get("other_nlist")
    extra = f"{cells_n} cells" if kind == "ivf" else "graph"
    if not mine:
        extra += f", built in {r.get('other_build_s')} s"
    tail = f"  → cheapest ≥ 0.98: {goal}" if mine else ""
    return f"{r['records']:>9}  {kind} ({extra})  {cells}{tail}"


def _goal_lines(result: dict[str, Any]) -> list[str]:
    """The 1M / 10k goal with its measured ratio, only when both sizes were measured.

    A goal line under a run of small sizes would read as if the goal had been checked.
    """
    by_size = {r["records"]: r for r in result["sizes"]}
    small, large = by_size.get(10_000), by_size.get(1_000_000)
    if small is None or large is None or not small["search_p50_ms"]:
        return []
    ratio = round(large["search_p50_ms"] / small["search_p50_ms"], 2)
    verdict = "met" if ratio <= 5 else "NOT met"
    recall = large.get("recall_at_k")
    recall_verdict = "exact search" if recall is None else ("met" if recall >= 0.98 else "NOT met")
    rss, first = large.get("serve_peak_rss_mib"), large.get("reopen_first_search_s")
    serve_ok = rss is not None and first is not None and rss < 3 * 1024 and first < 10
    return [
        f"goal: {result['goal']} — store.search 1M / 10k = {ratio} ({verdict}); "
        f"recall at 1M = {recall if recall is not None else '-'} ({recall_verdict}); "
        f"serving at 1M: {rss} MiB, first answer {first} s ({'met' if serve_ok else 'NOT met'})"
    ]


if __name__ == "__main__":  # the serving child of :func:`_serve`
    if sys.argv[1:2] == ["--serve"]:
        serve_main(sys.argv[2:])
