"""BM25's formula, once: its constants and its IDF.

Every BM25 score of the package uses these: the embedded index (:mod:`._bm25`, :mod:`._maxscore`),
the PostgreSQL index (:mod:`mnemon_langgraph.store.postgres._impact`, whose SQL writes the same
formula), the local judge's term weights (:mod:`mnemon_langgraph.judges._features`) and the
View's excerpts (:mod:`mnemon_langgraph.read._excerpts`). The variant is Lucene's, the one
``bm25s`` uses by default (its ``method="lucene"``; Kamphuis et al. 2020, "Which BM25 Do You
Mean? A Large-Scale Reproducibility Study of Scoring Variants")::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, q) = Σ_{t in set(q)} idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))

The IDF is Robertson and Spärck Jones' relevance weight without relevance information,
shifted by the ``1 +`` inside the logarithm so that it is never negative, even for a term
in more than half of the documents.
"""

from __future__ import annotations

import math

__all__ = ["BM25_B", "BM25_K1", "idf"]

BM25_K1 = 1.5
"""Term-frequency saturation (Lucene's and ``bm25s``' default)."""

BM25_B = 0.75
"""Length normalisation (Lucene's and ``bm25s``' default)."""


def idf(n_docs: float, df: float) -> float:
    """BM25's IDF of a term held by ``df`` of ``n_docs`` documents (``df`` 0: an unseen term)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
