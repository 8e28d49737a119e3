"""Dense vector index over records with FAISS, ids = journal ``seq``.

* Below :data:`HNSW_THRESHOLD` live vectors (default 50,000) the index is exact:
  ``IndexIDMap2(IndexFlatIP)`` over L2-normalised vectors (inner product = cosine). Exact
  search of 50k × 384 floats costs a few milliseconds, so nothing approximate is needed.
* From the threshold on, the vectors move to an approximate index, by default
  ``IndexIDMap2(IndexHNSWFlat(M=32))`` (inner product; ``efSearch`` grows with the index,
  :func:`faiss_ef_search_for`). :data:`ANN_KIND` gives the measurements behind that choice.
  ``IndexIDMap2(IndexIVFFlat)`` (``ann="ivf"``: k-means cells, full float vectors, cells
  grown with the index, :func:`ivf_nlist_for`, probes :func:`ivf_nprobe_for`) is available
  and indexes saved as IVF load and are searched as they are; only new builds use the
  configured kind.
* Neither approximate index deletes cheaply by id (``IndexIDMap2.remove_ids`` assumes the
  inner index renumbers, which IVF and HNSW do not), so deletions become *tombstones*
  filtered out at search time with an ``IDSelector``; once tombstones exceed a tenth of the
  index it is rebuilt from its own stored vectors. ``mnemon bench search`` reports
  recall@k against exact search.
* Filtered searches (dates, sessions) pass the allowed ids as an ``IDSelectorBatch``; on
  an approximate index, a small allowed set (≤ 20,000) is searched exactly over its
  reconstructed vectors, because a very selective filter loses recall there.

Threads: a single query is fastest on one thread — FAISS's OpenMP threads spinning on a busy
2-core machine made an exact search many times slower (docs/results/log.md, "Vector index"). So the
first :class:`VectorIndex` sets FAISS to ``$MNEMON_FAISS_THREADS`` threads (default 1; this
is process-wide), and bulk additions (≥ 10,000 vectors, e.g. building the approximate
index) temporarily use every core.

Persistence: ``faiss.write_index`` into a fresh file name, then the JSON sidecar that names
that file and its metadata is replaced atomically (``os.replace``); the old file is then
removed. A crash at any point leaves either the old or the new pair, never a mix. No pickle.
The sidecar format did not change when IVF was added: its ``kind`` may now also be ``ivf``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.errors import deprecated_names
from mnemon_langgraph.search._bm25 import IndexFileError

__all__ = [
    "ANN_KIND",
    "FAISS_EF_SEARCH_BY_SIZE",
    "FAISS_EF_SEARCH_LARGE",
    "HNSW_THRESHOLD",
    "VectorIndex",
    "faiss_ef_search_for",
    "ivf_nlist_for",
    "ivf_nprobe_for",
    "normalize_rows",
]

# FAISS's table differs from pgvector's on purpose (store/postgres/_settings.py): the old
# unprefixed names are deprecated for one release (docs/migration.md)
__getattr__ = deprecated_names(
    __name__,
    {
        "EF_SEARCH_BY_SIZE": "FAISS_EF_SEARCH_BY_SIZE",
        "EF_SEARCH_LARGE": "FAISS_EF_SEARCH_LARGE",
        "ef_search_for": "faiss_ef_search_for",
    },
)

HNSW_THRESHOLD = 50_000
"""Live vectors from which the exact flat index is replaced by an approximate one."""

QUANTIZED_SCAN_FROM = 8_192
"""Live vectors from which an unfiltered search of the exact flat index scans int8 codes first.

