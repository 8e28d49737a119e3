"""The local judge: an offline System 1 baseline (embedding + lexical evidence).

:class:`LocalDecisionModel` answers the read path's propositions with no key and no
network, from the state every backend receives. It is a *baseline*: it measures topical
evidence, not meaning, and its quality is measured like any judge's (ROC AUC of
P(needed) for gold evidence, paper §6.5).

For every (record or item, proposition) it scores

* ``sem`` — cosine similarity between the record and each query (the latest message,
  the needs, the recent dialogue) under any LangChain ``Embeddings`` (the bundled MiniLM
  by default), the best query counting, earlier dialogue discounted;
* ``lex`` — the share of the query's IDF mass the record covers (BM25 term saturation,
  IDF over the call's records), so a record holding the asked-about rare words scores high
  whatever the query's length;
* a date bonus: the message names a calendar day (or a month and year) and the record's
  session is dated that day (+0.15) or month (+0.05) — LoCoMo dev conv-26/-30/-41:
  all-evidence hit of the top 16 pooled records 0.817 → 0.820, AUC 0.894 → 0.899;
* optional bonuses (off by default: they did not help on LoCoMo dev): the record holds a
  time expression and the message asks *when*; a number the message names; a line by a
  person the message names;

and maps ``s = 0.45·sem + 0.55·lex (+ bonuses)`` to ``p = σ((s − 0.30) / 0.06)``: a strictly
increasing function, so the order of records is the order of ``s``, and ``p ≥ 0.5``
exactly when ``s ≥ 0.30`` (roughly: cosine ≥ 0.4 with a third of the rare words, which on
LoCoMo separates answer evidence from same-topic chatter about as well as any single cut).

*No longer current* is answered yes only on explicit, specific evidence: a sentence of a
LATER record (later session, date or position) or of a current message that is a statement
(questions and system notes change nothing), said by the same speaker as a sentence of the
record, holding an explicit change expression that is not negated ("moved to", "no longer",
"cancelled", "quit", "sold my" …; not "not giving up"), and sharing with that sentence two
specific content words or a name or number. A sentence that itself reports a change is not
made stale by a later one. Otherwise p = 0.05: most conversational records are never stale.
(The earlier rule — any change word anywhere in a later record sharing two words with the
record — marked a third of LoCoMo's gold evidence stale.)
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.decisions import (
    BaseDecisionModel,
    ClassifierResponse,
    NoulAnswer,
    Question,
    State,
)
from pydantic import ConfigDict, PrivateAttr

from mnemon_langgraph.errors import InputError, ModelCallError
from mnemon_langgraph.judges.propositions import Proposition, parse_question_id

__all__ = ["LocalDecisionModel", "score_to_p"]

logger = logging.getLogger(__name__)

MIDPOINT = 0.30
SCALE = 0.06
_W_SEM = 0.45
_W_LEX = 0.55
_K1 = 0.8
_B = 0.75
_CACHE = 4096
STALE_NO = 0.05
# Score bonuses (record has a time expression and the message asks "when"; a number the
# message names; a line by a person the message names). Measured on LoCoMo dev (conv-26,
# -30, -41): no gain over lexical + embedding evidence (±0.002 AUC), so they default to 0.
BONUS_WHEN = 0.0
BONUS_NUMBER = 0.0
BONUS_SPEAKER = 0.0
LINE_MIX = 0.5
# The message names a calendar date (or a month and year) and the record's session is
# dated that day (or that month): the record was said when the message asks about.
BONUS_DATE_DAY = 0.15
BONUS_DATE_MONTH = 0.05

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is
    it its itself just me more most my myself nor of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve o y also yeah yes oh wow hey hi really much lot thanks
    thank great good nice awesome amazing cool glad love like get got go going know
    think sure well one things thing way time"""
