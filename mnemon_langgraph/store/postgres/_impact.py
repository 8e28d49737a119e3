"""BM25 computed in PostgreSQL, equal to the embedded :class:`~._search.bm25.BM25Index`.

Same tokens (one Python tokenizer, :func:`lexical_terms`), same formula
(:mod:`mnemon_langgraph.search._formula`: the Lucene variant, ``k1 = 1.5``, ``b = 0.75``),
which the SQL below writes out::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = Σ_{t in set(q)} idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))

``N`` and the total length come from ``mnemon_namespaces``; ``df`` from ``mnemon_terms``;
both are maintained in the write transaction, so they count exactly the live records of
the namespace, as the embedded index counts its live documents at query time. Candidates
are the records whose namespaced ``terms`` array overlaps the query's (``&&``, GIN index);
each query term's frequency is read with ``array_position`` (see :func:`bm25_sql`).
``ts_rank`` is not used: it is not BM25 (no IDF, no length saturation).

Ties are broken by ``seq`` (older first), as in the embedded index. The embedded index
computes in float32 and PostgreSQL in float8, so scores agree to about 1e-6 relative and
orders agree except between records whose scores differ by less than that.

**Impact postings, score at a time** (schema versions 4 and 5). A query with common words (a
speaker's name, "like", "really"; a 20-word passage) holds terms found in a large share of the
namespace, so the plain query costs time linear in the namespace: every record holding any
query term is read from the heap, a scattered row each (the figures at 1M records are in
docs/results/postgres-history.md). ``mnemon_postings`` holds one compact row per (record,
distinct term) with its
*impact* (:func:`impact`), written in the ingest transaction and gone with its record, under a
B-tree on ``(term, seq)`` that includes the impact. A common term (more than
:data:`PACK_MIN` postings) also has a **pack** (``mnemon_packs``, version 5): its postings
sorted by impact, highest first, in parts of :data:`PACK_PART` postings, each part one row of
two ``bytea`` (``seq`` and impact), so a term's best postings cost a few rows instead of one
index entry each (at 1M records those entries were the whole cost of a common-word
query). A pack covers the term's postings up to its ``upto`` seq; the ones written
since are read from the index, and the term is packed again once they are many
(:func:`needs_pack`, after the ingest that crossed the line, under the namespace's write
lock, so no writer of the namespace has a ``seq`` below ``upto`` still uncommitted). A
deleted record's postings are taken out of the parts holding them in the delete's
transaction, so no pack remembers a deleted record's words.

The caller (:meth:`PostgresStore._bm25`) reads each term's new postings whole and the first
parts of its pack (:data:`DELTA_SQL`, :data:`PARTS_SQL`; terms without a pack whole), sums
the exact contributions per record (:func:`candidate_bounds`, numpy), and scores the
candidates with the highest upper bounds exactly on their record rows (:func:`bm25_sql` with
``match`` on ``seq``: the same expression as the full query, so the same floats). A record
whose posting of a term was not read gets at most ``idf · cut · scale`` from it
(:func:`cut_bound`, :func:`impact_scale`), ``cut`` being the lowest impact of the parts read;
once the ``k``-th exact score ``theta`` is strictly above both the bound of every record
never named (the sum of the cut bounds) and the upper bound of every candidate not scored,
the top ``k`` is exact. If not, deeper cuts are planned from the impacts already read
(:func:`plan_depths`) and their parts read in another round. Why not a PostgreSQL
extension (pg_search, VectorChord-bm25): their scores are not the embedded index's, and
equality with it is a requirement.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemon_langgraph.search._bm25 import tokenize
from mnemon_langgraph.search._formula import BM25_B, BM25_K1, idf

__all__ = [
    "COLUMN_TERMS_MAX",
    "DEEPEN_MARGIN",
    "DELTA_SQL",
    "FIRST_PARTS",
    "FRAME_MIN",
    "FULL_BELOW_POSTINGS",
    "IMPACT_SLACK",
    "LOOKUP_SQL",
    "PACK_GROWTH",
    "PACK_MIN",
    "PACK_PART",
    "PARTS_SQL",
    "CorpusStats",
    "PackPart",
    "TermRead",
    "TermStats",
    "bm25_params",
    "bm25_sql",
    "candidate_bounds",
    "cut_bound",
    "decode_array",
    "impact",
    "impact_scale",
    "int_array",
    "lexical_terms",
    "namespaced",
    "needs_pack",
    "pack_parts",
    "plan_depths",
    "reaches",
    "reaching",
    "record_bounds",
    "term_bound",
    "term_counts",
]

_SLACK = 1e-9  # relative float slack: a bound must be *strictly* below the threshold


@dataclass(frozen=True)
class TermStats:
    """What bounds one query term's contribution: its ``df`` and, over the records that
    held it, the largest term frequency and the shortest length (the column defaults,
    ``1e30`` and ``0``, are the loosest bounds: "unknown"); ``packed``, how many of its
    postings its pack holds (0: none), and ``upto``, the pack's last ``seq``: the term's
    postings above it were written since and are read from the index. ``coded``: the
    term has a code row in its namespace's frame (:mod:`._frames`)."""

    df: int
    max_tf: float
    min_len: int
    packed: int = 0
    upto: int = 0
    coded: bool = False


