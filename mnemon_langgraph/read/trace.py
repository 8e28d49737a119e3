"""The read graph's trace: small pure helpers over state, and the View's trace dict.

Nodes append trace *events* to the state (``operator.add``); :func:`build_trace` turns
them, with the state, into the View's ``trace``: searches, pool, judgments, actions,
degradations, errors, timings (read-path seconds excluding model calls) and counts.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from langchain_core.messages import BaseMessage

from mnemon_langgraph.read.judging import WaveResult
from mnemon_langgraph.read.rules import (
    Judgment,
    Need,
    NeedStatus,
)
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import (
    ReadState,
)

logger = logging.getLogger("mnemon_langgraph.read")

__all__ = ["build_trace", "degraded"]


# --- small pure helpers -------------------------------------------------------------


def _judgments(state: ReadState) -> list[Judgment]:
    return [
        Judgment(j["target"], j["proposition"], j["p"], j.get("need_index"), j.get("round", 1))
        for j in state.get("judgments", [])
    ]


def _jdict(j: Judgment) -> dict[str, Any]:
    return {
        "target": j.target_id,
        "proposition": j.proposition,
        "p": j.p,
        "need_index": j.need_index,
        "round": j.round,
    }


def _needs(state: ReadState) -> list[Need]:
    return [Need(n["index"], n["text"], n["kind"]) for n in state.get("needs", [])]


def _statuses(state: ReadState) -> list[NeedStatus]:
    return [
        NeedStatus(n["index"], n["state"], n["lead_step"], tuple(n["positives"]))
        for n in state.get("needs", [])
    ]


def _recent(state: ReadState, settings: ReadSettings) -> list[BaseMessage]:
    messages: list[BaseMessage] = list(state.get("messages", []))
    return messages[-settings.recent_messages :]


def _s1_messages(state: ReadState, settings: ReadSettings) -> list[Any]:
    """The messages System 1 reads: the recent ones, after a date note when ``now`` is known."""
    recent: list[Any] = list(_recent(state, settings))
    now = state.get("now")
    if now:
        note = {
            "role": "system",
            "text": f"The latest message is asked on {now[:16].replace('T', ' ')}.",
        }
        return [note, *recent]
    return recent


def _timing(node: str, start: float, model_seconds: float = 0.0) -> dict[str, Any]:
    return {
        "event": "timing",
        "node": node,
        "seconds": time.perf_counter() - start,
        "model_seconds": model_seconds,
    }


def _wave_entry(
    name: str, round_no: int, tasks: int, res: WaveResult, secs: float
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "event": "wave",
            "name": name,
            "round": round_no,
            "targets": tasks,
            "calls": res.calls,
            "judgments": len(res.judgments),
            "errors": list(res.errors),
            "usage": dict(res.usage),
            "model_seconds": secs,
        }
    ]
    if res.errors:
        out.append(
            degraded(
                f"judge:{name}",
                f"{len(res.failed_target_ids)} target(s) left unjudged; fused search "
                "order stands in for them. " + "; ".join(res.errors)[:500],
            )
        )
    return out


def degraded(step: str, detail: str) -> dict[str, Any]:
    """A trace event for a step that fell back (model error, timeout, garbage), also logged.

    The View is still produced; the trace says what stood in, and the log makes the failure
    visible to operators who never read traces.
    """
    logger.warning("mnemon read path degraded at %s: %s", step, detail)
    return {"event": "degraded", "step": step, "detail": detail}


def build_trace(
    state: ReadState, events: list[dict[str, Any]], settings: ReadSettings
) -> dict[str, Any]:
    """The View's trace from the state and its trace events."""
    timings = [e for e in events if e.get("event") == "timing"]
    waves = [e for e in events if e.get("event") == "wave"]
    plan = next((e for e in events if e.get("event") == "plan"), {})
    new_searches = [e for e in events if e.get("event") == "new_search"]
    total = sum(t["seconds"] for t in timings)
    model = sum(t["model_seconds"] for t in timings)
    return {
        "namespace": list(state.get("namespace", [])),
        "now": state.get("now"),
        "planner": plan.get("planner"),
        "plan_notes": plan.get("notes", []),
        "needs": [dict(n) for n in state.get("needs", [])],
        "searches": [
            {k: s.get(k) for k in ("index", "query", "origin", "next_offset", "exhausted", "round")}
            for s in state.get("searches", [])
        ],
        "search_calls": [e for e in events if e.get("event") == "search"],
        "pool": [
            {"id": p["id"], "found": p.get("found", []), "round": p.get("round", 1)}
            for p in state.get("pool", [])
        ],
        "judgments": list(state.get("judgments", [])),
        "actions": [e for e in events if e.get("event") == "action"],
        "waves": waves,
        "degradations": [e for e in events if e.get("event") == "degraded"],
        "errors": [err for w in waves for err in w.get("errors", [])]
        + list(plan.get("errors", []))
        + [err for e in new_searches for err in e.get("errors", [])],
        "timings": {
            "total_s": total,
            "model_s": model,
            "read_path_s": max(0.0, total - model),
            "by_node": [
                {"node": t["node"], "seconds": t["seconds"], "model_seconds": t["model_seconds"]}
                for t in timings
            ],
        },
        "counts": {
            "searches": sum(1 for e in events if e.get("event") == "search"),
            "s1_calls": sum(w["calls"] for w in waves),
            "waves": sum(1 for w in waves if w["calls"]),
            "judgments": len(state.get("judgments", [])),
            "rounds": state.get("rounds", 0),
            "s2_calls": int(plan.get("calls", 0)) + sum(e["calls"] for e in new_searches),
            "pool": len(state.get("pool", [])),
        },
        "settings": settings.to_dict(),
    }
