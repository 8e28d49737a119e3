"""The update detector's reading of a sentence: its cue vocabulary and :func:`clauses`.

The vocabulary (change cues explicit, chatty and weak; whose change it is; negation,
hypotheticals and tentative forms; the *slots* a value fills; counts and dates) and the
analysis of each sentence a record or message says into a :class:`Clause`: its change cues
(:class:`Hit`), its terms, slots and values, and what state it states. How two clauses are
compared is in :mod:`._update_rules` (the rules) and :mod:`._update_rows` (the learned
detector's inputs); the whole detector is described in :mod:`._staleness`.
"""

from __future__ import annotations

import re
from functools import lru_cache

import mnemon_langgraph.search._text as text
from mnemon_langgraph.judges._features import MONTHS, NUMBER, SPEAKER, stem, terms
from mnemon_langgraph.records._content_caches import register_content_cache

__all__ = [
    "ASSISTANT",
    "BROAD",
    "COVERAGE",
    "EXPLICIT_COVERAGE",
    "GENERIC",
    "GONE",
    "NOT_A_DENIAL",
    "NUMBER_TERMS",
    "SCHEDULE_WORDS",
    "SINGLE",
    "VALUED",
    "Clause",
    "Hit",
    "canon",
    "clauses",
    "is_question",
]


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
# count only with stronger evidence of the same subject (:func:`change_score`).
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
GONE = re.compile(r"gone|(?:is|are) over|closed|sold\b", re.IGNORECASE)
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
ASSISTANT = frozenset({"assistant", "ai"})
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
SINGLE = _wordset(
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
NOT_A_DENIAL = _wordset(
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
BROAD = frozenset({"work", "schedule", "study"})
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


def canon(term: str) -> str:
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


GENERIC = frozenset(canon(stem(w)) for w in _GENERIC_TEXT.split())
NUMBER_TERMS = frozenset(canon(stem(w)) for w in _NUMBER_WORDS)
# Words of a date or time: an event moved to a new date must share something else.
# Slots found by the value's own shape (an address, an age, an employer after "work at").
VALUED = frozenset({"email", "age", "employer", "schedule"})
SCHEDULE_WORDS = frozenset(
    canon(t)
    for t in _wordset(
        """monday tuesday wednesday thursday friday saturday sunday weekend tomorrow tonight
        morning afternoon evening week month year end early mid late""",
        stemmed=True,
    )
)


class Hit:
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
        self.prefix = frozenset(canon(t) for t in terms(prefix))
        self.objects = frozenset(
            canon(t) for t in terms(" ".join(sentence[match.start() :].split()[:5]))
        )
        self.own = bool(re.match(r"\W*(?:[\w-]+\s+){0,3}?(?:his|her|their|its)\b", after, re.I))
        self.thing_verb = bool(_THING_CHANGE.match(match.group()))
        self.cue = match.group().casefold()
        cue_words = self.cue.split()
        self.verb = canon(stem(cue_words[0])) if cue_words else ""  # the cue's first word
        before = " ".join(prefix.split()[-4:])
        self.near = self.objects | {canon(t) for t in terms(before)}  # what the cue acts on
        self.is_new = self.cue == "new"
        if self.is_new:  # what is new: the next two words ("my new team lead")
            self.objects = frozenset(canon(t) for t in terms(" ".join(after.split()[:2])))
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


class Clause:
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
        self.terms = frozenset(canon(t) for t in words)
        self.proper = frozenset(canon(t) for t in proper)
        asked = is_question(sentence)  # a question changes nothing and states nothing
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
        self.focus = frozenset(canon(t) for t in focus)
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
        slot_words = frozenset(canon(t) for t in (words & _SLOT_VOCAB) - _CATEGORY)
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
        out.add((value, canon(after[0]) if after else ""))
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
            flips |= {canon(t) for t in terms(window)}
    return frozenset(flips - GENERIC), negated_change


def _hits(sentence: str, negated_change: bool) -> tuple[Hit, ...]:
    """The change cues of a statement that count (see :func:`_counts_as_change`)."""
    mine = bool(_MINE.search(sentence))
    strong = [
        Hit(sentence, m, strength, mine)
        for strength, cue in ((3, _CHANGE), (2, _EXPLICIT))
        for m in cue.finditer(sentence)
        if _counts_as_change(sentence, m)
    ]
    weak = [
        Hit(sentence, m, strength, mine)
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
def clauses(said: str, default_speaker: str | None = None) -> tuple[Clause, ...]:
    """The sentences of ``said``, each with its speaker, content terms and change signal.

    Cached by text: a call compares every record with every later one.
    """
    out: list[Clause] = []
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
            out.append(Clause(speaker, frozenset(terms(sentence)), proper, sentence.strip()))
    return tuple(out)


register_content_cache(clauses.cache_clear)


def is_question(said: str) -> bool:
    body = SPEAKER.sub("", said.strip(), count=1).strip()
    return body.endswith("?") or bool(_QUESTION_START.match(body))


# A relative or vague date or time in the later sentence: a reschedule need not name the
# old date or a new absolute one ("pushed back a week", "moved up to this Friday").
_RELATIVE_DATE = _words(
    r"(?:a|one|two|three|four|few|couple of|\d+) (?:days?|weeks?|months?|hours?|fortnight)",
    r"next (?:week|month|year|\w+day)|this (?:\w+day|weekend|week|month)|tomorrow|tonight",
    r"(?:early|mid|late|end of) (?:\w+)|day after|later|earlier|sooner|till|until|by",
)
# Words that place a state in the present ("these days", "now", "currently").
_PRESENT = _words(r"now|these days|nowadays|currently|lately|at the moment|from now on|anymore")
