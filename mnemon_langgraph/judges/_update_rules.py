"""The update detector's rules: how specifically a later sentence changes an earlier one
(:func:`change_score`), and :func:`rule_stale_p`, the rules' P(no longer current) of a
record. The detector is described in :mod:`._staleness`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnemon_langgraph.judges._features import Doc, stem
from mnemon_langgraph.judges._update_clauses import (
    ASSISTANT,
    BROAD,
    COVERAGE,
    EXPLICIT_COVERAGE,
    GENERIC,
    GONE,
    NOT_A_DENIAL,
    NUMBER_TERMS,
    SCHEDULE_WORDS,
    SINGLE,
    VALUED,
    Clause,
    Hit,
    canon,
    clauses,
    is_question,
)

__all__ = ["STALE_NO", "change_score", "later_clauses", "rule_stale_p"]

STALE_NO = 0.05
"""P(no longer current) when nothing said later changes a record: most conversational
records are never stale."""


def change_score(later: Clause, earlier: Clause, names: frozenset[str]) -> int:
    """How specifically ``later`` (a sentence with a change signal) changes ``earlier``.

    0 unless both are by the same speaker (an unknown speaker matches anyone), ``earlier``
    does not itself report an explicit change, and some cue of ``later`` is about the
    same thing (:func:`_hit_fits`), or ``later`` denies what ``earlier`` asserts ("I eat
    meat" → "I haven't eaten meat in months"), or restates its count with a new value
    (:func:`_recounts`). A dated past event ("I started it today") is history: only an
    explicit change undoes it. The score: shared words + 2 per shared slot.
    """
    if not later.change or earlier.strong or earlier.asked or earlier.reported:
        return 0
    if (
        later.speaker
        and earlier.speaker
        and later.speaker != earlier.speaker
        and earlier.speaker not in ASSISTANT  # an assistant's echo of the user's fact
    ):
        return 0
    shared = (later.terms & earlier.terms) - GENERIC - names
    slots = later.slots & earlier.slots
    if earlier.speaker in ASSISTANT and not (slots or len(shared) >= 2):
        return 0  # an assistant's echo must restate the value, not just name someone
    score = len(shared) + 2 * len(slots) + 1
    content = earlier.terms - GENERIC - names
    ratio = (len(shared) + len(slots - BROAD)) / max(1, len(content))
    plain = earlier.factual and later.plain
    covered = plain and ratio >= COVERAGE
    if later.plain and _recounts(later, earlier, shared, content):
        return score
    if earlier.none_state and later.plain:  # on what was absent: "misplaced the screwdriver"
        acted_on = shared & earlier.focus & frozenset().union(*(h.near for h in later.hits))
        covered = covered or bool(acted_on)
    denied = (later.flips & earlier.terms) - NOT_A_DENIAL - earlier.flips  # not told twice
    if denied and covered and not earlier.none_state and not earlier.event:
        return score
    said = {h.cue for h in earlier.hits}  # the same change told again is no news
    fits = any(
        _hit_fits(h, later, earlier, shared, slots)
        for h in later.hits
        if h.cue not in said
        and (h.strength == 3 or not earlier.event)
        and (h.strength != 2 or h.verb not in earlier.terms)
        and (
            h.strength == 3 or covered or (h.strength == 2 and plain and ratio >= EXPLICIT_COVERAGE)
        )
    )
    return score if fits else 0


def _recounts(
    later: Clause, earlier: Clause, shared: frozenset[str], content: frozenset[str]
) -> bool:
    """Whether ``later`` restates a count or ordinal of ``earlier`` with a new value: both
    say where something stands ("I've added 17 since I started again" → "I've added 25
    since I started again"; "on my fourth issue" → "finished my fifth issue"), on a third
    of the earlier sentence's words (two at least), and none of the earlier values is
    said again. Dated events ("ran 5 miles yesterday") are not counts of where things stand.
    """
    if not (later.tally and earlier.tally) or earlier.event:
        return False
    if {v for v, _ in earlier.standing} & {v for v, _ in later.quantities}:
        return False  # the old value said again: no new one
    names = {t for t in earlier.proper - later.terms if not t[:1].isdigit()}
    if names and {t for t in later.proper - earlier.terms if not t[:1].isdigit()}:
        return False  # other names: another thing counted ("three on Coursera", "two on edX")
    words = {t for t in shared if not t[:1].isdigit()}
    base = {t for t in content if not t[:1].isdigit() and t not in NUMBER_TERMS}
    heads = {h for _, h in earlier.standing}
    same = heads & {h for _, h in later.standing} - {""}
    # the same thing counted: the same head noun and one more word in common ("doing yoga
    # twice a week" → "yoga classes, three times a week"), or an unnamed one ("17 new
    # ones", "my fourth") in a sentence half of whose words are said again
    if "age" in later.slots & earlier.slots:
        return True  # "I'm 41" → "I'm 42 actually"
    if same:
        return (len(words - same) >= 1 and len(words) >= COVERAGE * len(base)) or len(words) >= 2
    return "" in heads and len(words) >= 2 and len(words) >= len(base) / 2


def _whose(hit: Hit, earlier: Clause, shared: frozenset[str]) -> bool:
    """Whether the change of ``hit`` is one made to what ``earlier`` says: the speaker's, a
    thing's named in ``earlier`` ("the gig was cancelled"; "USCIS will no longer accept" is
    not about the speaker's gig), or another person's acting on the earlier statement's
    thing ("my parents cancelled the trip", not "my aunt swapped her Kindle")."""
    if hit.subject == "other":
        mentioned = hit.prefix & earlier.terms  # "my parents" → "my parents cancelled"
        return bool(hit.thing_verb and (mentioned or not hit.own) and hit.objects & shared)
    if hit.subject != "thing":
        return True
    known = hit.prefix - GENERIC
    if hit.thing_verb:
        return not known or bool(known & (earlier.terms | earlier.proper)) or hit.named
    if hit.named and known <= earlier.terms:
        return True
    return hit.strength == 1 and earlier.tentative and bool(known & earlier.terms)


def _hit_fits(
    hit: Hit, later: Clause, earlier: Clause, shared: frozenset[str], slots: frozenset[str]
) -> bool:
    """Whether one cue of ``later`` changes what ``earlier`` says.

    The change must be one made to what ``earlier`` says (:func:`_whose`). An explicit
    change needs the same subject: two shared words, a shared name (a number alone is no
    name: "a 50-pound batch", "50+ new logos"), a shared word the change acts on, a shared
    slot with a shared word or one value at a time, or the same event at a new date or
    time ("viewing on Saturday" → "the viewing is Sunday instead"). A weak cue needs more:
    a new value of a one-value slot, an earlier plan, belief or state in progress on a
    shared word, the earlier statement's thing gone ("the oil boiler is gone"), or two
    shared words and a new name.
    """
    if not _whose(hit, earlier, shared):
        return False
    words = frozenset(t for t in shared if not t[:1].isdigit())  # a number alone is no name
    named = words & (later.proper | earlier.proper)
    single = slots & SINGLE
    if hit.strength == 2:
        if "schedule" in slots and shared - SCHEDULE_WORDS and later.when - earlier.when:
            return True  # the same event, a new date
        slots = slots - BROAD
        single = single - BROAD
    if hit.strength >= 2:  # a slot with no word in common needs an old value to replace
        single = single if earlier.values or earlier.slots & VALUED else frozenset()
        acted_on = shared if hit.cue.startswith(",") else words  # ", not 6" acts on a number
        return bool(
            len(shared) >= 2 or named or acted_on & hit.objects or (slots and (shared or single))
        )
    if earlier.none_state:  # "I don't have a car" → "Just bought a Civic"
        return hit.subject == "first" and not later.negative and bool(slots or shared)
    new = later.values - earlier.terms - earlier.proper
    if hit.subject == "first" and single and new & hit.near:  # "bought an iPhone"
        return True
    if hit.strength == 1 and earlier.tentative and _completes(hit, earlier, shared):
        return True  # "planning to adopt" → "we adopted Fig"
    if (
        later.present
        and len(shared) >= 2
        and earlier.tentative
        and earlier.focus & shared & hit.near
    ):
        return True  # "we intend to repaint the room green" → "the room is green now"
    if GONE.match(hit.cue) and hit.subject != "other":  # "the oil boiler is gone"
        known = hit.prefix - GENERIC
        if known and known <= earlier.terms:
            return True
    # "my new team lead, Jo": a new value of the very thing the earlier statement names
    replaced = earlier.proper - later.terms  # the old value, named and not restated
    return (
        hit.subject == "first"
        and hit.is_new
        and bool(hit.objects & shared and new & later.proper and replaced)
    )


def _completes(hit: Hit, earlier: Clause, shared: frozenset[str]) -> bool:
    """Whether a completion cue acts on what ``earlier`` plans: the planned verb done
    ("planning to adopt" → "adopted"), two planned words ("going to apply for the manager
    role" → "got the manager role") or a name; not a word of the plan said of something
    else ("thinking of supporting mental health" → "the support I got")."""
    if not earlier.intent:  # a state in progress: "halfway through X"
        return bool(shared & hit.near)
    acted = earlier.focus & shared & hit.objects  # what the cue acts on, said after it
    return len(acted) >= 2 or bool(acted & earlier.proper or (acted and hit.verb in earlier.focus))


def later_clauses(
    doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]
) -> list[Clause]:
    """Change-bearing sentences said after ``doc``: later records, then current statements."""
    later = [c for r in records if r is not doc and r.later_than(doc) for c in clauses(r.text)]
    later = [c for c in later if c.change]
    for m in messages:
        body = str(m.get("text", ""))
        if str(m.get("role", "user")) == "system" or not body.strip() or is_question(body):
            continue
        speaker = m.get("speaker")
        said = clauses(body, str(speaker).casefold() if speaker else None)
        later += [c for c in said if c.change]
    return later


def rule_stale_p(doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]) -> float:
    """P(no longer current) of ``doc`` by the rules: yes only on an explicit, specific later
    change."""
    later = later_clauses(doc, records, messages)
    if not later:
        return STALE_NO
    names = frozenset(canon(stem(n)) for r in records for n in r.speakers)
    best = max((change_score(t, m, names) for m in clauses(doc.text) for t in later), default=0)
    if not best:
        return STALE_NO
    return min(0.9, 0.6 + 0.1 * best)
