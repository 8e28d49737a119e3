"""BM25 computed in PostgreSQL, equal to the embedded :class:`~.search.bm25.BM25Index`.

Same tokens (one Python tokenizer, :func:`lexical_terms`), same formula (Lucene variant,
``k1 = 1.5``, ``b = 0.75``)::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = Σ_{t in set(q)} idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))

``N`` and the total length come from ``mnemon_namespaces``; ``df`` from ``mnemon_terms``;
both are maintained in the write transaction, so they count exactly the live records of
the namespace, as the embedded index counts its live documents at query time. Candidates
are the records whose namespaced ``terms`` array overlaps the query's (``&&``, GIN index);
the score is summed over the matching array elements. ``ts_rank`` is not used: it is not
BM25 (no IDF, no length saturation).

Ties are broken by ``seq`` (older first), as in the embedded index. The embedded index
computes in float32 and PostgreSQL in float8, so scores agree to about 1e-6 relative and
orders agree except between records whose scores differ by less than that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mnemon_langgraph.search.bm25 import tokenize

__all__ = ["BM25_B", "BM25_K1", "BM25_SQL", "lexical_terms", "namespaced", "term_counts"]

BM25_K1 = 1.5
BM25_B = 0.75


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


# Parameters: %(terms)s (namespaced query terms, distinct), %(nsid)s, %(k)s, filter bounds.
BM25_SQL = """
WITH stats AS (
    SELECT docs::float8 AS n, GREATEST(total_len::float8 / NULLIF(docs, 0), 0) AS avgdl
    FROM mnemon_namespaces WHERE nsid = %(nsid)s
), q AS (
    SELECT t.term, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM mnemon_terms t, stats s
    WHERE t.term = ANY(%(terms)s) AND t.df > 0
)
SELECT r.seq, r.id,
       SUM(q.idf * u.tf / (u.tf + {k1} * (1 - {b} + {b} * r.length
            / (CASE WHEN s.avgdl > 0 THEN s.avgdl ELSE 1 END)))) AS score
FROM mnemon_records r
CROSS JOIN stats s
CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf)
JOIN q ON q.term = u.term
WHERE r.terms && %(terms)s AND r.nsid = %(nsid)s {filters}
GROUP BY r.seq, r.id
ORDER BY score DESC, r.seq
LIMIT %(k)s
"""
