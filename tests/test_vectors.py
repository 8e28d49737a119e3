"""Tests of the FAISS vector index (exact flat, IVF or HNSW past a threshold, tombstones)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnemon_langgraph.search._bm25 import IndexFileError
from mnemon_langgraph.search._vectors import (
    ANN_KIND,
    VectorIndex,
    faiss_ef_search_for,
    ivf_nlist_for,
    ivf_nprobe_for,
    normalize_rows,
)

DIM = 16


def _data(n: int, seed: int = 0) -> np.ndarray:
    return normalize_rows(np.random.default_rng(seed).standard_normal((n, DIM)))


def _exact(vecs: np.ndarray, seqs: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return seqs[np.argsort(-(vecs @ q), kind="stable")[:k]].tolist()


def test_normalize_rows() -> None:
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_flat_is_exact_with_seq_ids() -> None:
    vecs = _data(200)
    seqs = np.arange(10, 210, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(seqs[:150], vecs[:150])
    index.add(seqs[150:], vecs[150:])
    assert index.kind == "flat" and len(index) == 200 and index.max_seq == 209
    q = vecs[7]
    got, scores = index.search(q, 10)
    assert got.tolist() == _exact(vecs, seqs, q, 10)
    assert got[0] == 17 and scores[0] == pytest.approx(1.0, abs=1e-5)


def test_flat_remove_and_filter() -> None:
    vecs = _data(50, seed=1)
    seqs = np.arange(1, 51, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(seqs, vecs)
    assert index.remove([5, 6, 999]) == 2
    got, _ = index.search(vecs[4], 50)
    assert 5 not in got.tolist() and 6 not in got.tolist() and len(got) == 48
    allowed = np.array([1, 2, 3, 40], dtype=np.int64)
    got, _ = index.search(vecs[39], 10, allowed=allowed)
    assert sorted(got.tolist()) == [1, 2, 3, 40] and got[0] == 40
    assert index.search(vecs[0], 5, allowed=np.array([], dtype=np.int64))[0].tolist() == []


@pytest.mark.parametrize("ann", ["ivf", "hnsw"])
def test_switches_to_ann_with_good_recall_and_tombstones(ann: str) -> None:
    vecs = _data(600, seed=2)
    seqs = np.arange(1, 601, dtype=np.int64)
    index = VectorIndex(DIM, hnsw_threshold=300, ann=ann)
    index.add(seqs[:200], vecs[:200])
    assert index.kind == "flat"
    index.add(seqs[200:], vecs[200:])
    assert index.kind == ann and len(index) == 600
    recall = np.mean(
        [
            len(set(index.search(vecs[i], 10)[0].tolist()) & set(_exact(vecs, seqs, vecs[i], 10)))
            / 10
            for i in range(0, 600, 30)
        ]
    )
    assert recall >= 0.9
    assert index.remove([1, 2, 3]) == 3
    assert len(index) == 597
    got, _ = index.search(vecs[0], 20)
    assert 1 not in got.tolist() and len(got) == 20
    # filtered search on an approximate index with a small allowed set is exact
    allowed = np.array([1, 50, 51, 52], dtype=np.int64)
    got, _ = index.search(vecs[50], 10, allowed=allowed)
    assert sorted(got.tolist()) == [50, 51, 52] and got[0] == 51
    # deleting more than a tenth compacts (tombstones gone, back to flat below threshold)
    index.remove(range(4, 400))
    assert index.kind == "flat" and len(index) == 201 and not index._tombstones


@pytest.mark.parametrize("ann", ["ivf", "hnsw"])
def test_save_load_roundtrip(tmp_path: Path, ann: str) -> None:
    vecs = _data(400, seed=3)
    seqs = np.arange(1, 401, dtype=np.int64)
    index = VectorIndex(DIM, hnsw_threshold=300, ann=ann)
    index.add(seqs, vecs)
    index.remove([10])
    index.save(tmp_path, {"generation": 3})
    first = sorted(tmp_path.glob("vectors-*.faiss"))
    index.save(tmp_path, {"generation": 4})
    files = sorted(tmp_path.glob("vectors-*.faiss"))
    assert len(files) == 1 and files != first  # old file replaced, not left behind
    loaded, meta = VectorIndex.load(tmp_path)
    assert meta["generation"] == 4 and loaded.kind == ann and len(loaded) == 399
    assert loaded.nlist == index.nlist and loaded.live_vectors()[0].tolist()[:3] == [1, 2, 3]
    got, _ = loaded.search(vecs[9], 5)
    assert 10 not in got.tolist()
    assert loaded.search(vecs[20], 5)[0].tolist() == index.search(vecs[20], 5)[0].tolist()
    files[0].write_bytes(b"not a faiss index")
    with pytest.raises(IndexFileError):
        VectorIndex.load(tmp_path)
    with pytest.raises(IndexFileError):
        VectorIndex.load(tmp_path / "nowhere")


def test_ef_search_grows_with_the_index_unless_given() -> None:
    """Issue 15: efSearch 128 loses recall at 1M (0.91), so larger indexes search wider."""
    from mnemon_langgraph.search._vectors import FAISS_EF_SEARCH_LARGE, faiss_ef_search_for

    sizes = [1, 50_000, 200_000, 200_001, 500_001, 1_000_000, 10_000_000]
    efs = [faiss_ef_search_for(n) for n in sizes]
    assert efs == sorted(efs) and efs[0] == 128 and efs[-1] == FAISS_EF_SEARCH_LARGE > 128
    auto = VectorIndex(8, hnsw_threshold=1, ann="hnsw")
    rng = np.random.default_rng(0)
    auto.add(range(1, 101), normalize_rows(rng.standard_normal((100, 8))))
    assert auto.kind == "hnsw" and auto.effective_ef_search == faiss_ef_search_for(100)
    fixed = VectorIndex(8, hnsw_threshold=1, ef_search=40, ann="hnsw")
    assert fixed.effective_ef_search == 40


def _clustered(n: int, topics: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors around ``topics`` random centroids (like ``bench search``'s)."""
    rng = np.random.default_rng(seed)
    centroids = normalize_rows(rng.standard_normal((topics, dim)))
    noise = rng.standard_normal((n, dim)) / np.sqrt(dim)
    return normalize_rows(centroids[rng.integers(0, topics, size=n)] + noise)