_STOP = frozenset(_STOP_TEXT.split())
_WORD = re.compile(r"[\w']+")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_TIME_EXPR = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|last (?:week|weekend|month|year|night|"
    rf"summer|winter|spring|fall|friday|saturday|sunday|monday|tuesday|wednesday|thursday)|"
    rf"next (?:week|weekend|month|year)|this (?:week|weekend|month|year|morning)|"
    rf"(?:19|20)\d\d|{_MONTHS}|since|weeks?|months?|years?|recently|just (?:got|started|"
    rf"finished|went))\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:when|what (?:year|month|date|day|time)|how long|since when|which (?:year|month))\b",
    re.IGNORECASE,
)
# Explicit change expressions. Deliberately narrow: "finished", "instead", "done", "changed"
# alone, "anymore" alone and the like are everyday conversation, not a change of a state.
_CHANGE = re.compile(
    r"\b(?:no longer|(?:n't|not) (?:\w+ ){0,2}any ?more|cancel+(?:ed|ing)|call(?:ed|ing) off|"
    r"moved (?:to|out|away|back|into|in with)|moving (?:to|out|away)|relocated|"
    r"quit|quitting|resigned|stepped down|left (?:my|our|the) (?:job|company|team|band|club)|"
    r"switched (?:to|from)|changed (?:my|our|the) (?:mind|plans?|job|name|address|number|major)|"
    r"broke up|split up|divorced|separated|sold (?:my|our|the)|gave up|given up|giving up|"
    r"postponed|rescheduled|pushed back|stopped|replaced|decided not to|not going to|won't be)\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\s*(?:what|when|where|which|who|whom|whose|why|how|did|does|do|is|are|was|were|can|"
    r"could|would|should|will|has|have|had)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:not|never|n't|don't|won't|can't|didn't|wouldn't)\s+(?:\w+\s+)?$", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_MONTH_NO = {m: i + 1 for i, m in enumerate(_MONTHS.split("|"))}
_ASKED_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTHS})|({_MONTHS})\s+(\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|({_MONTHS}))\b,?\s*((?:19|20)\d\d)\b|\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b",
    re.IGNORECASE,
)
_HEADER_SESSION = re.compile(r"Session\s+(\d+)")
_HEADER_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:\s+(\d{2}:\d{2}))?")
_SPEAKER = re.compile(r"^([^:\n]{1,40}):", re.MULTILINE)


def score_to_p(score: float) -> float:
    """The monotone map from a local score to P(yes): ``σ((score − 0.30) / 0.06)``."""
    z = (score - MIDPOINT) / SCALE
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + keep
    return word


# Words too common in conversation to show that two sentences are about the same thing.
_GENERIC_TEXT = """just new now still day days today week weeks year years month months last next
    people life make made want wanted help feel felt bit little fun happy excited hope maybe
    pretty stuff something anything everything try trying keep take start started work
    working friend friends family awesome totally definitely guess mean need said tell told
    see saw look looking come came back first gonna wanna lately recently ago soon always
    never"""
_GENERIC = frozenset(_stem(w) for w in _GENERIC_TEXT.split())


_CONTRACTED_TEXT = """don can won isn aren wasn weren didn doesn couldn wouldn shouldn haven hasn
    hadn ain let that there here what who it"""
_CONTRACTED = _STOP | frozenset(_CONTRACTED_TEXT.split())


def terms(text: str) -> list[str]:
    """Content terms of ``text``: lower-cased, stopwords dropped, lightly stemmed."""
    out = []
    for raw in _WORD.findall(text.casefold()):
        word = raw.strip("'")
        if len(word) < 2 and not word.isdigit():
            continue
        if word in _STOP or (word.endswith("'s") and word[:-2] in _STOP):
            continue
        if "'" in word.removesuffix("'s") and word.split("'")[0] in _CONTRACTED:
            continue  # i'm, don't, we've …
        out.append(_stem(word.removesuffix("'s")))
    return out


class _Doc:
    __slots__ = (
        "_clauses",
        "date",
        "id",
        "numbers",
        "order",
        "session",
        "speakers",
        "text",
        "tf",
        "times",
    )

    def __init__(self, entry: Mapping[str, Any], order: int, *, body_key: str = "text") -> None:
        self.id = str(entry.get("id", ""))
        header = str(entry.get("header") or entry.get("date") or "")
        self.text = str(entry.get(body_key) or "")
        self.order = order
        match = _HEADER_SESSION.search(header)
        self.session = int(match.group(1)) if match else None
        date = _HEADER_DATE.search(header)
        self.date = " ".join(g for g in date.groups() if g) if date else None
        self.tf = Counter(terms(self.text))
        self.numbers = set(_NUMBER.findall(self.text))
        self.times = bool(_TIME_EXPR.search(self.text))
        self.speakers = {s.strip().casefold() for s in _SPEAKER.findall(self.text)}
        self._clauses: list[_Clause] | None = None

    @property
    def clauses(self) -> list[_Clause]:
        """The record's sentences (computed on first use: only staleness reads them)."""
        if self._clauses is None:
            self._clauses = _clauses(self.text)
        return self._clauses

    def later_than(self, other: _Doc) -> bool:
        mine = (self.session, self.date) if self.session is not None else (None, self.date)
        theirs = (other.session, other.date)
        if mine[0] is not None and theirs[0] is not None and mine[0] != theirs[0]:
            return mine[0] > theirs[0]
        if mine[1] and theirs[1] and mine[1] != theirs[1]:
            return mine[1] > theirs[1]
        return self.order > other.order