def term_bound(n_docs: int, avgdl: float, stats: TermStats) -> float:
    """The most term ``t`` can add to any record's score: ``idf · tf / (tf + k1 · norm)``.

    That expression grows with ``tf`` and shrinks with the record's length, so
    ``max_tf`` and ``min_len`` bound it from above. Both are maintained on insert with
    ``GREATEST`` / ``LEAST`` and left alone on delete: a deleted record can only have held
    the maximum, so the stored values stay upper bounds (looser, never wrong). With the
    "unknown" defaults the bound is ``idf`` itself. It caps a cut's bound
    (:func:`cut_bound`) where the length scale makes that one looser.
    """
    weight = idf(n_docs, stats.df)
    tf = float(stats.max_tf)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * stats.min_len / avgdl)
    return weight * tf / (tf + norm)


def reaches(total: float, threshold: float) -> bool:
    """``total`` may reach ``threshold`` (float slack on the side of keeping records)."""
    return total * (1 + _SLACK) + 1e-12 >= threshold


def reaching(bounds: np.ndarray, threshold: float) -> np.ndarray:
    """Which of ``bounds`` may reach ``threshold`` (:func:`reaches`, element-wise)."""
    return np.asarray(bounds * (1 + _SLACK) + 1e-12 >= threshold)


@dataclass(frozen=True)
class CorpusStats:
    """A namespace's BM25 statistics for one query: live records, current and reference
    average length (:func:`impact`), each query term's :class:`TermStats`, and the
    namespace's frame as ``(records it covers, their last seq)`` (``None``: no frame)."""

    docs: int
    avgdl: float
    ref_avgdl: float
    stats: dict[str, TermStats]
    frame: tuple[int, int] | None = None


IMPACT_SLACK = 1e-6
"""Relative slack on a cut's bound: ``impact`` is stored as ``real`` (float4, relative
rounding ≤ 6e-8), so the true impact of an unread posting may exceed the stored cut by that
much; 1e-6 covers it with room, and only makes a bound looser."""


def impact(tf: float, length: int, ref_avgdl: float) -> float:
    """A posting's impact: ``tf / (tf + k1 · (1 - b + b · length / A_ref))``.

    The BM25 contribution of the term to the record, divided by the term's IDF, at the
    namespace's *reference* average length ``A_ref`` (``mnemon_namespaces.ref_avgdl``, fixed
    when the namespace gets its first records) instead of the current one, so that an
    impact, once written, never changes. :func:`impact_scale` turns it into a bound at the
    current average length.
    """
    return tf / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / ref_avgdl))


