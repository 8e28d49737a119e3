"""Offline evidence features of the local judge: one vector per (record, proposition).

Everything here is computed from the state every judge receives (the records' headers and
texts, the messages, the planner's needs) plus the record embeddings the judge holds, so
the learned judge needs no network, no labels and no other store. The features are what a
reader would look at to decide whether a record answers a question:

* ``sem`` — the best (weighted) cosine between the record and a query (latest message,
  earlier dialogue, the needs), the record's best line mixed in when line-level is on;
* ``lex`` — the share of the query's IDF mass the record covers, BM25-saturated, so rare
  asked-about words count whatever the query's length; IDF from the whole memory's counts when
  the state carries them (``memory``: :func:`idf_of_memory`), else over the call's records;
* ``date_day`` / ``date_month`` — the message names a calendar day (or a month) and the
  record's session is dated that day (month);
* ``when_time`` — the message asks *when* and the record holds a time expression;
* ``number`` — the record holds a number the message names;
* ``speaker`` — the record has a line by a person the message names;
* ``sem_gap`` / ``lex_gap`` — the record's ``sem`` / ``lex`` minus the best of the call for
  the same proposition (a rank-like signal: how far behind the front-runner it is);
* ``neighbour`` — the best ``sem`` of the records just before and after it in the same
  session (an answer often spans a question and its reply);
* ``rrf`` / ``fused_rank`` / ``bm25_rank`` / ``dense_rank`` — the retrieval evidence the read
  path sends with each pooled record (:class:`~mnemon_langgraph.read.state.RecordEvidence`):
  its summed reciprocal rank over the turn's searches (``× k``, so one search's top hit
  counts 1), and ``1 / (1 + rank / 10)`` of its best fused, BM25 and dense rank (0 when
  unranked or when the state carries no evidence, e.g. an index item).

``sem`` is computed from the similarities the read path sends (``evidence.sim``: cosines of
the journal's *stored* vectors with the queries) whenever a record has them; only records
without them are embedded by the judge.

Words, stems and month names come from the one shared tokenizer
(:mod:`mnemon_langgraph.search._text`: Unicode words, light suffix stems); no rule keys on any
dataset's names or wording.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

import numpy as np

import mnemon_langgraph.search._text as text
from mnemon_langgraph.records._content_caches import register_content_cache
from mnemon_langgraph.search._formula import idf as bm25_idf
from mnemon_langgraph.search._fusion import RRF_K

__all__ = [
    "FEATURES",
    "Doc",
    "Query",
    "asked_dates",
    "coverage",
    "idf_of_docs",
    "idf_of_memory",
    "named_date_range",
    "split_queries",
    "stem",
    "terms",
]

FEATURES: tuple[str, ...] = (
    "sem",
    "lex",
    "date_day",
    "date_month",
    "when_time",
    "number",
    "speaker",
    "sem_gap",
    "lex_gap",
    "neighbour",
    "rrf",
    "fused_rank",
    "bm25_rank",
    "dense_rank",
)
"""Names of the feature columns, in order (the weights file names them too)."""

_K1 = 0.8
_B = 0.75
LINE_MIX = 0.5

# Conversational words the shared tokenizer indexes but that show nothing about what a
# record is about (its stopwords keep "no", "not", "again", "before" … which do matter).
_FILLER_TEXT = """also yeah yes oh wow hey hi really much lot thanks thank great good nice awesome
    amazing cool glad love like get got go going know think sure well one things thing way
    time"""
_FILLER = frozenset(text.stem(w) for w in _FILLER_TEXT.split())
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
MONTHS = text.MONTH_PATTERN
_TIME_EXPR = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|ago|last (?:week|weekend|month|year|night|"
    rf"summer|winter|spring|fall|friday|saturday|sunday|monday|tuesday|wednesday|thursday)|"
    rf"next (?:week|weekend|month|year)|this (?:week|weekend|month|year|morning)|"
    rf"(?:19|20)\d\d|{MONTHS}|since|weeks?|months?|years?|recently|just (?:got|started|"
    rf"finished|went))\b",
    re.IGNORECASE,
)
_WHEN = re.compile(
    r"\b(?:when|what (?:year|month|date|day|time)|how long|since when|which (?:year|month))\b",
    re.IGNORECASE,
)
_ASKED_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTHS})|({MONTHS})\s+(\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|({MONTHS}))\b,?\s*((?:19|20)\d\d)\b|\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b",
    re.IGNORECASE,
)
_HEADER_SESSION = re.compile(r"Session\s+(\d+)")
_HEADER_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:\s+(\d{2}:\d{2}))?")
SPEAKER = re.compile(r"^([^:\n]{1,40}):", re.MULTILINE)


def _rank_feature(rank: Any) -> float:
    """``1 / (1 + rank / 10)`` of a 0-based rank; 0 when there is none."""
    if not isinstance(rank, int | float) or rank < 0:
        return 0.0
    return 1.0 / (1.0 + float(rank) / 10.0)


def stem(word: str) -> str:
    """The shared tokenizer's stem of a case-folded word (:func:`search.text.stem`)."""
    return text.stem(word)