A flat scan reads every stored float; past several thousand vectors that no longer fits the
processor's fastest caches and the scan's cost grows faster than the index (a namespace of a
million tokens, about ten thousand records, is past it: docs/results/ten-million.md). From
this size an int8 copy of the vectors (a quarter of the bytes; FAISS's ``QT_8bit_direct_signed``
codes of the vectors times one scale, and of the query times its own) is scanned first, its
best candidates are scored again in float32 by the same FAISS kernel as the full scan, and
the result is returned only when no record outside the candidates can reach the ``k``-th
float32 score (:meth:`VectorIndex._quantized_scan`); otherwise the full scan answers. So
the results are the flat index's, scores and order of ties included. Namespaces below this
size, and filtered searches, use the full float32 scan alone.
"""

_Q8_HEADROOM = 1.25
"""The int8 scale leaves this much room above the largest component stored when it was set."""
_Q8_SLACK = 1e-4
"""Added to the rounding bound for float32 summation in FAISS's kernels."""
_Q8_CANDIDATES = 4
"""Candidates rescored per result wanted (then four times more once, then the full scan)."""
_Q8_REBUILD = 2.0
"""The int8 copy is rebuilt with a new scale when later vectors (clipped) raise its rounding
bound to this multiple of the bound it was built with."""

_EXACT_FILTER_LIMIT = 20_000
_FORMAT = 1
_BULK = 10_000
_threads_lock = threading.Lock()
_threads_set = False


def _configure_threads(faiss: Any) -> None:
    global _threads_set
    with _threads_lock:
        if not _threads_set:
            faiss.omp_set_num_threads(max(1, int(os.environ.get("MNEMON_FAISS_THREADS", "1"))))
            _threads_set = True


@contextlib.contextmanager
def _bulk_threads(faiss: Any, n: int) -> Iterator[None]:
    if n < _BULK:
        yield
        return
    with _threads_lock:
        before = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(before)


FAISS_EF_SEARCH_BY_SIZE: tuple[tuple[int, int], ...] = ((200_000, 128), (500_000, 256))
"""``(live vectors up to, efSearch)``; larger indexes use :data:`FAISS_EF_SEARCH_LARGE`.
FAISS's table: pgvector's differs on purpose (another index and recall curve,
:data:`~mnemon_langgraph.store.postgres._settings.PGVECTOR_EF_SEARCH_BY_SIZE`).

First chosen on ``mnemon bench search``'s synthetic topic vectors, then checked on **real**
MiniLM vectors: at 1M, efSearch 512 past 500k keeps the recall goal for questions like the
records with a margin, and buys the most for questions unlike them
(``docs/results/ann-real-text.md``). The dense part grows far slower than the index.
"""

FAISS_EF_SEARCH_LARGE = 512


def faiss_ef_search_for(live: int) -> int:
    """HNSW ``efSearch`` for an index of ``live`` vectors (see :data:`FAISS_EF_SEARCH_BY_SIZE`)."""
    for limit, ef in FAISS_EF_SEARCH_BY_SIZE:
        if live <= limit:
            return ef
    return FAISS_EF_SEARCH_LARGE


ANN_KIND = "hnsw"
"""Approximate index built for new indexes past the threshold: ``hnsw`` (default) or ``ivf``.

Chosen on **real** MiniLM vectors, where HNSW's recall against exact search is well above
IVF-Flat's at a similar query time, both for queries like the records and unlike them
(``docs/results/ann-real-text.md``). The synthetic vectors of ``mnemon bench search`` say the
opposite, because k-means cells capture their well-separated topics exactly; real sentence
vectors are not like that, so the synthetic figure is not the one to choose by
(docs/results/log.md, "Vector index"). HNSW's weak spot stays its slow 1M build, off the
write path.
"""

IVF_MAX_NLIST = 4096
"""Most k-means cells: training cost grows with cells × training sample."""

_IVF_TRAIN_PER_CELL = 40
_IVF_TRAIN_ITERATIONS = 10
_IVF_REGROW = 2


