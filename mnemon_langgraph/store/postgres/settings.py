"""The tuning of a PostgreSQL store: one frozen :class:`PostgresSettings`, given at construction.

The defaults are what production uses; the benchmarks and tests build a store (or a sibling
sharing its pool, :meth:`~mnemon_langgraph.store.postgres.PostgresStore.with_settings`) with
other values to measure or exercise what a setting changes, never by flipping attributes of
a running store.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.store.postgres.impact import (
    FIRST_PARTS,
    FULL_BELOW_POSTINGS,
    PACK_MIN,
    PACK_PART,
)

__all__ = [
    "EF_SEARCH_BY_SIZE",
    "EF_SEARCH_LARGE",
    "EF_SEARCH_MAX",
    "EXACT_BELOW",
    "HALF_RERANK",
    "PostgresSettings",
    "ef_search_for",
]

EXACT_BELOW = 150_000
"""Namespaces with fewer records are searched exactly (recall 1). Measured (``bench
backend``, 2 shared cores, 384-d word-mix vectors): an exact scan costs about 1.4 ms per
1,000 vectors (12 ms at 10k, 141 ms at 100k). HNSW with pgvector's default graph
(``m = 16``) tops out at recall@48 0.94 at 100k even at the largest ``ef_search`` (1,000);
the denser ``m = 32, ef_construction = 128`` reaches 0.99 there in 123 ms, but makes every
insert ~3.6× slower (see :data:`~.schema.HNSW_M`). Exact search up to 150k records
(≤ ~210 ms) meets the 0.98 goal for a 100k namespace at no cost to ingest; above it HNSW,
whose cost grows sub-linearly while the exact scan's grows linearly (README)."""

EF_SEARCH_BY_SIZE: tuple[tuple[int, int], ...] = ((10_000, 400),)
"""``(namespace records up to, hnsw.ef_search)``; larger namespaces use :data:`EF_SEARCH_LARGE`.

Measured with ``mnemon bench backend`` (recall@48 against exact search, word-mix stand-in
vectors, ``m = 16, ef_construction = 64``, iterative scan ``relaxed_order``): for one
namespace, recall 0.65 / 0.80 / 0.91 / 0.97 at ef_search 48 / 100 / 200 / 400 with 10k
records and 0.65 / 0.71 / 0.82 / 0.88 / 0.94 at 48 / 100 / 200 / 400 / 1000 with 100k; a
namespace holding 1% of the table had recall 1.00 at every value. Only namespaces of
:data:`EXACT_BELOW` records or more use HNSW, so they get :data:`EF_SEARCH_LARGE`; the 10k
entry serves stores opened with a smaller ``exact_below``.
"""

EF_SEARCH_LARGE = 200
"""``hnsw.ef_search`` past :data:`EF_SEARCH_BY_SIZE` (in practice: namespaces of
:data:`EXACT_BELOW` records or more). Measured on real text (1M MiniLM passage vectors, one
namespace, ``bench backend --corpus``): recall@48 0.986 / 0.995 / 0.997 / 0.999 at
ef_search 100 / 200 / 400 / 1000 (9 / 21 / 27 / 56 ms); 200 keeps the 0.98 goal with a
margin at a third of 1,000's time (re-checked by ``docs/results/pg_bm25_1m.py parts``).
Was 1,000 (the most pgvector accepts) while the only figures were the word-mix stand-in
vectors', which reach 0.98 nowhere at 100k (0.82 at 200, 0.94 at 1,000): a corpus whose
vectors are as unclustered as those would lose recall here; pass ``ef_search=`` to the
store to trade latency back for it."""
HALF_RERANK = 200
"""How many nearest neighbours by the half-precision copy the exact search re-ranks by the
float vectors (at least ``4 × k``); halfvec rounding (~1e-3 relative) only reorders
near-ties, which the re-rank undoes (docs/results)."""

EF_SEARCH_MAX = 1000  # pgvector rejects a larger hnsw.ef_search


def ef_search_for(docs: int) -> int:
    """``hnsw.ef_search`` for a namespace of ``docs`` records (:data:`EF_SEARCH_BY_SIZE`)."""
    for limit, ef in EF_SEARCH_BY_SIZE:
        if docs <= limit:
            return ef
    return EF_SEARCH_LARGE


@dataclass(frozen=True, slots=True)
class PostgresSettings:
    """How a PostgreSQL store searches and maintains its BM25 packs.

    Attributes:
        exact_below: Namespaces with fewer records use exact dense search; larger ones
            the HNSW index (iterative scan).
        ef_search: ``hnsw.ef_search`` of HNSW searches; ``None`` chooses it by the
            namespace's size (:func:`ef_search_for`).
        half_scan: Exact search scans the half-precision copy and re-ranks its nearest by
            the float vectors (``False``: scan the float vectors).
        bm25_prune: BM25 reads impact postings score at a time and stops once the top
            ``k`` is proven (``False``: the one full query, the reference ranking).
        bm25_full_below: Queries whose terms have fewer postings run the full query.
        bm25_first_parts: Pack parts of each term the first round reads.
        bm25_pack_part: Postings per part of the packs this store writes.
        bm25_pack_min: Terms with more postings get a pack.
    """

    exact_below: int = EXACT_BELOW
    ef_search: int | None = None
    half_scan: bool = True
    bm25_prune: bool = True
    bm25_full_below: int = FULL_BELOW_POSTINGS
    bm25_first_parts: int = FIRST_PARTS
    bm25_pack_part: int = PACK_PART
    bm25_pack_min: int = PACK_MIN

    def __post_init__(self) -> None:
        for name in ("exact_below", "bm25_full_below", "bm25_first_parts", "bm25_pack_min"):
            _check_int(name, getattr(self, name), 0)
        _check_int("bm25_pack_part", self.bm25_pack_part, 1)
        if self.ef_search is not None:
            _check_int("ef_search", self.ef_search, 1)
        for name in ("half_scan", "bm25_prune"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False")


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer of at least {minimum}, got {value!r}")
