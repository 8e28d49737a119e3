"""BEAM's per-tier figures: evidence by ability, judge AUC and the per-question read work.

Rows are grouped by tier (BEAM's own, or the label of a concatenated conversation). Per tier:

* evidence (all / any) of the View and of the turn baselines cut to the View's size, overall
  and by ability, and the judge's ROC AUC over that tier's pooled records;
* the read path's work per question: judgments, System 1 calls, waves, searches, pooled
  records, the View's size (characters and records), the read path's time excluding model
  calls and the model (judge, planner) time — medians over the **warm** questions (every
  question after the first on its namespace) and, apart, over the **first** question of each
  namespace (its first touch loads the namespace's indexes);
* ``tier_ratios``: each tier's medians divided by those of the tier with the shortest
  history, so the cost of a longer history reads off directly.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from mnemon_langgraph.eval.metrics import aggregate, roc_auc
from mnemon_langgraph.eval.report import format_value, markdown_table

__all__ = ["WORK_FIELDS", "tier_lines", "tier_ratios", "tier_summary"]

WORK_FIELDS = (
    "judgments",
    "s1_calls",
    "waves",
    "searches",
    "pool",
    "view_chars",
    "view_records",
    "read_seconds",
    "model_seconds",
    "cpu_seconds",
    "needs",
    "search_returned",
)
"""Per-question work fields of a BEAM row, summarised per tier (medians)."""

AT_VIEW = ("turns+rrf@view", "turns+bm25@view", "turns+cosine@view")
EVIDENCE = ("all_hit", "any_hit")


def _median(values: Sequence[Any]) -> float | None:
    nums = [float(v) for v in values if v is not None]
    return statistics.median(nums) if nums else None


def _auc(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    pooled = [(p, bool(g)) for r in rows for _, p, g in r.get("pool_scores") or []]
    return {
        "auc": roc_auc([p for p, _ in pooled], [g for _, g in pooled]),
        "records": len(pooled),
        "gold": sum(1 for _, g in pooled if g),
    }


def _evidence(scored: Sequence[Mapping[str, Any]], abilities: Sequence[str]) -> dict[str, Any]:
    """View and at-the-View's-size baselines: all / any evidence, overall and by ability."""
    out = {"view": aggregate(scored, EVIDENCE, scored=abilities)}
    for name in AT_VIEW:
        mine = [
            {"category": r["category"], **r["baselines"][name]}
            for r in scored
            if name in (r.get("baselines") or {})
        ]
        if mine:
            out[name] = aggregate(mine, (*EVIDENCE, "chars"), scored=abilities)
    return out


def _gold_turns(scored: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """What became of the tier's gold turns: shown, never pooled, removed as no longer
    current, or pooled but left out otherwise (judged low, over the budget)."""
    out = {"gold_turns": 0, "shown": 0, "not_pooled": 0, "stale": 0, "pooled_left_out": 0}
    for r in scored:
        for fate in r.get("gold_fates") or []:
            out["gold_turns"] += 1
            if fate.get("shown"):
                out["shown"] += 1
            elif fate.get("record") is None:
                out["not_pooled"] += 1
            elif "no longer current" in str(fate.get("placement") or ""):
                out["stale"] += 1
            else:
                out["pooled_left_out"] += 1
    return out


def _one_tier(rows: Sequence[Mapping[str, Any]], abilities: Sequence[str]) -> dict[str, Any]:
    scored = [r for r in rows if r.get("scored") and r.get("gold_evidence")]
    warm = [r for r in rows if not r.get("first_read")]
    first = [r for r in rows if r.get("first_read")]
    entry: dict[str, Any] = {
        **aggregate(scored, (*EVIDENCE, "recall"), scored=abilities)["overall"],
        "questions": len(rows),
        "warm_questions": len(warm),
        "first_questions": len(first),
        "conversations": len({r.get("conversation") for r in rows}),
        "c_full_tokens_mean": statistics.mean(float(r.get("c_full_tokens") or 0) for r in rows),
    }
    for name in WORK_FIELDS:
        entry[f"{name}_median"] = _median([r.get(name) for r in warm])
        entry[f"{name}_first_median"] = _median([r.get(name) for r in first])
    for key in ("node_seconds", "judgments_by", "pool_by_round"):
        having = [r[key] for r in warm if isinstance(r.get(key), Mapping)]  # older rows lack it
        parts = sorted({n for r in having for n in r})
        entry[f"{key}_median"] = {n: _median([r.get(n, 0) for r in having]) for n in parts}
    entry["evidence"] = _evidence(scored, abilities)
    entry["judge_auc"] = _auc(scored)
    entry["gold_turns"] = _gold_turns(scored)
    return entry


def tier_summary(rows: Sequence[Mapping[str, Any]], abilities: Sequence[str]) -> dict[str, Any]:
    """Per tier (in order of history size): evidence, judge AUC, warm and first work."""
    tiers: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        tiers.setdefault(str(r.get("tier")), []).append(r)
    entries = {t: _one_tier(mine, abilities) for t, mine in tiers.items()}
    return dict(sorted(entries.items(), key=lambda kv: (kv[1]["c_full_tokens_mean"], kv[0])))


def _question_key(row: Mapping[str, Any]) -> tuple[str, str, Any]:
    """A question across tiers: its source conversation, ability and index there."""
    origin = row.get("origin") or row.get("conversation")
    return (str(origin), str(row.get("ability")), row.get("question_index"))


def _paired(
    mine: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], bool]:
    """The questions both row sets hold (the same question asked in both tiers), or both
    sets whole when they share none (different conversations, e.g. BEAM's own tiers)."""
    common = {_question_key(r) for r in mine} & {_question_key(r) for r in base}
    if not common:
        return list(mine), list(base), False
    return (
        [r for r in mine if _question_key(r) in common],
        [r for r in base if _question_key(r) in common],
        True,
    )