def impact_scale(avgdl: float, ref_avgdl: float) -> float:
    """``s`` such that ``impact_A ≤ impact_ref · s`` for every posting, ``s = max(1, A / A_ref)``.

    Proof. Write ``x = 1 - b + b·L/A`` and ``y = 1 - b + b·L/A_ref`` for a record of length
    ``L`` (``0 < b < 1``), so ``impact_A = tf / (tf + k1·x)`` and ``impact_ref = tf / (tf +
    k1·y)``. If ``A ≤ A_ref`` then ``x ≥ y`` and ``impact_A ≤ impact_ref`` (the expression
    falls as the norm grows). If ``A > A_ref``, let ``r = A_ref / A < 1``: ``x = (1 - b) +
    r·b·L/A_ref ≥ r·(1 - b) + r·b·L/A_ref = r·y``, so ``impact_A ≤ tf / (tf + k1·r·y) ≤
    tf / (r·tf + k1·r·y) = impact_ref / r``. Either way ``impact_A ≤ impact_ref · max(1,
    A/A_ref)``. It is the bound the embedded index uses for a kept maximum
    (:meth:`~mnemon_langgraph.search._bm25.BM25Index._main_bound`).
    """
    return max(1.0, avgdl / ref_avgdl) if ref_avgdl > 0 else math.inf


FULL_BELOW_POSTINGS = 10_000
"""Below this many postings (sum of the query terms' ``df``) the store runs the plain full
query over the records' GIN index, without reading impact postings: below it the full query
is the faster one (docs/results/postgres-history.md, "Figures behind the backend's
defaults"). (The
threshold of the MaxScore passes that impact postings replaced, kept: at 10k records of real
passages the queries' postings are mostly below it, so the 10k search is unchanged.)"""

PACK_PART = 4_096
"""Postings per part of a term's pack (:data:`PARTS_SQL`): 48 KB of ``seq`` and impact. A
round reads whole parts, so this is also the step by which a term is read deeper."""

PACK_MIN = 1_024
"""A term gets a pack once it has more postings than this; rarer terms are read whole from
the postings index (:data:`DELTA_SQL`: at most this many index entries)."""

PACK_GROWTH = 16
"""A term is packed again once its postings written since the pack (read whole by every
query holding it, :data:`DELTA_SQL`) exceed ``max(PACK_MIN, packed / PACK_GROWTH)``. The
two costs pull apart: each posting of a common term is rewritten about ``PACK_GROWTH`` times
over its life (a small share of an ingest: docs/results/postgres-history.md), and a
query reads up to ``packed / PACK_GROWTH`` postings of such a term from the index besides
its parts (half that on average)."""

FRAME_MIN = 4_096
"""Namespaces with fewer live records get no BM25 frame (:mod:`._frames`; the embedded
index's least main segment read as bytes, ``_DENSE_MIN_DOCS``): the impact rounds are cheap
there."""

FIRST_PARTS = 1
"""Parts of each packed term read in the first round (:data:`PACK_PART` postings each).
At 1M records a 20-word passage query then reads ~80k postings and finds a ``theta`` close
to the final one; later rounds read what the cut plan (:func:`plan_depths`) asks for."""

DEEPEN_MARGIN = 0.15
"""A deeper round aims at cut bounds summing to this share of the known ``theta``. The two
costs pull apart: a lower share reads more postings, a higher one leaves more candidates
whose bound reaches ``theta`` to look up (:data:`LOOKUP_SQL`, far dearer per candidate than
a posting) and score. With postings read from packs reading deeper is cheap: at 1M records the
search time is flat below 0.3, and three first parts instead of one read more than the proof
needs (docs/results/postgres-history.md, "Figures behind the backend's defaults")."""


