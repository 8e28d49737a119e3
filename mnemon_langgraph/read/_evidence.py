"""Retrieval evidence for System 1: stored-vector similarities and the pool's ranks.

The read path already holds what a judge would otherwise recompute: every pooled record's
vector is in the journal (written at ingest), and the pool knows which searches found it
and how high. :class:`EvidenceBuilder` turns that into one small
:class:`~mnemon_langgraph.read.state.RecordEvidence` per pooled record, which
:func:`~mnemon_langgraph.read._judging.build_state` sends beside the record's text:

* ``sim`` — the cosine of the record's **stored** vector with the latest message, the
  earlier dialogue and each need. Only those few query texts are embedded, by the source
  itself (:meth:`~mnemon_langgraph.types.VectorSource.query_vector`: as its dense search
  embeds a query, from the same cache, so a text the turn already searched costs no model
  call); the pooled records are never re-embedded;
* ``rank`` / ``rrf`` / ``searches`` — its best fused rank, its summed reciprocal rank over
  the turn's searches and how many searches found it;
* ``bm25`` / ``dense`` — its best rank in each retriever (``None``: not ranked by it).

A source without stored vectors (a :class:`~mnemon_langgraph.types.SearchSource` that is not a
:class:`~mnemon_langgraph.types.VectorSource`) gets the ranks only, and so does a turn
whose lookup or query embedding fails (logged, never raised: evidence is optional); the local
judge then embeds what it needs itself, with its own error handling.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.judges._features import split_queries, terms
from mnemon_langgraph.read._judging import message_json
from mnemon_langgraph.read.sources.binding import offered
from mnemon_langgraph.read.state import PoolRecord, RecordEvidence
from mnemon_langgraph.search._fusion import RRF_K, reciprocal_rank
from mnemon_langgraph.types import Namespace

__all__ = ["EvidenceBuilder", "query_texts", "rank_evidence"]

logger = logging.getLogger(__name__)


def query_texts(messages: Sequence[Any], needs: Sequence[Any]) -> dict[str, str]:
    """The texts a judge compares records with: ``latest``, ``context``, ``need:<i>``.

    Split exactly as the local judge splits its state's messages
    (:func:`~mnemon_langgraph.judges._features.split_queries`), so the similarities the
    read path computes are the ones the judge would have computed.
    """
    latest, context = split_queries([message_json(m) for m in messages])
    out = {"latest": latest, "context": context}
    for i, need in enumerate(needs):
        out[f"need:{i}"] = str(getattr(need, "text", need))
    return {role: text for role, text in out.items() if text}


def rank_evidence(entry: PoolRecord, rrf_k: int = RRF_K) -> RecordEvidence:
    """The pool's ranks of one record: best fused rank, summed RRF, retriever ranks."""
    best: dict[int, int] = {}
    for search, rank in entry.get("found", []):
        best[search] = min(rank, best.get(search, rank))
    return RecordEvidence(
        rank=min(best.values(), default=0),
        rrf=round(sum(reciprocal_rank(r, rrf_k) for r in best.values()), 6),
        rrf_k=rrf_k,
        searches=len(best),
        bm25=entry.get("bm25_rank"),
        dense=entry.get("dense_rank"),
    )


