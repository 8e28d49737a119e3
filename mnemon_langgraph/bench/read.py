"""``mnemon bench read``: the read path's own cost per turn at 1k … 100k records.

Writes a synthetic LoCoMo-like journal per size (fast stand-in vectors by default) and runs
the probe questions through the read graph with the rule planner and a System 1 that is
either a fast scripted judge (``--judge fast``, default: answers from the question id only,
so every size gets the same judgments) or the offline local judge (``--judge local``).

Reported per size (medians over the probe turns):

* read-path seconds per turn **excluding model calls** (from the View's trace timings), and
  the split by node (plan / retrieve / judge / act / judge_items / compose);
* searches, System 1 calls, waves, judgments and rounds per turn;
* each figure's ratio to the smallest size's.

Budgets bound everything but search, so counts should be equal across sizes and the time
should grow only with search (paper §4.3, Equation 3).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.bench import embeddings_for, fast_judge

__all__ = ["HELP", "add_arguments", "render", "run"]

HELP = "read-path time per turn (model calls excluded), judgments, waves, searches by size"

_NODES = ("plan", "retrieve", "judge", "act", "judge_items", "compose")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemon bench read``."""
    parser.add_argument(
        "--records",
        default="1000,100000",
        help="comma-separated journal sizes (default: 1000,100000)",
    )
    parser.add_argument(
        "--judge",
        choices=("fast", "local"),
        default="fast",
        help="System 1: fast scripted judge (default) or the local judge",
    )
    parser.add_argument(
        "--vectors",
        choices=("random", "model"),
        default="random",
        help="stand-in random vectors (default) or the real MiniLM model",
    )
    parser.add_argument("--repeat", type=int, default=2, help="runs of each probe question")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic journal (default 0)"
    )


def _judge(kind: str, embeddings: Any) -> Any:
    if kind == "local":
        from mnemon_langgraph.judges.local import LocalDecisionModel

        return LocalDecisionModel(embeddings=embeddings)
    return fast_judge()


def _size(n: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.bench.scale import PROBE_QUESTIONS, synthetic_messages
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.state import ReadContext
    from mnemon_langgraph.store import MnemonStore

    ns = ("bench", f"read-{n}")
    messages = synthetic_messages(n, seed=args.seed)
    store = MnemonStore(folder / f"read-{n}.sqlite", embeddings=embeddings_for(args.vectors))
    try:
        t0 = time.perf_counter()
        for i in range(0, n, 5000):
            store.ingest(ns, messages[i : i + 5000], origin="bench-read", pack=False)
        write_s = time.perf_counter() - t0
        graph = create_read_graph(source=store, judge=_judge(args.judge, store.embeddings))
        last = messages[-1].timestamp
        ctx = ReadContext(namespace=ns, now=last + timedelta(days=1) if last else None)
        graph.invoke({"messages": [HumanMessage(PROBE_QUESTIONS[0])]}, context=ctx)  # warm
        turns = []
        for _ in range(max(1, args.repeat)):
            for q in PROBE_QUESTIONS:
                view = graph.invoke({"messages": [HumanMessage(q)]}, context=ctx)["view"]
                tm, counts = view.trace["timings"], view.trace["counts"]
                by_node: dict[str, float] = dict.fromkeys(_NODES, 0.0)
                for row in tm["by_node"]:
                    by_node[row["node"]] += row["seconds"] - row["model_seconds"]
                turns.append(
                    {
                        "read_s": tm["read_path_s"],
                        "model_s": tm["model_s"],
                        **{f"{k}_s": v for k, v in by_node.items()},
                        **counts,
                    }
                )
    finally:
        store.close()

    def med(key: str) -> float:
        return float(statistics.median(t[key] for t in turns))

    return {
        "records": n,
        "write_seconds": write_s,
        "turns": len(turns),
        "read_s_median": med("read_s"),
        "model_s_median": med("model_s"),
        "node_s_median": {k: med(f"{k}_s") for k in _NODES},
        **{
            f"{k}_per_turn": med(k)
            for k in ("searches", "s1_calls", "waves", "judgments", "rounds", "s2_calls", "pool")
        },
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run every size; return figures and ratios to the smallest size."""
    sizes = sorted(int(s) for s in str(args.records).split(",") if s.strip())
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-read-") as tmp:
        results = [_size(n, args, Path(tmp)) for n in sizes]
    base = results[0]
    keys = [
        "read_s_median",
        "searches_per_turn",
        "s1_calls_per_turn",
        "waves_per_turn",
        "judgments_per_turn",
        "rounds_per_turn",
    ]
    ratios = [
        {"records": r["records"], **{k: (r[k] / base[k] if base[k] else None) for k in keys}}
        for r in results
    ]
    return {"judge": args.judge, "vectors": args.vectors, "sizes": results, "ratios": ratios}


def render(result: dict[str, Any]) -> str:
    """A small table."""
    lines = [
        f"read path per turn (judge={result['judge']}, vectors={result['vectors']}; "
        "model calls excluded)",
        f"{'records':>9} {'read ms':>8} {'retrieve':>9} {'judge':>7} {'searches':>9} "
        f"{'S1 calls':>9} {'waves':>6} {'judgm.':>7} {'rounds':>7}",
    ]
    for r in result["sizes"]:
        node = r["node_s_median"]
        lines.append(
            f"{r['records']:>9} {1000 * r['read_s_median']:>8.1f} "
            f"{1000 * node['retrieve']:>9.1f} {1000 * node['judge']:>7.1f} "
            f"{r['searches_per_turn']:>9.1f} {r['s1_calls_per_turn']:>9.1f} "
            f"{r['waves_per_turn']:>6.1f} {r['judgments_per_turn']:>7.1f} "
            f"{r['rounds_per_turn']:>7.1f}"
        )
    lines.append("ratios to the smallest size:")
    for r in result["ratios"]:
        cells = ", ".join(f"{k}={v:.2f}" for k, v in r.items() if k != "records" and v is not None)
        lines.append(f"  {r['records']}: {cells}")
    return "\n".join(lines)
