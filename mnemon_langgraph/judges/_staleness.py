"""*No longer current*: the local judge's offline update detector.

A record is stale when something said LATER — a later record (later session, date or
position) or a current message that is a statement (questions and system notes change
nothing) — by the SAME person replaces what the record says. Sentence by sentence, the
later one must hold a change cue that counts, about the same subject:

* an explicit change ("moved to", "no longer", "switched", "cancelled", "has been moved
  to" …): the same subject is two shared specific words, a shared name or number, a shared
  word the change acts on, or a shared *slot* — the kind of value both state (where one
  lives, one's phone, car, diet, employer …; see ``_SLOTS``) — with a shared word or one
  that holds one value at a time;
* a correction or a change common in chatter ("turns out", "actually", "…, not Monday",
  "these days", "swapped", "dropped", "is off" …): as above, and the two sentences must
  share a fifth of what the earlier one says;
* a weak cue ("bought", "finished", "got", "my new …", "now"): a third of it, and more:
  a new value of a one-value slot ("I use an Android" → "bought an iPhone"), something
  absent becoming present ("I don't have a car" → "just bought a Civic"), or a plan, belief
  or state in progress completed ("planning to adopt a cat" → "we adopted Fig");
* a denial by the speaker of what the earlier sentence asserts ("I smoke" → "I haven't
  smoked in months"), on the same share;
* a count, ordinal or frequency restated with a new value, counting the same thing ("I've
  added 17 postcards so far" → "I've added 25 postcards so far"; :func:`_recounts`), or the
  same event at a new or shifted date ("the viewing is Sunday instead", "extended by two
  weeks").

A dated past event or a memory ("I started it today", "I remember buying …") is history:
only an explicit change undoes it.

The looser cues act only on the speaker's own statements of fact (or of a date or time),
never on requests to the assistant, and come only from statements. Cues never count when
negated ("not giving up"), undone, hypothetical or qualified ("thinking of moving", "still
on for May"), or when the change is another person's own ("my brother moved", "my aunt
swapped her Kindle") rather than one made to the speaker's thing ("my parents cancelled
the trip"). A sentence that itself reports an explicit change is not made stale by a later
one, and topic overlap alone never is. Otherwise p = 0.05: most conversational records
are never stale. p is a strictly increasing function of one score (how specific the match
is), as for every proposition of the local judge. Labelled pairs:
:mod:`mnemon_langgraph.judges._updatedata`.

The detector's parts: the cue vocabulary and sentence analysis in :mod:`._update_clauses`,
the rules in :mod:`._update_rules`, the learned detector's inputs in :mod:`._update_rows` and
its weights in :mod:`._update_model`. This module combines them and still exports every
name it did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from mnemon_langgraph.judges._features import Doc, stem
from mnemon_langgraph.judges._update_clauses import canon, clauses
from mnemon_langgraph.judges._update_model import UpdateWeights, weights_in_use
from mnemon_langgraph.judges._update_rows import UPDATE_FEATURES, candidate_rows, update_features
from mnemon_langgraph.judges._update_rules import STALE_NO, change_score, rule_stale_p

__all__ = [
    "STALE_NO",
    "UPDATE_FEATURES",
    "candidate_rows",
    "replacements",
    "rule_stale_p",
    "stale_p",
    "update_features",
]


def stale_p(
    doc: Doc,
    records: Sequence[Doc],
    messages: Sequence[Mapping[str, Any]],
    weights: UpdateWeights | Literal["default"] | None = "default",
) -> float:
    """P(no longer current) of ``doc``: the learned detector's when ``weights`` (by default
    :func:`~._update_model.weights_in_use`) are given, else the rules'.

    Learned: ``p = σ(s)`` of the best (later, earlier) sentence pair's score, so ``p >= 1/2``
    exactly when ``s >= 0`` (in ``"rules_or_model"`` mode a rule verdict also counts).
    """
    chosen = weights_in_use() if weights == "default" else weights
    if not isinstance(chosen, UpdateWeights):
        return rule_stale_p(doc, records, messages)
    rows = candidate_rows(doc, records, messages)
    s = max((chosen.score(r) for r in rows), default=-math.inf)
    if chosen.mode == "rules_or_model" and s < 0:
        rule = rule_stale_p(doc, records, messages)
        if rule >= 0.5:
            return rule
    if s == -math.inf:
        return STALE_NO
    return min(0.9, max(STALE_NO, 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, s))))))


def replacements(records: Sequence[Doc]) -> dict[str, str]:
    """Record id → id of the later record that replaces what it says (the best match).

    The replacing record is about the same thing as the one it replaces and holds its
    current value, so the judge lets it inherit the replaced record's relevance: "Which
    city do I live in?" then ranks "I moved to Rotterdam" where "I live in Leeds" would
    have been.
    """
    names = frozenset(canon(stem(n)) for r in records for n in r.speakers)
    changing = [(r, [c for c in clauses(r.text) if c.change]) for r in records]
    changing = [(r, cs) for r, cs in changing if cs]
    out: dict[str, str] = {}
    if not changing:
        return out
    for doc in records:
        best, by = 0, None
        for r, cs in changing:
            if r is doc or not r.later_than(doc):
                continue
            # a record with no words ("👍", "...") has no clause, so nothing to replace
            score = max(
                (change_score(t, m, names) for m in clauses(doc.text) for t in cs), default=0
            )
            if score > best:
                best, by = score, r.id
        if by is not None:
            out[doc.id] = by
    return out