class LocalDecisionModel(BaseDecisionModel):
    """Offline judge from embeddings plus lexical evidence (see the module docstring).

    Attributes:
        model: Name reported in responses.
        embeddings: Any LangChain ``Embeddings``; ``None`` loads the package default
            (``mnemon_langgraph.search.embeddings.default_embeddings()``) on first use.
        lexical_only: Skip embeddings entirely (pure lexical evidence).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "mnemon-local-1"
    embeddings: Any = None
    lexical_only: bool = False
    line_level: bool = False

    _embedder: Any = PrivateAttr(default=None)
    _loaded: bool = PrivateAttr(default=False)
    _cache: OrderedDict[str, np.ndarray] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _provider(self) -> str:
        return "mnemon-local"

    # -- embeddings ------------------------------------------------------------------------

    def _get_embedder(self) -> Any:
        if self.lexical_only:
            return None
        if self.embeddings is not None:
            return self.embeddings
        with self._lock:
            if not self._loaded:
                self._loaded = True
                try:
                    from mnemon_langgraph.search.embeddings import default_embeddings

                    self._embedder = default_embeddings()
                except Exception as error:  # offline judging must still work
                    logger.warning("local judge: no embeddings (%s); lexical evidence only", error)
                    self._embedder = None
            return self._embedder

    def _vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        embedder = self._get_embedder()
        if embedder is None:
            return {}
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            try:
                vectors = embedder.embed_documents(todo)
            except Exception as error:
                raise ModelCallError(f"local judge: embedding failed: {error}") from error
            with self._lock:
                for text, vec in zip(todo, vectors, strict=True):
                    arr = np.asarray(vec, dtype=np.float64)
                    norm = float(np.linalg.norm(arr))
                    found[text] = arr / norm if norm else arr
                    self._cache[text] = found[text]
                while len(self._cache) > _CACHE:
                    self._cache.popitem(last=False)
        return found

    # -- scoring ---------------------------------------------------------------------------

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        if not isinstance(state, Mapping):
            raise ModelCallError("local judge: state must be the read path's JSON object")
        data: Mapping[str, Any] = state
        messages = [m for m in data.get("messages") or [] if isinstance(m, Mapping)]
        needs = [
            str(n.get("text", "")) if isinstance(n, Mapping) else str(n)
            for n in data.get("needs") or []
        ]
        records = [
            _Doc(r, i) for i, r in enumerate(data.get("records") or []) if isinstance(r, Mapping)
        ]
        items = [
            _Doc(r, i) for i, r in enumerate(data.get("items") or []) if isinstance(r, Mapping)
        ]
        by_id = {d.id: d for d in [*records, *items]}

        latest, context = _queries(messages)
        query_texts = [q for q in [latest, context, *needs] if q]
        lines = {d.id: _lines(d.text) for d in by_id.values()} if self.line_level else {}
        vectors = self._vectors(
            [
                *query_texts,
                *(d.text for d in by_id.values()),
                *(x for ls in lines.values() for x in ls),
            ]
        )
        idf = _idf([*records, *items])
        avg_len = sum(sum(d.tf.values()) for d in by_id.values()) / max(1, len(by_id))
        asks_when = bool(_WHEN.search(latest))
        asked_numbers = set(_NUMBER.findall(latest))
        named = {w.casefold() for w in _WORD.findall(latest) if w[:1].isupper()}
        asked_days, asked_months = _asked_dates(latest)

        answers: dict[str, NoulAnswer] = {}
        for qid in questions:
            try:
                key = parse_question_id(qid)
            except InputError:
                continue  # unknown question: left unanswered (the caller sees it missing)
            doc = by_id.get(key.local_id)
            if doc is None:
                continue
            if key.proposition is Proposition.STALE:
                p = _stale_p(doc, records, messages)
            else:
                if key.proposition is Proposition.SATISFIES:
                    need = (
                        needs[key.need_index]
                        if key.need_index is not None and key.need_index < len(needs)
                        else ""
                    )
                    sources = [(need, 1.0), (latest, 0.6)]
                elif key.proposition is Proposition.SCREEN:
                    sources = [(latest, 1.0), *((n, 0.7) for n in needs)]
                else:  # NEEDED, ITEM_NEEDED: jointly with the dialogue and the needs
                    sources = [(latest, 1.0), (context, 0.6), *((n, 0.8) for n in needs)]
                sem = max(
                    (
                        w * _sem(vectors, q, doc.text, lines.get(doc.id, ()))
                        for q, w in sources
                        if q
                    ),
                    default=0.0,
                )
                lex = max(
                    (w * _coverage(terms(q), doc, idf, avg_len) for q, w in sources if q),
                    default=0.0,
                )
                if not vectors:  # lexical only: let lexical evidence carry the whole score
                    sem = lex
                bonus = 0.0
                if asks_when and doc.times:
                    bonus += BONUS_WHEN
                if asked_numbers & doc.numbers:
                    bonus += BONUS_NUMBER
                if named & doc.speakers:
                    bonus += BONUS_SPEAKER
                if doc.date and doc.date[:10] in asked_days:
                    bonus += BONUS_DATE_DAY
                elif doc.date and doc.date[:7] in asked_months:
                    bonus += BONUS_DATE_MONTH
                p = score_to_p(_W_SEM * sem + _W_LEX * lex + bonus)
            answers[qid] = NoulAnswer(type="noul", noul=p)
        n_in = sum(len(d.text) for d in by_id.values()) // 4
        return ClassifierResponse(
            model=self.model,
            answers=dict(answers),
            usage={"input_tokens": n_in, "output_tokens": 0, "total_tokens": n_in},
        )


def _asked_dates(text: str) -> tuple[set[str], set[str]]:
    """Calendar days (``YYYY-MM-DD``) and months (``YYYY-MM``) that ``text`` names."""
    days: set[str] = set()
    months: set[str] = set()
    for m in _ASKED_DATE.finditer(text):
        d1, mon1, mon2, d2, mon3, year, iy, im, iday = m.groups()
        if iy:
            days.add(f"{iy}-{im}-{iday}")
            months.add(f"{iy}-{im}")
            continue
        month = _MONTH_NO[(mon1 or mon2 or mon3).casefold()]
        months.add(f"{year}-{month:02d}")
        day = d1 or d2
        if day and 1 <= int(day) <= 31:
            days.add(f"{year}-{month:02d}-{int(day):02d}")
    return days, months


def _queries(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The latest user message (or latest message) and the earlier dialogue, joined."""
    if not messages:
        return "", ""
    idx = max(
        (i for i, m in enumerate(messages) if m.get("role", "user") == "user"),
        default=len(messages) - 1,
    )
    latest = str(messages[idx].get("text", ""))
    context = " ".join(str(m.get("text", "")) for i, m in enumerate(messages) if i != idx)
    return latest, context


