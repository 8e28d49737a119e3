"""``explain``: why a record is (or is not) in a View, read from the View's trace."""

from __future__ import annotations

from mnemon_langgraph.read._rules import is_yes
from mnemon_langgraph.read._view_types import View
from mnemon_langgraph.read.html import Explanation

__all__ = ["explain"]


def explain(view: View, record_id: str) -> Explanation:
    """Why ``record_id`` is (or is not) in ``view``: searches, judgments, rules.

    Args:
        view: A View returned by the read graph.
        record_id: Any record id (in the View or not), whole or as the View shows it (with
            several sources, as its block shows it, or ``"<source>:<id>"`` to pick one).

    Returns:
        A few lines of plain text (a ``str`` that Jupyter shows as a table).
    """
    trace = view.trace
    pooled = [p["id"] for p in trace.get("pool", [])]
    known = {*view.record_ids, *pooled, *trace.get("placement", {})}
    if record_id not in known:
        # a View of several sources shows ids without their source's name ("team:r-1a…")
        several = len(trace.get("sources") or ()) > 1
        matches = sorted(
            rid
            for rid in known
            if rid.startswith(record_id)
            or (several and rid.partition(":")[2].startswith(record_id))
        )
        if len(matches) > 1:
            text = f"record {record_id}: several records start with it: {', '.join(matches)}"
            return Explanation(text, view, record_id)
        record_id = matches[0] if matches else record_id
    lines = [f"record {record_id}:"]
    searches = {s["index"]: s for s in trace.get("searches", [])}
    entry = next((p for p in trace.get("pool", []) if p["id"] == record_id), None)
    place = trace.get("placement", {}).get(record_id)
    if entry is None and place:
        lines.append(
            "  not found by a search of this turn, so never judged: brought in for a record "
            "that was (its placement below; read.questions)"
        )
    elif entry is None:
        lines.append(
            "  not in the pool: no search of this turn returned it, so it was never judged"
        )
    else:
        if entry.get("read_source"):
            lines.append(f"  from source {entry['read_source']!r}")
        lines.append(f"  pooled in round {entry.get('round', 1)}; found by:")
        for search, rank in entry.get("found", []):
            s = searches.get(search, {})
            lines.append(
                f"    search {search} ({s.get('origin', '?')}: {s.get('query', '')[:80]!r}) "
                f"at rank {rank}"
            )
    js = [j for j in trace.get("judgments", []) if j["target"] == record_id]
    if js:
        lines.append("  judgments:")
        for j in js:
            need = f" need {j['need_index']}" if j.get("need_index") is not None else ""
            verdict = "yes" if is_yes(j["p"]) else "no"
            lines.append(
                f"    round {j.get('round', 1)}: {j['proposition']}{need} p={j['p']:.3f} "
                f"({verdict})"
            )
    elif entry is not None:
        lines.append("  no System 1 judgment")
    for a in trace.get("actions", []):
        if record_id in a.get("reason", ""):
            lines.append(f"  rule (round {a.get('round')}): {a['reason']}")
    if place:
        lines.append(f"  placement: {place}")
    elif entry is None:
        lines.append("  placement: not in the View")
    return Explanation("\n".join(lines), view, record_id)
