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
    r"giving up|postponed|rescheduled|pushed (?:\w+ ){0,2}back|delayed|closed",
    r"stopped(?! by| at| off| in| for)",
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
    r"backed out|dropped(?! off| by| in)|revoked|retired|shut(?: down)?|lost|got rid of",
    r"handed back",
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
    r"bought|adopted|got(?! to)|sold|finished|completed|handed in|passed|approved|done",
    r"(?:is|are) over",
    r"discharged|healed|at last|finally|accepted|ran|sat|spent|went (?:to|for)|gone|arrived",
    r"was born|joined",
)
# Change expressions a thing can undergo (the wedding was moved, the pool closed): the only
# ones that count when another person is the subject ("my parents cancelled the trip").
_THING_CHANGE = re.compile(
    r"^(?:cancel|call|mov|relocat|postpon|reschedul|push|delay|closed|no longer|\w*n't|not|no|"
    r"scrap|merg|rais|revok|shut|pulled|backed|rebook|double|decided|bumped|slipped|shifted|"
    r"extended|brought|put back|refused|switched (?:our|my|the)|is off|'s off|are off|"
    r"isn't happening|instead|from now on|gone|(?:is|are) over)",
    re.IGNORECASE,
)
# A thing that ceased: "the oil boiler is gone", "the studio closed".
_GONE = re.compile(r"gone|(?:is|are) over|closed|sold\b", re.IGNORECASE)
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
    r"mate|family|wife|grandma|grandad|nephew|niece|manager|landlord|landlady)\b",
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
    r"(?:i'm|i am|we're|we are) (?:currently |still )?(?:paying|building|writing)",
    r"(?:been )?meaning to|get back to|put (?:it |\w+ )?(?:down|on hold)",
    r"training for|learning to|i'm reading|we're renovating|paying off|on a waiting list",
)
# …of them, an intention (not a state in progress): a completion must act on what it intends.
_INTENT = _words(
    r"plan(?:ning)? to|going to|want to|hope to|hoping to|thinking (?:of|about)|considering",
    r"intend to|meaning to",
)
# The earlier sentence says something is absent ("I don't have a car", "we have no kids").
_NONE_STATE = _words(
    r"(?:i|we|i've|we've|i'd|we'd) (?:don't|do not|haven't|have not|never) (?:\w+ )?(?:have|had|"
    r"own|owned|drink|eat|play|use|smoke|drive|got)|(?:i|we) haven't got",
    r"(?:i|we|i've|we've) (?:have |had |got )?no|(?:i'm|we're) not (?:on|in|learning|doing) any",
    r"between jobs|single|not seeing anyone|no \w+ (?:yet|at all)",
    r"(?:misplaced|lost|can't find|couldn't find) (?:my|the|our)",
)
_NEGATOR = re.compile(
    r"\b(?:not|never|nobody|no one|don't|won't|can't|didn't|haven't|hasn't|isn't|aren't|"
    r"wasn't|weren't|doesn't)\b((?:\W+[\w'-]+){0,4})",
    re.IGNORECASE,
)
# "since I moved from …", "ever since we quit": a past change as background, not news.
_BACKGROUND = re.compile(
    r"\bsince (?:i|we)(?:'ve)? (?:\w+ )?$|\b(?:before|after|since) (?:\w+ )?$", re.IGNORECASE
)
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
    r"(?:" + MONTHS + r")\s+\d{1,2}|at \d{1,2}(?::\d\d)?\b|\d{1,2}(?::\d\d)?\s*(?:am|pm)|"
    r"(?:in|until|till|by|from|early|mid|late|end of) (?:" + MONTHS + r")|"
    r"(?:end|start|beginning) of (?:this|the|next) (?:week|month|year|term))",
    re.IGNORECASE,
)
# A date moved by an amount rather than to a new date ("pushed back a week", "extended by
# two weeks", "till next week"): a new value of the schedule all the same.
_SHIFT = re.compile(
    r"\b(?:by|back|forward|up) (?:a|an|one|two|three|four|a few|a couple of|\d+) "
    r"(?:days?|weeks?|months?|hours?|years?)\b|"
    r"\b(?:a|an|one|two|three|\d+) (?:days?|weeks?|months?|hours?) (?:later|earlier)\b|"
    r"\b(?:till|until) (?:next|the|this|\w+day)\b",
    re.IGNORECASE,
)
# A dated past event ("I started listening to it today", "set up the thermostat on 2/10"):
# history, which stays true when what it started changes; only an explicit change undoes it.
_PAST_ANCHOR = re.compile(
    r"\b(?:yesterday|today|this (?:morning|afternoon|evening)|last (?:night|week|weekend|month|"
    r"year|\w+day)|\w+ (?:days?|weeks?|months?|years?) ago|on \d{1,2}/\d{1,2})\b",
    re.IGNORECASE,
)
_MEMORY = _words(r"i remember|i recall|used to|back when|when i was")
_PAST_VERB = _words(
    r"\w+ed|got|went|bought|saw|made|took|had|ran|did|sold|set up|began|came|met|found|gave",
    r"won|paid|spent|built|sent|wrote|tried|picked up",
)
# A count or ordinal stated as where things stand ("I've added 17 so far", "on my fourth").
_COUNTS = "zero one two three four five six seven eight nine ten eleven twelve"
_ORDINALS = "zeroth first second third fourth fifth sixth seventh eighth ninth tenth"
_NUMBER_WORDS = (
    # "one" left out: "the one where …" is a pronoun more often than a count
    {w: str(i) for i, w in enumerate(_COUNTS.split(" ")) if w != "one"}
    | {w: f"#{i}" for i, w in enumerate(_ORDINALS.split(" "))}
    | {"twice": "2"}
)
_QUANTITY = re.compile(
    r"(?<![\d/:.$£€-])\b(\d+(?:,\d{3})*(?:\.\d+)?)(?:st|nd|rd|th)?\b(?![/:]\d)|\b("
    + "|".join(_NUMBER_WORDS)
    + r")\b",
    re.IGNORECASE,
)
_COUNT_FILLER = _wordset(
    "new more other extra one ones since for now so far already time times per", stemmed=True
)
_STANDING = _words(
    r"i've|we've|i have|we have|has|have|now|currently|so far|in total|total|up to|i'm on",
    r"(?:i'm|i am) \d+|these days|nowadays|(?:a|per) (?:day|week|month)|every",
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)",
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
    "vehicle": "car cars driving golf civic passat yaris niro tesla toyota honda kia "
    "ford fiesta bmw audi volkswagen vw mg4 mg diesel petrol hybrid vespa "
    "scooter motorbike renault peugeot skoda nissan volvo fiat",
    "phone": "phone android iphone pixel samsung galaxy nokia motorola oneplus xiaomi huawei",
    "computer": "laptop windows mac macbook macos thinkpad dell xps lenovo chromebook linux pc",
    "browser": "browser chrome firefox safari opera",
    "carrier": "vodafone ee o2 giffgaff bt talktalk broadband network carrier",
    "tv": "netflix sky virgin disney hulu tv",
    "music": "spotify tidal deezer podcasts podcast audiobooks audiobook radio music",
    "commute": "commute train bus tube cycle cycling bike car walk walking metro tram",
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
# Sentences, and clauses joined by a dash or semicolon ("… for 6 months now - do you have
# any tips?"): a fact and a question to the assistant are two clauses.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|\s+[-\u2013\u2014]+\s+|;\s+")

