"""Why a View missed its evidence: each gold turn's fate on the read path, and the buckets.

Scoring only: the gold ids come from the benchmark's labels *after* the View is composed,
and nothing here reaches the memory. For every gold turn of a question,
:func:`gold_fates` records the pooled record that holds it (if any), the record's
``P(needed)`` (its last ``needed`` judgment, else its ``screen`` one) and the View's
``placement`` line for it (``view.trace["placement"]``: why it entered or was left out).

:func:`miss_bucket` then sorts a missing turn into one of four buckets:

1. ``not pooled`` — no pooled record holds it: retrieval or planning missed it;
2. ``judged low`` — pooled, not judged needed (p < 1/2), and cut (over the budget behind the
   records judged needed, or left out because the planner named no need);
3. ``judged fine, lost`` — judged needed (p ≥ 1/2) but over the budget, or left out by the
   staleness or recent-messages rules; also a record no search pooled but the View brought
   in for one judged in depth (a reply's question, a session's opening turn:
   ``read.questions``; ``brought`` in its fate) and then cut;
4. ``other`` — anything else (e.g. in the View as an excerpt that left the turn out).

A question that misses several turns is counted once, under the lowest-numbered bucket of
its missing turns (the earliest stage that lost evidence); the turn-level table counts
every missing turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BUCKETS",
    "gold_fates",
    "miss_bucket",
    "miss_table",
    "misses_of_results",
    "p_needed",
    "removed_as_stale",
    "render_misses",
]

BUCKETS: tuple[str, ...] = ("not pooled", "judged low", "judged fine, lost", "other")
SCORED = (1, 2, 3, 4)
"""The scored LoCoMo categories (5, adversarial, is not scored: as the eval's summary)."""


def p_needed(trace: Mapping[str, Any]) -> dict[str, float]:
    """Record id → its last ``needed`` judgment's p, else its last ``screen`` one."""
    needed: dict[str, float] = {}
    screen: dict[str, float] = {}
    for j in trace.get("judgments") or []:
        target, prop, p = j.get("target"), str(j.get("proposition")), j.get("p")
        if target is None or p is None:
            continue
        if prop == "needed":
            needed[target] = float(p)
        elif prop == "screen":
            screen[target] = float(p)
    return {**screen, **needed}


def gold_fates(
    view: Any, gold_ids: Iterable[str], message_ids_of: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """One ``{"turn", "shown", "record", "p", "placement", "brought"}`` per gold turn.

    Args:
        view: The View (its ``trace`` holds ``pool``, ``judgments`` and ``placement``).
        gold_ids: The question's gold message ids (scoring labels).
        message_ids_of: Record id → message ids, for pool entries that do not carry them.
    """
    trace = getattr(view, "trace", None) or {}
    shown = set(getattr(view, "message_ids", ()) or ())
    placement = trace.get("placement") or {}
    p_of = p_needed(trace)
    holder: dict[str, str] = {}
    pooled = set()
    for rec in trace.get("pool") or []:
        rid = rec.get("id")
        pooled.add(rid)
        for mid in rec.get("message_ids") or message_ids_of.get(rid) or ():
            holder.setdefault(mid, rid)
    for rid in placement:  # not pooled, brought in for a record that was (read.questions)
        if rid not in pooled:
            for mid in message_ids_of.get(rid) or ():
                holder.setdefault(mid, rid)
    out = []
    for mid in gold_ids:
        rid = holder.get(mid)
        out.append(
            {
                "turn": mid,
                "shown": mid in shown,
                "record": rid,
                "p": p_of.get(rid) if rid else None,
                "placement": placement.get(rid) if rid else None,
                "brought": rid is not None and rid not in pooled,
            }
        )
    return out


def miss_bucket(fate: Mapping[str, Any]) -> int | None:
    """The bucket (1–4) of a gold turn's fate; ``None`` when the turn was shown."""
    if fate.get("shown"):
        return None
    if fate.get("record") is None:
        return 1
    if fate.get("brought"):
        return 3  # chosen for a record judged in depth, then over the budget
    where = str(fate.get("placement") or "")
    p = fate.get("p")
    if where.startswith("in the View"):
        return 4
    if "no longer current" in where or "recent messages" in where:
        return 3
    if p is not None and p >= 0.5:
        return 3
    if where.startswith("left out"):
        return 2
    return 4


def removed_as_stale(fate: Mapping[str, Any]) -> bool:
    """Whether a missing gold turn's record was left out as no longer current."""
    where = str(fate.get("placement") or "")
    return not fate.get("shown") and where.startswith("left out: judged no longer current")


def miss_table(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of all-evidence misses by bucket: per question and per missing turn.

    Rows are ``results.jsonl`` rows with ``gold_fates``; rows without gold evidence or of
    an unscored category are skipped (a row's own ``scored`` flag, where it has one, says
    whether it is scored: LongMemEval rows are typed by name, not by LoCoMo number).
    Returns ``questions`` (scored), ``missed``, ``by_question`` and ``by_turn`` (bucket
    name → count), ``by_conversation`` (conversation → bucket → count) and
    ``removed_as_stale`` (missing gold turns whose record the View left out as no longer
    current, a part of bucket 3).
    """
    questions = missed = 0
    by_q: Counter[str] = Counter()
    by_turn: Counter[str] = Counter()
    by_conv: dict[str, Counter[str]] = {}
    stale = 0
    for row in rows:
        fates = row.get("gold_fates")
        scored = row.get("scored")
        if scored is None:
            scored = row.get("category") in SCORED
        if not fates or row.get("all_hit") is None or not scored:
            continue
        questions += 1
        stale += sum(removed_as_stale(f) for f in fates)
        buckets = [b for b in (miss_bucket(f) for f in fates) if b is not None]
        if not buckets:
            continue
        missed += 1
        name = BUCKETS[min(buckets) - 1]
        by_q[name] += 1
        by_conv.setdefault(str(row.get("conversation")), Counter())[name] += 1
        by_turn.update(BUCKETS[b - 1] for b in buckets)
    return {
        "questions": questions,
        "missed": missed,
        "by_question": {b: by_q[b] for b in BUCKETS},
        "by_turn": {b: by_turn[b] for b in BUCKETS},
        "by_conversation": {c: {b: n[b] for b in BUCKETS} for c, n in sorted(by_conv.items())},
        "removed_as_stale": stale,
    }


def render_misses(table: Mapping[str, Any]) -> str:
    """The table as Markdown (questions missed, share of misses, missing turns)."""
    missed = max(1, table["missed"])
    convs = list(table["by_conversation"])

    def row(cells: Sequence[object]) -> str:
        return "| " + " | ".join(map(str, cells)) + " |"

    head = ["bucket", "questions", "share of misses", "missing turns", *convs]
    lines = [row(head), "|" + "---|" * len(head)]
    for i, b in enumerate(BUCKETS, 1):
        n = table["by_question"][b]
        per = [table["by_conversation"][c][b] for c in convs]
        lines.append(row([f"{i}. {b}", n, f"{100 * n / missed:.1f}%", table["by_turn"][b], *per]))
    lines.append(
        f"\n{table['missed']} of {table['questions']} scored questions miss at least one "
        "gold turn (all-evidence misses)."
    )
    lines.append(f"Gold turns left out as no longer current: {table.get('removed_as_stale', 0)}.")
    return "\n".join(lines)


def misses_of_results(path: str | Path) -> dict[str, Any]:
    """:func:`miss_table` of a ``results.jsonl`` file (or the folder holding one)."""
    file = Path(path)
    if file.is_dir():
        file = file / "results.jsonl"
    with file.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return miss_table(rows)
