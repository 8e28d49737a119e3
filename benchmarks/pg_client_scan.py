"""PostgreSQL's dense search on a client-side copy of the vectors, against the server's scan.

``after`` is a store with the defaults (namespaces from ``client_scan_from`` records are
searched on the copy); ``before`` is its sibling with ``client_cache_mb=0``: the server's
exact scan, and BM25 without the filter's share, which is what the code did before. Both
read the same database, taking turns, so load and caches hit both alike.

    # growth: a store written by `mnemon bench search --growth 2000:40000 --db URL`
    python benchmarks/pg_client_scan.py growth URL --calls 50 --rounds 2
    # a kept namespace (eval beam --keep-namespaces), its questions from results.jsonl
    python benchmarks/pg_client_scan.py read URL '["beam","10M-hist","100K-2"]' results.jsonl
    python benchmarks/pg_client_scan.py hnsw URL '["beam","10M-hist","100K-2"]' results.jsonl
    python benchmarks/pg_client_scan.py evidence URL '["beam","10M-hist","100K-2"]' results.jsonl
    python benchmarks/pg_client_scan.py warm URL '["beam","10M-hist","100K-2"]'

``growth`` prints one JSON line per (round, side, kind of question): the medians of
``bench search --growth``'s own timing (wall, client CPU, server CPU, ratios). ``read``
times whole reads (offline defaults, View 12,000 characters), alternating sides question by
question, after one warm-up read each. ``hnsw`` logs every dense search the questions'
reads make (query vector, depth, filters) and measures pgvector's HNSW index (iterative
scan) against the exact ranking for each: recall@48 and recall at the depth, tie-aware.
``evidence`` loads the namespace's copy first, then reads each scored question once and
counts those whose gold turns are all in the View (the steady state), beside the eval's own.
``warm`` times ``store.warm`` of the namespace in this new process (its copy loaded: the
vectors and BM25 index read, the HNSW graph built), then one search on the copy, and the
process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import time
from datetime import datetime
from typing import Any

import numpy as np


def _growth(url: str, calls: int, rounds: int) -> None:
    from mnemon_langgraph.bench import growth as g
    from mnemon_langgraph.bench.backend import WordMixEmbeddings
    from mnemon_langgraph.store import MnemonStore

    server = g.ServerCPU(url)
    per = calls + g._WARM_CALLS
    with MnemonStore(url, WordMixEmbeddings(384)) as store:
        sides = {"after": store, "before": store.with_settings(client_cache_mb=0)}
        pool = {  # the fill's seed; every call a question not asked before
            corpus: [g._workload(corpus, n, 0, per * 2 * rounds)[1] for n in (2000, 40000)]
            for corpus in ("zipf", "narrow")
        }
        slot = 0
        for rnd in range(rounds):
            for side in ("after", "before") if rnd % 2 == 0 else ("before", "after"):
                for corpus, asked in pool.items():
                    nss = tuple((*g._NAMESPACE, corpus, str(n)) for n in (2000, 40000))
                    for ns in nss:  # the copies load off the search path: wait for them
                        sides[side].search("settle", namespace=ns, k=1)
                        store.engine.run(sides[side].dense.cache.settle())
                    for kind in asked[0]:
                        qq = tuple(a[kind][slot * per : (slot + 1) * per] for a in asked)
                        out = g._time_pair(sides[side], nss, qq, server)
                        row = {"round": rnd, "side": side, "kind": kind}
                        row["load"] = round(os.getloadavg()[0], 1)
                        print(json.dumps(row | out), flush=True)
                slot += 1


def _reader(store: Any) -> Any:
    from mnemon_langgraph.cli._common import judge, planner
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.settings import ReadSettings

    return create_read_graph(
        source=store,
        judge=judge("local", store.embeddings),
        planner=planner("rules"),
        settings=ReadSettings(view_chars=12000),
    )


def _ask(graph: Any, ns: tuple[str, ...], q: dict[str, Any]) -> Any:
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read.state import ReadContext

    now = datetime.fromisoformat(q["asked_at"]) if q.get("asked_at") else None
    ctx = ReadContext(namespace=ns, now=now)
    return graph.invoke({"messages": [HumanMessage(q["question"])]}, context=ctx)["view"]


def _read(url: str, ns: tuple[str, ...], qs: list[dict[str, Any]], reps: int) -> None:
    from mnemon_langgraph.bench.growth import ServerCPU
    from mnemon_langgraph.cli._common import open_store
    from mnemon_langgraph.eval.locomo import view_counts

    server = ServerCPU(url)
    with open_store(url) as store:
        graphs = {
            "after": _reader(store),
            "before": _reader(store.with_settings(client_cache_mb=0)),
        }

        views: dict[str, list[tuple[str, ...]]] = {"after": [], "before": []}

        def one(side: str, q: dict[str, Any]) -> tuple[float, ...]:
            server.refresh()
            s0 = server.read()
            w, c = time.perf_counter(), time.process_time()
            view = _ask(graphs[side], ns, q)
            c, w = time.process_time() - c, time.perf_counter() - w
            s1 = server.read()
            srv = sum(s1[p] - s0[p] for p in s0 if p in s1) / 1e9 if s0 and s1 else np.nan
            views[side].append(tuple(view.message_ids))
            return view_counts(view)["read_seconds"], c, srv, w

        t = time.perf_counter()
        for side in graphs:  # query vectors cached, the copy loaded
            one(side, qs[0])
        store.engine.run(store.dense.cache.settle())
        print("warm-up s", round(time.perf_counter() - t, 1), flush=True)
        rows: dict[str, list[tuple[float, ...]]] = {"after": [], "before": []}
        for rep in range(reps):
            for i, q in enumerate(qs):
                for side in ("after", "before") if (i + rep) % 2 == 0 else ("before", "after"):
                    rows[side].append(one(side, q))
        names = ("read_path_ms", "client_cpu_ms", "server_cpu_ms", "wall_ms")
        for side, got in rows.items():
            med = {n: round(1000 * st.median(r[i] for r in got), 1) for i, n in enumerate(names)}
            print(side, med, "reads", len(got), flush=True)
        same = sum(a == b for a, b in zip(views["after"], views["before"], strict=True))
        print("identical Views", same, "of", len(views["after"]), flush=True)


def _evidence(url: str, ns: tuple[str, ...], qs: list[dict[str, Any]]) -> None:
    """The steady state: the namespace's copy loaded first, then each scored question read
    once on it, its gold turns looked up in the View (the eval's own first reads of a fresh
    namespace are answered by the server while the copy loads)."""
    from mnemon_langgraph.cli._common import open_store
    from mnemon_langgraph.eval.evidence import evidence_hits

    scored = [q for q in qs if q.get("scored") and q["conversation"].endswith("/" + ns[-1])]
    with open_store(url) as store:
        graph = _reader(store)
        store.warm(ns)  # the copy loaded before the first question
        copies = [
            (c.count, c.approximate, c.lexical is not None)
            for c in store.dense.cache._copies.values()
        ]
        hits = [
            evidence_hits(q["gold_evidence"], set(_ask(graph, ns, q).message_ids)) for q in scored
        ]
    steady = sum(bool(h["all_hit"]) for h in hits)
    eval_run = sum(bool(q["all_hit"]) for q in scored)
    print(
        json.dumps(
            {
                "namespace": ns,
                "copies": copies,
                "all_hit": steady,
                "eval_run": eval_run,
                "scored": len(scored),
            }
        ),
        flush=True,
    )


def _warm(url: str, ns: tuple[str, ...]) -> None:
    """A new process's ``store.warm`` of one namespace, and the search after it."""
    import resource

    from mnemon_langgraph.cli._common import open_store

    with open_store(url) as store:
        store.embeddings.embed_query("load the model")  # not part of the copy's load
        t0, c0 = time.perf_counter(), time.process_time()
        held = store.warm(ns)
        warm_s, warm_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        store.search("what did I decide about the budget", namespace=ns, k=20)
        search_ms = (time.perf_counter() - t0) * 1000
    out = {
        "namespace": ns,
        "held": held,
        "warm_s": round(warm_s, 1),
        "warm_cpu_s": round(warm_cpu, 1),
        "next_search_ms": round(search_ms, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(out), flush=True)


def _hnsw(url: str, ns: tuple[str, ...], qs: list[dict[str, Any]], efs: list[int]) -> None:
    from mnemon_langgraph.cli._common import open_store

    with open_store(url) as store:
        calls: list[tuple[Any, ...]] = []
        real = store.dense.rank

        async def spy(conn: Any, nsid: int, docs: int, qv: Any, k: int, f: Any, exact: Any = None):
            calls.append((nsid, docs, qv.copy(), k, f))
            return await real(conn, nsid, docs, qv, k, f, exact)

        store.dense.rank = spy
        graph = _reader(store)
        for q in qs:
            _ask(graph, ns, q)
        store.dense.rank = real
        store.engine.run(store.dense.cache.settle())
        print("dense searches", len(calls), "filtered", sum(c[4] is not None for c in calls))

        async def rank(s: Any, c: tuple[Any, ...], exact: bool) -> Any:
            async with store.engine.connection() as conn:
                return await s.dense.rank(conn, *c, exact)

        for ef in efs:
            approx = store.with_settings(ef_search=ef, client_ann=False)  # pgvector's HNSW
            for kind in ("unfiltered", "filtered"):
                _recall(
                    store,
                    [c for c in calls if (c[4] is None) == (kind == "unfiltered")],
                    lambda c: rank(store, c, True),
                    lambda c, s=approx: rank(s, c, False),
                    f"ef_search {ef} {kind}",
                )


def _recall(store: Any, calls: list[Any], exact: Any, approx: Any, label: str) -> None:
    r48, rk, te, ta = [], [], [], []
    for c in calls:
        t = time.perf_counter()
        e = store.engine.run(exact(c))
        te.append(time.perf_counter() - t)
        t = time.perf_counter()
        a = store.engine.run(approx(c))
        ta.append(time.perf_counter() - t)
        for n, out in ((48, r48), (len(e), rk)):
            if e[:n]:
                bound = e[:n][-1][2] + 1e-6  # tie-aware: any record as near as the n-th
                out.append(min(1.0, sum(1 for _, _, d in a[:n] if d <= bound) / len(e[:n])))
    if r48:
        print(
            f"{label}: searches {len(r48)}, recall@48 mean {st.mean(r48):.3f} "
            f"(p10 {np.percentile(r48, 10):.2f}, min {min(r48):.2f}), recall@depth mean "
            f"{st.mean(rk):.3f}; p50 ms HNSW {1000 * st.median(ta):.1f}, "
            f"exact {1000 * st.median(te):.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("growth", "read", "hnsw", "evidence", "warm"))
    parser.add_argument("url")
    parser.add_argument("namespace", nargs="?", help="JSON list (read, hnsw)")
    parser.add_argument("questions", nargs="?", help="eval results.jsonl (read, hnsw)")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--ef", default="40,200,1000")
    args = parser.parse_args()
    print("load", os.getloadavg(), flush=True)
    if args.what == "growth":
        _growth(args.url, args.calls, args.rounds)
    elif args.what == "warm":
        _warm(args.url, tuple(json.loads(args.namespace)))
    else:
        ns = tuple(json.loads(args.namespace))
        with open(args.questions, encoding="utf-8") as fh:
            qs = [json.loads(line) for line in fh]
        if args.what == "read":
            _read(args.url, ns, qs, args.reps)
        elif args.what == "evidence":
            _evidence(args.url, ns, qs)
        else:
            _hnsw(args.url, ns, qs, [int(x) for x in args.ef.split(",")])
    print("load", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
