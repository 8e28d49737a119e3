"""BM25 computed in PostgreSQL, equal to the embedded :class:`~.search.bm25.BM25Index`.

Same tokens (one Python tokenizer, :func:`lexical_terms`), same formula (Lucene variant,
``k1 = 1.5``, ``b = 0.75``)::

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

**MaxScore.** A query with common words (a speaker's name, "like", "really") has most of
the namespace as candidates, so a plain query costs time linear in the namespace. The
caller (:meth:`PostgresStore._bm25`) ranks first only the records holding one of the
query's rare terms (:func:`first_pass_terms`), scoring every query term on them; the
``k``-th score of that pass is a lower bound of the true ``k``-th score. Per-term upper
bounds (:func:`term_bound`, from ``max_tf`` / ``min_len`` kept in ``mnemon_terms``) then
give the sets of terms a record must hold *together* to reach it
(:func:`qualifying_sets`); when every such set holds a first-pass term, the first pass's
ranking is exact, else a second pass ranks the records holding one of the sets in full
(still exact: every other record scores below ``k`` records already found). Why not a
PostgreSQL extension (pg_search, VectorChord-bm25): their scores are not the embedded
index's, and equality
with it is a requirement.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mnemon_langgraph.search.bm25 import tokenize

__all__ = [
    "BM25_B",
    "BM25_K1",
    "FIRST_PASS_SHARE",
    "SET_PASS_MIN_POSTINGS",
    "TermStats",
    "bm25_sql",
    "essential_terms",
    "first_pass_terms",
    "idf",
    "lexical_terms",
    "namespaced",
    "qualifying_sets",
    "term_bound",
    "term_counts",
]

BM25_K1 = 1.5
BM25_B = 0.75
FIRST_PASS_SHARE = 0.02
"""Query terms in at most this share of the namespace's records select the first pass's
candidates (:func:`first_pass_terms`); chosen by measurement (``bench backend``, see README)."""

SET_PASS_MIN_POSTINGS = 10_000
"""Below this many postings (sum of the query terms' ``df``) the store runs the plain full
query, without MaxScore passes. Measured (``bench backend``, common-word queries): with ~4k
postings (10k records) the full query took 55 ms p50 and the term-set pass 84 ms (its GIN
``BitmapOr`` costs more than it saves); with ~17k (52k records) 460–550 ms against 134–154.
The first pass is skipped there too: on 10k records of real passages (held-out passages as
queries, ``bench backend --corpus``) it proved its ranking exact for 1–2 of 40 queries, so
MaxScore took 65–73 ms p50 against 40–50 for the full query at the search's depth (100),
and 78–99 against 61–68 at 48; on the synthetic topic questions the two were equal at 100
(20.3 / 20.0 ms) and MaxScore 16 against 20 ms at 48 (same runs, a loaded machine)."""

_SLACK = 1e-9  # relative float slack: a bound must be *strictly* below the threshold
MAX_SET_TERMS = 10  # qualifying_sets enumerates at most 2**10 subsets
MAX_SETS = 48  # more OR-ed GIN conditions than this: prune by essential terms instead


def idf(n_docs: float, df: float) -> float:
    """The BM25 IDF, the same formula as the SQL (and the embedded index)."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class TermStats:
    """What bounds one query term's contribution: its ``df`` and, over the records that
    held it, the largest term frequency and the shortest length (the column defaults,
    ``1e30`` and ``0``, are the loosest bounds: "unknown")."""

    df: int
    max_tf: float
    min_len: int


def term_bound(n_docs: int, avgdl: float, stats: TermStats) -> float:
    """The most term ``t`` can add to any record's score: ``idf · tf / (tf + k1 · norm)``.

    That expression grows with ``tf`` and shrinks with the record's length, so
    ``max_tf`` and ``min_len`` bound it from above. Both are maintained on insert with
    ``GREATEST`` / ``LEAST`` and left alone on delete: a deleted record can only have held
    the maximum, so the stored values stay upper bounds (looser, never wrong). With the
    "unknown" defaults the bound is ``idf`` itself.
    """
    weight = idf(n_docs, stats.df)
    tf = float(stats.max_tf)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * stats.min_len / avgdl)
    return weight * tf / (tf + norm)


def first_pass_terms(
    n_docs: int, stats: dict[str, TermStats], k: int = 0, share: float = FIRST_PASS_SHARE
) -> list[str] | None:
    """The terms whose records the first MaxScore pass ranks (the rarest ones).

    Every query term is still *scored* on those records; the pass only yields a lower
    bound of the true ``k``-th score (its own ``k``-th score: ``k`` real records reach it),
    from which :func:`essential_terms` tells whether records holding only the other terms
    could matter. ``None`` when every term is rare (the first pass would be the full query)
    or when the rare terms' records number fewer than ``k``: the pass could not return
    ``k`` rows, so it could prove nothing and the full query would follow it anyway.
    Measured (``bench backend``, 10k records, 40 topic questions at the hybrid search's
    depth of 100): 36 of 40 first passes were that short, and paying for them made the
    hybrid search with MaxScore slower than without it.
    """
    present = {t: s.df for t, s in stats.items() if s.df > 0}
    rare = sorted(t for t, df in present.items() if df <= share * n_docs)
    if not rare and present:
        rare = [min(present, key=lambda t: (present[t], t))]
    if sum(present[t] for t in rare) < k:
        return None
    return rare if len(rare) < len(present) else None