def test_ivf_recall_against_exact_search() -> None:
    """Issue 15: IVF past the threshold keeps recall@48 ≥ 0.98; one probe would not."""
    dim, n, k = 32, 6_000, 48
    vecs = _clustered(n + 30, 24, dim, seed=5)
    base, queries = vecs[:n], vecs[n:]
    seqs = np.arange(1, n + 1, dtype=np.int64)
    index = VectorIndex(dim, hnsw_threshold=1_000, ann="ivf")
    index.add(seqs, base)
    assert index.kind == "ivf" and index.nlist == ivf_nlist_for(n) == 128
    assert index.effective_nprobe == ivf_nprobe_for(128) == 16

    def recall() -> float:
        return float(
            np.mean(
                [
                    len(set(index.search(q, k)[0].tolist()) & set(_exact(base, seqs, q, k))) / k
                    for q in queries
                ]
            )
        )

    assert recall() >= 0.98
    index.nprobe = 1  # the same index probing one cell: clearly approximate
    assert recall() < 0.9


def test_ivf_cells_and_probes_grow_with_the_index() -> None:
    sizes = [50_000, 200_000, 1_000_000, 100_000_000]
    assert [ivf_nlist_for(n) for n in sizes] == [512, 1_024, 2_048, 4_096]
    assert [ivf_nprobe_for(c) for c in (10, 512, 2_048, 4_096)] == [10, 16, 32, 64]
    assert ivf_nlist_for(100) == 2 and ivf_nlist_for(0) == 1  # ≥ 40 training points a cell
    vecs = _data(1_000, seed=6)
    index = VectorIndex(DIM, hnsw_threshold=200, ann="ivf")
    index.add(np.arange(1, 401), vecs[:400])
    assert index.kind == "ivf" and index.nlist == 10 and not index.needs_conversion
    index.add(np.arange(401, 1_001), vecs[400:])  # ×2.5: the cells are kept
    assert index.nlist == 10 and index.needs_conversion  # nlist_for(1000) = 25 ≥ 2 × 10
    seqs, live = index.live_vectors()
    regrown = VectorIndex.hnsw_from(DIM, seqs, live, hnsw_threshold=200, ann="ivf")
    assert regrown.kind == "ivf" and regrown.nlist == 25 and not regrown.needs_conversion
    assert regrown.search(vecs[500], 1)[0].tolist() == [501]


@pytest.mark.parametrize("saved", ["hnsw", "ivf"])
def test_saved_approximate_index_loads_as_it_is(tmp_path: Path, saved: str) -> None:
    """A saved HNSW or IVF index is loaded and searched as it is, never rebuilt or converted
    to today's default kind (IVF was the default of one development version)."""
    vecs = _data(500, seed=7)
    seqs = np.arange(1, 501, dtype=np.int64)
    old = VectorIndex(DIM, hnsw_threshold=100, ann=saved)
    old.add(seqs, vecs)
    old.save(tmp_path, {"generation": 1})
    loaded, _ = VectorIndex.load(tmp_path)  # today's defaults: ann=ANN_KIND ("hnsw")
    assert ANN_KIND == "hnsw" and loaded.ann == "hnsw"
    assert loaded.kind == saved and not loaded.needs_conversion
    if saved == "hnsw":
        assert (
            loaded.effective_ef_search == faiss_ef_search_for(500) and loaded.effective_nprobe == 0
        )
    else:
        assert loaded.nlist == old.nlist > 1 and loaded.effective_nprobe == old.effective_nprobe
    assert loaded.search(vecs[42], 10)[0].tolist() == old.search(vecs[42], 10)[0].tolist()
    loaded.remove([43])
    assert 43 not in loaded.search(vecs[42], 10)[0].tolist()


def test_unknown_ann_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="ivf"):
        VectorIndex(DIM, ann="annoy")


