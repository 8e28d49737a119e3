"""``summary.md`` of a LongMemEval run: the LoCoMo report's tables plus sessions and the curve."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemon_langgraph.eval.report import format_value as fmt
from mnemon_langgraph.eval.report import header_lines, markdown_table, plot_lines

__all__ = ["render_longmemeval_markdown"]

_VIEW_COLUMNS = (
    ("questions", "n", False),
    ("all_hit", "all_hit", True),
    ("any_hit", "any_hit", True),
    ("recall", "recall", True),
    ("chars", "view_chars", False),
    ("tokens", "view_tokens", False),
    ("searches", "searches", False),
    ("S1 calls", "s1_calls", False),
    ("waves", "waves", False),
    ("read s (no models)", "read_seconds", False),
)


def _header(summary: Mapping[str, Any]) -> list[str]:
    out = header_lines(summary)
    out[0] = "# LongMemEval evaluation"
    ingest = summary.get("ingest") or {}
    if ingest:
        out.insert(-1, "- ingest: " + ", ".join(f"{k}={fmt(v)}" for k, v in ingest.items()))
    return out


def _view(summary: Mapping[str, Any]) -> list[str]:
    view = summary.get("view") or {}
    sessions = summary.get("view_sessions") or {}
    o = view.get("overall", {})
    out = ["## View (turn-level `has_answer` evidence; abstention questions apart)", ""]
    out += markdown_table(
        [h for h, _, _ in _VIEW_COLUMNS], [[fmt(o.get(k), p) for _, k, p in _VIEW_COLUMNS]]
    )
    so = sessions.get("overall", {})
    out += [
        "",
        f"Session level (`answer_session_ids`, {fmt(so.get('n'))} questions): all "
        f"{fmt(so.get('session_all_hit'), True)}, any {fmt(so.get('session_any_hit'), True)}, "
        f"recall {fmt(so.get('session_recall'), True)}.",
        "",
        "### By question type",
        "",
    ]
    by_sessions = sessions.get("by_category", {})
    rows = []
    for cat, s in view.get("by_category", {}).items():
        ss = by_sessions.get(cat, {})
        rows.append(
            [cat, fmt(s.get("n"))]
            + [fmt(s.get(k), True) for k in ("all_hit", "any_hit")]
            + [fmt(ss.get(k), True) for k in ("session_all_hit", "session_any_hit")]
            + [fmt(s.get("view_chars"))]
        )
    header = ["type", "questions", "all_hit", "any_hit", "session all", "session any", "chars"]
    out += markdown_table(header, rows)
    out.append("")
    return out


def _baselines(summary: Mapping[str, Any]) -> list[str]:
    baselines = summary.get("baselines") or {}
    if not baselines:
        return []
    sessions = summary.get("baseline_sessions") or {}
    out = ["## Baselines (turn-level records, same questions)", ""]
    rows = []
    for name, s in baselines.items():
        o = s.get("overall", {})
        so = (sessions.get(name) or {}).get("overall", {})
        rows.append(
            [name]
            + [fmt(o.get(k), True) for k in ("all_hit", "any_hit")]
            + [fmt(so.get(k), True) for k in ("session_all_hit", "session_any_hit")]
            + [fmt(o.get("chars")), fmt(o.get("tokens"))]
        )
    header = ["baseline", "all_hit", "any_hit", "session all", "session any", "chars", "tokens"]
    out += markdown_table(header, rows)
    out.append("")
    return out


def _curve(summary: Mapping[str, Any]) -> list[str]:
    curve = summary.get("budget_curve") or {}
    if not curve:
        return []
    out = ["## Budget curve (the View at each character budget)", ""]
    rows = []
    for budget, point in curve.items():
        t, s = point["turns"].get("overall", {}), point["sessions"].get("overall", {})
        rows.append(
            [f"{int(budget):,}", fmt(t.get("n"))]
            + [fmt(t.get(k), True) for k in ("all_hit", "any_hit")]
            + [fmt(s.get(k), True) for k in ("session_all_hit", "session_any_hit")]
            + [fmt(t.get("chars"))]
        )
    header = ["budget", "questions", "all_hit", "any_hit", "session all", "session any", "chars"]
    out += markdown_table(header, rows)
    out.append("")
    return out


def _judge_and_answers(summary: Mapping[str, Any]) -> list[str]:
    judge = summary.get("judge_auc") or {}
    out = [
        "## Judge quality",
        "",
        f"ROC AUC of P(needed) for `has_answer` evidence over pooled records: "
        f"{fmt(judge.get('auc'))} ({judge.get('records', 0)} records, {judge.get('gold', 0)} "
        f"gold; {judge.get('questions', 0)} questions).",
        "",
    ]
    answers = summary.get("answers")
    if answers:
        o = answers.get("overall", {})
        out += [
            "## Answers (LongMemEval's own prompts and grading)",
            "",
            f"accuracy {fmt(o.get('correct'), True)} over {fmt(o.get('n'))} non-abstention "
            f"questions; context tokens/question {fmt(o.get('view_tokens'))}",
            "",
        ]
        rows = [
            [cat, fmt(s.get("n")), fmt(s.get("correct"), True)]
            for cat, s in answers.get("by_category", {}).items()
        ]
        out += markdown_table(["type", "questions", "accuracy"], rows)
        out.append("")
    return out


def render_longmemeval_markdown(summary: Mapping[str, Any]) -> str:
    """Render a LongMemEval ``summary.json`` as Markdown."""
    out = _header(summary)
    out += _view(summary)
    out += _baselines(summary)
    out += _curve(summary)
    out += _judge_and_answers(summary)
    out += _filler(summary)
    out += plot_lines(summary)
    return "\n".join(out)


def _filler(summary: Mapping[str, Any]) -> list[str]:
    """What the histories were put inside (``--filler``/``--history-tokens``), if anything."""
    pool = summary.get("filler_pool")
    if not pool:
        return []
    median = pool.get("filler_tokens_median")
    return [
        "",
        "## Filler",
        "",
        f"Each question's history was put inside other conversations up to "
        f"{pool.get('history_tokens') or 0:,} WordPiece tokens (median filler per question "
        f"{median or 0:,.0f} tokens), its own sessions left out by content. Most of the "
        'filler is other LongMemEval "users" (ShareGPT/UltraChat-style sessions and '
        "LongMemEval's simulated users), not one person's life. Pool: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted((pool.get("tokens_by_source") or {}).items()))
        + " distinct tokens.",
    ]