def _idf(docs: Sequence[_Doc]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.tf.keys())
    n = len(docs) + 1
    return {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()} | {
        "": math.log(1.0 + (n + 0.5) / 0.5)
    }


def _idf_of(term: str, idf: Mapping[str, float]) -> float:
    return idf.get(term, idf[""])


def _coverage(query: Sequence[str], doc: _Doc, idf: Mapping[str, float], avg_len: float) -> float:
    """Share of the query's IDF mass the document covers, each term BM25-saturated."""
    if not query:
        return 0.0
    q = Counter(query)
    length = sum(doc.tf.values())
    norm = _K1 * (1 - _B + _B * length / max(avg_len, 1.0))
    total = got = 0.0
    for term, qtf in q.items():
        weight = _idf_of(term, idf) * (1.0 + 0.2 * (qtf - 1))
        total += weight
        tf = doc.tf.get(term, 0)
        if tf:
            got += weight * (tf * (_K1 + 1) / (tf + norm)) / (_K1 + 1) * 1.6
    return min(1.0, got / total) if total else 0.0


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """Cosine of two unit vectors (0 when either is missing)."""
    if a is None or b is None or a.shape != b.shape:
        return 0.0
    return float(a @ b)


def _lines(text: str) -> list[str]:
    """The record's lines (one per speaker turn) when it has more than one."""
    parts = [line.strip() for line in text.split("\n") if line.strip()]
    return parts if len(parts) > 1 else []