# Words too common in conversation to show that two sentences are about the same thing.
_GENERIC_TEXT = """just new now still day days today week weeks year years month months last next
    people life make made want wanted help feel felt bit little fun happy excited hope maybe
    pretty stuff something anything everything try trying keep take start started work
    working friend friends family awesome totally definitely guess mean need said tell told
    see saw look looking come came back first gonna wanna lately recently ago soon always
    never again not no nor now before after since home won don can isn aren didn doesn wasn weren
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
_NUMBER_TERMS = frozenset(_canon(stem(w)) for w in _NUMBER_WORDS)
# Words of a date or time: an event moved to a new date must share something else.
# Slots found by the value's own shape (an address, an age, an employer after "work at").
_VALUED = frozenset({"email", "age", "employer", "schedule"})
_SCHEDULE_WORDS = frozenset(
    _canon(t)
    for t in _wordset(
        """monday tuesday wednesday thursday friday saturday sunday weekend tomorrow tonight
        morning afternoon evening week month year end early mid late""",
        stemmed=True,
    )
)


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
        "verb",
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
        cue_words = self.cue.split()
        self.verb = _canon(stem(cue_words[0])) if cue_words else ""  # the cue's first word
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
        "event",
        "factual",
        "flips",
        "focus",
        "hits",
        "intent",
        "negative",
        "none_state",
        "plain",
        "present",
        "proper",
        "quantities",
        "relative",
        "reported",
        "sentence",
        "slots",
        "speaker",
        "standing",
        "strong",
        "tally",
        "tentative",
        "terms",
        "values",
        "when",
    )

    def __init__(
        self, speaker: str | None, words: frozenset[str], proper: set[str], sentence: str
    ) -> None:
        self.speaker = speaker
        self.sentence = sentence
        self.terms = frozenset(_canon(t) for t in words)
        self.proper = frozenset(_canon(t) for t in proper)
        asked = _is_question(sentence)  # a question changes nothing and states nothing
        self.asked = asked
        flips, negated_change = _negations(sentence)
        self.flips = frozenset() if asked or _HYPOTHETICAL.search(sentence) else flips
        self.hits = () if asked else _hits(sentence, negated_change)
        self.strong = any(h.strength == 3 for h in self.hits)
        self.reported = any(h.strength == 2 for h in self.hits)
        self.event = bool(
            (_PAST_ANCHOR.search(sentence) and _PAST_VERB.search(sentence))
            or _MEMORY.search(sentence)
        )
        self.quantities = _quantities(sentence)
        # where a count or ordinal stands now: a restated one with a new value replaces it
        self.standing = frozenset() if asked else _standing(sentence)
        self.tally = bool(self.standing)
        self.change = bool(self.hits or self.flips or self.tally)
        plan = _TENTATIVE.search(sentence)
        self.tentative = bool(plan)
        self.intent = bool(plan and _INTENT.search(sentence))
        absent = _NONE_STATE.search(sentence)
        self.none_state = bool(absent)
        # what is planned, under way or absent: the words after that cue
        cue = absent or plan
        focus = terms(sentence[cue.end() :]) or terms(cue.group()) if cue else []
        self.focus = frozenset(_canon(t) for t in focus)
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
            | ({"schedule"} if _SCHEDULE.search(sentence) or _SHIFT.search(sentence) else set())
        )
        # the date or time stated (a shift is always a new one)
        self.when = frozenset(m.group().casefold() for m in _SCHEDULE.finditer(sentence)) | (
            {"shift"} if _SHIFT.search(sentence) else set()
        )


def _quantities(sentence: str) -> frozenset[tuple[str, str]]:
    """(value, what is counted) of each count or ordinal of ``sentence`` ("17 new postcards"
    → ("17", "postcard"), "my fourth" → ("#4", ""), "three times a week" → ("3", "week")),
    digits or words; not dates, times, years, money, days of a month ("the 10th") or parts
    of a name ("Fitbit Charge 3")."""
    out = set()
    body = _SCHEDULE.sub(" ", sentence)
    for m in _QUANTITY.finditer(body):
        if m.group(1):
            value = m.group(1).replace(",", "")
            if (len(value) == 4 and value[:2] in {"19", "20"}) or not m.group().isdigit():
                continue  # a year, or "10th"
        else:
            value = _NUMBER_WORDS[m.group(2).casefold()]
        before = body[: m.start()].split()[-1:]
        if before and before[0][:1].isupper() and not re.match(r"I\b", before[0]):
            continue  # "Charge 3", "Pixel 6": a name
        after = [
            t
            for t in terms(" ".join(body[m.end() :].split()[:3]))
            if t not in _COUNT_FILLER and not t[:1].isdigit()
        ]
        out.add((value, _canon(after[0]) if after else ""))
    return frozenset(out)


def _standing(sentence: str) -> frozenset[tuple[str, str]]:
    """The counts of ``sentence`` said as where things stand: in a clause (between commas)
    of the speaker's with "have", "now", "so far", an ordinal … and no plan, wish or dated
    event ("I've added 17 since I started again, and I'd like to track them" → 17)."""
    out: set[tuple[str, str]] = set()
    for part in sentence.split(","):
        if _STANDING.search(part) and not (_PAST_ANCHOR.search(part) or _HYPOTHETICAL.search(part)):
            out |= _quantities(part)
    return frozenset(out) if _MINE.search(sentence) else frozenset()


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
                if i > 0 and any(ch.isupper() for ch in w) and terms(w)
            } | set(NUMBER.findall(sentence))
            out.append(_Clause(speaker, frozenset(terms(sentence)), proper, sentence.strip()))
    return tuple(out)


register_content_cache(clauses.cache_clear)


def _changes(later: _Clause, earlier: _Clause, names: frozenset[str]) -> int:
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
    if later.plain and _recounts(later, earlier, shared, content):
        return score
    if earlier.none_state and later.plain:  # on what was absent: "misplaced the screwdriver"
        acted_on = shared & earlier.focus & frozenset().union(*(h.near for h in later.hits))
        covered = covered or bool(acted_on)
    denied = (later.flips & earlier.terms) - _NOT_A_DENIAL - earlier.flips  # not told twice
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
    later: _Clause, earlier: _Clause, shared: frozenset[str], content: frozenset[str]
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
    base = {t for t in content if not t[:1].isdigit() and t not in _NUMBER_TERMS}
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


def _whose(hit: _Hit, earlier: _Clause, shared: frozenset[str]) -> bool:
    """Whether the change of ``hit`` is one made to what ``earlier`` says: the speaker's, a
    thing's named in ``earlier`` ("the gig was cancelled"; "USCIS will no longer accept" is
    not about the speaker's gig), or another person's acting on the earlier statement's
    thing ("my parents cancelled the trip", not "my aunt swapped her Kindle")."""
    if hit.subject == "other":
        mentioned = hit.prefix & earlier.terms  # "my parents" → "my parents cancelled"
        return bool(hit.thing_verb and (mentioned or not hit.own) and hit.objects & shared)
    if hit.subject != "thing":
        return True
    known = hit.prefix - _GENERIC
    if hit.thing_verb:
        return not known or bool(known & (earlier.terms | earlier.proper)) or hit.named
    if hit.named and known <= earlier.terms:
        return True
    return hit.strength == 1 and earlier.tentative and bool(known & earlier.terms)


def _hit_fits(
    hit: _Hit, later: _Clause, earlier: _Clause, shared: frozenset[str], slots: frozenset[str]
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
    single = slots & _SINGLE
    if hit.strength == 2:
        if "schedule" in slots and shared - _SCHEDULE_WORDS and later.when - earlier.when:
            return True  # the same event, a new date
        slots = slots - _BROAD
        single = single - _BROAD
    if hit.strength >= 2:  # a slot with no word in common needs an old value to replace
        single = single if earlier.values or earlier.slots & _VALUED else frozenset()
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
    if _GONE.match(hit.cue) and hit.subject != "other":  # "the oil boiler is gone"
        known = hit.prefix - _GENERIC
        if known and known <= earlier.terms:
            return True
    # "my new team lead, Jo": a new value of the very thing the earlier statement names
    replaced = earlier.proper - later.terms  # the old value, named and not restated
    return (
        hit.subject == "first"
        and hit.is_new
        and bool(hit.objects & shared and new & later.proper and replaced)
    )


def _completes(hit: _Hit, earlier: _Clause, shared: frozenset[str]) -> bool:
    """Whether a completion cue acts on what ``earlier`` plans: the planned verb done
    ("planning to adopt" → "adopted"), two planned words ("going to apply for the manager
    role" → "got the manager role") or a name; not a word of the plan said of something
    else ("thinking of supporting mental health" → "the support I got")."""
    if not earlier.intent:  # a state in progress: "halfway through X"
        return bool(shared & hit.near)
    acted = earlier.focus & shared & hit.objects  # what the cue acts on, said after it
    return len(acted) >= 2 or bool(acted & earlier.proper or (acted and hit.verb in earlier.focus))


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
            # a record with no words ("👍", "...") has no clause, so nothing to replace
            score = max((_changes(t, m, names) for m in clauses(doc.text) for t in cs), default=0)
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