@dataclass(frozen=True)
class TermRead:
    """The postings of one query term read so far.

    ``seqs`` and ``impacts`` are parallel. A term without a pack is read whole at once
    (``full``). A packed term holds what was written since its pack (read whole) and its
    pack's first ``parts`` parts, which hold its best postings by impact: every posting not
    read is in a later part, so its impact is at most ``low``, the lowest impact of the
    parts read. ``depth`` counts the pack's postings read (:func:`plan_depths`).
    """

    depth: int
    seqs: np.ndarray
    impacts: np.ndarray
    full: bool
    low: float = 0.0
    parts: int = 0

    @property
    def cut(self) -> float:
        """Every unread posting of the term has an impact of at most this (0 when full)."""
        return 0.0 if self.full else self.low

    def extended(self, parts: Sequence[PackPart]) -> TermRead:
        """This read followed by the next ``parts`` of the term's pack, in order."""
        if not parts:
            return self
        return TermRead(
            depth=self.depth + sum(len(p.seqs) for p in parts),
            seqs=np.concatenate([self.seqs, *(p.seqs for p in parts)]),
            impacts=np.concatenate([self.impacts, *(p.impacts for p in parts)]),
            full=parts[-1].last,
            low=parts[-1].low,
            parts=self.parts + len(parts),
        )


@dataclass(frozen=True)
class PackPart:
    """One part of a term's pack: ``seqs`` and ``impacts`` in impact order (highest first),
    ``low`` the lowest impact in it (every later part's impacts are at most that; removing a
    deleted record's posting leaves it, still an upper bound), ``last`` for the final part."""

    seqs: np.ndarray
    impacts: np.ndarray
    low: float
    last: bool

    def row(self) -> tuple[int, float, bool, bytes, bytes]:
        """``(n, low, last, seqs, impacts)`` as stored (little-endian int64 / float32)."""
        return (
            len(self.seqs),
            float(self.low),
            bool(self.last),
            self.seqs.astype("<i8").tobytes(),
            self.impacts.astype("<f4").tobytes(),
        )

    @classmethod
    def from_row(cls, low: float, last: bool, seqs: bytes, impacts: bytes) -> PackPart:
        """The inverse of :meth:`row`."""
        return cls(
            np.frombuffer(bytes(seqs), dtype="<i8").astype(np.int64),
            np.frombuffer(bytes(impacts), dtype="<f4").astype(np.float32),
            float(np.float32(low)),  # the stored float4 exactly (its text form may round up)
            bool(last),
        )


def pack_parts(seqs: np.ndarray, impacts: np.ndarray, size: int) -> list[PackPart]:
    """A term's postings as pack parts of ``size``: by impact, highest first (ties: older
    ``seq`` first, so a pack is a function of its postings)."""
    order = np.lexsort((seqs, -impacts.astype(np.float64)))
    seqs, impacts = seqs[order], impacts[order].astype(np.float32)
    starts = list(range(0, len(seqs), max(1, int(size))))
    return [
        PackPart(
            seqs[a : a + size],
            impacts[a : a + size],
            float(impacts[a : a + size].min()),
            a == starts[-1],
        )
        for a in starts
    ]


