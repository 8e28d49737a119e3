"""The tuning of a PostgreSQL store: one frozen :class:`PostgresSettings`, given at construction.

The defaults are what production uses; the benchmarks and tests build a store (or a sibling
sharing its pool, :meth:`~mnemon_langgraph.store.postgres.PostgresStore.with_settings`) with
other values to measure or exercise what a setting changes, never by flipping attributes of
a running store.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemon_langgraph.errors import ConfigurationError, deprecated_names
from mnemon_langgraph.search._vectors import HNSW_THRESHOLD
from mnemon_langgraph.store.postgres._impact import (
    FIRST_PARTS,
    FRAME_MIN,
    FULL_BELOW_POSTINGS,
    PACK_MIN,
    PACK_PART,
)

__all__ = [
    "CLIENT_CACHE_MB",
    "CLIENT_SCAN_FROM",
    "EXACT_BELOW",
    "HALF_RERANK",
    "OLD_EF_SEARCH_NAMES",
    "PGVECTOR_EF_SEARCH_BY_SIZE",
    "PGVECTOR_EF_SEARCH_LARGE",
    "PGVECTOR_EF_SEARCH_MAX",
    "PostgresSettings",
    "pgvector_ef_search_for",
]

# pgvector's table differs from FAISS's on purpose (search/_vectors.py): the old unprefixed
# names are deprecated for one release (docs/migration.md)
OLD_EF_SEARCH_NAMES = {
    "EF_SEARCH_BY_SIZE": "PGVECTOR_EF_SEARCH_BY_SIZE",
    "EF_SEARCH_LARGE": "PGVECTOR_EF_SEARCH_LARGE",
    "EF_SEARCH_MAX": "PGVECTOR_EF_SEARCH_MAX",
    "ef_search_for": "pgvector_ef_search_for",
}
__getattr__ = deprecated_names(__name__, OLD_EF_SEARCH_NAMES)

EXACT_BELOW = 150_000
"""Namespaces with fewer records are searched exactly (recall 1): up to this size an exact
scan meets the recall goal in a few hundred milliseconds at no cost to ingest, while a
denser HNSW graph that would match it makes every insert slower (figures: docs/results and
the README's PostgreSQL section)."""

CLIENT_SCAN_FROM = 1
"""Namespaces with at least this many records are searched in the client, on a cached copy
of their vectors and (``client_bm25``) their BM25 index (:mod:`._vector_cache`): the
server's exact scan reads every vector of the namespace at every search, so the search grew
with the namespace; and its BM25 query scores every record holding a query word, so even a
thousand-record namespace cost the server most of a read's CPU
(docs/results/search-scaling.md). With both rankings in the copy a copy pays at any size
(its first load is off the search path); set a larger value to keep small namespaces'
searches in the server (``client_cache_mb=0``: every search)."""

CLIENT_CACHE_MB = 512
"""Most memory (MiB) the cached copies of one store hold together, least recently searched
dropped first: five bytes per dimension and record below ``exact_below`` (the float vectors
and their int8 copy), the float vectors and the HNSW graph's links from there, and the
record's fields (:func:`._vector_cache.bytes_per_record`; sizes per namespace in
docs/postgres.md). A namespace that does not fit is searched in the server."""

PGVECTOR_EF_SEARCH_BY_SIZE: tuple[tuple[int, int], ...] = ((10_000, 400),)
"""``(namespace records up to, hnsw.ef_search)``; larger namespaces use
:data:`PGVECTOR_EF_SEARCH_LARGE`. pgvector's table: FAISS's differs on purpose
(:data:`~mnemon_langgraph.search._vectors.FAISS_EF_SEARCH_BY_SIZE`, another index).

Only namespaces of :data:`EXACT_BELOW` records or more use HNSW, so they get
:data:`PGVECTOR_EF_SEARCH_LARGE`; the 10k entry serves stores opened with a smaller ``exact_below``
(recall per ``ef_search``: ``mnemon bench backend``, docs/results)."""

PGVECTOR_EF_SEARCH_LARGE = 200
"""``hnsw.ef_search`` past :data:`PGVECTOR_EF_SEARCH_BY_SIZE`: on real text it keeps the recall goal
with a margin at a third of the largest value's time (``benchmarks/pg_bm25_1m.py
parts``); a corpus of less clustered vectors may need more: pass ``ef_search=``."""

HALF_RERANK = 200
"""How many nearest neighbours by the half-precision copy the exact search re-ranks by the
float vectors (at least ``4 × k``); halfvec rounding (~1e-3 relative) only reorders
near-ties, which the re-rank undoes (docs/results)."""

PGVECTOR_EF_SEARCH_MAX = 1000  # pgvector rejects a larger hnsw.ef_search


def pgvector_ef_search_for(docs: int) -> int:
    """``hnsw.ef_search`` for a namespace of ``docs`` records
    (:data:`PGVECTOR_EF_SEARCH_BY_SIZE`)."""
    for limit, ef in PGVECTOR_EF_SEARCH_BY_SIZE:
        if docs <= limit:
            return ef
    return PGVECTOR_EF_SEARCH_LARGE


@dataclass(frozen=True, slots=True)
class PostgresSettings:
    """How a PostgreSQL store searches and maintains its BM25 packs.

    Attributes:
        exact_below: Namespaces with fewer records use exact dense search; larger ones
            the HNSW index (iterative scan).
        ef_search: ``hnsw.ef_search`` of HNSW searches; ``None`` chooses it by the
            namespace's size (:func:`pgvector_ef_search_for`).
        half_scan: Exact search scans the half-precision copy and re-ranks its nearest by
            the float vectors (``False``: scan the float vectors).
        client_scan_from: Namespaces from this many records (below ``exact_below``) are
            searched exactly in this process, on a cached copy of their vectors.
        client_cache_mb: Most MiB those copies hold together (``0``: always scan in the
            server).
        client_ann: Namespaces from ``exact_below`` records are searched in this process
            too, on an approximate copy (the embedded backend's FAISS HNSW) when it fits
            ``client_cache_mb`` (``False``: pgvector's HNSW in the server).
        client_ann_from: From this many records (or ``exact_below`` if smaller) the client's
            copy is the approximate index, as the embedded backend's is from its
            ``hnsw_threshold`` (the same default): below, an exact scan of the copy.
        client_bm25: Those copies also hold the namespace's BM25 index, so a search of a
            copied namespace ranks both sides in this process (``False``: BM25 in the
            server at every search).
        bm25_prune: BM25 reads impact postings score at a time and stops once the top
            ``k`` is proven (``False``: the one full query, the reference ranking).
        bm25_full_below: Queries whose terms have fewer postings run the full query.
        bm25_first_parts: Pack parts of each term the first round reads.
        bm25_pack_part: Postings per part of the packs this store writes.
        bm25_pack_min: Terms with more postings get a pack.
        bm25_frame_min: Namespaces with at least this many records get a BM25 frame (one
            byte per record and common term: the bound of common-word queries).
    """

    exact_below: int = EXACT_BELOW
    ef_search: int | None = None
    half_scan: bool = True
    client_scan_from: int = CLIENT_SCAN_FROM
    client_cache_mb: int = CLIENT_CACHE_MB
    client_ann: bool = True
    client_ann_from: int = HNSW_THRESHOLD
    client_bm25: bool = True
    bm25_prune: bool = True
    bm25_full_below: int = FULL_BELOW_POSTINGS
    bm25_first_parts: int = FIRST_PARTS
    bm25_pack_part: int = PACK_PART
    bm25_pack_min: int = PACK_MIN
    bm25_frame_min: int = FRAME_MIN

    def __post_init__(self) -> None:
        for name in (
            "exact_below",
            "client_scan_from",
            "client_cache_mb",
            "client_ann_from",
            "bm25_full_below",
            "bm25_first_parts",
            "bm25_pack_min",
            "bm25_frame_min",
        ):
            _check_int(name, getattr(self, name), 0)
        _check_int("bm25_pack_part", self.bm25_pack_part, 1)
        if self.ef_search is not None:
            _check_int("ef_search", self.ef_search, 1)
        for name in ("half_scan", "client_ann", "client_bm25", "bm25_prune"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be True or False")


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer of at least {minimum}, got {value!r}")