def _sem(vectors: Mapping[str, np.ndarray], query: str, text: str, lines: Sequence[str]) -> float:
    """Cosine of the query with the whole record, averaged with its best line's."""
    whole = _cos(vectors.get(query), vectors.get(text))
    if not lines:
        return whole
    best = max(_cos(vectors.get(query), vectors.get(line)) for line in lines)
    return LINE_MIX * max(best, whole) + (1 - LINE_MIX) * whole


def _has_change(sentence: str) -> bool:
    """An explicit change expression that is not negated ("not giving up", "won't quit")."""
    return any(
        not _NEGATED.search(sentence[max(0, m.start() - 24) : m.start()])
        for m in _CHANGE.finditer(sentence)
    )


def _clauses(text: str, default_speaker: str | None = None) -> list[_Clause]:
    """The sentences of ``text``, each with its speaker, content terms and change signal."""
    out: list[_Clause] = []
    speaker = default_speaker
    for line in text.split("\n"):
        match = _SPEAKER.match(line.strip())
        body = line.strip()
        if match:
            speaker = match.group(1).strip().casefold()
            body = body[match.end() :]
        for sentence in _SENTENCE.split(body):
            words = _WORD.findall(sentence)
            if not words:
                continue
            proper = {
                _stem(w.casefold().removesuffix("'s"))
                for i, w in enumerate(words)
                if i > 0 and w[:1].isupper() and terms(w)
            } | set(_NUMBER.findall(sentence))
            out.append(_Clause(speaker, frozenset(terms(sentence)), proper, _has_change(sentence)))
    return out


class _Clause:
    __slots__ = ("change", "proper", "speaker", "terms")

    def __init__(
        self, speaker: str | None, words: frozenset[str], proper: set[str], change: bool
    ) -> None:
        self.speaker = speaker
        self.terms = words
        self.proper = frozenset(proper)
        self.change = change


def _changes(later: _Clause, earlier: _Clause, names: frozenset[str]) -> int:
    """How specifically ``later`` (a sentence with a change signal) changes ``earlier``.

    0 unless both are by the same speaker (an unknown speaker matches anyone) and they share
    two specific content words, or one name or number; else the number of shared words.
    """
    if not later.change or earlier.change:
        return 0
    if later.speaker and earlier.speaker and later.speaker != earlier.speaker:
        return 0
    shared = (later.terms & earlier.terms) - _GENERIC - names
    if not shared:
        return 0
    named = shared & (later.proper | earlier.proper)
    return len(shared) if len(shared) >= 2 or named else 0


def _is_question(text: str) -> bool:
    body = _SPEAKER.sub("", text.strip(), count=1).strip()
    return body.endswith("?") or bool(_QUESTION_START.match(body))


def _stale_p(
    doc: _Doc,
    records: Sequence[_Doc],
    messages: Sequence[Mapping[str, Any]],
) -> float:
    """Yes only on an explicit, specific change said later by the same speaker.

    A later record (later session, date or position) or a later message that is a statement
    (questions and system notes change nothing) must hold a sentence with an explicit change
    expression ("moved to", "no longer", "cancelled", "quit" …), said by the speaker of a
    sentence of ``doc``, sharing two specific content words (or a name or number) with it.
    Topic overlap alone, a change about something else, or a change by someone else is no.
    """
    later: list[_Clause] = [
        c for r in records if r is not doc and r.later_than(doc) for c in r.clauses
    ]
    for m in messages:
        text = str(m.get("text", ""))
        if str(m.get("role", "user")) == "system" or not text.strip() or _is_question(text):
            continue
        speaker = m.get("speaker")
        later += _clauses(text, str(speaker).casefold() if speaker else None)
    later = [c for c in later if c.change]
    if not later:
        return STALE_NO
    names = frozenset(_stem(n) for r in records for n in r.speakers)
    best = 0
    for mine in doc.clauses:
        for theirs in later:
            best = max(best, _changes(theirs, mine, names))
    if not best:
        return STALE_NO
    return min(0.9, 0.6 + 0.1 * best)
