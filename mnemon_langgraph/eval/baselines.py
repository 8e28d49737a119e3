"""Retrieval baselines on turn-level records (the comparators of seeds/003).

"Turns" means **one turn per record**: the evaluation chunks each conversation's messages
a second time with ``chunk_messages(..., pack=False)`` (so no two turns share a record; a
turn longer than a record is split, which LoCoMo turns never are) and computes the
baselines over those records *directly, in memory* — it does not write them to the journal.
Each baseline ranks the records for the question, using the package's own pieces:

* ``turns+cosine``: cosine similarity of the question's embedding to each record's (the
  same :class:`~langchain_core.embeddings.Embeddings` as the store; vectors normalised);
* ``turns+bm25``: :class:`mnemon_langgraph.search._bm25.BM25Index` over the rendered records;
* ``turns+rrf``: reciprocal rank fusion (k = 60) of the two rankings, as the store fuses.

A baseline's context at ``k`` is its top ``k`` records; at ``view`` it is the longest prefix
of its ranking whose rendered characters fit in the characters the View used for the same
question (matched context). Records are rendered as the View renders them (header + text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

import mnemon_langgraph.search._fusion as fusion
from mnemon_langgraph.search._bm25 import NO_DATE, BM25Index
from mnemon_langgraph.types import Record

__all__ = [
    "BASELINE_KS",
    "BASELINE_METHODS",
    "TurnIndex",
    "baseline_names",
    "budget_prefix",
    "rrf_fuse",
]

BASELINE_KS: tuple[int, ...] = (3, 6, 20, 30, 48)
"""Numbers of turns each baseline is scored at (seeds/003: 3, 6, 20; the paper's 30, 48)."""

BASELINE_METHODS: tuple[str, ...] = ("cosine", "bm25", "rrf")
"""Rankings computed by :class:`TurnIndex`."""

RRF_K = fusion.RRF_K


def rrf_fuse(rankings: Sequence[Sequence[int]], *, k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion of rankings of record indices, with the store's own fusion.

    Delegates to :func:`mnemon_langgraph.search._fusion.rrf_fuse` (0-based ranks, deterministic
    ties) and returns the fused indices, best first.
    """
    return [int(f.key) for f in fusion.rrf_fuse([list(r) for r in rankings], k=k)]


def budget_prefix(ranking: Sequence[int], sizes: Sequence[int], budget: int) -> list[int]:
    """The longest prefix of ``ranking`` whose ``sizes`` sum to at most ``budget``."""
    out: list[int] = []
    used = 0
    for item in ranking:
        if used + sizes[item] > budget:
            break
        used += sizes[item]
        out.append(item)
    return out


@dataclass
class TurnIndex:
    """Turn-level records of one conversation with cosine, BM25 and RRF rankings.

    Build with :meth:`build`; then :meth:`rankings` per question.

    Attributes:
        records: The turn-level records, in conversation order.
        rendered: ``record.render()`` of each record.
        vectors: Normalised record embeddings, shape ``(n, dim)``.
        bm25: The BM25 index (document id = record index + 1).
    """

    records: list[Record]
    rendered: list[str]
    vectors: np.ndarray
    bm25: BM25Index
    embeddings: Embeddings

    @classmethod
    def build(
        cls, records: Sequence[Record], embeddings: Embeddings, *, embed_headers: bool = True
    ) -> TurnIndex:
        """Index ``records`` (embedding them once with ``embeddings``).

        ``embed_headers=False`` embeds each record's text without its header line (date,
        session), as the store does: the vectors of a turn then do not depend on where the
        turn is placed in time, so an embedding cache serves every placement (the filler
        histories of :mod:`~mnemon_langgraph.eval.filler`). BM25 indexes the rendered text
        either way.
        """
        recs = list(records)
        rendered = [r.render() for r in recs]
        texts = rendered if embed_headers else [r.text for r in recs]
        vectors = _normalise(np.asarray(embeddings.embed_documents(texts), dtype=np.float32))
        bm25 = BM25Index()
        if recs:
            bm25.add(
                seqs=list(range(1, len(recs) + 1)),
                ids=[r.id for r in recs],
                texts=rendered,
                sessions=[r.session for r in recs],
                dates=[int(r.date.timestamp()) if r.date else NO_DATE for r in recs],
            )
        return cls(recs, rendered, vectors, bm25, embeddings)

    def rankings(self, query: str, *, depth: int = 100) -> dict[str, list[int]]:
        """Record indices best first for each method of :data:`BASELINE_METHODS`.

        Args:
            query: The question.
            depth: How many records each ranking keeps (and RRF fuses).
        """
        n = len(self.records)
        if n == 0:
            return {m: [] for m in BASELINE_METHODS}
        q = _normalise(np.asarray([self.embeddings.embed_query(query)], dtype=np.float32))[0]
        sims = self.vectors @ q
        cosine = [int(i) for i in np.lexsort((np.arange(n), -sims))[:depth]]
        seqs, _scores = self.bm25.search(query, depth)
        bm25 = [int(s) - 1 for s in seqs]
        return {"cosine": cosine, "bm25": bm25, "rrf": rrf_fuse([bm25, cosine])[:depth]}

    def contexts(
        self, query: str, *, ks: Sequence[int] = BASELINE_KS, view_chars: int | None = None
    ) -> dict[str, list[int]]:
        """Each baseline's context for ``query``: ``"turns+<method>@<k>"`` and ``@view``.

        Returns:
            Baseline name → record indices in the context.
        """
        ranks = self.rankings(query, depth=max(max(ks, default=0), 100))
        sizes = [len(t) for t in self.rendered]
        out: dict[str, list[int]] = {}
        for method, ranking in ranks.items():
            for k in ks:
                out[f"turns+{method}@{k}"] = ranking[:k]
            if view_chars is not None:
                out[f"turns+{method}@view"] = budget_prefix(ranking, sizes, view_chars)
        return out

    def message_ids(self, indices: Sequence[int]) -> set[str]:
        """Message ids held by the records at ``indices``."""
        return {mid for i in indices for mid in self.records[i].message_ids}

    def chars(self, indices: Sequence[int]) -> int:
        """Rendered characters of the records at ``indices``."""
        return sum(len(self.rendered[i]) for i in indices)

    def text(self, indices: Sequence[int]) -> str:
        """The context text: rendered records joined by blank lines."""
        return "\n\n".join(self.rendered[i] for i in indices)


def _normalise(matrix: np.ndarray) -> np.ndarray:
    if matrix.size == 0:
        return matrix.reshape(0, 0) if matrix.ndim != 2 else matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def baseline_names(ks: Sequence[int] = BASELINE_KS, *, with_view: bool = True) -> list[str]:
    """All baseline names in report order."""
    names = [f"turns+{m}@{k}" for m in BASELINE_METHODS for k in ks]
    if with_view:
        names += [f"turns+{m}@view" for m in BASELINE_METHODS]
    return names