def terms(body: str) -> list[str]:
    """Content terms of ``body``: the shared tokenizer's terms without conversational filler."""
    return [t for t in text.terms(body) if t not in _FILLER]


_TEXTS_KEPT = 4096
"""Record texts whose parse :class:`Doc` keeps. A turn judges the same pooled records in
several waves, and the next turn pools many of them again; tokenising each text once per
wave was a third of the local judge's time (docs/results/log.md, "Read path: one pool")."""


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _text_facts(
    body: str,
) -> tuple[Mapping[str, int], frozenset[str], bool, frozenset[str]]:
    """Term frequencies, numbers, whether a time is named, and speakers of ``body``.

    Shared by every :class:`Doc` of the same text, so nothing here can be mutated.
    """
    return (
        MappingProxyType(Counter(terms(body))),
        frozenset(NUMBER.findall(body)),
        bool(_TIME_EXPR.search(body)),
        frozenset(s.strip().casefold() for s in SPEAKER.findall(body)),
    )


register_content_cache(_text_facts.cache_clear)


class Doc:
    """A record (or index item) of the state; its text's parse is shared (:func:`_text_facts`).

    Attributes:
        id: The local id the questions name.
        text: The record's text (``Speaker: …`` lines).
        order: Position in the state (the state lists records chronologically).
        session: Session number from the header, if any.
        date: ``YYYY-MM-DD[ HH:MM]`` from the header, if any.
        tf: Term frequencies of :func:`terms`.
        numbers: Numbers the text holds.
        times: Whether the text holds a time expression.
        speakers: Case-folded speaker names of its lines.
        evidence: The retrieval evidence the read path sent with it (empty if none).
    """

    __slots__ = (
        "date",
        "evidence",
        "id",
        "numbers",
        "order",
        "session",
        "speakers",
        "text",
        "tf",
        "times",
    )

    def __init__(self, entry: Mapping[str, Any], order: int) -> None:
        self.id = str(entry.get("id", ""))
        header = str(entry.get("header") or entry.get("date") or "")
        self.text = str(entry.get("text") or "")
        self.order = order
        match = _HEADER_SESSION.search(header)
        self.session = int(match.group(1)) if match else None
        date = _HEADER_DATE.search(header)
        self.date = " ".join(g for g in date.groups() if g) if date else None
        self.tf, self.numbers, self.times, self.speakers = _text_facts(self.text)
        raw = entry.get("evidence")
        self.evidence: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}

    def stored_sim(self, role: str) -> float | None:
        """The read path's stored-vector cosine with query ``role`` (``latest``, ``context``,
        ``need:<i>``), or ``None`` when the state carries none."""
        sim = self.evidence.get("sim")
        if not isinstance(sim, Mapping):
            return None
        value: Any
        if role.startswith("need:"):
            needs = sim.get("needs")
            index = int(role[5:])
            value = needs[index] if isinstance(needs, list) and index < len(needs) else None
        else:
            value = sim.get(role)
        return float(value) if isinstance(value, int | float) else None

    def retrieval(self) -> list[float]:
        """``[rrf·k, fused, bm25, dense]`` rank features (zeros without evidence).

        ``k`` is the constant the read path fused with (the evidence's ``rrf_k``), so the
        first feature counts top-ranked searches whatever ``ReadSettings.rrf_k`` is.
        """
        ev = self.evidence
        rrf, k = ev.get("rrf"), ev.get("rrf_k")
        k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else RRF_K
        return [
            float(rrf) * k if isinstance(rrf, int | float) else 0.0,
            _rank_feature(ev.get("rank")),
            _rank_feature(ev.get("bm25")),
            _rank_feature(ev.get("dense")),
        ]

    def later_than(self, other: Doc) -> bool:
        """Said after ``other``: later session, else later date, else later position."""
        if self.session is not None and other.session is not None and self.session != other.session:
            return self.session > other.session
        if self.date and other.date and self.date != other.date:
            return self.date > other.date
        return self.order > other.order


