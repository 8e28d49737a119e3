"""``mnemon bench backend``: one backend's write and search figures, and pgvector recall.

``mnemon bench backend --db postgresql://… --records 10000,100000`` (or ``--db DIR`` for the
embedded backend, one journal per size in that folder) writes, per size ``N``, ``N``
synthetic LoCoMo-like records (:func:`~mnemon_langgraph.bench.scale.synthetic_messages`,
stand-in random vectors) into namespace ``("bench", "big-N")`` and ``N // 100`` into
``("bench", "small-N")``, then measures:

* ingest: messages per second (one turn per record, batches of ``--batch``);
* hybrid search (BM25 + dense, fused) on the big namespace: p50 / p95 latency for topic
  questions and for common-word queries; on PostgreSQL also without BM25 pruning, and BM25
  alone (top 48) with and without it, with the count of identical rankings (it is exact);
* PostgreSQL only: recall@48 of the HNSW index (iterative scan) against an exact scan,
  for the big namespace (all ``N`` rows of its own) and for the small one (about 1% of
  the table, so the namespace filter matters), and both latencies, for each
  ``hnsw.ef_search`` of :data:`EF_CHOICES`: the recall/latency trade-off, and the
  smallest ``ef_search`` reaching :data:`RECALL_GOAL` on both.

Vectors: :class:`WordMixEmbeddings`, the normalised sum of one fixed random vector per
word. Texts that share words are near each other, as with real sentence embeddings; the
hash-seeded random vector per *text* used before (``DeterministicFakeEmbedding``) has no
neighbourhood structure at all, HNSW's worst case (recall 0.28 at 100k), which says
nothing about real embeddings. MiniLM itself would take ~20 min per 100k texts here.

``--corpus FILE`` replaces the synthetic turns and word-mix vectors by real passages (one
per line) and the bundled MiniLM's vectors of them, cached beside the file
(:func:`_corpus_workload`). ``--bulk-index`` (PostgreSQL) drops the HNSW index while the
big namespace is written and builds it once after: maintaining it is most of the write
time (see :data:`~mnemon_langgraph.store.postgres._schema.HNSW_INDEX_SQL`).

Use a fresh database (or folder): sizes already there are not written twice (ingest is
idempotent), and the write rate would then mean nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError

__all__ = [
    "EF_CHOICES",
    "HELP",
    "RECALL_GOAL",
    "WordMixEmbeddings",
    "add_arguments",
    "analyze_tables",
    "build_hnsw",
    "drop_hnsw",
    "render",
    "run",
    "turn_messages",
]

HELP = "one backend (SQLite folder or postgresql:// URL): ingest msgs/s, search p50/p95, recall"
TOP = 48
EF_CHOICES = (100, 200, 400, 600, 800, 1000)
RECALL_GOAL = 0.98


class WordMixEmbeddings(Embeddings):
    """Stand-in sentence vectors with real neighbourhood structure (see the module doc).

    Each word gets a fixed random unit vector (seeded by its CRC32); a text's vector is the
    normalised sum of its words' vectors. Deterministic, no model, ~384 floats per word.
    """

    def __init__(self, size: int = 384) -> None:
        self.size = size
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vec = self._words.get(word)
        if vec is None:
            rng = np.random.default_rng(zlib.crc32(word.encode("utf-8")))
            vec = rng.standard_normal(self.size).astype(np.float32)
            vec /= np.linalg.norm(vec)
            self._words[word] = vec
        return vec

    def _embed(self, text: str) -> list[float]:
        from mnemon_langgraph.search._bm25 import tokenize

        total = np.zeros(self.size, dtype=np.float32)
        for word in tokenize(text) or ["<empty>"]:
            total += self._word(word)
        return (total / max(float(np.linalg.norm(total)), 1e-12)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _timed(fn: Any, queries: list[str]) -> tuple[list[Any], list[float]]:
    out, ms = [], []
    for q in queries:
        t = time.perf_counter()
        out.append(fn(q))
        ms.append(1000 * (time.perf_counter() - t))
    return out, ms


def _tie_recall(approx: list[Any], exact: list[Any]) -> list[float]:
    """Tie-aware recall per query: a hit counts when it is as near as the exact 48th
    (synthetic texts repeat, so many records share one vector and "which 48 of the tied"
    is arbitrary)."""
    recalls = []
    for a, e in zip(approx, exact, strict=True):
        if not e:
            continue
        bound = e[-1][1] + 1e-6
        recalls.append(sum(1 for _, d in a if d <= bound) / len(e))
    return recalls


def _recall(store: Any, ns: tuple[str, ...], queries: list[str]) -> dict[str, Any]:
    """HNSW and the exact path search uses below ``exact_below`` (the half-precision scan,
    or the client's copy of a namespace from ``client_scan_from`` records), each against
    the server's exact scan of the float vectors, with their latencies."""
    # the float vectors scanned in the server: the truth
    floats = store.with_settings(half_scan=False, client_cache_mb=0)
    exact, exact_ms = _timed(
        lambda q: floats.dense_ranking(q, namespace=ns, k=TOP, exact=True), queries
    )
    half, half_ms = _timed(
        lambda q: store.dense_ranking(q, namespace=ns, k=TOP, exact=True), queries
    )
    approx, hnsw_ms = _timed(
        lambda q: store.dense_ranking(q, namespace=ns, k=TOP, exact=False), queries
    )
    recalls, half_recalls = _tie_recall(approx, exact), _tie_recall(half, exact)
    return {
        "recall_at_48": round(statistics.mean(recalls), 4),
        "recall_min": round(min(recalls), 4),
        "half_recall_at_48": round(statistics.mean(half_recalls), 4),
        "half_recall_min": round(min(half_recalls), 4),
        "distinct_rankings": len({tuple(x for x, _ in e) for e in exact}),
        "exact_ms_p50": round(_pct(exact_ms, 0.5), 2),
        "half_ms_p50": round(_pct(half_ms, 0.5), 2),
        "hnsw_ms_p50": round(_pct(hnsw_ms, 0.5), 2),
        "hnsw_ms_p95": round(_pct(hnsw_ms, 0.95), 2),
    }


def analyze_tables(url: str) -> None:
    """``ANALYZE``, as autovacuum does soon after a bulk load.

    Measured: right after writing 10k rows, before the planner had statistics, HNSW recall
    for the 1% namespace was 0.93 at every ``ef_search``; after ``ANALYZE`` 1.00. A bench
    must measure the steady state, not the first seconds after a bulk load.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


BULK_MAINTENANCE_MEM = "4GB"
"""``maintenance_work_mem`` for the HNSW build of ``--bulk-index``: pgvector builds the
graph in memory when it fits (~2 GB for 1M vectors of 384 dimensions), on disk and far
slower when it does not (the server default is 64 MB)."""


def drop_hnsw(url: str) -> None:
    """``--bulk-index``: no HNSW maintenance while the big namespace is written."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX IF EXISTS mnemon_vectors_hnsw")