def needs_pack(df: int, packed: int, pack_min: int = PACK_MIN) -> bool:
    """Whether a term of ``df`` postings, ``packed`` of them in its pack, is (re)packed:
    it is common (:data:`PACK_MIN`) and its postings written since the pack exceed
    ``max(pack_min, packed / PACK_GROWTH)`` (:data:`PACK_GROWTH`)."""
    return df > pack_min and df - packed > max(pack_min, packed // PACK_GROWTH)


DELTA_SQL = """
SELECT q.term, array_send(x.seqs), array_send(x.imps)
FROM unnest(%(dterms)s::text[], %(dupto)s::bigint[]) AS q(term, upto)
CROSS JOIN LATERAL (
    SELECT array_agg(p.seq) AS seqs, array_agg(p.impact) AS imps
    FROM mnemon_postings p WHERE p.term = q.term AND p.seq > q.upto
) x
"""
"""Each term's postings above ``upto``: a term's postings written since its pack (or, with
``upto`` 0, all of a term without one), an index-only range scan of ``mnemon_postings_term``
(``term, seq`` including ``impact``). The arrays come back in PostgreSQL's binary array
format (``array_send``), which :func:`decode_array` turns into numpy without a Python object
per posting."""

PARTS_SQL = """
SELECT p.term, p.low, p.last, p.seqs, p.imps
FROM unnest(%(pterms)s::text[], %(pfrom)s::int[], %(pto)s::int[]) AS q(term, a, b)
JOIN mnemon_packs p ON p.term = q.term AND p.part >= q.a AND p.part < q.b
ORDER BY p.term, p.part
"""
"""Parts ``[a, b)`` of each term's pack (primary key ``term, part``): one row of two
``bytea`` per :data:`PACK_PART` postings, against one index entry per posting when a term's
best postings were read from a ``(term, impact)`` index (schema version 4), which at 1M
records was the whole of a common-word query's BM25 cost (docs/results/postgres-history.md)."""


def cut_bound(weight: float, read: TermRead, scale: float, cap: float) -> float:
    """The most the term adds to a record whose posting of it was not read.

    ``weight`` is the term's IDF; an unread posting's impact is at most ``read.cut`` (times
    :data:`IMPACT_SLACK` for the float4 rounding), its contribution at most ``weight · cut ·
    scale`` (:func:`impact_scale`), and never more than ``cap`` (:func:`term_bound`)."""
    if read.full:
        return 0.0
    return min(cap, weight * read.cut * scale * (1 + IMPACT_SLACK))


def candidate_bounds(
    reads: dict[str, TermRead], cuts: dict[str, float], weights: dict[str, float]
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(seqs, upper bounds, unread bound)`` of the records some read posting names.

    A record's score is the sum of its terms' contributions. For a term whose posting was
    read it is at most ``weights[t] · impact`` (``weights``: IDF times the length scale and
    the float4 slack, :func:`impact_scale`); for the others at most the term's cut bound.
    So a record's upper bound is ``B + Σ (weight · impact - cut bound)`` over its read
    postings, with ``B = Σ cut bounds`` over every term: also the bound of a record no
    read posting names. A record whose sum is not above ``B`` (postings at the cut only)
    is left out: ``B`` bounds it like the unnamed ones. Bounds, not scores: the exact
    scores come from the record rows (the caller), so no ``tf`` or length is read here.
    """
    unread = float(sum(cuts.values()))
    parts = [
        (r.seqs, weights[t] * r.impacts.astype(np.float64) - cuts[t]) for t, r in reads.items()
    ]
    seqs = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    if not len(seqs):
        return seqs.astype(np.int64), np.zeros(0), unread
    gains = np.concatenate([p[1] for p in parts])
    low = int(seqs.min())
    if int(seqs.max()) - low < 8 * len(seqs) + 1_000_000:  # dense: one bincount, no sort
        sums = np.bincount(seqs - low, weights=gains)
        named = np.flatnonzero(sums > 0)
        return named + low, unread + sums[named], unread
    unique, where = np.unique(seqs, return_inverse=True)
    sums = np.bincount(where, weights=gains)
    keep = sums > 0
    return unique[keep], unread + sums[keep], unread


def _predicted_cut(pool: np.ndarray, depth: int, df: int, now: float) -> float:
    """The cut expected after reading ``depth`` of ``df`` postings: the impact that a share
    ``depth / df`` of ``pool`` (impacts of the terms read whole, sorted descending) lies
    above."""
    if depth > df:
        return 0.0
    if not len(pool):
        return now
    return min(now, float(pool[min(len(pool) - 1, int(len(pool) * depth / df))]))


def _deeper(depth: int, df: int, factor: int) -> int:
    """``factor`` times ``depth``, or ``df + 1`` (the whole term, seen as whole: fewer rows
    than asked for) once that reaches ``df``."""
    return df + 1 if depth * factor >= df else depth * factor


def plan_depths(
    reads: dict[str, TermRead],
    df: dict[str, int],
    weights: dict[str, float],
    target: float,
) -> dict[str, int]:
    """Deeper depths for the terms not read whole, so their cut bounds may sum to ``target``.

    Greedy: each step doubles one term's depth (or reads it whole), the step with the most
    predicted bound removed per posting read first, until the predicted sum is at most
    ``target`` (``weights``: each term's IDF times the length scale). Predictions come from
    the impacts of the terms already read whole (their whole distribution, one sample of
    the namespace's); a wrong one costs another round, never a wrong ranking. With no
    ``theta`` yet (``target`` 0) every open term is read four times as deep.
    """
    open_terms = [t for t, r in reads.items() if not r.full]
    if target <= 0:
        return {t: _deeper(reads[t].depth, df[t], 4) for t in open_terms}
    full = [r.impacts for r in reads.values() if r.full and len(r.impacts)]
    pool = -np.sort(-np.concatenate(full)) if full else np.zeros(0, np.float32)
    depth = {t: reads[t].depth for t in open_terms}
    cut = {t: reads[t].cut for t in open_terms}
    total = sum(weights[t] * cut[t] for t in open_terms)
    while total > target:
        best, best_gain = None, -1.0
        for t in open_terms:
            if depth[t] > df[t]:
                continue
            nxt = _deeper(depth[t], df[t], 2)
            drop = weights[t] * (cut[t] - _predicted_cut(pool, nxt, df[t], cut[t]))
            gain = drop / (nxt - depth[t])
            if gain > best_gain:
                best, best_gain = t, gain
        if best is None:
            break
        depth[best] = _deeper(depth[best], df[best], 2)
        new = _predicted_cut(pool, depth[best], df[best], cut[best])
        total -= weights[best] * (cut[best] - new)
        cut[best] = new
    changed = {t: d for t, d in depth.items() if d > reads[t].depth}
    if not changed:  # the predictions saw no gain: deepen the term with the largest bound
        t = max(open_terms, key=lambda x: weights[x] * cut[x])
        changed = {t: _deeper(reads[t].depth, df[t], 4)}
    return changed


LOOKUP_SQL = """
SELECT array_send(array_agg(p.seq)), array_send(array_agg(array_position(%(lterms)s, p.term))),
       array_send(array_agg(p.impact))
FROM unnest(%(lseqs)s::bigint[]) AS c(seq)
CROSS JOIN LATERAL (
    SELECT x.seq, x.term, x.impact FROM mnemon_postings x
    WHERE x.seq = c.seq AND x.term = ANY(%(lterms)s::text[])
) p
"""
"""Every posting of the query's terms held by the records ``%(lseqs)s``: per record, an
index-only scan of ``mnemon_postings_seq`` (``seq`` including ``term, impact``). The
``LATERAL`` form keeps it per record: written as one ``seq = ANY(…) AND term = ANY(…)``
filter, the planner scanned every posting of the query's terms instead
(docs/results/postgres-history.md, "Candidate postings"). The term comes back as its
1-based position in ``%(lterms)s``."""


def record_bounds(
    seqs: np.ndarray,
    term_pos: np.ndarray,
    impacts: np.ndarray,
    per_impact: np.ndarray,
    wanted: np.ndarray,
) -> np.ndarray:
    """Each of ``wanted``'s upper bound from all its postings of the query's terms.

    ``term_pos`` is 1-based into ``per_impact`` (each term's IDF times length scale and
    slack); a record's bound is ``Σ per_impact[t] · impact`` over the terms it holds: its
    score at the reference length, scaled (:func:`impact_scale`), so within a factor
    ``max(1, A / A_ref)`` of the exact score. Far tighter than a bound with cut bounds
    for unread terms: only the records it cannot rule out are scored on their rows.
    """
    parts = per_impact[term_pos - 1] * impacts.astype(np.float64)
    order = np.argsort(wanted)
    where = np.searchsorted(wanted, seqs, sorter=order)
    sums = np.bincount(order[where], weights=parts, minlength=len(wanted))
    return sums


def decode_array(raw: bytes | None, dtype: str) -> np.ndarray:
    """A one-dimensional, NULL-free array from ``array_send`` as numpy (``dtype`` big-endian:
    ``">i8"``, ``">f8"``, ``">f4"``). Layout: dimensions, has-null flag, element type
    (three int32), then per dimension its size and lower bound, then each element as an
    int32 byte length and the value."""
    if raw is None:
        return np.zeros(0, dtype=dtype)
    buf = bytes(raw)
    ndim, has_null = np.frombuffer(buf, dtype=">i4", count=2)
    if ndim == 0:
        return np.zeros(0, dtype=dtype)
    if ndim != 1 or has_null:
        raise ValueError("expected a one-dimensional array without NULLs")
    cells = np.frombuffer(buf, dtype=[("n", ">i4"), ("v", dtype)], offset=20)
    return cells["v"]


def int_array(values: np.ndarray | Sequence[int]) -> str:
    """Integers as a PostgreSQL array literal (``"{1,2,3}"``), bound as text and cast in the
    SQL (``%(x)s::bigint[]``). psycopg dumps a Python list element by element in Python,
    which for the candidate ``seq`` values of a round cost the client more than the rest of
    the round's work (docs/results/search-scaling.md, "Where the time goes")."""
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    return "{" + ",".join(map(str, items)) + "}"


def lexical_terms(text: str) -> list[str]:
    """The BM25 terms of ``text``: the embedded backend's tokenizer, the one place both use."""
    return tokenize(text)


def namespaced(nsid: int, terms: Sequence[str]) -> list[str]:
    """Terms as stored: prefixed by the namespace id, so the GIN lookup stays in one tenant."""
    return [f"{nsid}:{t}" for t in terms]


def term_counts(nsid: int, text: str) -> tuple[list[str], list[float], int]:
    """``(distinct namespaced terms, their frequencies, document length)`` of ``text``."""
    terms = lexical_terms(text)
    counts = Counter(terms)
    keys = sorted(counts)
    return namespaced(nsid, keys), [float(counts[k]) for k in keys], len(terms)


COLUMN_TERMS_MAX = 64
"""Most distinct query terms scored one select column each (:func:`bm25_sql`); a longer
query is scored by the array form, which takes any number of terms. PostgreSQL caps a
select list at 1,664 entries, so the column form cannot hold a pasted page of text, and
its cost per candidate grows with the number of terms times the record's length; past a
few dozen terms the array form is mostly the faster one (docs/results/bm25-long-queries.md)."""


def bm25_params(terms: Sequence[str]) -> dict[str, str]:
    """The per-term parameters ``t0 … t{n-1}`` the column form of :func:`bm25_sql` binds
    (none for the array form)."""
    if len(terms) > COLUMN_TERMS_MAX:
        return {}
    return {f"t{i}": t for i, t in enumerate(terms)}


def bm25_sql(n_terms: int, filters: str = "", match: str = "r.terms && %(cand)s") -> str:
    """The BM25 query for ``n_terms`` distinct query terms (parameters ``t0 … t{n-1}``,
    :func:`bm25_params`).

    Up to :data:`COLUMN_TERMS_MAX` terms each term is one column (below); more are scored
    by :func:`_bm25_array_sql` (the same formula and ranking rule, any number of terms).

    Parameters: ``%(terms)s`` (the namespaced query terms, also bound one by one as
    ``%(t0)s`` …), ``%(nsid)s``, ``%(k)s`` and the filter bounds. ``N``, ``avgdl`` and each
    term's IDF are uncorrelated scalar subqueries, so PostgreSQL computes them once (an
    InitPlan). ``match`` selects the candidate rows: by default those holding a term of
    ``%(cand)s`` (the full query: GIN), or ``r.seq = ANY(%(seqs)s)`` (the candidates the
    impact postings could not rule out); every query term is scored on each row either way.

    Each candidate row costs one ``array_position`` per query term and one length norm,
    computed in a ``LATERAL`` subselect; both subselects end in ``OFFSET 0``, which keeps
    the planner from flattening them. Flattened, the planner copied every expression into
    each use: the score into the ``score > 0`` filter *and* the sort key, each term
    frequency into the numerator *and* the denominator, so four ``array_position`` calls per
    term and row; fenced, a query takes less than half the time (same rows and scores;
    docs/results/postgres-history.md, "BM25 query plan").

    The terms carry the namespace id, so the GIN lookup alone stays in the namespace; the
    ``nsid`` test is a safety net written ``r.nsid + 0`` so that it is never an index path:
    for the term-set pass the planner otherwise read the whole namespace through the
    ``(nsid, seq)`` index and filtered it, nearly twice as slow at 100k records.
    """
    norm = (
        f"{BM25_K1}::float8 * ({1 - BM25_B}::float8 + {BM25_B}::float8 * r.length "
        "/ (SELECT avgdl FROM s)) AS nrm"
    )
    if n_terms > COLUMN_TERMS_MAX:
        return _bm25_array_sql(norm, filters, match)
    tfs = "".join(
        f"r.tfs[array_position(r.terms, %(t{i})s::text)] AS f{i}, " for i in range(n_terms)
    )
    parts = [
        f"COALESCE((SELECT idf FROM q WHERE term = %(t{i})s::text) * x.f{i} / (x.f{i} + x.nrm), 0)"
        for i in range(n_terms)
    ]
    score = " + ".join(parts) if parts else "0"
    return f"""{_STATS_SQL}
SELECT seq, id, score FROM (
    SELECT r.seq, r.id, ({score}) AS score
    FROM mnemon_records r CROSS JOIN LATERAL (SELECT {tfs}{norm} OFFSET 0) x
    WHERE {match} AND r.nsid + 0 = %(nsid)s {filters}
    OFFSET 0
) c
WHERE score > 0
ORDER BY score DESC, seq
LIMIT %(k)s
"""


def _bm25_array_sql(norm: str, filters: str, match: str) -> str:
    """:func:`bm25_sql` for any number of query terms: each candidate's ``(term, tf)``
    pairs (``unnest``) joined to the query's terms and their IDF, summed per record.

    Every term contributes ``idf · tf / (tf + nrm)`` as in the column form, so a record's
    score is the same sum (added in another order: equal to the last bits); the terms are
    bound as one array (``%(terms)s``), so no limit of PostgreSQL on columns or parameters
    applies. Slower per candidate than the column form on short queries, which keep it.
    """
    return f"""{_STATS_SQL}
SELECT seq, id, score FROM (
    SELECT r.seq, r.id, sum(q.idf * u.tf / (u.tf + x.nrm)) AS score
    FROM mnemon_records r CROSS JOIN LATERAL (SELECT {norm} OFFSET 0) x
    CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf)
    JOIN q ON q.term = u.term
    WHERE {match} AND r.nsid + 0 = %(nsid)s {filters}
    GROUP BY r.seq, r.id
) c
WHERE score > 0
ORDER BY score DESC, seq
LIMIT %(k)s
"""


_STATS_SQL = """
WITH s AS MATERIALIZED (
    SELECT docs::float8 AS n,
           CASE WHEN total_len > 0 THEN total_len::float8 / docs ELSE 1 END AS avgdl
    FROM mnemon_namespaces WHERE nsid = %(nsid)s
), q AS MATERIALIZED (
    SELECT t.term, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM mnemon_terms t, s
    WHERE t.term = ANY(%(terms)s) AND t.df > 0
)"""
