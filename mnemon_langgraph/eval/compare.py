"""Two runs of one benchmark, question by question: what a change of setting did.

``mnemon eval compare BEFORE AFTER`` pairs the scored questions of two ``mnemon eval``
runs (LoCoMo, LongMemEval or BEAM: the same file, one run with another ``--read-setting``,
budget or commit) and says which questions gained or lost all of their gold evidence, how
the share of gold turns shown moved, and how many Views changed at all. Questions one run
has and the other lacks are counted, not paired.

Whether a difference is more than chance is read from the discordant pairs only: the
questions one run gets and the other misses. Under "no difference" each is equally likely
to go either way, so the count of gains is binomial with p = 1/2: McNemar's test
(McNemar 1947, *Psychometrika* 12:153–157) in its exact form, the sign test on the
discordant pairs. A rule usually moves a handful of questions, too few for the test's
chi-square approximation, so the exact two-sided p is given.

The gold labels are read to score the runs, as every ``mnemon eval`` command reads them;
nothing here reaches a memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.eval.metrics import SCORED_CATEGORIES

__all__ = ["Comparison", "compare_rows", "mcnemar_exact", "question_key", "render_comparison"]

Key = tuple[Any, ...]


def question_key(row: Mapping[str, Any]) -> Key:
    """What names one question across runs of the same file: BEAM's tier and the
    conversation the question was asked of (``origin``, for concatenated tiers), the
    conversation, LongMemEval's question id, the ability or category and the index."""
    return (
        row.get("tier"),
        row.get("origin") or row.get("conversation"),
        row.get("question_id"),
        row.get("ability", row.get("category")),
        row.get("question_index"),
    )


def _scored(row: Mapping[str, Any]) -> bool:
    """Scored as the run's summary scores it: LongMemEval's and BEAM's rows say so
    (``scored``: abstention apart); a LoCoMo row is scored in categories 1–4 (5 is
    adversarial); and only with a hit value (a question without gold has none)."""
    if "scored" in row:
        return bool(row["scored"]) and row.get("all_hit") is not None
    return row.get("category") in SCORED_CATEGORIES and row.get("all_hit") is not None


def _by_key(rows: Iterable[Mapping[str, Any]], name: str) -> dict[Key, Mapping[str, Any]]:
    out: dict[Key, Mapping[str, Any]] = {}
    for row in rows:
        if not _scored(row):
            continue
        key = question_key(row)
        if key in out:
            raise InputError(
                f"{name} names one question twice ({_label(row)}): is it two runs' "
                "results.jsonl joined together?"
            )
        out[key] = row
    return out


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact p of McNemar's test: ``gained`` and ``lost`` discordant pairs,
    each equally likely under no difference (binomial, p = 1/2); 1.0 with none.

    >>> mcnemar_exact(5, 0)
    0.0625
    >>> mcnemar_exact(1, 1)
    1.0
    """
    if gained < 0 or lost < 0:
        raise InputError(f"counts must be >= 0, got {gained} and {lost}")
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _label(row: Mapping[str, Any]) -> str:
    parts = [
        str(v)
        for v in (
            row.get("tier"),
            row.get("origin") or row.get("conversation"),
            row.get("ability", row.get("category")),
        )
        if v is not None
    ]
    if row.get("question_id") is None and row.get("question_index") is not None:
        parts.append(f"#{row['question_index']}")
    return " ".join(dict.fromkeys(parts))


@dataclass
class Comparison:
    """Two runs paired by question (:func:`compare_rows`).

    Attributes:
        paired: Scored questions in both runs.
        only_before, only_after: Scored questions in one run only (not paired).
        all_before, all_after: Paired questions with all their gold evidence in the View.
        any_before, any_after: Paired questions with some of it.
        recall_before, recall_after: Mean share of gold turns shown, over the paired.
        views_changed: Paired questions whose View shows other messages or another order.
        gained, lost: The paired questions whose all-evidence hit the second run gained or
            lost: ``(label, question)``.
        p_value: :func:`mcnemar_exact` of the gained and lost counts.
    """

    paired: int
    only_before: int
    only_after: int
    all_before: int
    all_after: int
    any_before: int
    any_after: int
    recall_before: float
    recall_after: float
    views_changed: int
    gained: list[tuple[str, str]] = field(default_factory=list)
    lost: list[tuple[str, str]] = field(default_factory=list)
    p_value: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (``--json``)."""
        return {
            **{k: v for k, v in self.__dict__.items() if k not in ("gained", "lost")},
            "gained": [{"question": q, "where": w} for w, q in self.gained],
            "lost": [{"question": q, "where": w} for w, q in self.lost],
        }


