"""Several read sources on one scale: System 1's scores weighed by how well each source's
records match the turn (``ReadSettings.experiments.source_match``; issue 45 §4).

System 1 judges each pooled record alone, so a source of *other* people's lives (or any
collection about the same things but not about this user) has records it rates as likely
as the user's own: they speak of the same things, only not of the people, places and
words the turn names. They then take pool places (later rounds page and follow the records
judged best) and View places from a source whose records do name them.

The rule, general to any sources: a source's **coverage** of the turn is the share of the
turn's search terms (the package's tokenizer over the first round's planned searches:
stemmed, stopwords out) that appear in at least one of the source's first-pool records.
Its **weight** is ``(coverage / the best source's coverage) ** power``, and the
probabilities System 1 gives its records for ``screen``, ``needed`` and ``satisfies`` are
multiplied by it, so everything that reads them (the deep wave's targets, the next rounds'
pages and follows, the View's order and its "needed" cut) sees the sources on one scale.
A source that names every term the best source names keeps weight 1; with one source, or
when the first pool holds one source only, every weight is 1 and nothing changes.
``stale`` judgments are left as they are (they say whether a record still holds, not
whether it matches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mnemon_langgraph.read._rules import Judgment
from mnemon_langgraph.search._text import terms

__all__ = ["SCALED", "judgment_scale", "on_one_scale", "source_coverage", "source_weights"]

SCALED = frozenset({"screen", "needed", "satisfies"})
"""The propositions whose probability a source's weight scales."""

_NOT_PLANNED = ("instructions", "topic")
"""Search origins that are not a wording of the turn (the standing-instruction and topic
lanes); follow searches are left out by their ``record_id``."""


def _turn_terms(searches: Iterable[Mapping[str, Any]]) -> set[str]:
    """Terms of the first round's planned searches (every source's copy is the same)."""
    out: set[str] = set()
    for s in searches:
        if s.get("round", 1) != 1 or "record_id" in s:
            continue
        if str(s.get("origin", "")).split("+")[0] in _NOT_PLANNED:
            continue
        out.update(terms(str(s.get("query", ""))))
    return out


def source_coverage(
    searches: Iterable[Mapping[str, Any]], pool: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """Read source → share of the turn's terms found in its first-pool records (only
    sources with first-pool records; empty when the turn has no terms)."""
    wanted = _turn_terms(searches)
    if not wanted:
        return {}
    seen: dict[str, set[str]] = {}
    for p in pool:
        if p.get("round", 1) != 1 or not p.get("read_source"):
            continue
        found = seen.setdefault(str(p["read_source"]), set())
        found.update(wanted.intersection(terms(str(p.get("text", "")))))
    return {name: len(found) / len(wanted) for name, found in seen.items()}


def source_weights(
    searches: Iterable[Mapping[str, Any]], pool: Sequence[Mapping[str, Any]], power: float
) -> dict[str, float]:
    """Read source → weight of its records' probabilities (see the module docstring);
    empty (every weight 1) with fewer than two sources in the first pool or ``power`` 0."""
    if power <= 0:
        return {}
    coverage = source_coverage(searches, pool)
    best = max(coverage.values(), default=0.0)
    if len(coverage) < 2 or best <= 0:
        return {}
    return {name: (c / best) ** power for name, c in coverage.items()}


def on_one_scale(
    judgments: Iterable[Judgment], weights: Mapping[str, float], source_of: Mapping[str, str]
) -> list[Judgment]:
    """``judgments`` with the probabilities of :data:`SCALED` propositions about a record of
    a weighed source multiplied by its weight (``source_of``: record id → read source)."""
    out = []
    for j in judgments:
        w = weights.get(source_of.get(j.target_id, ""), 1.0)
        out.append(replace(j, p=j.p * w) if w != 1.0 and j.proposition in SCALED else j)
    return out


def judgment_scale(
    state: Mapping[str, Any], power: float, trace: list[dict[str, Any]]
) -> Callable[[Sequence[Judgment]], list[Judgment]]:
    """What the judge node applies to each wave's judgments: :func:`on_one_scale` with the
    turn's :func:`source_weights` (the first pool's, so the same every round; the first
    round puts them in ``trace``), or ``list`` (no change) when there is nothing to weigh."""
    if power <= 0:
        return list
    pool = state.get("pool", [])
    weights = source_weights(state.get("searches", []), pool, power)
    if not weights:
        return list
    if state.get("rounds", 0) <= 1:
        trace.append({"event": "source_match", "weights": weights})
    source_of = {str(p["id"]): str(p.get("read_source", "")) for p in pool}
    return lambda judged: on_one_scale(judged, weights, source_of)