def _ratio(num: Any, den: Any) -> float | None:
    return None if num is None or not den else float(num) / float(den)


def tier_ratios(
    by_tier: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Each tier's work medians over those of the tier with the shortest history (``base``).

    Where a tier's questions were also asked in the base tier (a concatenation of the base
    tier's conversations asks their questions again), both medians are over those same
    questions — warm against warm, first against first — so the ratio is the cost of the
    longer history alone; ``paired`` says so per tier, with the question counts.
    """
    if not by_tier:
        return {}
    base_name = min(by_tier, key=lambda t: by_tier[t]["c_full_tokens_mean"])
    base_rows = [r for r in rows if str(r.get("tier")) == base_name]
    out: dict[str, Any] = {"base": base_name, "tiers": {}, "paired": {}}
    for tier, entry in by_tier.items():
        mine = [r for r in rows if str(r.get("tier")) == tier]
        ratios: dict[str, float | None] = {
            "c_full_tokens_mean": _ratio(
                entry["c_full_tokens_mean"], by_tier[base_name]["c_full_tokens_mean"]
            )
        }
        pairing: dict[str, Any] = {}
        for kind, first in (("", False), ("_first", True)):
            a, b, paired = _paired(
                [r for r in mine if bool(r.get("first_read")) is first],
                [r for r in base_rows if bool(r.get("first_read")) is first],
            )
            pairing[f"questions{kind}"] = len(a)
            pairing["paired"] = paired
            for name in WORK_FIELDS:
                ratios[f"{name}{kind}_median"] = _ratio(
                    _median([r.get(name) for r in a]), _median([r.get(name) for r in b])
                )
        out["tiers"][tier] = ratios
        out["paired"][tier] = pairing
    return out


def _rate(summary: Mapping[str, Any] | None, key: str) -> str:
    return format_value((summary or {}).get(key), True)


def _evidence_table(by_tier: Mapping[str, Any]) -> list[str]:
    rows = []
    for tier, e in by_tier.items():
        ev = e.get("evidence") or {}
        view = (ev.get("view") or {}).get("overall")
        base = {n: (ev.get(n) or {}).get("overall") for n in AT_VIEW}
        rows.append(
            [
                tier,
                format_value(e.get("conversations")),
                format_value(round(e.get("c_full_tokens_mean") or 0)),
                format_value(e.get("n")),
                f"**{_rate(view, 'all_hit')}** / {_rate(view, 'any_hit')}",
                f"{_rate(base['turns+rrf@view'], 'all_hit')} / "
                f"{_rate(base['turns+rrf@view'], 'any_hit')}",
                _rate(base["turns+bm25@view"], "all_hit"),
                _rate(base["turns+cosine@view"], "all_hit"),
                format_value((e.get("judge_auc") or {}).get("auc")),
            ]
        )
    header = [
        "tier",
        "conversations",
        "history tokens",
        "scored questions",
        "View all / any",
        "turns+RRF@view all / any",
        "BM25@view all",
        "cosine@view all",
        "judge AUC",
    ]
    return markdown_table(header, rows)


def _ability_table(by_tier: Mapping[str, Any]) -> list[str]:
    tiers = list(by_tier)
    abilities = sorted(
        {
            a
            for e in by_tier.values()
            for a in ((e.get("evidence") or {}).get("view") or {}).get("by_category", {})
        }
    )
    rows = []
    for a in abilities:
        cells = [a]
        for t in tiers:
            ev = by_tier[t].get("evidence") or {}
            view = ((ev.get("view") or {}).get("by_category") or {}).get(a)
            rrf = ((ev.get("turns+rrf@view") or {}).get("by_category") or {}).get(a)
            n = format_value((view or {}).get("n"))
            cells.append(f"{_rate(view, 'all_hit')} / {_rate(rrf, 'all_hit')} ({n})")
        rows.append(cells)
    return markdown_table(["ability", *(f"{t}: View / RRF@view" for t in tiers)], rows)


_WORK_COLUMNS = (
    ("judgments", "judgments"),
    ("s1_calls", "S1 calls"),
    ("waves", "waves"),
    ("searches", "searches"),
    ("pool", "pooled"),
    ("view_chars", "View chars"),
    ("view_records", "View records"),
)


def _num(value: Any) -> str:
    """A median as the tables print it: whole when it is, else one decimal."""
    if value is None:
        return "–"
    v = float(value)
    return f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{1000 * float(value):,.0f}"


def _work_table(by_tier: Mapping[str, Any], kind: str) -> list[str]:
    count = "warm_questions" if kind == "" else "first_questions"
    rows = [
        [
            tier,
            format_value(e.get(count)),
            *(_num(e.get(f"{k}{kind}_median")) for k, _ in _WORK_COLUMNS),
            _ms(e.get(f"read_seconds{kind}_median")),
            _ms(e.get(f"model_seconds{kind}_median")),
            _ms(e.get(f"cpu_seconds{kind}_median")),
        ]
        for tier, e in by_tier.items()
    ]
    header = [
        "tier",
        "questions",
        *(h for _, h in _WORK_COLUMNS),
        "read ms",
        "model ms",
        "CPU ms",
    ]
    return markdown_table(header, rows)


def _fates_table(by_tier: Mapping[str, Any]) -> list[str]:
    keys = ("gold_turns", "shown", "not_pooled", "pooled_left_out", "stale")
    rows = [
        [tier, *(_num((e.get("gold_turns") or {}).get(k)) for k in keys)]
        for tier, e in by_tier.items()
    ]
    header = ["tier", "gold turns", "shown", "never pooled", "pooled, left out", "removed as stale"]
    return markdown_table(header, rows)


def _parts_table(by_tier: Mapping[str, Any], key: str, fmt: Any = None) -> list[str]:
    """Warm medians of one per-part breakdown (``node_seconds``, ``judgments_by``...)."""
    show = fmt or _num
    parts = sorted({n for e in by_tier.values() for n in e.get(f"{key}_median") or {}})
    rows = [
        [tier, *(show((e.get(f"{key}_median") or {}).get(n)) for n in parts)]
        for tier, e in by_tier.items()
    ]
    return markdown_table(["tier", *parts], rows) if parts else []


def _times(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio:.2f}×"


def _ratio_table(ratios: Mapping[str, Any]) -> list[str]:
    keys = [k for k, _ in _WORK_COLUMNS] + ["read_seconds", "model_seconds", "cpu_seconds"]
    heads = [h for _, h in _WORK_COLUMNS] + ["read ms", "model ms", "CPU ms"]
    rows = []
    for tier, r in (ratios.get("tiers") or {}).items():
        if tier == ratios.get("base"):
            continue
        pairing = (ratios.get("paired") or {}).get(tier) or {}
        for kind, label in (("", "warm"), ("_first", "first")):
            cells = [_times(r.get(f"{k}{kind}_median")) for k in keys]
            n = pairing.get(f"questions{kind}")
            how = f"{label}, {n} {'paired' if pairing.get('paired') else 'unpaired'}"
            rows.append([tier, how, _times(r.get("c_full_tokens_mean")), *cells])
    return markdown_table(["tier", "questions", "history", *heads], rows)


def tier_lines(summary: Mapping[str, Any]) -> list[str]:
    """The per-tier sections of the BEAM report."""
    by_tier = summary.get("by_tier") or {}
    if not by_tier:
        return []
    out = ["", "## By tier: evidence (abstention apart)", ""]
    out += _evidence_table(by_tier)
    out += ["", "### All evidence by ability and tier (View / turns+RRF at the View's size)", ""]
    out += _ability_table(by_tier)
    out += ["", "### Gold turns by tier: shown, or where they were lost", ""]
    out += _fates_table(by_tier)
    out += ["", "## By tier: read work per question, warm (median)", ""]
    out += _work_table(by_tier, "")
    for key, title, fmt in (
        ("node_seconds", "Warm read ms by graph node (model calls excluded)", _ms),
        ("judgments_by", "Warm judgments by proposition", _num),
        ("pool_by_round", "Warm pooled records by the round that pooled them", _num),
    ):
        table = _parts_table(by_tier, key, fmt)
        if table:
            out += ["", f"### {title} (median)", "", *table]
    out += ["", "## By tier: the first question on each namespace (median)", ""]
    out += _work_table(by_tier, "_first")
    ratios = summary.get("tier_ratios") or {}
    if len(ratios.get("tiers") or {}) > 1:
        out += ["", f"## Ratio of each tier's medians to {ratios['base']}'s", ""]
        out += _ratio_table(ratios)
        out += [
            "",
            f"Questions: the medians of both tiers are over the questions asked in both (the "
            f"same question in its own {ratios['base']} conversation and in the longer "
            "history), where a tier shares questions with the base; otherwise over all.",
        ]
    out += [
        "",
        "Read ms: the read path's wall-clock time excluding model calls; model ms: the "
        "judge's and the planner's (offline, both run on this CPU); CPU ms: the process's CPU "
        "time for the whole read, which other work on the machine does not inflate.",
    ]
    return out
