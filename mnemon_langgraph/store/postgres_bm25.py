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

**MaxScore, term at a time.** A query with common words (a speaker's name, "like",
"really"; a 20-word passage) holds terms found in a large share of the namespace, so the
plain query costs time linear in the namespace: every record holding any query term is
read from the heap and scored. The caller (:meth:`PostgresStore._bm25`) runs instead a
sequence of passes planned by :func:`next_pass`, rarest terms first
(:func:`pass_order`). Each ``"any"`` pass reads the records holding one of a few more
terms and scores *every* query term on them (a row carries all its terms and
frequencies, so scoring a candidate on the common terms costs no extra read); the
``k``-th best score found so far, ``theta``, is a lower bound of the true ``k``-th score.
A record not yet read holds only the remaining terms, so it scores at most the sum of
their upper bounds (:func:`term_bound`, from ``max_tf`` / ``min_len`` kept in
``mnemon_terms``). Once that sum is below ``theta`` the ranking is exact and the common
terms' records are never read. Before that, when the remaining terms' *qualifying
clauses* (:func:`qualifying_clauses`: the terms a record must hold together to reach
``theta``) are expected to hold fewer records than the next term, one last
``"clauses"`` pass reads the records satisfying one of them (GIN intersects the posting
lists before
any row is read) and the ranking is exact too. Why not a
PostgreSQL extension (pg_search, VectorChord-bm25): their scores are not the embedded
index's, and equality
with it is a requirement.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mnemon_langgraph.search.bm25 import tokenize

__all__ = [
    "BM25_B",
    "BM25_K1",
    "GIN_POSTINGS_PER_ROW",
    "PASS_STEP",
    "SET_PASS_MIN_POSTINGS",
    "MaxScorePass",
    "TermStats",
    "bm25_sql",
    "clause_cost",
    "idf",
    "lexical_terms",
    "namespaced",
    "next_pass",
    "pass_order",
    "qualifying_clauses",
    "term_bound",
    "term_counts",
]

BM25_K1 = 1.5
BM25_B = 0.75
SET_PASS_MIN_POSTINGS = 10_000
"""Below this many postings (sum of the query terms' ``df``) the store runs the plain full
query, without MaxScore passes. Measured (``bench backend``, common-word queries): with ~4k
postings (10k records) the full query took 55 ms p50 and a term-set pass 84 ms (its GIN
``BitmapOr`` costs more than it saves); with ~17k (52k records) 460–550 ms against 134–154.
The term-at-a-time passes (:func:`next_pass`) do not pay there either: forced on 10k
records of real passages (held-out passages as queries, depth 100, loaded machine) they
took 28.1 ms p50 against 24.8 for the full query on common-word queries, same top 100."""

_SLACK = 1e-9  # relative float slack: a bound must be *strictly* below the threshold
MAX_CLAUSES = 64  # more OR-ed GIN conditions than this: another "any" pass instead


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


def _reaches(total: float, threshold: float) -> bool:
    """``total`` may reach ``threshold`` (float slack on the side of keeping records)."""
    return total * (1 + _SLACK) + 1e-12 >= threshold


Clause = tuple[tuple[str, ...], tuple[str, ...]]
"""``(held, any_of)``: the records holding every term of ``held`` and one of ``any_of``
(``r.terms @> held AND r.terms && any_of``; GIN answers both before any row is read)."""


