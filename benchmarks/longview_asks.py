"""Ask a benchmark's questions again against a journal an eval run filled; replay Views.

The eval runs (``mnemon eval longmemeval|locomo|beam --store JOURNAL`` with the namespaces
kept) ingest each history once. This module then

1. builds the *asks* from the run's ``results.jsonl`` (question, namespace, date asked,
   gold turns, category, group) and the data file (turns + RRF ranking of the question, each
   turn record's rendered size and message ids, so the baseline can be cut to any size);
2. asks every question again through the default read graph under any ``ReadSettings``
   (``reask``), keeping the inputs of its ``compose_view`` (pool, judgments, keyword
   arguments), its read time and its trace counts;
3. composes Views again from those inputs under other settings (``compose``: exact, since
   ``compose_view`` is pure) and scores them (``score``).

The gold labels score Views only; nothing of them reaches the memory.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import pickle
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

import mnemon_langgraph.read._nodes as nodes
import mnemon_langgraph.read.view as view_module
from mnemon_langgraph.cli._common import embeddings_for, judge
from mnemon_langgraph.eval.baselines import TurnIndex, budget_prefix
from mnemon_langgraph.loaders.longmemeval import session_of
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.search.embeddings import CachedEmbeddings
from mnemon_langgraph.store import MnemonStore

CACHE = "/work/cache/embeddings.sqlite"


def embedder(cache: str = CACHE) -> Any:
    return CachedEmbeddings(embeddings_for("minilm"), cache)


# --- the histories' turn records (the baselines' unit) -------------------------------------


def _histories(kind: str, data: Sequence[str]) -> dict[str, Any]:
    """Group id → its messages, for the groups of ``kind``'s data files."""
    out: dict[str, Any] = {}
    if kind == "longmemeval":
        from mnemon_langgraph.loaders.longmemeval import load_longmemeval

        for path in data:
            for q in load_longmemeval(path):
                out[q.question_id] = q.messages
    elif kind == "locomo":
        from mnemon_langgraph.eval.locomo import load_locomo_items

        for item in load_locomo_items(data):
            out[item.conversation_id] = item.messages
    elif kind == "beam":
        from mnemon_langgraph.eval.beam import find_beam_conversations, load_beam_conversation

        for path in data:
            for tier, folder in find_beam_conversations(path):
                conv = load_beam_conversation(folder, tier)
                out[conv.id] = conv.messages
    else:
        raise ValueError(kind)
    return out


def namespace_of(kind: str, group: str) -> tuple[str, ...]:
    """The namespace the eval harness ingested the group into."""
    if kind == "beam":
        tier, _, n = group.partition("/")
        return ("beam", tier, n)
    return (kind, group)


def asks_from_results(
    kind: str, results: str, data: Sequence[str], emb: Any, depth: int = 400
) -> list[dict[str, Any]]:
    """The scored questions of a run with gold turns, and their turns + RRF rankings."""
    rows = [json.loads(x) for x in Path(results, "results.jsonl").read_text().splitlines() if x]
    if kind == "locomo":
        rows = [r for r in rows if r.get("category") in (1, 2, 3, 4)]
    rows = [r for r in rows if r.get("gold_evidence") and r.get("scored", True)]
    histories = _histories(kind, data)
    indexes: dict[str, TurnIndex] = {}
    asks = []
    for r in rows:
        group = str(r["conversation"])
        if group not in indexes:
            turns = chunk_messages(
                histories[group], namespace=("turns", group), origin="t", pack=False
            )
            indexes[group] = TurnIndex.build(turns, emb)
        index = indexes[group]
        asks.append(
            {
                "kind": kind,
                "group": group,
                "namespace": namespace_of(kind, group),
                "question": r["question"],
                "now": r.get("asked_at"),
                "gold": set(r["gold_evidence"]),
                "gold_sessions": set(r.get("gold_sessions") or ()),
                "category": str(r.get("question_type") or r.get("category")),
                "rrf": index.rankings(r["question"], depth=depth)["rrf"],
                "turn_chars": [len(t) for t in index.rendered],
                "turn_mids": [tuple(x.message_ids) for x in index.records],
                "run_all": r.get("all_hit"),
            }
        )
    return asks


