"""The read path of one conversation at several history sizes, the sizes taking turns.

Kept namespaces of one BEAM conversation (``mnemon eval beam … --keep-namespaces``; the
100K tier is the conversation alone, 1M and 10M inside filler) are read with the offline
defaults (local judge, rule planner, View ≤ 12,000 characters), each question asked of every
tier before the next question, the first tier rotating, so the machine's load falls on all
tiers alike. Every question is asked once first (its query vectors are embedded then, a model
call), then ``--reps`` times more: the warm reads measured.

Printed per tier (medians over the warm reads): the read path's wall time excluding model
calls (the View's trace, ``read_path_s``), the process CPU of the whole read, the same less
the process CPU while the local judge's model runs, the nodes' own wall time, and the ratios
to the first tier; with a PostgreSQL database (``postgresql://…`` as the journal, the server
on this machine) also the CPU of its backends during the read (``/proc``) and the client's
CPU less the model's plus that; then one SHA-256 per tier over every View's text, pool and
judgments, which an exact speed-up leaves unchanged. ``--parts`` adds the thread CPU of the
search's parts (BM25, vectors, fusion, record fetch …; embedded journals) and of the read's
other steps.

    python benchmarks/read_tiers.py \\
        100K=runs/hist-100k/journal.sqlite:beam/100K-hist/100K-7 \\
        1M=runs/hist-1m/journal.sqlite:beam/1M-hist/100K-7 \\
        10M=runs/hist-10m/journal.sqlite:beam/10M-hist/100K-7 \\
        --questions runs/hist-10m/results.jsonl --conversation 100K/7 --reps 2
    # PostgreSQL (tiers of one database share one store):
    python benchmarks/read_tiers.py "100K=$URL:beam/100K-hist/100K-2" \\
        "10M=$URL:beam/10M-hist/100K-2" --questions runs/pg10m/results.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import statistics as st
import threading
import time
from collections import defaultdict
from datetime import datetime
from typing import Any

from langchain_core.messages import HumanMessage

from mnemon_langgraph.cli._common import judge, open_store, planner
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext

_model = threading.local()
_model_cpu = [0, 0.0, 0.0]  # calls running, process CPU when the first began, total
_model_lock = threading.Lock()
_parts: dict[str, float] = defaultdict(float)
_depth = threading.local()


def _count_model_cpu() -> None:
    """Sum the process CPU while the local judge's model call runs (one or several)."""
    run = LocalDecisionModel._classify

    @functools.wraps(run)
    def counted(*args: Any, **kwargs: Any) -> Any:
        with _model_lock:
            if _model_cpu[0] == 0:
                _model_cpu[1] = time.process_time()
            _model_cpu[0] += 1
        try:
            return run(*args, **kwargs)
        finally:
            with _model_lock:
                _model_cpu[0] -= 1
                if _model_cpu[0] == 0:
                    _model_cpu[2] += time.process_time() - _model_cpu[1]

    LocalDecisionModel._classify = counted  # type: ignore[method-assign]