def qualifying_clauses(bounds: dict[str, float], threshold: float) -> list[Clause] | None:
    """Clauses that every record whose bounds can reach ``threshold`` satisfies.

    A record's score is at most the sum of the bounds of the query terms it holds. Take
    its terms by decreasing bound: some shortest prefix ``s1 … sm`` reaches the threshold,
    so the record satisfies the clause ``(held = s1 … s(m-1), any_of ∋ sm)``. This
    enumerates those clauses depth first: at a node ``held`` (bound sum ``total``, next
    term position ``i``), ``any_of`` is every later term with ``total + bound ≥
    threshold``; for each other later term that could still reach it together with the
    terms after it, a child node holds it too. When every single bound is below the
    threshold (common words at 1M records), each clause needs two or more terms at once,
    which the GIN index intersects before reading rows: far fewer records than those
    holding any one of them. ``None`` when there are more than :data:`MAX_CLAUSES`; the
    plan (:func:`next_pass`) then reads one more term's records and tries again.
    """
    terms = sorted(bounds, key=lambda t: (-bounds[t], t))
    suffix = [0.0] * (len(terms) + 1)
    for i in range(len(terms) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + bounds[terms[i]]
    out: list[Clause] = []
    stack: list[tuple[tuple[str, ...], float, int]] = [((), 0.0, 0)]
    while stack:
        held, total, i = stack.pop()
        later = terms[i:]
        any_of = tuple(t for t in later if _reaches(total + bounds[t], threshold))
        if any_of:
            out.append((held, any_of))
            if len(out) > MAX_CLAUSES:
                return None
        for j in range(len(terms) - 1, i - 1, -1):  # pushed in reverse: popped in order
            t = terms[j]
            if t not in any_of and _reaches(total + bounds[t] + suffix[j + 1], threshold):
                stack.append(((*held, t), total + bounds[t], j + 1))
    return out


PASS_STEP = 2_000
"""An ``"any"`` pass takes the next rarest term and, after it, more terms while their
postings (``df``) add up to at most this many records: one SQL statement for several rare
terms, whose records are cheap to read, instead of one statement per term."""


@dataclass(frozen=True)
class MaxScorePass:
    """One step of the MaxScore plan (:func:`next_pass`).

    ``kind`` is ``"any"`` (rank the records holding one of ``terms``), ``"clauses"`` (rank
    the records satisfying one of ``clauses``: the last pass) or ``"done"`` (the
    ranking found so far is exact). ``next_index`` is where the following pass starts in
    :func:`pass_order`'s list.
    """

    kind: str
    terms: tuple[str, ...] = ()
    clauses: tuple[Clause, ...] = ()
    next_index: int = 0


def pass_order(stats: dict[str, TermStats]) -> list[str]:
    """The query terms a record can hold, rarest first (ties: by name, for a stable plan).

    Rarest first because a rare term's records are few (a cheap pass) and its bound is
    high (its IDF): each pass removes as much bound as possible from the records not yet
    read for as few row reads as possible.
    """
    return sorted((t for t, s in stats.items() if s.df > 0), key=lambda t: (stats[t].df, t))


GIN_POSTINGS_PER_ROW = 400
"""How many postings a GIN scan decodes in the time one candidate row is read and scored.
Measured at 1M records (EXPLAIN ANALYZE of clause passes, 2 loaded cores):
~65 ns per posting a clause's GIN scan reads, ~25 µs per row an ``"any"`` pass reads and
scores. Each clause is its own GIN scan, so a term in 60 clauses has its posting list
decoded 60 times: a 60-clause pass reading 1,804 rows took 0.9 s, all of it in the GIN
``BitmapOr``."""


def clause_cost(clauses: Sequence[Clause], df: dict[str, int], n_docs: int) -> float:
    """What a ``"clauses"`` pass is expected to cost, in rows read and scored: the records
    it should match (per clause ``N · Π df/N`` over ``held`` times the share holding one of
    ``any_of``; terms taken as independent) plus the postings its GIN scans decode (every
    term's ``df`` once per clause naming it) over :data:`GIN_POSTINGS_PER_ROW`. Only a
    cost guess to choose between passes; exactness never depends on it."""
    n = max(1, n_docs)
    rows = sum(
        n * math.prod(df[t] / n for t in held) * min(1.0, sum(df[t] for t in any_of) / n)
        for held, any_of in clauses
    )
    postings = sum(df[t] for held, any_of in clauses for t in (*held, *any_of))
    return rows + postings / GIN_POSTINGS_PER_ROW


def _seed_pass(
    rest: Sequence[str], bounds: dict[str, float], df: dict[str, int], n_docs: int, start: int
) -> MaxScorePass | None:
    """A pass that finds a first ``theta`` without reading a common word's records.

    While fewer than ``k`` records are known, the next ``"any"`` pass must read every
    record of the next term, a common word's tens of thousands at 1M records. The records
    holding the two strongest terms' worth of bound together (clauses at the threshold of
    the two largest bounds: two or more words at once, GIN-intersected) are few and score
    high, so when they are expected to cost under half that pass, they are read first; if
    ``k`` of them exist their ``k``-th score is a ``theta`` (every one is a real record).
    The pass reads no term's records in full, so the plan's position does not move.
    """
    if len(rest) < 3:
        return None
    top = sorted((bounds[t] for t in rest), reverse=True)
    clauses = qualifying_clauses({t: bounds[t] for t in rest}, top[0] + top[1])
    if not clauses or clause_cost(clauses, df, n_docs) > df[rest[0]] / 2:
        return None
    return MaxScorePass("clauses", clauses=tuple(clauses), next_index=start)


def next_pass(
    order: Sequence[str],
    start: int,
    bounds: dict[str, float],
    df: dict[str, int],
    n_docs: int,
    theta: float,
    step: int = PASS_STEP,
    *,
    seed: bool = False,
) -> MaxScorePass:
    """The next pass after the records holding ``order[:start]`` were read and scored.

    ``theta`` is the ``k``-th best score found so far (``0`` while fewer than ``k``
    records were found: then every record holding a query term may count). A record not
    read holds only terms of ``order[start:]`` and scores at most the sum of their bounds,
    so the plan is ``"done"`` once that sum is strictly below ``theta``. Otherwise a
    ``"clauses"`` pass (exact at once) when its expected cost (:func:`clause_cost`) is
    no more than the next term's ``df``; else an ``"any"`` pass over the next rarest
    terms (at least one; more while their ``df`` sum stays within ``step``). With
    ``seed``, no ``theta`` yet and a next term with more than ``step`` records, first a
    seeding clause pass (:func:`_seed_pass`) that leaves ``start`` where it is (the caller
    asks for it once).
    """
    rest = list(order[start:])
    if not rest:
        return MaxScorePass("done", next_index=start)
    if theta > 0:
        if not _reaches(sum(bounds[t] for t in rest), theta):
            return MaxScorePass("done", next_index=start)
        clauses = qualifying_clauses({t: bounds[t] for t in rest}, theta)
        if clauses is not None and clause_cost(clauses, df, n_docs) <= df[rest[0]]:
            return MaxScorePass("clauses", clauses=tuple(clauses), next_index=len(order))
    elif seed and df[rest[0]] > step and (seeding := _seed_pass(rest, bounds, df, n_docs, start)):
        return seeding
    batch, total = [rest[0]], df[rest[0]]
    for term in rest[1:]:
        if total + df[term] > step:
            break
        batch.append(term)
        total += df[term]
    return MaxScorePass("any", terms=tuple(batch), next_index=start + len(batch))


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
    ``%(cand)s`` (all query terms, or the rare terms of a MaxScore ``"any"`` pass,
    :func:`next_pass`), or an ``OR`` of ``r.terms @> …`` conditions
    (:func:`qualifying_clauses`); every query term is scored on each candidate either way.

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