def compare_rows(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> Comparison:
    """Pair two runs' ``results.jsonl`` rows by :func:`question_key` (scored questions).

    Raises:
        InputError: A run names a question twice, or the runs share no scored question
            (runs of different files).
    """
    a, b = _by_key(before, "the first run"), _by_key(after, "the second run")
    keys = [k for k in a if k in b]
    if not keys:
        raise InputError(
            f"the two runs share no scored question ({len(a)} and {len(b)} scored): "
            "compare runs of the same benchmark file"
        )
    gained = [(_label(b[k]), str(b[k].get("question", ""))) for k in keys if _flip(a, b, k)]
    lost = [(_label(b[k]), str(b[k].get("question", ""))) for k in keys if _flip(b, a, k)]
    return Comparison(
        paired=len(keys),
        only_before=len(a) - len(keys),
        only_after=len(b) - len(keys),
        all_before=sum(bool(a[k]["all_hit"]) for k in keys),
        all_after=sum(bool(b[k]["all_hit"]) for k in keys),
        any_before=sum(bool(a[k].get("any_hit")) for k in keys),
        any_after=sum(bool(b[k].get("any_hit")) for k in keys),
        recall_before=_mean(a[k].get("recall") for k in keys),
        recall_after=_mean(b[k].get("recall") for k in keys),
        views_changed=sum(
            list(a[k].get("view_message_ids") or []) != list(b[k].get("view_message_ids") or [])
            for k in keys
        ),
        gained=gained,
        lost=lost,
        p_value=mcnemar_exact(len(gained), len(lost)),
    )


def _flip(a: Mapping[Key, Mapping[str, Any]], b: Mapping[Key, Mapping[str, Any]], k: Key) -> bool:
    """Missed in ``a``, all evidence in ``b``."""
    return not a[k]["all_hit"] and bool(b[k]["all_hit"])


def _mean(values: Iterable[Any]) -> float:
    got = [float(v) for v in values if v is not None]
    return sum(got) / len(got) if got else 0.0


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "–"


def render_comparison(c: Comparison, names: tuple[str, str] = ("before", "after")) -> str:
    """The comparison as Markdown: the paired figures, then the questions that moved."""
    first, second = names
    n = c.paired
    lines = [
        f"# {first} → {second}: {n} paired scored questions",
        "",
        f"| | {first} | {second} |",
        "|---|---|---|",
        f"| all evidence | {c.all_before} ({_pct(c.all_before, n)}) | "
        f"{c.all_after} ({_pct(c.all_after, n)}) |",
        f"| any evidence | {c.any_before} ({_pct(c.any_before, n)}) | "
        f"{c.any_after} ({_pct(c.any_after, n)}) |",
        f"| gold turns shown (mean) | {c.recall_before:.1%} | {c.recall_after:.1%} |",
        "",
        f"- Views changed: {c.views_changed} of {n}.",
        f"- All evidence gained {len(c.gained)}, lost {len(c.lost)} "
        f"(exact McNemar p = {c.p_value:.3g}).",
    ]
    if c.only_before or c.only_after:
        lines.append(
            f"- Not paired: {c.only_before} scored only in {first}, "
            f"{c.only_after} only in {second}."
        )
    for title, moved in (("Gained", c.gained), ("Lost", c.lost)):
        if moved:
            lines += ["", f"## {title}", ""]
            lines += [f"- {where}: {question}" for where, question in moved]
    return "\n".join(lines) + "\n"