# --- asking again ------------------------------------------------------------------------


def reask(
    asks: Sequence[dict[str, Any]], journal: str, emb: Any, warm: bool = False, **overrides: Any
) -> list[dict[str, Any]]:
    """Ask every question again under ``ReadSettings(**overrides)``; the compose inputs.

    ``warm``: each question is asked twice and the second read kept (its read time is a
    warm turn's: the namespace's indexes already loaded, the query embedding cached)."""
    store = MnemonStore(Path(journal), embeddings=emb)
    settings = ReadSettings(**overrides)
    graph = create_read_graph(
        source=store, judge=judge("local", emb), planner=None, settings=settings
    )
    calls: list[dict[str, Any]] = []
    original = nodes.compose_view

    def keep(pool: Any, judgments: Any, **kw: Any) -> Any:
        calls.append({"pool": list(pool), "judgments": list(judgments), "kw": kw})
        return original(pool, judgments, **kw)

    nodes.compose_view = keep  # type: ignore[assignment]
    out = []
    try:
        for a in asks:
            now = datetime.fromisoformat(a["now"]) if a.get("now") else None
            if warm:
                graph.invoke(
                    {"messages": [HumanMessage(a["question"])]},
                    context=ReadContext(namespace=tuple(a["namespace"]), now=now),
                )
            t0 = time.perf_counter()
            state = graph.invoke(
                {"messages": [HumanMessage(a["question"])]},
                context=ReadContext(namespace=tuple(a["namespace"]), now=now),
            )
            wall = time.perf_counter() - t0
            timings = state["view"].trace.get("timings", {})
            out.append(
                dict(
                    calls[-1],
                    wall=wall,
                    read_path_s=timings.get("read_path_s"),
                    counts={
                        k: state["view"].trace.get("counts", {}).get(k)
                        for k in ("searches", "s1_calls", "waves", "rounds", "judgments", "pool")
                    },
                )
            )
    finally:
        nodes.compose_view = original  # type: ignore[assignment]
        store.close()
    return out


# --- replay and scores -------------------------------------------------------------------


def compose(cap: Mapping[str, Any], **settings: Any) -> Any:
    """The View of a capture under its settings changed by ``settings``."""
    kw = dict(cap["kw"])
    old = kw["settings"]
    kept = {f.name: getattr(old, f.name, f.default) for f in dataclasses.fields(ReadSettings)}
    kw["settings"] = ReadSettings(**{**kept, **settings})
    return view_module.compose_view(cap["pool"], cap["judgments"], **kw)


def rrf_at(ask: Mapping[str, Any], chars: int) -> set[str]:
    """Message ids of turns + RRF cut to ``chars``."""
    idx = budget_prefix(ask["rrf"], ask["turn_chars"], chars)
    return {m for i in idx for m in ask["turn_mids"][i]}


def fate(ask: Mapping[str, Any], cap: Mapping[str, Any], view: Any) -> collections.Counter[str]:
    """Missing gold turns by cause: not pooled / removed as stale / pooled, cut."""
    shown = set(view.message_ids)
    placement = view.trace.get("placement", {})
    holder: dict[str, list[str]] = collections.defaultdict(list)
    for r in cap["pool"]:
        for m in r.get("message_ids") or ():
            holder[m].append(r["id"])
    out: collections.Counter[str] = collections.Counter()
    for m in ask["gold"] - shown:
        rids = holder.get(m)
        if not rids:
            out["not pooled"] += 1
        elif any(placement.get(r, "").startswith("left out: judged no longer") for r in rids):
            out["stale"] += 1
        elif any("judged no longer current" in placement.get(r, "") for r in rids):
            out["stale, last, cut"] += 1
        else:
            out["pooled, cut"] += 1
    return out