def test_quantized_scan_returns_the_flat_scan_exactly() -> None:
    """Past ``quantized_scan_from`` the flat index scans an 8-bit copy first and rescores
    the candidates in float32: ids, scores and the order of ties equal the full float32
    scan, also after additions (some outside the trained ranges), removals and with filters
    (duplicate vectors make exact ties)."""
    rng = np.random.default_rng(3)
    dim = 64
    base = normalize_rows(rng.standard_normal((3000, dim)))
    vecs = np.concatenate([base, base[:400]])  # 400 duplicates: tied scores
    vecs[2500] = normalize_rows(np.eye(dim)[:1])[0]  # a component far outside the ranges
    seqs = np.arange(1, len(vecs) + 1, dtype=np.int64)
    quantized = VectorIndex(dim, quantized_scan_from=100)
    full = VectorIndex(dim, quantized_scan_from=10**9)
    for index in (quantized, full):
        index.add(seqs[:2000], vecs[:2000])
    queries = normalize_rows(rng.standard_normal((30, dim)))
    queries = np.concatenate([queries, vecs[:10], vecs[2500:2501]])  # stored vectors: ties

    def same(k: int, allowed: np.ndarray | None = None) -> None:
        for q in queries:
            a_ids, a_scores = quantized.search(q, k, allowed=allowed)
            b_ids, b_scores = full.search(q, k, allowed=allowed)
            assert a_ids.tolist() == b_ids.tolist()
            assert a_scores.tolist() == b_scores.tolist()

    same(100)
    assert quantized._q8 is not None and full._q8 is None  # the 8-bit path was taken
    for index in (quantized, full):
        index.add(seqs[2000:], vecs[2000:])
        index.remove(list(range(5, 900, 7)))
    same(100)
    same(5)
    same(48, allowed=seqs[::3])
    same(20, allowed=np.array([1, 401, 2001, 3001], dtype=np.int64))


def test_quantized_scan_falls_back_when_scores_crowd_the_cut() -> None:
    """When more records lie within the 8-bit error bound of the k-th score than were
    taken, the float32 scan answers (identical vectors: every score ties)."""
    vecs = np.repeat(normalize_rows(np.ones((1, DIM))), 300, axis=0)
    seqs = np.arange(1, 301, dtype=np.int64)
    quantized = VectorIndex(DIM, quantized_scan_from=10)
    full = VectorIndex(DIM, quantized_scan_from=10**9)
    for index in (quantized, full):
        index.add(seqs, vecs)
    got, scores = quantized.search(vecs[0], 10)
    assert len(got) == 10 and scores.tolist() == pytest.approx([1.0] * 10, abs=1e-5)
    expected = full.search(vecs[0], 10)
    assert got.tolist() == expected[0].tolist() and scores.tolist() == expected[1].tolist()


def test_prepare_builds_the_int8_copy_before_the_first_search() -> None:
    rng = np.random.default_rng(3)
    vecs = normalize_rows(rng.standard_normal((64, 16)).astype(np.float32))
    index = VectorIndex(16, quantized_scan_from=32)
    index.add(range(1, 65), vecs)
    assert index._q8 is None
    index.prepare()
    assert index._q8 is not None and len(index._q8_ids) == 64
    small = VectorIndex(16, quantized_scan_from=1000)  # below the threshold: nothing built
    small.add(range(1, 65), vecs)
    small.prepare()
    assert small._q8 is None
    q = vecs[5]
    for a, b in zip(index.search(q, 10), small.search(q, 10), strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("ann", ["ivf", "hnsw"])
def test_small_filters_on_an_approximate_index_follow_its_ids(ann: str) -> None:
    """A small filter on an approximate index scores exactly the allowed ids it holds: ids
    it never held are left out, ids added after an earlier filtered search are found, and a
    rebuilt (compacted) index is read afresh."""
    vecs = _data(700, seed=8)
    seqs = np.arange(1, 701, dtype=np.int64)
    index = VectorIndex(DIM, hnsw_threshold=300, ann=ann)
    index.add(seqs[:600], vecs[:600])
    assert index.kind == ann
    allowed = np.array([5, 40, 41, 650, 651, 9_999], dtype=np.int64)
    got, _ = index.search(vecs[40], 10, allowed=allowed)
    assert sorted(got.tolist()) == [5, 40, 41]  # 650, 651 and 9,999 are not held
    first = np.isin(seqs[:600], allowed)
    assert got.tolist() == _exact(vecs[:600][first], seqs[:600][first], vecs[40], 5)
    index.add(seqs[600:], vecs[600:])
    got, _ = index.search(vecs[650], 10, allowed=allowed)
    assert sorted(got.tolist()) == [5, 40, 41, 650, 651]
    held = np.isin(seqs, allowed)
    assert got.tolist() == _exact(vecs[held], seqs[held], vecs[650], 5)
    index.remove(range(100, 300))  # more than a tenth: compacted into a new index
    assert not index._tombstones and index.kind == ann
    got, _ = index.search(vecs[651], 10, allowed=np.array([150, 651, 41], dtype=np.int64))
    assert sorted(got.tolist()) == [41, 651]
