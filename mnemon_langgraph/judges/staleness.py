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
  smoked in months"), on the same share.

The looser cues act only on the speaker's own statements of fact (or of a date or time),
never on requests to the assistant, and come only from statements. Cues never count when
negated ("not giving up"), undone, hypothetical or qualified ("thinking of moving", "still
on for May"), or when the change is another person's own ("my brother moved", "my aunt
swapped her Kindle") rather than one made to the speaker's thing ("my parents cancelled
the trip"). A sentence that itself reports an explicit change is not made stale by a later
one, and topic overlap alone never is. Otherwise p = 0.05: most conversational records
are never stale. p is a strictly increasing function of one score (how specific the match
is), as for every proposition of the local judge. Labelled pairs:
:mod:`mnemon_langgraph.judges.updatedata`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from mnemon_langgraph.judges.features import MONTHS, NUMBER, SPEAKER, Doc, stem, terms
from mnemon_langgraph.judges.update_model import UpdateWeights, weights_in_use
from mnemon_langgraph.records.content_caches import register_content_cache
from mnemon_langgraph.search import text

__all__ = [
    "STALE_NO",
    "UPDATE_FEATURES",
    "candidate_rows",
    "replacements",
    "rule_stale_p",
    "stale_p",
    "update_features",
]

STALE_NO = 0.05


def _wordset(words: str, *, stemmed: bool) -> frozenset[str]:
    return frozenset(stem(w) if stemmed else w for w in words.split())


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# Explicit change expressions: said of a state, each replaces it ("moved to", "no longer",
# "switched", "cancelled"). Deliberately narrow: "finished", "done", "new" and the like are
# everyday conversation, and count only as weak cues below.
_CHANGE = _words(
    r"no longer|(?:do|does|did|is|are|was|were|have|has|ca|wo|could)?n't (?:[\w-]+ ){0,4}any ?"
    r"(?:more|longer)|(?:not|no) (?:[\w-]+ ){0,4}any ?(?:more|longer)|now,? not|no more",
    r"started \w+ing (?:\w+ ){0,2}again|cancel+(?:ed|ing)|call(?:ed|ing) off",
    r"(?:moved|moving|relocat(?:ed|ing))(?! by| me\b| to tears)",
    r"quit|quitting|resigned|stepped down|left (?:my|our|the|his|her) \w+",
    r"switched|changed (?:my|our|the|his|her|their) \w+",
    r"broke up|split up|divorced|separated|sold (?:my|our|the|his|her)|gave up|given up",
    r"giving up|postponed|rescheduled|pushed (?:\w+ ){0,2}back|delayed|closed|stopped",
    r"replaced (?:by|with)|replaced (?:my|our|the) [\w-]+ with|decided not to",
    r"not going to",
    r"won't be",
)
# Change expressions as explicit, but also common in chatter ("actually", "these days",
# "dropped"): they count only when the two sentences share much of what the earlier says.
_EXPLICIT = _words(
    r"turn(?:s|ed) out|^actually|actually\W*$|correction|i meant|scratch that|my mistake",
    r"oops|no wait|(?:got|had) (?:that|it) wrong|i was wrong|misspoke|misread|let me correct",
    r"swapp(?:ed|ing)|traded|ditched|upgraded|ported|scrapped|withdr[ae]w|pulled out",
    r"backed out|dropped|revoked|retired|shut(?: down)?|lost|got rid of|handed back",
    r"gave (?:\w+ ){0,3}back|emptied|written off|extended|brought forward|moved up",
    r"put back|slipped|bumped|shifted|raised|merged|rebooked|double-booked|decided to keep",
    r"let (?:me|it|him|her|us) (?:go|lapse)|went over to|made the jump|isn't happening",
    r"is off|'s off|are off|from now on|instead|took (?:me|us|him|her) off|been off|off the",
    r"unemployed|single again|live alone|on my own now|refused|promoted|these days|nowadays",
    r", not (?:a |an |the )?[\w:.-]+(?=\W*$|,)",
)
# Weak cues: a new state is named ("these days", "bought", "finished", "my new …"). They
# count only with stronger evidence of the same subject (:func:`_changes`).
# Corrections of what was said: the speaker's, whatever the sentence's grammatical subject.
_CORRECTION = re.compile(
    r"(?:, not|turn|actually|correction|i meant|scratch|my mistake|oops|no wait|(?:got|had) "
    r"(?:that|it)|i was wrong|misspoke|misread|let me)",
    re.IGNORECASE,
)
_NEW = _words(
    r"now|new|start(?:ed|ing)?|booked|picked up|made|registered|signed up|using|placed|become",
    r"became|lately",
)
# Weak cues of a completion: what was planned, believed or under way has happened.
_DONE = _words(
    r"bought|adopted|got|sold|finished|completed|handed in|passed|approved|done|(?:is|are) over",
    r"discharged|healed|at last|finally|accepted|ran|sat|spent|went (?:to|for)|gone|arrived",
    r"was born|joined",
)
# Change expressions a thing can undergo (the wedding was moved, the pool closed): the only
# ones that count when another person is the subject ("my parents cancelled the trip").
_THING_CHANGE = re.compile(
    r"^(?:cancel|call|mov|relocat|postpon|reschedul|push|delay|closed|no longer|n't|not|no|"
    r"scrap|merg|rais|revok|shut|pulled|backed|rebook|double|decided|bumped|slipped|shifted|"
    r"extended|brought|put back|refused|switched (?:our|my|the)|is off|'s off|are off|"
    r"isn't happening|instead|from now on)",
    re.IGNORECASE,
)
# Verbs of a change, to tell a negated change ("I didn't quit") from a negated state.
_CHANGE_VERB = _words(
    r"mov\w*|quit\w*|cancel\w*|switch\w*|giv\w* up|given up|gave up|reschedul\w*",
    r"sell\w*|sold|stepp\w* down|stop\w*|leav\w*|left|fired|clos\w*|chang\w*",
    r"postpon\w*|drop\w*|end(?:ed)? up",
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|we|we're|we've|we'll|me|us)\b", re.I)
_MINE = re.compile(r"\b(?:i|i'm|i've|i'd|we|we're|we've|me|us|my|our|mine)\b", re.I)
# A sentence whose subject is left out: "Switched to an iPhone", "Got promoted".
_ELIDED = re.compile(
    r"^\W*(?:just |finally |now |nowadays |these days,? |lately,? |please )?"
    r"(?:\w+ed|\w+ing|got|saw|sold|made|went|ran|sat|spent|bought|began|became)\b",
    re.IGNORECASE,
)
# Another person as the subject ("my brother moved", "Priya's sister broke up").
_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their|\w+'s)\s+(?:\w+\s+)?(brother|sister|friend|colleague|mum|mom|"
    r"dad|father|mother|son|daughter|boss|neighbou?rs?|cousin|aunt|uncle|partner|husband|wife|"
    r"boyfriend|girlfriend|flatmate|roommate|kids?|parents?|singer|coach|teacher|students?|"
    r"mate|family|wife|grandma|grandad|nephew|niece)\b",
    re.IGNORECASE,
)
# Intentions, attempts, hypotheticals and the unchanged: "thinking of moving", "tried to
# quit", "should stop", "still on for May", "as usual".
_HYPOTHETICAL = _words(
    r"tried|try|trying|thinking (?:of|about)|might|should|would|could|want to|wants to",
    r"i remember|i recall|used to|when i was|in the past",
    r"plan(?:ning)? to|hope to|if|maybe|whether|still|tempted|considering|wonder|imagine",
    r"perhaps|probably|weighing|i'd|we'd|i'll|we'll|was going to|were going to|as usual",
    r"as always|as planned|confirmed|stays|one day",
)
# The earlier sentence states something provisional: a plan, a belief, a state in progress.
_TENTATIVE = _words(
    r"plan(?:ning)? to|going to|want to|hope to|hoping to|thinking (?:of|about)|considering",
    r"intend to|i thought|i assumed|i believed?|apparently|pretty sure|i was told",
    r"i figured|halfway through|in the middle of|waiting for|for now|at the moment",
    r"in hospital|recovering from|saving up for|applying for",
    r"training for|learning to|i'm reading|we're renovating|paying off|on a waiting list",
)
# The earlier sentence says something is absent ("I don't have a car", "we have no kids").
_NONE_STATE = _words(
    r"(?:don't|do not|doesn't|haven't|never) (?:\w+ )?(?:have|had|own|owned|drink|eat|play|use|"
    r"smoke|drive|got)|haven't got|(?:have|has|had|got) no|not (?:on|in|learning|doing) any",
    r"between jobs|single|not seeing anyone|no \w+ (?:yet|at all)",
)
_NEGATOR = re.compile(
    r"\b(?:not|never|nobody|no one|don't|won't|can't|didn't|haven't|hasn't|isn't|aren't|"
    r"wasn't|weren't|doesn't)\b((?:\W+[\w'-]+){0,4})",
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
_WORK_AT = re.compile(
    r"\b(?:work(?:s|ing)? (?:at|for)|job (?:at|with)|start(?:ed|ing)? (?:at|with)|"
    r"employed (?:at|by))\b",
    re.IGNORECASE,
)
_AGE = re.compile(
    r"\b(?:i'm|i am|turned|turning) \d{1,3}\b(?!\s*(?::|am|pm|minutes|km|miles))|"
    r"\byears old\b",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"\S+@\S+\.\w+|\be-?mail\b", re.IGNORECASE)
# Speaker names the chunker gives an assistant's turns (its role): what the assistant said
# about the user ("Vegetarian only, noted") goes stale with the user's own change.
_ASSISTANT = frozenset({"assistant", "ai"})
# Kinds of value a sentence can state; two sentences stating the same kind (and sharing a
# word, or a kind that holds one value at a time) are about the same thing even with
# different values. Brands and everyday categories, written from general knowledge.
_SLOT_WORDS = {
    "home": "live lives living flat apartment house based rent hostel place address",
    "work": "job jobs work works working employer company office boss shift career manager "
    "hired employed unemployed role promoted",
    "diet": "vegetarian vegan pescatarian meat fish dairy diet eat eating keto gluten drink "
    "coffee tea espresso espressos milk",
    "partner": "boyfriend girlfriend partner husband wife married engaged engagement dating "
    "single divorce",
    "study": "study studying major degree course university college school programme class",
    "vehicle": "car cars drive driving golf civic passat yaris niro tesla toyota honda kia "
    "ford fiesta bmw audi volkswagen vw mg4 mg diesel petrol hybrid vespa "
    "scooter motorbike renault peugeot skoda nissan volvo fiat",
    "phone": "phone android iphone pixel samsung galaxy nokia motorola oneplus xiaomi huawei",
    "computer": "laptop windows mac macbook macos thinkpad dell xps lenovo chromebook linux pc",
    "browser": "browser chrome firefox safari opera",
    "carrier": "vodafone ee o2 giffgaff bt talktalk broadband network carrier",
    "tv": "netflix sky virgin disney hulu tv",
    "music": "spotify tidal deezer podcasts podcast audiobooks audiobook radio music",
    "commute": "commute train bus tube cycle cycling bike drive car walk walking metro tram",
    "shop": "tesco lidl aldi sainsbury asda waitrose morrisons coop supermarket shopping",
    "notes": "evernote notion obsidian onenote journal notebook",
    "watch": "fitbit garmin smartwatch whoop",
    "console": "playstation ps4 ps5 xbox nintendo console",
    "camera": "canon nikon sony fujifilm fuji leica dslr camera",
    "heating": "boiler heating radiators",
    "pets": "pet pets cat cats dog dogs puppy kitten",
    "kids": "kids children child son daughter baby born",
    "language": "language languages german spanish french japanese italian mandarin duolingo",
    "social": "social media instagram facebook tiktok twitter",
    "doctor": "gp doctor dr dentist clinic",
    "hair": "hair bob blonde brunette haircut",
    "instrument": "instrument cello piano guitar violin drums flute",
}
_SLOTS = {slot: frozenset(stem(w) for w in words.split()) for slot, words in _SLOT_WORDS.items()}
# Slots that hold one value at a time: a change of one replaces the other with no shared word.
_SINGLE = _wordset(
    """home diet partner vehicle phone computer browser carrier tv music commute shop notes
    watch console camera heating email age hair employer""",
    stemmed=False,
)
_SLOT_VOCAB = frozenset().union(*_SLOTS.values())
# Slot words that name the kind, not a value ("phone", not "iPhone").
_CATEGORY = _wordset(
    """live lives living flat apartment house based rent hostel place address job jobs work
    works working employer company office boss shift career manager hired employed role diet
    eat eating drink milk partner seeing study studying major degree course university
    college school programme class car cars drive driving phone laptop pc browser network
    carrier broadband tv streaming music radio commute supermarket shopping notes journal
    notebook watch console gaming camera boiler heating pet pets kids children child baby
    born language languages social media gp doctor dr dentist clinic hair instrument""",
    stemmed=True,
)
# Verbs negated in passing ("I'm not sure", "I don't know"): no denial of a stated fact.
_NOT_A_DENIAL = _wordset(
    """sure know think want need mind like forget worry wait seem care matter understand
    remember expect feel hesitate miss mean bother afraid recall plan have get realize
    realise believe see say mention really even just much many enough quite""",
    stemmed=True,
)
# A sentence addressed to the assistant (a request, advice, a reply to it): not a fact.
_REQUEST = _words(
    r"you|your|recommend\w*|suggest\w*|tips|ideas|advice|help|let's|let us|write (?:me|a|an)",
    r"rewrite|tell me|give me|show me|make it|create|draft|generate|explain|make a list",
)
_BROAD = frozenset({"work", "schedule", "study"})
COVERAGE = 1 / 3
"""Share of the earlier sentence's content (shared words and slots) a weak cue must be about."""
EXPLICIT_COVERAGE = 1 / 5
"""The same for the explicit but chatty cues of :data:`_EXPLICIT`."""
_SPECULATIVE = _words(r"i'll|we'll|i'd|we'd|would|could|should|might|maybe|perhaps|if|wonder")

_NEGATED = re.compile(
    r"\b(?:not|never|n't|don't|won't|can't|didn't|wouldn't|haven't|hasn't|isn't|aren't|nobody|"
    r"no one|didn't end up)\s+(?:\w+\s+){0,2}$",
    re.IGNORECASE,
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


class _Hit:
    """One change cue in a sentence: how strong, whose change, and what it acts on."""

    __slots__ = (
        "cue",
        "is_new",
        "named",
        "near",
        "objects",
        "own",
        "prefix",
        "strength",
        "subject",
        "thing_verb",
    )

    def __init__(self, sentence: str, match: re.Match[str], strength: int, mine: bool) -> None:
        prefix = sentence[: match.start()]
        after = sentence[match.end() :]
        self.strength = strength  # 3, 2: an explicit change, 1: a completion, 0: a new state
        self.prefix = frozenset(_canon(t) for t in terms(prefix))
        self.objects = frozenset(
            _canon(t) for t in terms(" ".join(sentence[match.start() :].split()[:5]))
        )
        self.own = bool(re.match(r"\W*(?:[\w-]+\s+){0,3}?(?:his|her|their|its)\b", after, re.I))
        self.thing_verb = bool(_THING_CHANGE.match(match.group()))
        self.cue = match.group().casefold()
        before = " ".join(prefix.split()[-4:])
        self.near = self.objects | {_canon(t) for t in terms(before)}  # what the cue acts on
        self.is_new = self.cue == "new"
        if self.is_new:  # what is new: the next two words ("my new team lead")
            self.objects = frozenset(_canon(t) for t in terms(" ".join(after.split()[:2])))
        words = re.sub(r"^\W*the\s+", "", prefix, flags=re.I).split()
        self.named = bool(words) and all(w[:1].isupper() for w in words)  # "Marta", "Dr Okafor"
        first = _FIRST_PERSON.search(prefix) or _CORRECTION.match(self.cue)
        if _OTHER_PERSON.search(prefix) and not first:
            self.subject = "other"
        elif first or (strength < 3 and mine) or _opens_with(sentence, match):
            self.subject = "first"
        else:
            self.subject = "thing"


def _opens_with(sentence: str, match: re.Match[str]) -> bool:
    """Whether the cue opens a sentence whose subject is left out ("Switched to an iPhone",
    "These days I cycle") — not a gerund ("Moving on, …")."""
    if sentence[: match.start()].strip(" \t\"'(-").casefold() not in {"", "just", "finally", "now"}:
        return bool(_ELIDED.match(sentence)) and not match.group().casefold().endswith("ing")
    return not match.group().casefold().endswith("ing")


class _Clause:
    __slots__ = (
        "asked",
        "change",
        "factual",
        "flips",
        "hits",
        "negative",
        "none_state",
        "plain",
        "present",
        "proper",
        "relative",
        "reported",
        "slots",
        "speaker",
        "strong",
        "tentative",
        "terms",
        "values",
    )

    def __init__(
        self, speaker: str | None, words: frozenset[str], proper: set[str], sentence: str
    ) -> None:
        self.speaker = speaker
        self.terms = frozenset(_canon(t) for t in words)
        self.proper = frozenset(_canon(t) for t in proper)
        asked = _is_question(sentence)  # a question changes nothing and states nothing
        self.asked = asked
        flips, negated_change = _negations(sentence)
        self.flips = frozenset() if asked or _HYPOTHETICAL.search(sentence) else flips
        self.hits = () if asked else _hits(sentence, negated_change)
        self.strong = any(h.strength == 3 for h in self.hits)
        self.reported = any(h.strength == 2 for h in self.hits)
        self.change = bool(self.hits or self.flips)
        self.tentative = bool(_TENTATIVE.search(sentence))
        self.none_state = bool(_NONE_STATE.search(sentence))
        self.relative = bool(_RELATIVE_DATE.search(sentence))  # inputs of the learned model
        self.present = bool(_PRESENT.search(sentence))
        self.negative = bool(re.search(r"\b(?:no|not|never|none)\b|n't", sentence, re.I))
        # a plain statement of the speaker's: what the looser cues may act on or come from
        self.plain = not asked and not _REQUEST.search(sentence)
        # …and a fact one can be wrong about later: the speaker's, or a date or time
        self.factual = (
            self.plain
            and not _SPECULATIVE.search(sentence)
            and bool(_MINE.search(sentence) or _SCHEDULE.search(sentence))
        )
        slot_words = frozenset(_canon(t) for t in (words & _SLOT_VOCAB) - _CATEGORY)
        self.values = slot_words | self.proper
        self.slots = frozenset(
            {slot for slot, vocab in _SLOTS.items() if vocab & words}
            | ({"home"} if _MOVE_HOME.search(sentence) else set())
            | ({"employer"} if _WORK_AT.search(sentence) else set())
            | ({"age"} if _AGE.search(sentence) else set())
            | ({"email"} if _EMAIL.search(sentence) else set())
            | ({"schedule"} if _SCHEDULE.search(sentence) else set())
        )


def _negations(sentence: str) -> tuple[frozenset[str], bool]:
    """Terms a negation denies ("I don't own the flat" → own, flat), and whether any
    negation denies a change instead ("I didn't quit", "the pool isn't closing")."""
    flips: set[str] = set()
    negated_change = False
    for m in _NEGATOR.finditer(sentence):
        window = m.group(1)
        if not _FIRST_PERSON.search(sentence[max(0, m.start() - 16) : m.start() + 4]):
            continue  # only the speaker's own denials: "I don't", "we aren't", "I'm not"
        if _CHANGE_VERB.search(window):
            negated_change = True
        else:
            flips |= {_canon(t) for t in terms(window)}
    return frozenset(flips - _GENERIC), negated_change


def _hits(sentence: str, negated_change: bool) -> tuple[_Hit, ...]:
    """The change cues of a statement that count (see :func:`_counts_as_change`)."""
    mine = bool(_MINE.search(sentence))
    strong = [
        _Hit(sentence, m, strength, mine)
        for strength, cue in ((3, _CHANGE), (2, _EXPLICIT))
        for m in cue.finditer(sentence)
        if _counts_as_change(sentence, m)
    ]
    weak = [
        _Hit(sentence, m, strength, mine)
        for strength, cue in ((1, _DONE), (0, _NEW))
        for m in ([] if negated_change else cue.finditer(sentence))
        if _counts_as_change(sentence, m)
    ]
    return (*strong, *weak)


def _counts_as_change(sentence: str, match: re.Match[str]) -> bool:
    """Whether one change cue reports a change the speaker stands behind.

    Not when negated ("not giving up"), undone ("not going to stop"), hypothetical or
    qualified ("thinking of moving", "tried to quit", "still on for May"), an adjective
    ("a moving ceremony") or a past change as background ("since I moved here").
    """
    prefix = sentence[: match.start()]
    if _NEGATED.search(prefix[-24:]) or _UNDONE.match(sentence[match.start() :]):
        return False
    if _HYPOTHETICAL.search(sentence) or _ADJECTIVE.search(prefix[-12:]):
        return False
    return not _BACKGROUND.search(prefix[-16:])


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
            out.append(_Clause(speaker, frozenset(terms(sentence)), proper, sentence.strip()))
    return tuple(out)


register_content_cache(clauses.cache_clear)


def _changes(later: _Clause, earlier: _Clause, names: frozenset[str]) -> int:
    """How specifically ``later`` (a sentence with a change signal) changes ``earlier``.

    0 unless both are by the same speaker (an unknown speaker matches anyone), ``earlier``
    does not itself report an explicit change, and some cue of ``later`` is about the
    same thing (:func:`_hit_fits`), or ``later`` denies what ``earlier`` asserts ("I eat
    meat" → "I haven't eaten meat in months"). The score: shared words + 2 per shared slot.
    """
    if not later.change or earlier.strong or earlier.asked or earlier.reported:
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
    if earlier.speaker in _ASSISTANT and not (slots or len(shared) >= 2):
        return 0  # an assistant's echo must restate the value, not just name someone
    score = len(shared) + 2 * len(slots) + 1
    content = earlier.terms - _GENERIC - names
    ratio = (len(shared) + len(slots - _BROAD)) / max(1, len(content))
    plain = earlier.factual and later.plain
    covered = plain and ratio >= COVERAGE
    denied = (later.flips & earlier.terms) - _NOT_A_DENIAL
    if denied and covered and not earlier.none_state:
        return score
    said = {h.cue for h in earlier.hits}  # the same change told again is no news
    fits = any(
        _hit_fits(h, later, earlier, shared, slots)
        for h in later.hits
        if h.cue not in said
        and (
            h.strength == 3 or covered or (h.strength == 2 and plain and ratio >= EXPLICIT_COVERAGE)
        )
    )
    return score if fits else 0


def _hit_fits(
    hit: _Hit, later: _Clause, earlier: _Clause, shared: frozenset[str], slots: frozenset[str]
) -> bool:
    """Whether one cue of ``later`` changes what ``earlier`` says.

    The change must be the speaker's, or a thing's ("the gig was cancelled"), or made by
    someone ``earlier`` names ("Marta switched our class"); another person's change counts
    only when it acts on the earlier statement's thing and not on their own ("my parents
    cancelled the trip", not "my aunt swapped her Kindle"). An explicit change needs the
    same subject: two shared words, a shared name or number, a shared word the change acts
    on, or a shared slot with a shared word or one value at a time. A weak cue needs more:
    a new value of a one-value slot, or an earlier plan, belief or state in progress on a
    shared word, or two shared words and a new name or number.
    """
    if hit.subject == "other":
        mentioned = hit.prefix & earlier.terms  # "my parents" → "my parents cancelled"
        if not (hit.thing_verb and (mentioned or not hit.own) and hit.objects & shared):
            return False
    if hit.subject == "thing" and not hit.thing_verb:
        known = hit.prefix - _GENERIC
        if not (hit.named and known <= earlier.terms) and not (
            hit.strength == 1 and earlier.tentative and known & earlier.terms
        ):
            return False
    named = shared & (later.proper | earlier.proper)
    single = slots & _SINGLE
    if hit.strength == 2:
        slots = slots - _BROAD
        single = single - _BROAD
    if hit.strength >= 2:
        return bool(
            len(shared) >= 2 or named or shared & hit.objects or (slots and (shared or single))
        )
    if earlier.none_state:  # "I don't have a car" → "Just bought a Civic"
        return hit.subject == "first" and not later.negative and bool(slots or shared)
    new = later.values - earlier.terms - earlier.proper
    if hit.subject == "first" and single and new & hit.near:  # "bought an iPhone"
        return True
    if hit.strength == 1 and earlier.tentative and shared & hit.near:
        return True
    # "my new team lead, Jo": a new value of the very thing the earlier statement names
    replaced = earlier.proper - later.terms  # the old value, named and not restated
    return (
        hit.subject == "first"
        and hit.is_new
        and bool(hit.objects & shared and new & later.proper and replaced)
    )


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


def stale_p(
    doc: Doc,
    records: Sequence[Doc],
    messages: Sequence[Mapping[str, Any]],
    weights: UpdateWeights | Literal["default"] | None = "default",
) -> float:
    """P(no longer current) of ``doc``: the learned detector's when ``weights`` (by default
    :func:`~.update_model.weights_in_use`) are given, else the rules'.

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


def candidate_rows(
    doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]
) -> list[list[float]]:
    """Feature rows (:func:`update_features`) of every sentence of ``doc`` against every
    change-bearing sentence said after it."""
    later = _later_clauses(doc, records, messages)
    if not later:
        return []
    names = frozenset(_canon(stem(n)) for r in records for n in r.speakers)
    rows = (update_features(t, m, names) for m in clauses(doc.text) for t in later)
    return [r for r in rows if r is not None]


def rule_stale_p(doc: Doc, records: Sequence[Doc], messages: Sequence[Mapping[str, Any]]) -> float:
    """P(no longer current) of ``doc`` by the rules: yes only on an explicit, specific later
    change."""
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


# --- The learned detector's inputs -------------------------------------------------------
# A relative or vague date or time in the later sentence: a reschedule need not name the
# old date or a new absolute one ("pushed back a week", "moved up to this Friday").
_RELATIVE_DATE = _words(
    r"(?:a|one|two|three|four|few|couple of|\d+) (?:days?|weeks?|months?|hours?|fortnight)",
    r"next (?:week|month|year|\w+day)|this (?:\w+day|weekend|week|month)|tomorrow|tonight",
    r"(?:early|mid|late|end of) (?:\w+)|day after|later|earlier|sooner|till|until|by",
)
# Words that place a state in the present ("these days", "now", "currently").
_PRESENT = _words(r"now|these days|nowadays|currently|lately|at the moment|from now on|anymore")
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


def update_features(later: _Clause, earlier: _Clause, names: frozenset[str]) -> list[float] | None:
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
    if other and earlier.speaker not in _ASSISTANT:
        return None
    shared = (later.terms & earlier.terms) - _GENERIC - names
    slots = later.slots & earlier.slots
    content = earlier.terms - _GENERIC - names
    union = (later.terms | earlier.terms) - _GENERIC - names
    hits = later.hits
    strengths = {h.strength for h in hits}
    subjects = {h.subject for h in hits}
    said = {h.cue for h in earlier.hits}
    rule = _changes(later, earlier, names) > 0
    coverage = min(1.0, (len(shared) + len(slots - _BROAD)) / max(1, len(content)))
    if not rule and coverage < EXPLICIT_COVERAGE:
        return None  # as for the rules' chatty cues: a word in common is not a subject
    flags = (
        rule,
        3 in strengths,
        2 in strengths,
        1 in strengths,
        0 in strengths,
        bool((later.flips & earlier.terms) - _NOT_A_DENIAL),
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
        float(bool(slots & _SINGLE)),
        float(bool(shared & (later.proper | earlier.proper))),
        float(bool(later.values - earlier.terms - earlier.proper)),
        float(bool(earlier.proper - later.terms)),
        float(any(h.near & shared for h in hits)),
        float(earlier.tentative),
        float(earlier.none_state),
        float(earlier.negative),
        float(earlier.factual),
        float(earlier.strong or earlier.reported),
        float(earlier.speaker in _ASSISTANT),
        float(later.plain),
        float(later.negative),
        float(bool(hits) and all(h.cue in said for h in hits)),
        float(later.relative or "schedule" in later.slots),
        float("schedule" in slots),
        float(later.present),
    ]