def score(ask: Mapping[str, Any], cap: Mapping[str, Any], view: Any) -> dict[str, Any]:
    shown = set(view.message_ids)
    gold = ask["gold"]
    base = rrf_at(ask, len(view.text))
    sessions = {session_of(m) for m in shown} if ask["kind"] == "longmemeval" else set()
    return {
        "all": gold <= shown,
        "any": bool(gold & shown),
        "rrf_all": gold <= base,
        "rrf_any": bool(gold & base),
        "chars": len(view.text),
        "fate": fate(ask, cap, view),
        "s_all": ask["gold_sessions"] <= sessions if ask["gold_sessions"] else None,
        "s_any": bool(ask["gold_sessions"] & sessions) if ask["gold_sessions"] else None,
    }


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {
        k: sum(bool(r[k]) for r in rows) / n for k in ("all", "any", "rrf_all", "rrf_any")
    }
    out["n"] = n
    out["chars"] = statistics.mean(r["chars"] for r in rows)
    out["only_view"] = sum(r["all"] and not r["rrf_all"] for r in rows)
    out["only_rrf"] = sum(r["rrf_all"] and not r["all"] for r in rows)
    fates: collections.Counter[str] = collections.Counter()
    for r in rows:
        fates.update(r["fate"])
    out["fates"] = dict(fates)
    return out


def by_category(asks: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> dict:
    groups: dict[str, list[Mapping[str, Any]]] = collections.defaultdict(list)
    for a, r in zip(asks, rows, strict=True):
        groups[a["category"]].append(r)
    return {c: summary(rs) for c, rs in sorted(groups.items())}


# --- folds ---------------------------------------------------------------------------------


def folds(asks: Sequence[Mapping[str, Any]], k: int = 5) -> list[int]:
    """LongMemEval: rank within type mod k; LoCoMo / BEAM: one fold per conversation."""
    if asks and asks[0]["kind"] == "longmemeval":
        seen: collections.Counter[str] = collections.Counter()
        out = []
        for a in asks:
            out.append(seen[a["category"]] % k)
            seen[a["category"]] += 1
        return out
    groups = sorted({a["group"] for a in asks})
    return [groups.index(a["group"]) for a in asks]


def crossval(
    asks: Sequence[Mapping[str, Any]],
    scored: Mapping[str, Sequence[Mapping[str, Any]]],
    merit: Callable[[Sequence[Mapping[str, Any]]], float] | None = None,
) -> dict[str, Any]:
    """Choose among ``scored`` (name → per-ask score rows) on the other folds; held out.

    ``merit`` scores a candidate on training rows (default: all-evidence hits); ties go to
    the earlier name (list the current default first).
    """
    merit = merit or (lambda rows: sum(r["all"] for r in rows))
    fold = folds(asks)
    names = list(scored)
    held: list[Mapping[str, Any] | None] = [None] * len(asks)
    chosen = {}
    for f in sorted(set(fold)):
        train = [i for i in range(len(asks)) if fold[i] != f]

        def m(name: str, train: list[int] = train) -> tuple[float, int]:
            return merit([scored[name][i] for i in train]), -names.index(name)

        best = max(names, key=m)
        chosen[f] = best
        for i in range(len(asks)):
            if fold[i] == f:
                held[i] = scored[best][i]
    rows = [h for h in held if h is not None]
    per_fold = {
        f: summary([held[i] for i in range(len(asks)) if fold[i] == f])  # type: ignore[misc]
        for f in sorted(set(fold))
    }
    return {"chosen": chosen, "held": summary(rows), "rows": rows, "per_fold": per_fold}


def save(obj: Any, path: str) -> None:
    with open(path, "wb") as fh:
        pickle.dump(obj, fh)


def load(path: str) -> Any:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def fmt(s: Mapping[str, Any]) -> str:
    return (
        f"all {s['all']:.1%} any {s['any']:.1%} | rrf@view {s['rrf_all']:.1%} / "
        f"{s['rrf_any']:.1%} | {s['chars']:.0f} ch | +{s['only_view']}/-{s['only_rrf']} | "
        f"{s['fates']}"
    )


def table(
    asks: Sequence[Mapping[str, Any]], caps: Sequence[Mapping[str, Any]], **settings: Any
) -> list[dict[str, Any]]:
    """Per-ask score rows of the captures composed under ``settings``."""
    return [score(a, c, compose(c, **settings)) for a, c in zip(asks, caps, strict=True)]


def iter_settings(grid: Mapping[str, Iterable[Any]]) -> Iterable[dict[str, Any]]:
    import itertools

    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))