@dataclass(frozen=True)
class Query:
    """What the latest message asks, parsed once per call (the per-call features' input)."""

    latest: str
    context: str
    needs: tuple[str, ...]
    asks_when: bool
    numbers: frozenset[str]
    named: frozenset[str]
    days: frozenset[str]
    months: frozenset[str]
    every_instance: bool = False
    """A need is of kind ``ALL``: the reply needs every instance (a list, a count)."""

    @classmethod
    def parse(
        cls,
        messages: Sequence[Mapping[str, Any]],
        needs: Sequence[str],
        *,
        every_instance: bool = False,
    ) -> Query:
        """The queries and the cues of the latest message."""
        latest, context = split_queries(messages)
        days, months = asked_dates(latest)
        return cls(
            latest=latest,
            context=context,
            needs=tuple(needs),
            asks_when=bool(_WHEN.search(latest)),
            numbers=frozenset(NUMBER.findall(latest)),
            named=frozenset(text.fold(w) for w in text.capitalised_words(latest)),
            days=frozenset(days),
            months=frozenset(months),
            every_instance=every_instance,
        )

    def texts(self) -> list[str]:
        """Every non-empty query text (to embed)."""
        return [q for q in [self.latest, self.context, *self.needs] if q]

    def cues(self, doc: Doc) -> list[float]:
        """The binary cue features of ``doc``: date day/month, when+time, number, speaker."""
        day = bool(doc.date and doc.date[:10] in self.days)
        month = not day and bool(doc.date and doc.date[:7] in self.months)
        return [
            float(day),
            float(month),
            float(self.asks_when and doc.times),
            float(bool(self.numbers & doc.numbers)),
            float(bool(self.named & doc.speakers)),
        ]


def asked_dates(message: str) -> tuple[set[str], set[str]]:
    """Calendar days (``YYYY-MM-DD``) and months (``YYYY-MM``) that ``message`` names."""
    days: set[str] = set()
    months: set[str] = set()
    for m in _ASKED_DATE.finditer(message):
        d1, mon1, mon2, d2, mon3, year, iy, im, iday = m.groups()
        if iy:
            days.add(f"{iy}-{im}-{iday}")
            months.add(f"{iy}-{im}")
            continue
        month = text.month_number(mon1 or mon2 or mon3) or 1
        months.add(f"{year}-{month:02d}")
        day = d1 or d2
        if day and 1 <= int(day) <= 31:
            days.add(f"{year}-{month:02d}-{int(day):02d}")
    return days, months


def named_date_range(message: str) -> tuple[datetime, datetime] | None:
    """From the first day of the earliest month ``message`` names to the end of the latest.

    Whole months, also when a day is named: a record is dated by its session, and the
    judge's ``date_day`` cue ranks the named day first among the month's records. ``None``
    when no valid calendar month is named.
    """
    months = []
    for ym in asked_dates(message)[1]:
        year, month = (int(x) for x in ym.split("-"))
        if 1 <= month <= 12 and 1 <= year <= 9999:
            months.append((year, month))
    if not months:
        return None
    (y0, m0), (y1, m1) = min(months), max(months)
    last = calendar.monthrange(y1, m1)[1]
    return datetime(y0, m0, 1), datetime(y1, m1, last, 23, 59, 59, 999999)