def build_hnsw(url: str) -> float:
    """Build the HNSW index the store's setup would create; seconds taken."""
    import psycopg

    from mnemon_langgraph.store.postgres._schema import HNSW_INDEX_SQL

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET maintenance_work_mem = '{BULK_MAINTENANCE_MEM}'")
        t0 = time.perf_counter()
        conn.execute(HNSW_INDEX_SQL)
        return time.perf_counter() - t0


def _ingest_big(store: Any, target: str, n: int, messages: list[Any], args: Any) -> dict[str, Any]:
    """Write the big namespace in batches; with ``--bulk-index`` (PostgreSQL) the HNSW
    index is dropped first and rebuilt after, and the rate counts the build too."""
    from mnemon_langgraph.store import is_postgres_url

    bulk = bool(getattr(args, "bulk_index", False)) and is_postgres_url(target)
    if bulk:
        drop_hnsw(target)
    big, written, t0 = ("bench", f"big-{n}"), 0, time.perf_counter()
    for i in range(0, n, args.batch):
        batch = messages[i : i + args.batch]
        written += store.ingest(big, batch, origin="bench", pack=False).messages_written
    ingest_s = time.perf_counter() - t0
    out: dict[str, Any] = {"messages_written": written}
    out["ingest_msgs_per_s"] = round(written / ingest_s, 1) if ingest_s > 0 else None
    if bulk:
        build_s = build_hnsw(target)
        out["bulk_index"] = {
            "ingest_without_index_msgs_per_s": out["ingest_msgs_per_s"],
            "hnsw_build_s": round(build_s, 1),
        }
        out["ingest_msgs_per_s"] = round(written / (ingest_s + build_s), 1)
    return out