def _time_part(owner: Any, name: str, label: str) -> None:
    """Add the thread CPU of ``owner.name`` (outermost calls only) to ``_parts[label]``."""
    run = getattr(owner, name)

    @functools.wraps(run)
    def timed(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(_depth, label, 0)
        setattr(_depth, label, depth + 1)
        start = time.thread_time()
        try:
            return run(*args, **kwargs)
        finally:
            setattr(_depth, label, depth)
            if depth == 0:
                _parts[label] += time.thread_time() - start

    setattr(owner, name, timed)


def _time_parts() -> None:
    import mnemon_langgraph.read._nodes as nodes
    from mnemon_langgraph.read._evidence import EvidenceBuilder
    from mnemon_langgraph.search._maxscore import MaxScore
    from mnemon_langgraph.search._vectors import VectorIndex
    from mnemon_langgraph.store.embedded._index import NamespaceIndex
    from mnemon_langgraph.store.embedded._journal import Journal
    from mnemon_langgraph.store.embedded._store import EmbeddedStore

    for owner, name, label in [
        (EmbeddedStore, "_search", "store.search"),
        (NamespaceIndex, "sync", "  sync with the journal"),
        (MaxScore, "search", "  BM25"),
        (VectorIndex, "search", "  vectors"),
        (NamespaceIndex, "fused_page", "  fusion"),
        (Journal, "get_records", "  record fetch"),
        (Journal, "session_records", "session reads (compose)"),
        (Journal, "get_vectors", "stored vectors (judge)"),
        (EvidenceBuilder, "build", "evidence (judge)"),
        (LocalDecisionModel, "_classify", "judge model"),
        (nodes, "compose_view", "compose_view"),
    ]:
        _time_part(owner, name, label)
    for node in ("plan", "retrieve", "judge", "act", "compose"):
        _time_part(nodes.Reader, node, f"node {node}, caller's thread")


def _server_cpu(server: Any) -> float:
    """Seconds of CPU the database's backends have used (0 without a PostgreSQL server on
    this machine)."""
    if server is None:
        return 0.0
    used = server.read()
    return sum(used.values()) / 1e9 if used else 0.0


def _ask(
    graph: Any, namespace: tuple[str, ...], q: dict[str, Any], server: Any = None
) -> dict[str, Any]:
    _parts.clear()
    if server is not None:
        server.refresh()  # the pool may have opened more backends
    server0 = _server_cpu(server)
    model0, cpu0 = _model_cpu[2], time.process_time()
    now = datetime.fromisoformat(q["asked_at"]) if q.get("asked_at") else None
    ctx = ReadContext(namespace=namespace, now=now)
    view = graph.invoke({"messages": [HumanMessage(q["question"])]}, context=ctx)["view"]
    cpu, model = time.process_time() - cpu0, _model_cpu[2] - model0
    server_cpu = _server_cpu(server) - server0
    nodes: dict[str, float] = defaultdict(float)
    for t in view.trace["timings"]["by_node"]:
        nodes[t["node"]] += t["seconds"] - t["model_seconds"]
    trace = view.trace
    same = json.dumps(
        [view.text, [p["id"] for p in trace["pool"]], trace["judgments"]], default=str
    )
    return {
        "read": trace["timings"]["read_path_s"],
        "cpu": cpu,
        "cpu_less_model": cpu - model,
        "server_cpu": server_cpu,
        "client_server_cpu": cpu - model + server_cpu,
        "nodes": dict(nodes),
        "parts": dict(_parts),
        "hash": hashlib.sha256(same.encode()).hexdigest(),
    }


def _report(rows: list[dict[str, Any]], tiers: list[str]) -> None:
    def med(xs: list[float]) -> float:
        return 1000 * st.median(xs) if xs else 0.0

    base: dict[str, float] = {}
    for tier in tiers:
        warm = [r for r in rows if r["tier"] == tier and r["rep"] > 0]
        keys = ("read", "cpu", "cpu_less_model", "server_cpu", "client_server_cpu")
        line = {k: med([r.get(k, 0.0) for r in warm]) for k in keys}
        for node in ("retrieve", "judge", "compose"):
            line[node] = med([r["nodes"].get(node, 0.0) for r in warm])
        base = base or line
        print(
            f"{tier:>6} ({len(warm)} reads)  "
            + "  ".join(f"{k} {v:.1f} ms (×{v / base[k]:.2f})" for k, v in line.items() if base[k])
        )
        labels = sorted({k for r in warm for k in r["parts"]})
        for label in labels:
            print(f"         {label:<32} {med([r['parts'].get(label, 0.0) for r in warm]):7.1f} ms")
        ordered = sorted((r for r in rows if r["tier"] == tier), key=lambda r: (r["rep"], r["q"]))
        digest = hashlib.sha256("".join(r["hash"] for r in ordered).encode()).hexdigest()
        print(f"         Views, pools and judgments: sha256 {digest[:16]}")


def _server(db: str, stack: contextlib.ExitStack) -> Any:
    """The CPU counter of a PostgreSQL database's backends (``None`` for a journal file)."""
    if "://" not in db:
        return None
    from mnemon_langgraph.bench.growth import ServerCPU

    server = ServerCPU(db)
    stack.callback(server.close)
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("tiers", nargs="+", help="NAME=JOURNAL:NAMESPACE (namespace parts split by /)")
    ap.add_argument("--questions", required=True, help="an eval run's results.jsonl")
    ap.add_argument("--conversation", help="only this conversation's questions (e.g. 100K/7)")
    ap.add_argument("--all-questions", action="store_true", help="abstention questions too")
    ap.add_argument("--reps", type=int, default=2, help="warm reads of each question per tier")
    ap.add_argument("--parts", action="store_true", help="thread CPU of the read's parts")
    ap.add_argument("--out", help="write every read's figures here (JSON)")
    args = ap.parse_args()
    with open(args.questions, encoding="utf-8") as fh:
        rows_in = [json.loads(line) for line in fh if line.strip()]
    asked: dict[tuple[Any, Any], dict[str, Any]] = {}  # a run of several tiers lists each once
    for q in rows_in:
        mine = args.conversation is None or q.get("origin") == args.conversation
        if mine and (args.all_questions or q.get("scored", True)):
            asked.setdefault((q.get("origin"), q["question"]), q)
    questions = list(asked.values())
    _count_model_cpu()
    if args.parts:
        _time_parts()
    names = [t.split("=", 1)[0] for t in args.tiers]
    rows: list[dict[str, Any]] = []
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        graphs = {}
        stores: dict[str, Any] = {}  # tiers in one database share its store
        servers: dict[str, Any] = {}
        for spec in args.tiers:
            name, rest = spec.split("=", 1)
            db, ns = rest.rsplit(":", 1)
            if db not in stores:
                stores[db] = stack.enter_context(open_store(db))
                servers[db] = _server(db, stack)
            store, server = stores[db], servers[db]
            graph = create_read_graph(
                source=store,
                judge=judge("local", store.embeddings),
                planner=planner("rules"),
                settings=ReadSettings(view_chars=12000),
            )
            graphs[name] = (graph, tuple(ns.split("/")), server)
        for rep in range(args.reps + 1):
            for i, q in enumerate(questions):
                turn = (i + rep) % len(names)
                for name in names[turn:] + names[:turn]:
                    graph, ns, server = graphs[name]
                    rows.append({"tier": name, "rep": rep, "q": i, **_ask(graph, ns, q, server)})
            loads.append(os.getloadavg()[0])
    print(f"load average (1 min) during the run: {min(loads):.1f}–{max(loads):.1f}")
    _report(rows, names)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "load": loads}, fh)


if __name__ == "__main__":
    main()