class EvidenceBuilder:
    """Builds the turn's :class:`RecordEvidence` from a source's stored vectors.

    Args:
        source: The search source; its stored vectors are used when it is a
            :class:`~mnemon_langgraph.types.VectorSource` (both store backends are).
        rrf_k: The reciprocal-rank constant of the pool.
    """

    def __init__(self, source: Any, rrf_k: int = RRF_K) -> None:
        self._source = source
        vectors = offered(source)[0]  # isinstance(source, VectorSource), found once
        self._lookup = source.stored_vectors if vectors else None
        self._query_vector = source.query_vector if vectors else None
        self._rrf_k = rrf_k

    def memory_terms(
        self, namespace: Namespace, messages: Sequence[Any], needs: Sequence[Any]
    ) -> dict[str, Any] | None:
        """How common the query texts' words are in the whole namespace, for ``state["memory"]``.

        ``{"records": N, "df": {term: records holding it}}`` for the judge's terms (the shared
        tokenizer's, without conversational filler) of the latest message, the dialogue and
        the needs; ``None`` when the source cannot count (not a
        :class:`~mnemon_langgraph.types.TermStatsSource`) or the count fails (logged: like
        the rest of the evidence it is optional, and the judge keeps the pool's counts).
        """
        if not offered(self._source)[1]:  # not a TermStatsSource
            return None
        words = list(
            dict.fromkeys(t for q in query_texts(messages, needs).values() for t in terms(q))
        )
        if not words:
            return None
        try:
            records, df = self._source.term_statistics(namespace, words)
        except Exception as error:
            logger.warning("read path: no memory word counts this turn (%s)", error)
            return None
        if records <= 0:
            return None
        return {"records": int(records), "df": {t: int(df.get(t, 0)) for t in words}}

    async def amemory_terms(
        self, namespace: Namespace, messages: Sequence[Any], needs: Sequence[Any]
    ) -> dict[str, Any] | None:
        """:meth:`memory_terms` in a worker thread (the index may sync from SQLite)."""
        return await asyncio.to_thread(self.memory_terms, namespace, messages, needs)

    @property
    def has_vectors(self) -> bool:
        """Whether similarities can come from stored vectors."""
        return self._lookup is not None and self._query_vector is not None

    def _embed(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Unit vectors of the query texts, from the source (its cache: a turn's searches
        embedded most of them already, and a dialogue repeats across turns)."""
        assert self._query_vector is not None
        return {
            t: np.asarray(self._query_vector(t), dtype=np.float64) for t in dict.fromkeys(texts)
        }

    def build(
        self,
        namespace: Namespace,
        pool: Sequence[PoolRecord],
        messages: Sequence[Any],
        needs: Sequence[Any],
    ) -> tuple[dict[str, RecordEvidence], float]:
        """Evidence of every pooled record, and the seconds spent embedding query texts."""
        out = {p["id"]: rank_evidence(p, self._rrf_k) for p in pool}
        if not self.has_vectors or not pool:
            return out, 0.0
        assert self._lookup is not None
        roles = query_texts(messages, needs)
        try:
            stored: Mapping[str, Any] = self._lookup(namespace, list(out)) if roles else {}
            t0 = time.perf_counter()
            qvec = self._embed(list(roles.values())) if stored else {}
            model_s = time.perf_counter() - t0
        except Exception as error:  # evidence is optional: the judge embeds what it needs
            logger.warning("read path: no stored-vector similarities this turn (%s)", error)
            return out, 0.0
        if not stored or not all(np.isfinite(v).all() for v in qvec.values()):
            return out, model_s
        names = list(roles)
        queries = np.vstack([qvec[roles[r]] for r in names])
        _attach_sims(out, stored, names, queries, len(needs))
        return out, model_s

    async def abuild(
        self,
        namespace: Namespace,
        pool: Sequence[PoolRecord],
        messages: Sequence[Any],
        needs: Sequence[Any],
    ) -> tuple[dict[str, RecordEvidence], float]:
        """:meth:`build` in a worker thread (SQLite reads and the embedder block)."""
        return await asyncio.to_thread(self.build, namespace, pool, messages, needs)


def _attach_sims(
    out: dict[str, RecordEvidence],
    stored: Mapping[str, Any],
    names: Sequence[str],
    queries: np.ndarray,
    n_needs: int,
) -> None:
    """Set each record's ``sim`` from one matrix product of its stored vector and the queries.

    One product for the whole batch (not one per record): the per-record Python work was
    most of the evidence's cost. A vector of another shape (another embedder) or with a
    non-finite entry gets no similarity rather than a wrong one.
    """
    ids: list[str] = []
    rows: list[np.ndarray] = []
    for rid, vec in stored.items():
        row = np.asarray(vec, dtype=np.float64)
        if rid in out and row.shape == queries.shape[1:] and np.isfinite(row).all():
            ids.append(rid)
            rows.append(row)
    if not rows:
        return
    cos = (np.vstack(rows) @ queries.T).tolist()
    col = {name: i for i, name in enumerate(names)}
    latest, context = col.get("latest"), col.get("context")
    need_cols = [col.get(f"need:{i}") for i in range(n_needs)]
    for rid, vals in zip(ids, cos, strict=True):
        out[rid]["sim"] = {
            "latest": _pick(vals, latest),
            "context": _pick(vals, context),
            "needs": [_pick(vals, c) for c in need_cols],
        }


def _pick(values: Sequence[float], index: int | None) -> float | None:
    """``values[index]`` rounded to 5 places; ``None`` for a query that was not there."""
    return None if index is None else round(float(values[index]), 5)
