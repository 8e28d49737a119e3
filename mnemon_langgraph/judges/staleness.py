"""*No longer current*: the local judge's offline update detector.

A record is stale when something said LATER — a later record (later session, date or
position) or a current message that is a statement (questions and system notes change
nothing) — by the SAME person explicitly replaces what the record says. The evidence the
detector needs, sentence by sentence:

* a change expression that is not negated ("moved to", "no longer", "switched to",
  "cancelled", "has been moved to", "now …ing in" …; not "not giving up", "thinking of
  moving"), and
* the same subject: two specific shared content words, or a shared name or number, or one
  shared specific word plus a shared *slot* — the kind of value both sentences state (where
  one lives, a date, what one eats, where one works …; see :data:`SLOTS`).

A sentence that itself reports a change is not made stale by a later one, and topic
overlap alone (same-topic chatter) never is. Otherwise p = 0.05: most conversational
records are never stale. p is a strictly increasing function of one score (how specific
the match is), as for every proposition of the local judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from mnemon_langgraph.judges.features import MONTHS, NUMBER, SPEAKER, Doc, stem, terms
from mnemon_langgraph.search import text
from mnemon_langgraph.storage.content_caches import register_content_cache

__all__ = ["STALE_NO", "replacements", "stale_p"]

STALE_NO = 0.05

# Explicit change expressions. Deliberately narrow: "finished", "done", "changed" alone,
# "anymore" alone and the like are everyday conversation, not a change of a state.
_CHANGE = re.compile(
    r"\b(?:no longer|(?:n't|not|no) (?:[\w-]+ ){0,4}any ?more|now,? not|"
    r"started \w+ing (?:\w+ ){0,2}again|"
    r"cancel+(?:ed|ing)|call(?:ed|ing) off|"
    r"(?:moved|moving|relocat(?:ed|ing))(?! by| me\b| to tears)|"
    r"quit|quitting|resigned|stepped down|left (?:my|our|the|his|her) \w+|"
    r"switched|changed (?:my|our|the|his|her|their) \w+|"
    r"broke up|split up|divorced|separated|sold (?:my|our|the|his|her)|gave up|given up|"
    r"giving up|postponed|rescheduled|pushed (?:\w+ ){0,2}back|delayed|closed|stopped|"
    r"replaced (?:by|with)|decided not to|not going to|won't be)\b",
    re.IGNORECASE,
)
# Change expressions a thing can undergo (the wedding was moved, the pool closed): the only
# ones that count when the sentence has no first-person subject.
_THING_CHANGE = re.compile(
    r"^(?:cancel|call|mov|relocat|postpon|reschedul|push|delay|closed|no longer|n't|not|no)",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|we|we're|we've|we'll|me|us)\b", re.I)
# Another person as the subject ("my brother moved", "Priya's sister broke up").
_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their|\w+'s)\s+(?:\w+\s+)?(brother|sister|friend|colleague|mum|mom|"
    r"dad|father|mother|son|daughter|boss|neighbou?r|cousin|aunt|uncle|partner|husband|wife|"
    r"boyfriend|girlfriend|flatmate|roommate|kids?|parents?|singer|coach|teacher|students?)\b",
    re.IGNORECASE,
)
# Intentions, attempts and hypotheticals: "thinking of moving", "tried to quit", "should stop".
_HYPOTHETICAL = re.compile(
    r"\b(?:tried|try|trying|thinking (?:of|about)|might|should|would|could|want to|wants to|"
    r"plan(?:ning)? to|hope to|if|maybe|whether|still)\b",
    re.IGNORECASE,
)
# "since I moved from …", "ever since we quit": a past change as background, not news.
_BACKGROUND = re.compile(r"\bsince (?:i|we)(?:'ve)? (?:\w+ )?$", re.IGNORECASE)
# "a moving ceremony", "so moving": the adjective, not a move.
_ADJECTIVE = re.compile(r"\b(?:a|so|very|really|most|quite)\s+$", re.IGNORECASE)
_UNDONE = re.compile(r"^not going to (?:give up|stop|quit|cancel|change|move)", re.IGNORECASE)
# Where the moved thing went: a day or month is a reschedule, not a new home.
_MOVE_HOME = re.compile(
    r"\b(?:moved|moving|relocat(?:ed|ing))\s+(?:back\s+)?(?:to|into|in with|out|away|abroad|"
    r"there|here|house|home)\b(?!\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday|the \d|\d|mid|early|late|next|(?:" + MONTHS + r")))",
    re.IGNORECASE,
)
_SCHEDULE = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|tomorrow|tonight|"
    r"next (?:week|month|year)|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + MONTHS + r")|"
    r"(?:" + MONTHS + r")\s+\d{1,2}|at \d{1,2}(?::\d\d)?\b|\d{1,2}(?::\d\d)?\s*(?:am|pm))",
    re.IGNORECASE,
)
# Speaker names the chunker gives an assistant's turns (its role): what the assistant said
# about the user ("Vegetarian only, noted") goes stale with the user's own change.
_ASSISTANT = frozenset({"assistant", "ai"})
# Slots that hold one value at a time: a change of one replaces the other with no shared word.
_SINGLE = frozenset({"home", "diet", "partner"})
# Kinds of value a sentence can state; two sentences stating the same kind (and sharing a
# word, or both about one's home) are about the same thing even with different values.
_SLOT_WORDS = {
    "home": "live lives living flat apartment house based rent hostel",
    "work": "job work works working employer company office boss shift career manager hired",
    "diet": "vegetarian vegan pescatarian meat fish dairy diet eat eating keto gluten drink",
    "partner": "boyfriend girlfriend partner husband wife married engaged engagement dating",
    "study": "study studying major degree course university college school programme class",
}
_SLOTS = {slot: frozenset(stem(w) for w in words.split()) for slot, words in _SLOT_WORDS.items()}

_NEGATED = re.compile(
    r"\b(?:not|never|n't|don't|won't|can't|didn't|wouldn't)\s+(?:\w+\s+)?$", re.IGNORECASE
)
_QUESTION_START = re.compile(
    r"^\s*(?:what|when|where|which|who|whom|whose|why|how|did|does|do|is|are|was|were|can|"
    r"could|would|should|will|has|have|had)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

# Words too common in conversation to show that two sentences are about the same thing.
_GENERIC_TEXT = """just new now still day days today week weeks year years month months last next
    people life make made want wanted help feel felt bit little fun happy excited hope maybe
    pretty stuff something anything everything try trying keep take start started work
    working friend friends family awesome totally definitely guess mean need said tell told
    see saw look looking come came back first gonna wanna lately recently ago soon always
    never again not no nor now before after home won don can isn aren didn doesn wasn weren
    couldn wouldn shouldn haven hasn hadn ain let"""


def _canon(term: str) -> str:
    """``term`` with a final ``e`` run dropped and a final doubled consonant undoubled.

    The shared tokenizer's stemmer is light (``search.text.stem``: suffixes only), so one
    word can leave two stems: "running" → ``runn`` beside "run", "coffees" → ``coffe``
    beside "coffee", "smoking" → ``smok`` beside "smoke". Comparing sentences on these
    forms lets "I run 10k every morning" and "I gave up running" share their subject; a
    form shorter than three letters keeps the stem ("tree" stays ``tree``).
    """
    base = term.rstrip("e")
    if len(base) >= 2 and base[-1] == base[-2] and base[-1] not in "aeiouy0123456789":
        base = base[:-1]
    return base if len(base) >= 3 else term


_GENERIC = frozenset(_canon(stem(w)) for w in _GENERIC_TEXT.split())


class _Clause:
    __slots__ = ("asked", "change", "objects", "proper", "slots", "speaker", "terms")

    def __init__(
        self, speaker: str | None, words: frozenset[str], proper: set[str], sentence: str
    ) -> None:
        self.speaker = speaker
        self.terms = frozenset(_canon(t) for t in words)
        self.proper = frozenset(_canon(t) for t in proper)
        asked = _is_question(sentence)  # a question changes nothing and states nothing
        self.asked = asked
        counted = [
            m for m in _CHANGE.finditer(sentence) if not asked and _counts_as_change(sentence, m)
        ]
        self.change = bool(counted)
        self.objects = frozenset(
            _canon(t) for m in counted for t in terms(" ".join(sentence[m.start() :].split()[:5]))
        )
        self.slots = frozenset(
            {slot for slot, vocab in _SLOTS.items() if vocab & words}
            | ({"home"} if _MOVE_HOME.search(sentence) else set())
            | ({"schedule"} if _SCHEDULE.search(sentence) else set())
        )


def _counts_as_change(sentence: str, match: re.Match[str]) -> bool:
    """Whether one change expression reports an actual change the speaker stands behind.

    Not when negated ("not giving up"), undone ("not going to stop"), hypothetical or
    qualified ("thinking of moving", "tried to quit", "I still love it"), said of another
    person ("my brother moved"), or — with no first-person subject — a change only a person
    makes ("the store replaced its tills", "the team stopped for the break").
    """
    prefix = sentence[: match.start()]
    if _NEGATED.search(prefix[-24:]) or _UNDONE.match(sentence[match.start() :]):
        return False
    if _HYPOTHETICAL.search(sentence) or _ADJECTIVE.search(prefix[-12:]):
        return False
    if _BACKGROUND.search(prefix[-16:]):
        return False
    first = bool(_FIRST_PERSON.search(prefix))
    if not first and _OTHER_PERSON.search(prefix):
        return False
    return first or bool(_THING_CHANGE.match(match.group()))


@lru_cache(maxsize=8192)
def clauses(said: str, default_speaker: str | None = None) -> tuple[_Clause, ...]:
    """The sentences of ``said``, each with its speaker, content terms and change signal.

    Cached by text: a call compares every record with every later one.
    """
    out: list[_Clause] = []
    speaker = default_speaker
    for line in said.replace("\u2019", "'").split("\n"):  # don’t → don't
        match = SPEAKER.match(line.strip())
        body = line.strip()
        if match:
            speaker = match.group(1).strip().casefold()
            body = body[match.end() :]
        for sentence in _SENTENCE.split(body):
            words = text.words(sentence)
            if not words:
                continue
            proper = {
                stem(text.fold(w))
                for i, w in enumerate(words)
                if i > 0 and w[:1].isupper() and terms(w)
            } | set(NUMBER.findall(sentence))
            out.append(_Clause(speaker, frozenset(terms(sentence)), proper, sentence))
    return tuple(out)


register_content_cache(clauses.cache_clear)


def _changes(later: _Clause, earlier: _Clause, names: frozenset[str]) -> int:
    """How specifically ``later`` (a sentence with a change signal) changes ``earlier``.

    0 unless both are by the same speaker (an unknown speaker matches anyone), ``earlier``
    does not itself report a change, and they are about the same thing: two shared
    specific words, a shared name or number, or a shared slot (the same kind of value)
    with one shared word, one shared word the change acts on ("sold the boat"), or the same
    one-value slot (where one lives, one's diet, one's partner). The score: shared words
    + 2 per shared slot.
    """
    if not later.change or earlier.change or earlier.asked:
        return 0
    if (
        later.speaker
        and earlier.speaker
        and later.speaker != earlier.speaker
        and earlier.speaker not in _ASSISTANT  # an assistant's echo of the user's fact
    ):
        return 0
    shared = (later.terms & earlier.terms) - _GENERIC - names
    slots = later.slots & earlier.slots
    named = shared & (later.proper | earlier.proper)
    if earlier.speaker in _ASSISTANT and not (slots or len(shared) >= 2):
        return 0  # an assistant's echo must restate the value, not just name someone
    same = (
        len(shared) >= 2
        or named
        or shared & later.objects
        or (slots and (shared or slots & _SINGLE))
    )
    return len(shared) + 2 * len(slots) if same else 0


def _is_question(said: str) -> bool:
    body = SPEAKER.sub("", said.strip(), count=1).strip()
    return body.endswith("?") or bool(_QUESTION_START.match(body))


def _later_clauses(
    doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]
) -> list[_Clause]:
    """Change-bearing sentences said after ``doc``: later records, then current statements."""
    later = [c for r in records if r is not doc and r.later_than(doc) for c in clauses(r.text)]
    later = [c for c in later if c.change]
    for m in messages:
        body = str(m.get("text", ""))
        if str(m.get("role", "user")) == "system" or not body.strip() or _is_question(body):
            continue
        speaker = m.get("speaker")
        said = clauses(body, str(speaker).casefold() if speaker else None)
        later += [c for c in said if c.change]
    return later


def stale_p(doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]) -> float:
    """P(no longer current) of ``doc``: yes only on an explicit, specific later change."""
    later = _later_clauses(doc, records, messages)
    if not later:
        return STALE_NO
    names = frozenset(_canon(stem(n)) for r in records for n in r.speakers)
    best = max((_changes(t, m, names) for m in clauses(doc.text) for t in later), default=0)
    if not best:
        return STALE_NO
    return min(0.9, 0.6 + 0.1 * best)


def replacements(records: Sequence[Doc]) -> dict[str, str]:
    """Record id → id of the later record that replaces what it says (the best match).

    The replacing record is about the same thing as the one it replaces and holds its
    current value, so the judge lets it inherit the replaced record's relevance: "Which
    city do I live in?" then ranks "I moved to Rotterdam" where "I live in Leeds" would
    have been.
    """
    names = frozenset(_canon(stem(n)) for r in records for n in r.speakers)
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
            score = max(_changes(t, m, names) for m in clauses(doc.text) for t in cs)
            if score > best:
                best, by = score, r.id
        if by is not None:
            out[doc.id] = by
    return out