def _reaches(total: float, threshold: float) -> bool:
    """``total`` may reach ``threshold`` (float slack on the side of keeping records)."""
    return total * (1 + _SLACK) + 1e-12 >= threshold


def qualifying_sets(bounds: dict[str, float], threshold: float) -> list[list[str]] | None:
    """The minimal sets of query terms whose bounds sum to at least ``threshold``.

    A record's score is at most the sum of the bounds of the query terms it holds, so a
    record that holds none of these sets *in full* scores strictly below ``threshold``
    and cannot enter the top ``k``. For common words this is far fewer records than those
    holding any one essential term (:func:`essential_terms`): when each common word's
    bound is below the threshold, a record needs two or three of them at once, which the
    GIN index finds by intersecting posting lists (``terms @> ARRAY[a, b]``) before any
    row is read. ``None`` when the query has too many terms (more than
    :data:`MAX_SET_TERMS`) or the sets are too many (more than :data:`MAX_SETS`); the
    caller then uses :func:`essential_terms`.
    """
    terms = sorted(bounds, key=lambda t: (-bounds[t], t))
    if len(terms) > MAX_SET_TERMS:
        return None
    found: list[frozenset[str]] = []
    for size in range(1, len(terms) + 1):
        for combo in itertools.combinations(terms, size):
            chosen = frozenset(combo)
            if any(f <= chosen for f in found):
                continue
            if _reaches(sum(bounds[t] for t in combo), threshold):
                found.append(chosen)
                if len(found) > MAX_SETS:
                    return None
    return [sorted(f) for f in found]


def essential_terms(bounds: dict[str, float], threshold: float) -> list[str]:
    """MaxScore: the terms a record must hold to possibly score at least ``threshold``.

    Sort the terms by their bound, smallest first; the longest prefix whose bounds sum
    *strictly* below ``threshold`` is non-essential: a record holding only those terms
    scores below every one of the ``k`` records that reached ``threshold`` (ties go to the
    older record, so "equal" is not safe and the test is strict, with float slack).
    """
    order = sorted(bounds, key=lambda t: (bounds[t], t))
    total, cut = 0.0, 0
    for term in order:
        total += bounds[term]
        if _reaches(total, threshold):
            break
        cut += 1
    return sorted(order[cut:])


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


def bm25_sql(n_terms: int, filters: str = "", match: str = "r.terms && %(cand)s") -> str:
    """The BM25 query for ``n_terms`` distinct query terms (parameters ``t0 … t{n-1}``).

    Parameters: ``%(terms)s`` (the namespaced query terms, also bound one by one as
    ``%(t0)s`` …), ``%(nsid)s``, ``%(k)s`` and the filter bounds. ``N``, ``avgdl`` and each
    term's IDF are uncorrelated scalar subqueries, so PostgreSQL computes them once (an
    InitPlan). ``match`` selects the candidate rows: by default those holding a term of
    ``%(cand)s`` (all query terms, or the MaxScore subset of :func:`first_pass_terms` /
    :func:`essential_terms`), or an ``OR`` of ``r.terms @> …`` conditions
    (:func:`qualifying_sets`); every query term is scored on each candidate either way.

    Each candidate row costs one ``array_position`` per query term and one length norm,
    computed in a ``LATERAL`` subselect; both subselects end in ``OFFSET 0``, which keeps
    the planner from flattening them. Flattened, the planner copied every expression into
    each use: the score into the ``score > 0`` filter *and* the sort key, each term
    frequency into the numerator *and* the denominator, so four ``array_position`` calls per
    term and row. Measured (10k records, 40 topic questions, top 100, same rows and scores):
    18.4 ms flattened, 8.1 ms fenced; common-word queries 69 → 21 ms. (Before that:
    237 ms with ``unnest`` + ``GROUP BY`` over every candidate's terms.)

    The terms carry the namespace id, so the GIN lookup alone stays in the namespace; the
    ``nsid`` test is a safety net written ``r.nsid + 0`` so that it is never an index path:
    for the term-set pass the planner otherwise read the whole namespace through the
    ``(nsid, seq)`` index and filtered it (100k records: 1,064 ms against 588 ms).
    """
    norm = (
        f"{BM25_K1}::float8 * ({1 - BM25_B}::float8 + {BM25_B}::float8 * r.length "
        "/ (SELECT avgdl FROM s)) AS nrm"
    )
    tfs = "".join(
        f"r.tfs[array_position(r.terms, %(t{i})s::text)] AS f{i}, " for i in range(n_terms)
    )
    parts = [
        f"COALESCE((SELECT idf FROM q WHERE term = %(t{i})s::text) * x.f{i} / (x.f{i} + x.nrm), 0)"
        for i in range(n_terms)
    ]
    score = " + ".join(parts) if parts else "0"
    return f"""
WITH s AS MATERIALIZED (
    SELECT docs::float8 AS n,
           CASE WHEN total_len > 0 THEN total_len::float8 / docs ELSE 1 END AS avgdl
    FROM mnemon_namespaces WHERE nsid = %(nsid)s
), q AS MATERIALIZED (
    SELECT t.term, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM mnemon_terms t, s
    WHERE t.term = ANY(%(terms)s) AND t.df > 0
)
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