def _ef_tradeoff(store: Any, big: Any, small: Any, probes: list[str]) -> dict[str, Any]:
    """Recall and latency of HNSW per ``ef_search``; the smallest meeting the goal on both."""
    table: list[dict[str, Any]] = []
    for ef in EF_CHOICES:
        tuned = store.with_settings(ef_search=ef, client_ann=False)  # pgvector, this ef
        table.append(
            {
                "ef_search": ef,
                "big": _recall(tuned, big, probes),
                "small_1pct": _recall(tuned, small, probes),
            }
        )
    good = [
        r["ef_search"]
        for r in table
        if min(r["big"]["recall_at_48"], r["small_1pct"]["recall_at_48"]) >= RECALL_GOAL
    ]
    return {"tradeoff": table, "chosen_ef_search": good[0] if good else None}


def turn_messages(texts: list[str], id_prefix: str) -> list[Any]:
    """One turn per text, LoCoMo-like: two speakers, sessions of 20 turns, dated."""
    from datetime import datetime, timedelta

    from mnemon_langgraph.types import Message

    start, out = datetime(2023, 1, 1, 10, 0), []
    for i, text in enumerate(texts):
        session, turn = divmod(i, 20)
        speaker, _, body = text.partition(": ")
        out.append(
            Message(
                body,
                speaker,
                id=f"{id_prefix}{session + 1}:{turn + 1}",
                timestamp=start + timedelta(days=3 * session, minutes=turn),
                session=session + 1,
            )
        )
    return out


