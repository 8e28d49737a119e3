"""``mnemon bench load``: many concurrent Views over a large synthetic journal.

Builds (or reuses, with ``--db``) a journal of ``--records`` synthetic conversation records
in one namespace, then serves ``--requests`` read-graph turns from ``--concurrency``
threads at once with the offline defaults — the rule planner (no System 2 model) and the
local judge — and reports throughput, latency percentiles and errors (goal: zero).

Vectors: by default a fast stand-in (LangChain's ``DeterministicFakeEmbedding``, 384
dimensions: hash-seeded random vectors, no meaning) for both the store and the local
judge, so that building 100k records takes seconds; the report says so. ``--embeddings
minilm`` uses the real offline model (much slower to build). The figures measure the read
path's plumbing under load (locks, SQLite readers, FAISS/BM25, the graph), not quality.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.bench import embeddings_for, peak_rss_mib

__all__ = ["HELP", "add_arguments", "build_journal", "render", "run", "synthetic_messages"]

HELP = "throughput and latency of concurrent Views over a synthetic journal (offline)"

NAMESPACE = ("bench", "load@example.com")

_NAMES = ["Ann", "Bob", "Caroline", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jon"]
_PLACES = ["Lyon", "Osaka", "Lisbon", "Denver", "Nairobi", "Oslo", "Quito", "Hanoi", "Perth"]
_THINGS = [
    "pottery class",
    "marathon",
    "piano lessons",
    "garden",
    "new job",
    "dog",
    "road trip",
    "book club",
    "dance studio",
    "camping",
    "painting",
    "sister's wedding",
    "startup",
    "chess club",
    "vegan recipes",
    "photography",
    "hiking boots",
    "guitar",
    "soccer team",
]
_VERBS = [
    "started",
    "finished",
    "talked about",
    "signed up for",
    "gave up",
    "loved",
    "planned",
    "bought",
    "cancelled",
    "went back to",
    "is thinking about",
    "posted photos of",
]
_WHEN = ["yesterday", "last week", "this morning", "two days ago", "last month", "on Friday"]


def _sentence(rng: random.Random) -> str:
    return (
        f"I {rng.choice(_VERBS)} the {rng.choice(_THINGS)} in {rng.choice(_PLACES)} "
        f"{rng.choice(_WHEN)}, with {rng.choice(_NAMES)}; it cost {rng.randint(5, 900)} "
        f"dollars and took {rng.randint(1, 12)} hours."
    )


def synthetic_messages(n: int, *, seed: int = 7, start: int = 0) -> list[Any]:
    """``n`` synthetic messages (50 per session, one session a day from 2020-01-01)."""
    from mnemon_langgraph.types import Message

    rng = random.Random(seed * 1_000_003 + start)
    base = datetime(2020, 1, 1, 9, 0)
    out = []
    for i in range(start, start + n):
        session = 1 + i // 50
        out.append(
            Message(
                text=_sentence(rng),
                speaker=_NAMES[i % 2],
                role="user",
                id=f"syn-{i}",
                timestamp=base + timedelta(days=session - 1, minutes=i % 50),
                session=session,
            )
        )
    return out


def _questions(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    forms = [
        "When did I start the {t} in {p}?",
        "How many times did we talk about the {t}?",
        "What did {n} say about the {t}?",
        "How much did the {t} in {p} cost?",
        "Which {t} plans did I cancel?",
    ]
    return [
        rng.choice(forms).format(t=rng.choice(_THINGS), p=rng.choice(_PLACES), n=rng.choice(_NAMES))
        for _ in range(n)
    ]


def build_journal(store: Any, records: int, *, batch: int = 5000) -> float:
    """Ingest synthetic messages (one record each) until the namespace holds ``records``.

    Returns:
        Seconds spent.
    """
    start = time.perf_counter()
    have = store.count(NAMESPACE)
    while have < records:
        n = min(batch, records - have)
        store.ingest(NAMESPACE, synthetic_messages(n, start=have), origin="synthetic", pack=False)
        have = store.count(NAMESPACE)
    store.flush()
    return time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench load``."""
    parser.add_argument("--records", type=int, default=100_000, help="journal size")
    parser.add_argument("--concurrency", type=int, default=8, help="threads serving Views")
    parser.add_argument("--requests", type=int, default=200, help="Views to serve")
    parser.add_argument(
        "--embeddings",
        choices=("fake", "minilm", "e5"),
        default="fake",
        help="vectors for store and local judge (default: fast stand-in vectors)",
    )
    parser.add_argument(
        "--judge",
        choices=("local", "scripted"),
        default="local",
        help="System 1: the offline local judge (default) or a constant scripted one",
    )
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="journal (or postgresql:// URL) to build or reuse (default: temp file)",
    )


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[k]