def ivf_nlist_for(n: int) -> int:
    """IVF cells for ``n`` vectors: the power of two nearest ``2·√n``.

    At most :data:`IVF_MAX_NLIST` and at most ``n / 40`` (k-means needs a few dozen
    training points per cell; FAISS warns below 39), at least 1. 50k → 512,
    200k → 1,024, 1M → 2,048.
    """
    if n <= 0:
        return 1
    target = 2.0 * float(np.sqrt(n))
    nlist = 1 << max(0, round(float(np.log2(target))))
    return int(max(1, min(nlist, IVF_MAX_NLIST, n // _IVF_TRAIN_PER_CELL)))


def ivf_nprobe_for(nlist: int) -> int:
    """Cells probed per query: a 64th of the cells, at least 16 (all when fewer).

    At 1M records (2,048 cells, 32 probed) that scans a 64th of the vectors, more than the
    bench's synthetic vectors need: the margin is for real embeddings, which are less neatly
    clustered (docs/results/log.md, "Vector index"). See
    :data:`ANN_KIND`, and ``mnemon bench search`` for the whole trade-off per size.
    """
    return int(min(nlist, max(16, nlist // 64)))


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Float32 copy of ``vectors`` with every row scaled to unit length (zero rows stay 0)."""
    arr = np.array(vectors, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    arr /= np.where(norms > 0, norms, 1.0)
    return arr


def _import_faiss() -> Any:
    """``faiss``, imported lazily (no import-time work) and without its loader's INFO lines.

    faiss's loader logs at INFO each instruction set it tries ("Loading faiss with AVX512-SPR
    support.", "Could not load library … swigfaiss_avx512_spr"), which any program that
    logs at INFO (``mnemon -v``, ``langgraph dev``, a notebook) would print on every start.
    Its logger is set to WARNING before the import, the way faiss's own loader allows, unless
    the application set a level for it itself; a loader error is still logged.
    """
    loader = logging.getLogger("faiss.loader")
    if loader.level == logging.NOTSET:
        loader.setLevel(logging.WARNING)
    import faiss

    return faiss


class VectorIndex:
    """Exact-then-approximate (IVF, or HNSW) inner-product index keyed by journal ``seq``.

    Not thread-safe for writes; the store serialises access per namespace (FAISS searches
    themselves release the GIL).

    Args:
        dim: Vector dimension.
        hnsw_threshold: Live vectors from which the approximate index is used.
        hnsw_m: HNSW graph degree.
        ef_construction: HNSW build breadth.
        ef_search: HNSW search breadth (raised to ``k`` when ``k`` is larger); ``None``
            (default) chooses it by index size, see :func:`faiss_ef_search_for`.
        ann: Approximate index built past the threshold, ``ivf`` or ``hnsw`` (default
            :data:`ANN_KIND`). An index loaded from disk keeps the kind it was saved with.
        nprobe: IVF cells probed per query; ``None`` (default) chooses it by the number of
            cells, see :func:`ivf_nprobe_for`.
        quantized_scan_from: Live vectors from which a flat index is scanned in 8 bits
            first (:data:`QUANTIZED_SCAN_FROM`; same results).
    """

    def __init__(
        self,
        dim: int,
        *,
        hnsw_threshold: int = HNSW_THRESHOLD,
        hnsw_m: int = 32,
        ef_construction: int = 64,
        ef_search: int | None = None,
        ann: str = ANN_KIND,
        nprobe: int | None = None,
        quantized_scan_from: int = QUANTIZED_SCAN_FROM,
    ) -> None:
        faiss = _import_faiss()
        self._faiss = faiss
        _configure_threads(faiss)
        self.dim = int(dim)
        self.hnsw_threshold = hnsw_threshold
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        if ann not in ("ivf", "hnsw"):
            raise ValueError(f"VectorIndex ann must be 'ivf' or 'hnsw', got {ann!r}")
        self.ann = ann
        self.nprobe = nprobe
        self.quantized_scan_from = quantized_scan_from
        self.kind = "flat"
        self._stored: tuple[int, np.ndarray] | None = None  # see _stored_ids
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        # int8 copy of a large flat index, position for position (built when searched), the
        # ids of those positions, the codes' scale and the largest rounding error of a vector
        self._q8: Any = None
        self._q8_ids = np.zeros(0, dtype=np.int64)
        self._q8_scale = 1.0
        self._q8_error = 0.0
        self._q8_built_error = 0.0
        self._tombstones: set[int] = set()
        self._max_seq = 0

    @property
    def _index(self) -> Any:
        """The FAISS index (an ``IndexIDMap2`` around the flat, IVF or HNSW index)."""
        return self._faiss_index

    @_index.setter
    def _index(self, index: Any) -> None:
        self._faiss_index = index
        self._stored = None  # another index: its ids are read again

    def _stored_ids(self) -> np.ndarray:
        """The ids the index holds, sorted; kept while the index and its size stay the same
        (an approximate index's id map only grows: deletions are tombstones), so a filtered
        search of a large namespace does not copy and sort every id each time."""
        total = int(self._index.ntotal)
        if self._stored is None or self._stored[0] != total:
            ids = self._faiss.vector_to_array(self._index.id_map).astype(np.int64)
            self._stored = (total, np.sort(ids))
        return self._stored[1]

    # -- size ------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Live vectors."""
        return int(self._index.ntotal) - len(self._tombstones)

    @property
    def effective_ef_search(self) -> int:
        """The HNSW search breadth used now: the one given, else by size."""
        return self.ef_search if self.ef_search is not None else faiss_ef_search_for(len(self))

    @property
    def nlist(self) -> int:
        """IVF cells of the index (0 unless it is IVF)."""
        if self.kind != "ivf":
            return 0
        inner: Any = self._faiss.downcast_index(self._index.index)
        return int(inner.nlist)

    @property
    def effective_nprobe(self) -> int:
        """IVF cells probed per query now: the one given, else by cells (0 unless IVF)."""
        if self.kind != "ivf":
            return 0
        return min(self.nlist, self.nprobe or ivf_nprobe_for(self.nlist))

    @property
    def max_seq(self) -> int:
        """Highest ``seq`` ever added (0 when empty)."""
        return self._max_seq

    # -- writing ---------------------------------------------------------------------------

    def _new_ann(self, sample: np.ndarray) -> Any:
        """An empty approximate index of kind :attr:`ann`, IVF cells trained on ``sample``.

        ``sample`` should be every vector the index will hold now (a random subset of
        ``40 × cells`` of them is used for k-means, 10 iterations).
        """
        faiss = self._faiss
        self.kind = self.ann
        if self.ann == "hnsw":
            hnsw = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efConstruction = self.ef_construction
            hnsw.hnsw.efSearch = self.effective_ef_search
            return faiss.IndexIDMap2(hnsw)
        nlist = ivf_nlist_for(len(sample))
        ivf = faiss.IndexIVFFlat(
            faiss.IndexFlatIP(self.dim), self.dim, nlist, faiss.METRIC_INNER_PRODUCT
        )
        ivf.cp.niter = _IVF_TRAIN_ITERATIONS
        ivf.cp.max_points_per_centroid = _IVF_TRAIN_PER_CELL
        ivf.cp.seed = 1234
        train = np.ascontiguousarray(sample, dtype=np.float32).reshape(-1, self.dim)
        with _bulk_threads(faiss, len(train)):
            ivf.train(train)
        ivf.make_direct_map()  # reconstruct by position: live_vectors, exact filtered search
        return faiss.IndexIDMap2(ivf)  # the Python wrappers keep the parts alive

    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        """Every stored (id, vector), tombstoned ones included."""
        ids = self._faiss.vector_to_array(self._index.id_map).astype(np.int64)
        if not len(ids):
            return ids, np.zeros((0, self.dim), dtype=np.float32)
        return ids, self._index.index.reconstruct_n(0, len(ids))

    def add(self, seqs: Iterable[int], vectors: np.ndarray, *, convert: bool = True) -> None:
        """Add unit vectors under ids ``seqs`` (ascending, above :attr:`max_seq`).

        Args:
            seqs: Ids, ascending, above :attr:`max_seq`.
            vectors: One unit row per id.
            convert: Switch to the approximate index here when the threshold is crossed.
                The write path passes ``False`` (the conversion takes seconds to minutes
                and must not run under the namespace lock); it then converts off the write
                path with :meth:`hnsw_from` / :meth:`catch_up_from`.
        """
        ids = np.asarray(list(seqs), dtype=np.int64)
        if not len(ids):
            return
        vecs = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        if ids[0] <= self._max_seq or np.any(np.diff(ids) <= 0):
            raise ValueError("VectorIndex.add needs ascending seqs above the current max_seq")
        if convert and self.kind == "flat" and len(self) + len(ids) >= self.hnsw_threshold:
            old_ids, old_vecs = self._all()
            self._index = self._new_ann(np.concatenate([old_vecs, vecs]))
            if len(old_ids):
                with _bulk_threads(self._faiss, len(old_ids)):
                    self._index.add_with_ids(old_vecs, old_ids)
        with _bulk_threads(self._faiss, len(ids)):
            self._index.add_with_ids(vecs, ids)
            if self.kind != "flat":
                self._q8 = None
            elif self._q8 is not None:
                self._q8_add(ids, vecs)
        self._max_seq = int(ids[-1])

    def advance(self, seq: int) -> None:
        """Record that every seq up to ``seq`` was seen, also those without a vector.

        Keeps :attr:`max_seq` equal to the BM25 index's (their checkpoints must agree) when
        the last records had no vector or could not be indexed.
        """
        self._max_seq = max(self._max_seq, int(seq))

    @property
    def needs_conversion(self) -> bool:
        """Whether the index should be rebuilt off the write path (see :meth:`add`).

        A flat index that reached :attr:`hnsw_threshold`, or an IVF index that grew so much
        since its cells were trained that :func:`ivf_nlist_for` asks for twice as many
        cells (four times the vectors): its cells would otherwise hold ever more vectors
        and every probe would cost more.
        """
        if self.kind == "flat":
            return len(self) >= self.hnsw_threshold
        if self.kind == "ivf" and self.ann == "ivf":
            return ivf_nlist_for(len(self)) >= _IVF_REGROW * self.nlist
        return False

    def live_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of every live ``(seqs, vectors)`` (tombstones left out)."""
        ids, vecs = self._all()
        if self._tombstones:
            keep = ~np.isin(ids, np.fromiter(self._tombstones, dtype=np.int64))
            ids, vecs = ids[keep], vecs[keep]
        return ids.copy(), np.array(vecs, dtype=np.float32, copy=True)

    @classmethod
    def hnsw_from(
        cls, dim: int, seqs: np.ndarray, vectors: np.ndarray, **settings: Any
    ) -> VectorIndex:
        """A new approximate index over ``(seqs, vectors)`` of the configured kind.

        Slow (about ten minutes for HNSW at 1M vectors on 2 cores, one for IVF); call it
        without any lock held. The store calls it for every conversion.
        """
        index = cls(dim, **settings)
        index._index = index._new_ann(vectors)
        if len(seqs):
            with _bulk_threads(index._faiss, len(seqs)):
                index._index.add_with_ids(np.ascontiguousarray(vectors), seqs)
            index._max_seq = int(seqs.max())
        return index

    def catch_up_from(self, newer: VectorIndex, built: np.ndarray) -> None:
        """Apply what changed in ``newer`` since ``built`` (its seqs) were snapshotted.

        Vectors ``newer`` gained above the snapshot are added; snapshot seqs it no longer
        holds (deleted meanwhile) are removed. Runs under the caller's lock: quick.
        """
        seqs, vecs = newer.live_vectors()
        top = int(built.max()) if len(built) else 0
        later = seqs > top
        if later.any():
            self.add(seqs[later].tolist(), vecs[later], convert=False)
        gone = np.setdiff1d(built, seqs, assume_unique=True)
        if len(gone):
            self.remove(gone.tolist())
        self._max_seq = max(self._max_seq, newer.max_seq)

    def remove(self, seqs: Iterable[int]) -> int:
        """Delete vectors by ``seq`` (tombstones on IVF / HNSW); returns how many were live."""
        wanted = np.asarray(sorted(set(seqs)), dtype=np.int64)
        if not len(wanted) or not self._index.ntotal:
            return 0
        stored = self._faiss.vector_to_array(self._index.id_map)
        present = wanted[np.isin(wanted, stored)]
        if self.kind == "flat":
            self._q8 = None  # positions shift: rebuilt at the next search
            self._stored = None
            return int(self._index.remove_ids(present)) if len(present) else 0
        new = {int(s) for s in present} - self._tombstones
        self._tombstones |= new
        if self._tombstones and len(self._tombstones) * 10 > self._index.ntotal:
            self._compact()
        return len(new)

    def _compact(self) -> None:
        ids, vecs = self._all()
        keep = ~np.isin(ids, np.fromiter(self._tombstones, dtype=np.int64))
        ids, vecs = ids[keep], vecs[keep]
        self._tombstones = set()
        self._q8 = None
        if len(ids) < self.hnsw_threshold:
            self.kind = "flat"
            self._index = self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(self.dim))
        else:
            self._index = self._new_ann(vecs)
        if len(ids):
            with _bulk_threads(self._faiss, len(ids)):
                self._index.add_with_ids(vecs, ids)

    # -- searching -------------------------------------------------------------------------

    def search(
        self, query: np.ndarray, k: int, *, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` by inner product: ``(seqs, scores)``, best first.

        Args:
            query: A unit query vector.
            k: How many to return at most.
            allowed: If given, only these ``seq`` ids may be returned (exact for the flat
                index and for small sets on IVF / HNSW).
        """
        faiss = self._faiss
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        live = len(self)
        if k <= 0 or live == 0 or (allowed is not None and not len(allowed)):
            return empty
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dim)
        if self.kind != "flat" and allowed is not None and len(allowed) <= _EXACT_FILTER_LIMIT:
            ids = np.asarray(allowed, dtype=np.int64)
            if self._tombstones:
                ids = ids[~np.isin(ids, np.fromiter(self._tombstones, dtype=np.int64))]
            stored = self._stored_ids()
            at = np.minimum(np.searchsorted(stored, ids), max(len(stored) - 1, 0))
            ids = ids[stored[at] == ids] if len(stored) else ids[:0]
            if not len(ids):
                return empty
            scores = self._index.reconstruct_batch(ids) @ q[0]
            order = np.lexsort((ids, -scores))[:k]
            return ids[order], scores[order].astype(np.float32)
        k_eff = min(k, live if allowed is None else min(live, len(allowed)))
        selector: Any = None
        keep_alive: list[Any] = []  # SWIG selectors hold raw pointers: keep every part alive
        if allowed is not None:
            selector = faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64))
            keep_alive.append(selector)
        if self._tombstones:
            batch = faiss.IDSelectorBatch(np.fromiter(self._tombstones, dtype=np.int64))
            dead = faiss.IDSelectorNot(batch)
            keep_alive += [batch, dead]
            selector = dead if selector is None else faiss.IDSelectorAnd(selector, dead)
            keep_alive.append(selector)
        if self.kind == "flat" and selector is None and live >= self.quantized_scan_from:
            hits = self._quantized_scan(q, k_eff)
            if hits is not None:
                return hits
        if self.kind == "hnsw":
            params: Any = faiss.SearchParametersHNSW(efSearch=max(self.effective_ef_search, k_eff))
            if selector is not None:
                params.sel = selector
        elif self.kind == "ivf":
            params = faiss.SearchParametersIVF(nprobe=self.effective_nprobe)
            if selector is not None:
                params.sel = selector
        else:
            params = faiss.SearchParameters(sel=selector) if selector is not None else None
        scores, ids = self._index.search(q, k_eff, params=params)
        del keep_alive
        found = ids[0] >= 0
        return ids[0][found].astype(np.int64), scores[0][found].astype(np.float32)

    def _q8_add(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        """Append vectors to the int8 copy, widening its error bound (or drop the copy when
        clipped components would widen it too much)."""
        if not len(ids):
            return
        scaled = vecs * np.float32(self._q8_scale)
        codes = np.clip(np.rint(scaled), -127, 127)
        error = float(np.linalg.norm(scaled - codes, axis=1).max()) / self._q8_scale
        self._q8_error = max(self._q8_error, error)
        if self._q8_error > _Q8_REBUILD * self._q8_built_error:
            self._q8 = None  # rebuilt with a new scale at the next search
            return
        self._q8.add(np.ascontiguousarray(codes, dtype=np.float32))
        self._q8_ids = np.concatenate([self._q8_ids, np.asarray(ids, dtype=np.int64)])

    def prepare(self) -> None:
        """Build now what the next search would otherwise build first: the int8 copy of a
        flat index of :attr:`quantized_scan_from` vectors or more (a caller that loads an
        index off its search path, so no search waits for it)."""
        if self.kind == "flat" and len(self) >= self.quantized_scan_from:
            self._quantized()

    def _quantized(self) -> Any:
        """The int8 copy of the flat index, built now if missing."""
        if self._q8 is None:
            faiss = self._faiss
            ids, vecs = self._all()  # in the flat index's order
            top = float(np.abs(vecs).max()) if len(vecs) else 1.0
            self._q8_scale = 127.0 / max(top * _Q8_HEADROOM, 1e-12)
            self._q8_error = self._q8_built_error = 0.0
            self._q8 = faiss.IndexScalarQuantizer(
                self.dim, faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
            )
            self._q8_ids = np.zeros(0, dtype=np.int64)
            scaled = vecs * np.float32(self._q8_scale)
            if len(vecs):
                self._q8_built_error = float(
                    np.linalg.norm(scaled - np.rint(scaled), axis=1).max() / self._q8_scale
                )
            self._q8_built_error = max(self._q8_built_error, 1e-9)
            self._q8_add(ids, vecs)
        return self._q8

    def _quantized_scan(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The flat index's top ``k`` via the int8 copy (see :data:`QUANTIZED_SCAN_FROM`);
        ``None`` when the candidates cannot be shown to hold it (the caller scans in full).

        Each stored ``x`` has codes ``c`` with ``‖x - c/s‖ ≤ E`` (``s`` the scale, ``E`` the
        largest rounding error of any stored vector) and the query ``q`` codes ``d`` with
        ``‖q - d/t‖ = e``; so ``|q·x - (d·c)/(s t)| ≤ E + e (1 + E)`` (Cauchy-Schwarz, unit
        vectors). The ``m`` records of best int8 score are scored in float32, in index order,
        by a small ``IndexFlatIP`` (the full scan's kernel: the same scores and order of
        ties). A record outside them scores at most the ``m``-th int8 score plus that bound;
        when that is below the ``k``-th float32 score found, the top ``k`` found is the flat
        index's.
        """
        faiss = self._faiss
        quantized = self._quantized()
        live = len(self._q8_ids)
        top = float(np.abs(q).max())
        if live != len(self) or top <= 0:
            return None
        qscale = 127.0 / top
        codes = np.rint(q * np.float32(qscale))
        e = float(np.linalg.norm(q - codes / np.float32(qscale)))
        bound = self._q8_error + e * (1 + self._q8_error) + _Q8_SLACK
        xb = faiss.rev_swig_ptr(faiss.downcast_index(self._index.index).get_xb(), live * self.dim)
        xb = xb.reshape(live, self.dim)
        for wanted in (_Q8_CANDIDATES * k, 4 * _Q8_CANDIDATES * k):
            wanted = min(max(wanted, k), live)
            approx, pos = quantized.search(codes.astype(np.float32), wanted)
            order = np.sort(pos[0][pos[0] >= 0])
            exact = faiss.IndexFlatIP(self.dim)
            exact.add(xb[order])
            scores, found = exact.search(q, k)
            last = float(approx[0][-1]) / (self._q8_scale * qscale)
            if wanted == live or last + bound < float(scores[0][-1]):
                keep = found[0] >= 0
                return self._q8_ids[order[found[0][keep]]], scores[0][keep].astype(np.float32)
        return None

    # -- persistence -----------------------------------------------------------------------

    def save(self, folder: Path, meta: dict[str, Any], *, name: str = "vectors") -> None:
        """Write the index to ``folder`` atomically (see the module docstring).

        The sidecar records the SHA-256 of the FAISS file, checked on load.
        """
        folder.mkdir(parents=True, exist_ok=True)
        sidecar = folder / f"{name}.json"
        old = _read_json(sidecar)
        filename = f"{name}-{uuid.uuid4().hex[:12]}.faiss"
        self._faiss.write_index(self._index, str(folder / filename))
        info = dict(
            meta,
            format=_FORMAT,
            file=filename,
            kind=self.kind,
            dim=self.dim,
            ntotal=int(self._index.ntotal),
            max_seq=self._max_seq,
            tombstones=sorted(self._tombstones),
        )
        info["sha256"] = _digest(folder / filename, info)
        _write_json_atomic(sidecar, info)
        if old and isinstance(old.get("file"), str) and old["file"] != filename:
            (folder / Path(old["file"]).name).unlink(missing_ok=True)

    @classmethod
    def load(
        cls, folder: Path, *, name: str = "vectors", **settings: Any
    ) -> tuple[VectorIndex, dict[str, Any]]:
        """Read an index written by :meth:`save`; returns it with its metadata.

        Every metadata field is type-checked, the sidecar and the FAISS file must match
        their SHA-256, and
        the index kind is taken from the file itself (a flat index labelled ``hnsw`` is
        refused), so a sidecar that parses but lies is rebuilt rather than trusted.

        Raises:
            IndexFileError: Missing, unreadable, tampered or inconsistent files.
        """
        info = _read_json(folder / f"{name}.json")
        fields = _checked_fields(info, folder)
        path = folder / Path(fields["file"]).name
        index = cls(fields["dim"], **settings)
        # The checksum is computed while FAISS reads the file (both release the GIL: at 1M
        # records that halves the time to open), and checked before the index is used.
        with ThreadPoolExecutor(1, thread_name_prefix="mnemon-digest") as pool:
            digest = pool.submit(_digest, path, fields)
            try:
                raw = index._faiss.read_index(str(path))
            except Exception as exc:  # faiss raises RuntimeError for unreadable files
                raw = exc
            try:
                if digest.result() != fields["sha256"]:
                    raise IndexFileError(f"vector index in {folder} fails its checksum")
            except OSError as exc:
                raise IndexFileError(f"cannot read vector index in {folder}: {exc}") from exc
        if isinstance(raw, Exception):
            raise IndexFileError(f"cannot read vector index in {folder}: {raw}") from raw
        if int(raw.ntotal) != fields["ntotal"] or int(raw.d) != index.dim:
            raise IndexFileError(f"vector index in {folder} disagrees with its metadata")
        if not hasattr(raw, "id_map"):
            raise IndexFileError(f"vector index in {folder} has no id map")
        inner = index._faiss.downcast_index(raw.index)
        actual = _kind_of(index._faiss, inner)
        if actual != fields["kind"]:
            raise IndexFileError(f"vector index in {folder} is {actual}, labelled {fields['kind']}")
        index._index = raw  # read_index already returns the concrete (owning) class
        index.kind = actual
        index._tombstones = set(fields["tombstones"])
        index._max_seq = fields["max_seq"]
        if index.kind == "hnsw":
            inner.hnsw.efSearch = index.effective_ef_search
        elif index.kind == "ivf" and inner.direct_map.type == index._faiss.DirectMap.NoMap:
            inner.make_direct_map()
        assert info is not None
        return index, info


def _kind_of(faiss: Any, inner: Any) -> str:
    """``hnsw``, ``ivf`` or ``flat``: what a loaded FAISS index really is."""
    if hasattr(inner, "hnsw"):
        return "hnsw"
    return "ivf" if isinstance(inner, faiss.IndexIVF) else "flat"


def _checked_fields(info: dict[str, Any] | None, folder: Path) -> dict[str, Any]:
    """The sidecar's fields, each of the right type, or :class:`IndexFileError`."""
    if not info or info.get("format") != _FORMAT:
        raise IndexFileError(f"no usable vector index metadata in {folder}")

    def is_int(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    checks: dict[str, Any] = {
        "file": lambda v: isinstance(v, str) and bool(v),
        "sha256": lambda v: isinstance(v, str),
        "kind": lambda v: v in ("flat", "hnsw", "ivf"),
        "dim": lambda v: is_int(v) and v > 0,
        "ntotal": lambda v: is_int(v) and v >= 0,
        "max_seq": lambda v: is_int(v) and v >= 0,
        "tombstones": lambda v: isinstance(v, list) and all(is_int(x) for x in v),
    }
    for key, ok in checks.items():
        if not ok(info.get(key)):
            raise IndexFileError(
                f"vector index metadata in {folder}: field {key!r} is missing or has the "
                f"wrong type ({type(info.get(key)).__name__})"
            )
    return info


def _digest(path: Path, info: dict[str, Any]) -> str:
    """SHA-256 of the sidecar's fields (but ``sha256``) and the index file's bytes."""
    digest = hashlib.sha256()
    fields = {k: v for k, v in info.items() if k != "sha256"}
    digest.update(json.dumps(fields, sort_keys=True, default=str).encode("utf-8"))
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