def split_queries(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
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


def idf_of_docs(docs: Sequence[Doc]) -> dict[str, float]:
    """BM25 IDF of every term over ``docs``; key ``""`` holds the IDF of an unseen term."""
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.tf.keys())
    n = len(docs) + 1
    return {t: bm25_idf(n, c) for t, c in df.items()} | {"": bm25_idf(n, 0)}


def idf_of_memory(memory: Any, pool_idf: Mapping[str, float]) -> dict[str, float]:
    """BM25 IDF from the whole memory's counts (``state["memory"]``), the pool's otherwise.

    The pool is a biased sample for weighing the question's words: it was retrieved *by*
    them, so inside it the asked-about words look common (low IDF) and any rare word of the
    question that no record holds takes most of the IDF mass. Counted over every record of
    the namespace, each word weighs what it does in the memory. Terms the memory did not
    count keep the pool's IDF; a malformed ``memory`` is ignored.
    """
    if not isinstance(memory, Mapping):
        return dict(pool_idf)
    n, df = memory.get("records"), memory.get("df")
    if not isinstance(n, int) or n <= 0 or not isinstance(df, Mapping):
        return dict(pool_idf)
    out = dict(pool_idf)
    for term, count in df.items():
        if isinstance(count, int) and 0 <= count <= n:
            out[str(term)] = bm25_idf(n, count)
    out[""] = bm25_idf(n, 0)
    return out


def coverage(query: Sequence[str], doc: Doc, idf: Mapping[str, float], avg_len: float) -> float:
    """Share of the query's IDF mass the document covers, each term BM25-saturated."""
    if not query:
        return 0.0
    q = Counter(query)
    norm = _K1 * (1 - _B + _B * sum(doc.tf.values()) / max(avg_len, 1.0))
    total = got = 0.0
    for term, qtf in q.items():
        weight = idf.get(term, idf[""]) * (1.0 + 0.2 * (qtf - 1))
        total += weight
        tf = doc.tf.get(term, 0)
        if tf:
            got += weight * (tf * (_K1 + 1) / (tf + norm)) / (_K1 + 1) * 1.6
    return min(1.0, got / total) if total else 0.0


def cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """Cosine of two unit vectors (0 when either is missing)."""
    if a is None or b is None or a.shape != b.shape:
        return 0.0
    return float(a @ b)


def record_lines(text: str) -> list[str]:
    """The record's lines (one per speaker turn) when it has more than one."""
    parts = [line.strip() for line in text.split("\n") if line.strip()]
    return parts if len(parts) > 1 else []


def semantic(
    vectors: Mapping[str, np.ndarray], query: str, text: str, lines: Sequence[str]
) -> float:
    """Cosine of the query with the whole record, averaged with its best line's."""
    whole = cosine(vectors.get(query), vectors.get(text))
    if not lines:
        return whole
    best = max(cosine(vectors.get(query), vectors.get(line)) for line in lines)
    return LINE_MIX * max(best, whole) + (1 - LINE_MIX) * whole


def with_relative(base: np.ndarray, docs: Sequence[Doc], sem_of: Mapping[str, float]) -> np.ndarray:
    """Append ``sem_gap``, ``lex_gap``, ``neighbour`` and the retrieval evidence to rows.

    Args:
        base: One row per target of one proposition group: ``sem, lex`` then the cues.
        docs: The target of each row.
        sem_of: Record id → its ``sem`` for this group (neighbours are looked up here).
    """
    if base.shape[0] == 0:
        return np.zeros((0, len(FEATURES)))
    gaps = base[:, :2] - base[:, :2].max(axis=0, keepdims=True)
    neighbour = np.array([[_neighbour_sem(d, docs, sem_of)] for d in docs])
    retrieval = np.array([d.retrieval() for d in docs])
    return np.hstack([base, gaps, neighbour, retrieval])


def _neighbour_sem(doc: Doc, docs: Sequence[Doc], sem_of: Mapping[str, float]) -> float:
    best = 0.0
    for other in docs:
        if other is doc or abs(other.order - doc.order) != 1:
            continue
        if doc.session is not None and other.session != doc.session:
            continue
        best = max(best, sem_of.get(other.id, 0.0))
    return best
