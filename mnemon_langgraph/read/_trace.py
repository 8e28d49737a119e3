"""The read graph's trace: the events nodes append, and the View's trace dict.

Nodes append trace *events* to the state (``operator.add``); :func:`build_trace` turns
them, with the state, into the View's ``trace``: searches, pool, judgments, actions,
degradations, errors, timings (read-path seconds excluding model calls) and counts.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mnemon_langgraph.read._judging import WaveResult
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadState

logger = logging.getLogger("mnemon_langgraph.read")

__all__ = ["build_trace", "degraded", "timing_event", "wave_events"]


# --- trace events -------------------------------------------------------------------


def timing_event(node: str, start: float, model_seconds: float = 0.0) -> dict[str, Any]:
    """How long ``node`` took since ``start`` (``perf_counter``), model calls among it."""
    return {
        "event": "timing",
        "node": node,
        "seconds": time.perf_counter() - start,
        "model_seconds": model_seconds,
    }


def wave_events(
    name: str, round_no: int, tasks: int, res: WaveResult, secs: float
) -> list[dict[str, Any]]:
    """The trace events of one System 1 wave (and a degradation when calls failed)."""
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
    as_of = {"as_of": state["as_of"]} if state.get("as_of") else {}  # an as-of View's date
    return (
        as_of
        | {
            "namespace": list(state.get("namespace", [])),
            "now": state.get("now"),
            "planner": plan.get("planner"),
            "plan_notes": plan.get("notes", []),
            "needs": [dict(n) for n in state.get("needs", [])],
            "searches": [
                {
                    k: s.get(k)
                    for k in ("index", "query", "origin", "next_offset", "exhausted", "round")
                }
                | {k: s[k] for k in ("record_id", "session", "read_source", "failed") if k in s}
                for s in state.get("searches", [])
            ],
            "search_calls": [e for e in events if e.get("event") == "search"],
            "pool": [
                {
                    "id": p["id"],
                    "message_ids": list(p.get("message_ids", [])),
                    "found": p.get("found", []),
                    "round": p.get("round", 1),
                }
                | ({"read_source": p["read_source"]} if "read_source" in p else {})
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
                    {
                        "node": t["node"],
                        "seconds": t["seconds"],
                        "model_seconds": t["model_seconds"],
                    }
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
        | _sources_trace(state, events)
    )


def _sources_trace(state: ReadState, events: list[dict[str, Any]]) -> dict[str, Any]:
    """With bound sources: each one's namespace for the run (``sources``), every failure
    of a source (``source_errors``: source, search, error) — a source that failed or timed
    out is left out of the turn and the View is built from the others — and, with
    ``ReadSettings.source_match``, each source's weight for the turn, by which the first
    pool was shared (``source_match``, ``read._source_match``)."""
    if "sources" not in state:
        return {}
    weights = next((e["weights"] for e in events if e.get("event") == "source_match"), None)
    return ({"source_match": weights} if weights is not None else {}) | {
        "sources": {name: list(ns) for name, ns in state["sources"].items()},
        "source_errors": [
            {k: e.get(k) for k in ("source", "search", "error")}
            for e in events
            if e.get("event") == "source_error"
        ],
    }