def _workload(n: int, seed: int, count: int) -> dict[str, Any]:
    """Big and 1% message lists, the topic queries and the common-word queries.

    From ``bench search``'s corpus: distinct texts (Zipf vocabulary, 256 topics, common
    English words), unlike :func:`~.bench.scale.synthetic_messages` (586 distinct texts, so
    ~170 copies of each vector at 100k, which disconnects an HNSW graph). Topic queries ask
    about a topic and a speaker; common-word queries hold five words each in 5–10% of the
    records (:func:`~.bench.search.common_word_queries`), BM25's worst case.
    """
    from mnemon_langgraph.bench.search import (
        SPEAKER_NAMES,
        common_word_queries,
        make_corpus,
        topic_queries,
    )

    corpus = make_corpus(n, seed=seed)
    small = make_corpus(max(1, n // 100), seed=seed + 1)
    asked = topic_queries(corpus, count, corpus["rng"])
    names = SPEAKER_NAMES
    return {
        "big": turn_messages(corpus["texts"], "D"),
        "small": turn_messages(small["texts"], "S"),
        "queries": [
            f"what did {names[i % len(names)]} say about {q}" for i, (q, _) in enumerate(asked)
        ],
        "common": common_word_queries(corpus, count, corpus["rng"]),
    }


def _corpus_workload(path: str, n: int, count: int, seed: int) -> dict[str, Any]:
    """``--corpus FILE``: :func:`_workload`'s keys from real passages and their vectors.

    The big namespace holds the file's first ``n`` passages, the 1% one the next ``n // 100``
    (continuing from the file's first passages when the file has too few: 1M records of a
    1,002,000-line file leave 1,960; namespaces are isolated, so a text in both is two
    records). Queries are the held-out last ``count`` passages; every vector is the bundled
    MiniLM's, cached beside the file (:func:`~.bench.corpus.real_corpus`) and looked up by
    text, so the bench times the store, not the model. Records get a speaker prefix and the
    sessions of :func:`_messages`; a passage's vector is that of the passage alone.
    """
    from mnemon_langgraph.bench.corpus import read_passages, real_corpus
    from mnemon_langgraph.bench.search import SPEAKER_NAMES, LookupEmbeddings
    from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS

    n_small = max(1, n // 100)
    fresh = min(n_small, max(0, len(read_passages(path)) - count - n))
    data = real_corpus(path, n + fresh, count)
    names = SPEAKER_NAMES
    texts = [f"{names[i % len(names)]}: {t}" for i, t in enumerate(data["texts"])]
    if max(map(len, texts)) > DEFAULT_MAX_CHARS:  # a split record's pieces have no vector
        raise ConfigurationError(f"{path}: passages must be under {DEFAULT_MAX_CHARS - 20} chars")
    table = dict(zip(texts, data["vecs"], strict=True))
    table.update(zip(data["queries"], data["qvecs"], strict=True))
    common = _common_queries(texts[:n], data["queries"], count, seed)
    # a common-word query's vector: the held-out passage its last word comes from (they
    # stress the BM25 half; the dense half just needs a real vector)
    table.update((q, data["qvecs"][i % len(data["queries"])]) for i, q in enumerate(common))
    small = texts[n:] + texts[: n_small - fresh]
    return {
        "big": turn_messages(texts[:n], "D"),
        "small": turn_messages(small, "S"),
        "queries": data["queries"],
        "common": common,
        "embeddings": LookupEmbeddings(table, int(data["vecs"].shape[1])),
    }


def _common_queries(texts: list[str], queries: list[str], count: int, seed: int) -> list[str]:
    """BM25's worst case on real text: five of the 30 most frequent words held by 2–20% of
    the records (from a sample of 20,000) and one word of a held-out passage, per query."""
    from collections import Counter

    from mnemon_langgraph.search._bm25 import tokenize

    rng = np.random.default_rng(seed)
    sample = (
        texts
        if len(texts) <= 20_000
        else [texts[int(i)] for i in rng.choice(len(texts), 20_000, replace=False)]
    )
    df = Counter(w for t in sample for w in set(tokenize(t)))
    common = [w for w, c in df.most_common() if c <= 0.2 * len(sample)]
    common = [w for w in common if df[w] >= 0.02 * len(sample)][:30] or common[:30]
    out = []
    for i in range(count):
        picked = [
            common[int(j)] for j in rng.choice(len(common), min(5, len(common)), replace=False)
        ]
        own = tokenize(queries[i % len(queries)]) or ["memory"]
        out.append(" ".join([*picked, own[int(rng.integers(len(own)))]]))
    return out


def _bm25_figures(store: Any, ns: tuple[str, ...], queries: list[str]) -> dict[str, Any]:
    """BM25 alone (top 48), pruned and full: p50 / p95 ms, and whether they agree."""
    pruned, on_ms = _timed(lambda q: store.lexical_ranking(q, namespace=ns, k=TOP), queries)
    unpruned = store.with_settings(bm25_prune=False)
    full, off_ms = _timed(lambda q: unpruned.lexical_ranking(q, namespace=ns, k=TOP), queries)
    return {
        "pruned_ms_p50": round(_pct(on_ms, 0.5), 2),
        "pruned_ms_p95": round(_pct(on_ms, 0.95), 2),
        "full_ms_p50": round(_pct(off_ms, 0.5), 2),
        "full_ms_p95": round(_pct(off_ms, 0.95), 2),
        "same_top48": sum(a == b for a, b in zip(pruned, full, strict=True)),
        "queries": len(queries),
    }


def _postgres_figures(store: Any, target: str, n: int, work: dict[str, Any]) -> dict[str, Any]:
    big, small = ("bench", f"big-{n}"), ("bench", f"small-{n}")
    queries = work["queries"]
    unpruned = store.with_settings(bm25_prune=False)
    _, unpruned_ms = _timed(lambda q: unpruned.search(q, namespace=big, k=20), queries)
    return {
        "hybrid_unpruned_ms_p50": round(_pct(unpruned_ms, 0.5), 2),
        "hybrid_unpruned_ms_p95": round(_pct(unpruned_ms, 0.95), 2),
        "bm25_topic": _bm25_figures(store, big, queries),
        "bm25_common": _bm25_figures(store, big, work["common"]),
        "dense_big": _recall(store, big, queries),
        "dense_small_1pct": _recall(store, small, queries),
        "ef": _ef_tradeoff(store, big, small, queries),
    }


def _measure(target: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    from mnemon_langgraph.store import MnemonStore, PostgresStore, is_postgres_url

    big, small = ("bench", f"big-{n}"), ("bench", f"small-{n}")
    corpus = getattr(args, "corpus", None)
    if corpus:
        work = _corpus_workload(corpus, n, args.queries, args.seed)
    else:
        work = _workload(n, args.seed, args.queries)
    messages, queries = work["big"], work["queries"]
    with MnemonStore(target, work.get("embeddings") or WordMixEmbeddings(384)) as store:
        # PostgreSQL: written as a store searching through HNSW at any size, so both
        # namespaces join the (partial) index and its recall is measured at every size
        writer = store.with_settings(exact_below=1) if isinstance(store, PostgresStore) else store
        ingest = _ingest_big(writer, target, n, messages, args)
        writer.ingest(small, work["small"], origin="bench", pack=False)
        if isinstance(store, PostgresStore):
            analyze_tables(target)  # before every timed figure (it ran after the first, before)
        store.search(queries[0], namespace=big, k=20)  # warm up
        _, search_ms = _timed(lambda q: store.search(q, namespace=big, k=20), queries)
        _, common_ms = _timed(lambda q: store.search(q, namespace=big, k=20), work["common"])
        row: dict[str, Any] = {
            "records": n,
            "backend": "postgres" if is_postgres_url(target) else "embedded",
            **ingest,
            "hybrid_ms_p50": round(_pct(search_ms, 0.5), 2),
            "hybrid_ms_p95": round(_pct(search_ms, 0.95), 2),
            "hybrid_common_ms_p50": round(_pct(common_ms, 0.5), 2),
            "hybrid_common_ms_p95": round(_pct(common_ms, 0.95), 2),
        }
        if isinstance(store, PostgresStore):
            row.update(_postgres_figures(store, target, n, work))
    return row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--db`` (URL or folder), ``--records``, ``--batch``, ``--queries``, ``--seed``."""
    parser.add_argument(
        "--db", required=True, metavar="URL|DIR", help="postgresql:// URL or a folder"
    )
    parser.add_argument("--records", default="10000", metavar="N,...", help="sizes (records)")
    parser.add_argument("--batch", type=int, default=2000, help="messages per ingest call")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per figure")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic turns")
    parser.add_argument(
        "--corpus",
        metavar="FILE",
        help="real text: one passage per line; records = the first N passages, queries = "
        "the last --queries ones, 1%% namespace = the next N/100; bundled MiniLM vectors, "
        "cached beside FILE (default: synthetic turns, word-mix vectors)",
    )
    parser.add_argument(
        "--bulk-index",
        action="store_true",
        help="PostgreSQL: drop the HNSW index while writing the big namespace and build it "
        "once after (how to bulk-load a large history); msgs/s then includes the build",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every size, smallest first; returns ``{"sizes": [...], "settings": {...}}``."""
    from mnemon_langgraph.store import is_postgres_url

    sizes = sorted(int(x.replace("_", "")) for x in str(args.records).split(",") if x.strip())
    corpus = getattr(args, "corpus", None)
    rows = []
    for n in sizes:
        target = args.db if is_postgres_url(args.db) else str(Path(args.db) / f"backend-{n}.db")
        rows.append(_measure(target, n, args))
    return {
        "sizes": rows,
        "settings": {
            "batch": args.batch,
            "queries": args.queries,
            "vectors": f"corpus {Path(corpus).name}, MiniLM" if corpus else "word-mix 384-d",
        },
    }


def render(result: dict[str, Any]) -> str:
    """A plain-text table of the figures."""
    lines = [f"{'records':>9} {'backend':>9} {'msgs/s':>8} {'p50 ms':>7} {'p95 ms':>7}  recall"]
    for r in result["sizes"]:
        recall = ""
        if "dense_big" in r:
            recall = (
                f"big {r['dense_big']['recall_at_48']:.3f}, "
                f"1% {r['dense_small_1pct']['recall_at_48']:.3f}"
            )
        lines.append(
            f"{r['records']:>9,} {r['backend']:>9} {r['ingest_msgs_per_s'] or 0:>8,.0f} "
            f"{r['hybrid_ms_p50']:>7.2f} {r['hybrid_ms_p95']:>7.2f}  {recall}"
        )
        if "bulk_index" in r:
            b = r["bulk_index"]
            lines.append(
                f"  --bulk-index: ingest without HNSW {b['ingest_without_index_msgs_per_s']:,.0f}"
                f" msgs/s, then HNSW build {b['hnsw_build_s']:.1f} s (msgs/s above: both)"
            )
        if "ef" in r:
            lines.extend(_render_ef(r))
    return "\n".join(lines)


def _render_ef(r: dict[str, Any]) -> list[str]:
    out = [
        f"  common-word queries, hybrid: p50 {r['hybrid_common_ms_p50']:.2f} ms, "
        f"p95 {r['hybrid_common_ms_p95']:.2f} ms",
        f"  without BM25 pruning, hybrid: p50 {r['hybrid_unpruned_ms_p50']:.2f} ms, "
        f"p95 {r['hybrid_unpruned_ms_p95']:.2f} ms",
    ]
    for name in ("bm25_topic", "bm25_common"):
        b = r[name]
        out.append(
            f"  {name} top {TOP}: pruned p50/p95 {b['pruned_ms_p50']:.1f}/"
            f"{b['pruned_ms_p95']:.1f} ms, full {b['full_ms_p50']:.1f}/{b['full_ms_p95']:.1f}"
            f" ms, same ranking {b['same_top48']}/{b['queries']}"
        )
    for name in ("dense_big", "dense_small_1pct"):
        d = r[name]
        out.append(
            f"  {name} exact top {TOP}: float scan p50 {d['exact_ms_p50']:.1f} ms, halfvec + "
            f"float re-rank {d['half_ms_p50']:.1f} ms, recall {d['half_recall_at_48']:.4f} "
            f"(min {d['half_recall_min']:.3f})"
        )
    out.append(
        f"  {'ef_search':>9}  {'big recall':>10} {'big ms':>7} {'exact ms':>8}  "
        f"{'1% recall':>9} {'1% ms':>6}"
    )
    for t in r["ef"]["tradeoff"]:
        b, s = t["big"], t["small_1pct"]
        out.append(
            f"  {t['ef_search']:>9}  {b['recall_at_48']:>10.3f} {b['hnsw_ms_p50']:>7.2f} "
            f"{b['exact_ms_p50']:>8.2f}  {s['recall_at_48']:>9.3f} {s['hnsw_ms_p50']:>6.2f}"
        )
    out.append(
        f"  chosen ef_search (recall >= {RECALL_GOAL} on both): {r['ef']['chosen_ef_search']}"
    )
    return out