def _judge(kind: str, embeddings: Any) -> Any:
    if kind == "scripted":
        from mnemon_langgraph.judges.fake import ScriptedDecisionModel

        return ScriptedDecisionModel(default=0.6)
    from mnemon_langgraph.judges.local import LocalDecisionModel

    return LocalDecisionModel(embeddings=embeddings)


def _serve(graph: Any, questions: list[str], concurrency: int) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read.state import ReadContext

    latencies: list[float] = []
    errors: list[str] = []
    view_records: list[int] = []
    s1_calls: list[int] = []
    lock = threading.Lock()

    def one(question: str) -> None:
        t0 = time.perf_counter()
        try:
            out = graph.invoke(
                {"messages": [HumanMessage(question)]}, context=ReadContext(namespace=NAMESPACE)
            )
            view = out["view"]
            counts = view.trace.get("counts", {})
            with lock:
                latencies.append(time.perf_counter() - t0)
                view_records.append(len(view.records))
                s1_calls.append(int(counts.get("s1_calls", 0)))
        except Exception as exc:  # counted and reported, never raised
            with lock:
                errors.append(f"{type(exc).__name__}: {exc!s:.200}")

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, questions))
    wall = time.perf_counter() - start
    return {
        "wall": wall,
        "latencies": latencies,
        "errors": errors,
        "view_records": view_records,
        "s1_calls": s1_calls,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the journal, serve the Views, return the figures."""
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.store import EmbeddedStore, MnemonStore, is_postgres_url

    embeddings = embeddings_for(args.embeddings)
    with tempfile.TemporaryDirectory(prefix="mnemon-load-") as tmp:
        # --db may be a postgresql:// URL: the same bench then measures that backend
        db = args.db if is_postgres_url(args.db) else Path(args.db or Path(tmp) / "load.db")
        store = MnemonStore(db, embeddings)
        try:
            build_s = build_journal(store, args.records)
            index_s = time.perf_counter()
            if isinstance(store, EmbeddedStore):  # load its index files before timing
                store.index(NAMESPACE).sync()
            index_s = time.perf_counter() - index_s
            graph = create_read_graph(source=store, judge=_judge(args.judge, embeddings))
            warm = _serve(graph, _questions(1, seed=3), 1)  # load and warm up, not counted
            served = _serve(graph, _questions(args.requests), args.concurrency)
            records = store.count(NAMESPACE)
        finally:
            store.close()
    lat = served["latencies"]
    ok = len(lat)
    return {
        "benchmark": "load",
        "records": records,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "completed": ok,
        "errors": len(served["errors"]),
        "error_examples": served["errors"][:5],
        "warmup_errors": warm["errors"],
        "throughput_views_per_s": round(ok / served["wall"], 2) if served["wall"] else None,
        "latency_s": {
            "p50": round(_percentile(lat, 0.50), 4),
            "p95": round(_percentile(lat, 0.95), 4),
            "p99": round(_percentile(lat, 0.99), 4),
            "max": round(max(lat), 4) if lat else None,
            "mean": round(statistics.fmean(lat), 4) if lat else None,
        },
        "wall_s": round(served["wall"], 3),
        "build_s": round(build_s, 2),
        "index_sync_s": round(index_s, 3),
        "mean_view_records": round(statistics.fmean(served["view_records"]), 2) if ok else 0,
        "mean_s1_calls": round(statistics.fmean(served["s1_calls"]), 2) if ok else 0,
        "planner": "rules (offline default, no System 2 model)",
        "judge": args.judge,
        "embeddings": args.embeddings,
        "vectors_note": (
            "fast stand-in vectors (DeterministicFakeEmbedding, 384 dims, no meaning)"
            if args.embeddings == "fake"
            else "real offline MiniLM vectors"
        ),
        "cpu_count": os.cpu_count(),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable report."""
    lat = result["latency_s"]
    lines = [
        f"load benchmark: {result['requests']} Views, concurrency {result['concurrency']}, "
        f"{result['records']} records ({result['cpu_count']} CPUs)",
        f"  vectors: {result['vectors_note']}; judge: {result['judge']}; "
        f"planner: {result['planner']}",
        f"  journal built in {result['build_s']} s",
        f"  throughput {result['throughput_views_per_s']} Views/s over {result['wall_s']} s",
        f"  latency p50 {lat['p50']} s, p95 {lat['p95']} s, p99 {lat['p99']} s, max {lat['max']} s",
        f"  errors {result['errors']} (goal 0)"
        + (f": {result['error_examples']}" if result["errors"] else ""),
        f"  mean View records {result['mean_view_records']}, mean S1 calls "
        f"{result['mean_s1_calls']}; peak memory {result['peak_rss_mib']} MiB",
    ]
    return "\n".join(lines)
