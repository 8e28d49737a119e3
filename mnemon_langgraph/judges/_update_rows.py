"""The learned update detector's inputs: :data:`UPDATE_FEATURES` and the feature row of a
(later sentence, earlier sentence) pair (:func:`update_features`), and every row of a
record (:func:`candidate_rows`). The weights over them are :mod:`._update_model`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnemon_langgraph.judges._features import Doc, stem
from mnemon_langgraph.judges._update_clauses import (
    ASSISTANT,
    BROAD,
    EXPLICIT_COVERAGE,
    GENERIC,
    NOT_A_DENIAL,
    SINGLE,
    Clause,
    canon,
    clauses,
)
from mnemon_langgraph.judges._update_rules import change_score, later_clauses

__all__ = ["UPDATE_FEATURES", "candidate_rows", "update_features"]

UPDATE_FEATURES = (
    "rule",
    "cue_explicit",
    "cue_chatty",
    "cue_done",
    "cue_new",
    "denied",
    "subject_first",
    "subject_other",
    "subject_thing",
    "thing_verb",
    "shared",
    "coverage",
    "jaccard",
    "slots",
    "single_slot",
    "named",
    "new_value",
    "old_value_gone",
    "acts_on_shared",
    "earlier_tentative",
    "earlier_none",
    "earlier_negative",
    "earlier_factual",
    "earlier_reports_change",
    "earlier_assistant",
    "later_plain",
    "later_negative",
    "told_again",
    "relative_date",
    "both_schedule",
    "present",
)
"""Names of :func:`update_features`' columns, in order."""


def update_features(later: Clause, earlier: Clause, names: frozenset[str]) -> list[float] | None:
    """The learned detector's feature row of (later sentence, earlier sentence), or ``None``
    when the pair cannot be an update at all (no change signal, another speaker, a question)
    or shares too little of the earlier sentence (:data:`EXPLICIT_COVERAGE`) and the rules
    do not mark it.

    The rule detector's cues, verdict and subject tests are inputs, beside lexical overlap,
    slots, the earlier sentence's state (tentative, absent, negative, a reported change)
    and temporal cue words.
    """
    if not later.change or earlier.asked:
        return None
    other = later.speaker and earlier.speaker and later.speaker != earlier.speaker
    if other and earlier.speaker not in ASSISTANT:
        return None
    shared = (later.terms & earlier.terms) - GENERIC - names
    slots = later.slots & earlier.slots
    content = earlier.terms - GENERIC - names
    union = (later.terms | earlier.terms) - GENERIC - names
    hits = later.hits
    strengths = {h.strength for h in hits}
    subjects = {h.subject for h in hits}
    said = {h.cue for h in earlier.hits}
    rule = change_score(later, earlier, names) > 0
    coverage = min(1.0, (len(shared) + len(slots - BROAD)) / max(1, len(content)))
    if not rule and coverage < EXPLICIT_COVERAGE:
        return None  # as for the rules' chatty cues: a word in common is not a subject
    flags = (
        rule,
        3 in strengths,
        2 in strengths,
        1 in strengths,
        0 in strengths,
        bool((later.flips & earlier.terms) - NOT_A_DENIAL),
        "first" in subjects,
        "other" in subjects,
        "thing" in subjects,
        any(h.thing_verb for h in hits),
    )
    return [
        *(float(f) for f in flags),
        min(len(shared), 4) / 4,
        coverage,
        len(shared) / max(1, len(union)),
        min(len(slots), 2) / 2,
        float(bool(slots & SINGLE)),
        float(bool(shared & (later.proper | earlier.proper))),
        float(bool(later.values - earlier.terms - earlier.proper)),
        float(bool(earlier.proper - later.terms)),
        float(any(h.near & shared for h in hits)),
        float(earlier.tentative),
        float(earlier.none_state),
        float(earlier.negative),
        float(earlier.factual),
        float(earlier.strong or earlier.reported),
        float(earlier.speaker in ASSISTANT),
        float(later.plain),
        float(later.negative),
        float(bool(hits) and all(h.cue in said for h in hits)),
        float(later.relative or "schedule" in later.slots),
        float("schedule" in slots),
        float(later.present),
    ]


def candidate_rows(
    doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]
) -> list[list[float]]:
    """Feature rows (:func:`update_features`) of every sentence of ``doc`` against every
    change-bearing sentence said after it."""
    later = later_clauses(doc, records, messages)
    if not later:
        return []
    names = frozenset(canon(stem(n)) for r in records for n in r.speakers)
    rows = (update_features(t, m, names) for m in clauses(doc.text) for t in later)
    return [r for r in rows if r is not None]
